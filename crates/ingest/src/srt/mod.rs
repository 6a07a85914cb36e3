//! SRT ingest: one UDP port where meeting platforms and encoders publish MPEG-TS,
//! told apart by their `streamid`, and a caller input that pulls from an encoder in
//! listener mode. Built on srt-tokio (pure Rust, Apache-2.0), which interoperates
//! with libsrt callers (ffmpeg, OBS, srt-live-transmit), AES passphrases included.

pub mod access;
pub mod caller;
pub mod filter;
mod listener;
mod session;
pub mod stats;
pub mod streamid;

pub use access::{SrtListenerConfig, DEFAULT_LATENCY};
pub use listener::SrtServer;
pub use stats::{LinkStats, SrtStats};
