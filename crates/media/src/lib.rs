//! Sans-I/O media handling for brdyun.
//!
//! Data flows one way through this crate:
//!
//! ```text
//! MPEG-TS bytes ──► ts::Demuxer ──► Frame ──► Segmenter ──► Segment (MPEG-TS bytes) ──► hls playlist
//!            (RTMP/FLV input builds Frames directly)
//!                                                             └──► fmp4 (init, segments), llhls::Packager (LL-HLS parts) ──► hls::LowLatencyPlaylist, dash::Mpd
//!                                                             └──► progressive (one faststart MP4 of a run of segments, two passes)
//! ```
//!
//! Nothing here does I/O or reads a clock: time is passed in as arguments, so every
//! function is a plain, deterministic function of its inputs. That is what makes the
//! timeline identical on every node that ingests the same source (DESIGN.md, invariant 1).

pub mod captions;
pub mod codec;
pub mod crc;
pub mod dash;
pub mod fmp4;
pub mod frame;
pub mod hls;
pub mod language;
pub mod llhls;
pub mod manifest;
pub mod progressive;
pub mod segmenter;
pub mod timeline;
pub mod ts;

pub use frame::{Codec, Frame, TrackKind, CLOCK_HZ, PTS_MASK};
pub use language::Language;
pub use segmenter::{Segment, Segmenter, SegmenterConfig, SegmenterStats, StartPoint};
pub use timeline::{MarkerError, TimelineMarker, TimelineState};
