//! MPEG-DASH manifests (ISO/IEC 23009-1): pure text from values, like the HLS writers.
//!
//! - [`Mpd`]: a dynamic (live) or static (finished, archive) MPD of fMP4 segments with
//!   `SegmentTemplate` `$Number$` addressing and a `SegmentTimeline`, one Period per
//!   discontinuity sequence, and `UTCTiming` pointing at the node's clock.
//!
//! The timeline is the TS playlist's: `$Number$` is the MSN, `S@t` and `S@d` are the
//! segments' extended 90 kHz start and duration, and each Period maps media time to
//! wall-clock time with its discontinuity sequence's anchor (the same anchor that gives
//! EXT-X-PROGRAM-DATE-TIME), so HLS, LL-HLS and DASH players see the same dates.

mod audio;
mod mpd;
mod timeline;

pub use audio::{MpdAudio, MpdLabel, MpdLanguage, FIRST_LANGUAGE_SET_ID};
pub use mpd::{
    Mpd, MpdKind, MpdPeriod, MpdRung, MpdText, MpdUris, MpdVideo, ReloadEvents, ServiceLocation,
    ServiceLocations, MPD_RELOAD_SCHEME,
};
pub use timeline::MpdSegment;
