//! The stream model: a stream's package ([`package::Package`]: renditions on one
//! timeline, each with one live window, `packaging::window`, of stored segments whose
//! TS, fMP4 and LL-HLS forms are views of one segment), the [`pipeline`] that turns
//! ingest events into those segments, the [`ladder`] of encoded rungs, the other audio
//! [`languages`], captions, the
//! [`recorder`] of the archive, the live relay between nodes, and the node's table of
//! streams ([`streams`]).

pub mod archive_scans;
pub mod captions;
pub mod cutter;
pub mod interpreter;
pub mod ladder;
pub mod languages;
pub mod live_relay;
pub mod llhls;
pub mod package;
pub mod pipeline;
pub mod recorder;
pub mod rendition;
pub mod streams;
