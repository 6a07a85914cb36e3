//! Live captions: cues on the stream's timeline, carried in-band in every segment, and
//! the WebVTT players read.
//!
//! ```text
//! caption API cues ─┐
//!                   ├─► CaptionBook (origin) ──cut──► CaptionBlock ──► TS packets after
//! 608 in the video ─┘   (sei → cea608 → screen)                       the segment's marker
//!                                                                          │
//!      every node, the archive: segment bytes ──► CaptionBlock ──► WebVTT per segment,
//!                                                                 transcript per period
//! ```
//!
//! The origin (the MC, or a node ingesting a source itself) decides once, at each cut,
//! which pieces of which cues a segment holds; everything after it reads that decision
//! from the segment's own bytes, so nodes write byte-identical subtitle files and the
//! archive keeps the captions with the media.

pub mod block;
pub mod book;
pub mod cea608;
pub mod cea608_encode;
mod cea608_tables;
pub mod sei;
pub mod text;
pub mod webvtt;

pub use block::{CaptionBlock, CaptionTrack, Cue};
pub use book::{BookError, CaptionBook};

/// How far ahead of the live edge a cue may be placed: 30 s, as far as a segment's date
/// may run ahead of the wall clock (`segmenter::MAX_DATE_AHEAD_MS`).
pub const MAX_CUE_AHEAD_TICKS: u64 = 30 * crate::CLOCK_HZ;

/// The longest a cue may last: 60 s (a caption longer than that is a stuck caption).
pub const MAX_CUE_TICKS: u64 = 60 * crate::CLOCK_HZ;
