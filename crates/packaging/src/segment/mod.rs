//! What a stored segment carries besides its MPEG-TS bytes, derived once and kept with
//! it: its fMP4 view ([`fmp4`]) and its caption files ([`captions`]). The window keeps
//! them; the manifests read them.

pub mod captions;
pub mod fmp4;
