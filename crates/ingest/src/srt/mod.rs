//! SRT ingest: one UDP port where meeting platforms and encoders publish MPEG-TS,
//! told apart by their `streamid`, and a caller input that pulls from an encoder in
//! listener mode. Built on the system's libsrt 1.5 (the reference implementation,
//! MPL-2.0), loaded at run time ([`ffi`]): without it, SRT is off and says why.

pub mod access;
pub mod caller;
// The only module with `unsafe`: the FFI to libsrt, with a SAFETY note per block.
#[allow(unsafe_code)]
pub mod ffi;
mod handshake;
mod listener;
mod reader;
mod refusal_log;
mod session;
pub mod stats;
pub mod streamid;

pub use access::{SrtListenerConfig, DEFAULT_LATENCY};
pub use listener::{SrtServer, PEER_IDLE_TIMEOUT};
pub use stats::{LinkStats, SrtStats};
