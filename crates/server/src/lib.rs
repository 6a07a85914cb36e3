//! HTTP(S) delivery for brdyun.
