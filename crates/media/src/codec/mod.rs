//! Codec probing and access unit delimiters: H.264 and H.265 parameter sets, AAC configuration, keyframe detection.

pub mod aac;
pub mod aac_silence;
pub mod aud;
pub mod bits;
pub mod h264;
pub mod h265;
pub mod nal;
pub mod probe;
