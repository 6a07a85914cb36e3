//! Codec probing: H.264 and H.265 parameter sets, AAC configuration, keyframe detection.

pub mod aac;
