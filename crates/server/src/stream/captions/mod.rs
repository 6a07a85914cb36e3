//! Live captions on a node and an MC (see `docs/captions.md`): the inbox the caption
//! API feeds ([`inbox`]), the pipeline's captioner that cuts cues into every segment
//! or takes an upstream's ([`origin`]), and what the status API shows ([`status`]). The
//! subtitle renditions are rendered by the `packaging` crate; the caption API is the
//! `mc` crate's.

pub mod feed;
pub mod inbox;
pub mod origin;
pub mod status;

use std::sync::atomic::AtomicU64;

pub use inbox::{CaptionInbox, CueRefusal, CueRequest, CueTiming, StampedCue};
pub use origin::Captioner;

/// The language of the decoded CEA-608 channel 1 when the configuration names none.
pub const DEFAULT_CC_LANGUAGE: &str = "en";

/// A stream's caption counters, for status and metrics.
#[derive(Debug, Default)]
pub struct CaptionCounters {
    /// Cues placed on the timeline (from the caption API).
    pub cues: AtomicU64,
    /// Cues refused (past, future, too many tracks or waiting, not the origin).
    pub refused: AtomicU64,
    /// CEA-608 byte pairs read from the source's video.
    pub cc_pairs: AtomicU64,
    /// Upstream caption blocks that could not be read (their captions are lost).
    pub bad_blocks: AtomicU64,
}
