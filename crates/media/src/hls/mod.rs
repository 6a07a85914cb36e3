//! HLS playlist writers (draft-pantos-hls-rfc8216bis): pure text from values.
//!
//! - [`MediaPlaylist`]: a live window, an EVENT or a VOD playlist of MPEG-TS segments,
//!   with EXT-X-PROGRAM-DATE-TIME on every segment (players align backup nodes by it).
//! - [`LiveWindow`]: the sliding window a live channel keeps, with a target duration that
//!   never decreases (a playlist's EXT-X-TARGETDURATION must not change).
//! - [`LowLatencyPlaylist`]: the LL-HLS playlist of fMP4 segments and their parts, with
//!   blocking reload, delta updates, preload hints and rendition reports.
//! - [`MasterPlaylist`]: variants with their attributes; several variants may share
//!   attributes and differ only by URI, which is how backup nodes are offered
//!   (OTT-PROT-1, OTT-GRP-2).
//!
//! Writers take `&mut impl std::fmt::Write` (a `String` works) and never fail on their
//! own; caller-supplied text (URIs, codec strings) is made safe for the line format.

mod date;
mod ll;
mod master;
mod media;

pub use date::format_rfc3339_ms;
pub use ll::{
    LlSegment, LlUris, LowLatencyPlaylist, PendingSegment, PlaylistPart, RenditionReport,
};
pub use master::{
    AudioRendition, BackupUri, ClosedCaptions, MasterPlaylist, Personalisation, SubtitleRendition,
    Variant, AUDIO_GROUP,
};
pub use media::{LiveWindow, MediaPlaylist, PlaylistSegment, PlaylistType};

/// Makes a caller-supplied URI safe for one playlist line (CR/LF would inject tags).
fn line_safe(uri: &str) -> std::borrow::Cow<'_, str> {
    if uri.contains(['\r', '\n']) {
        uri.replace('\r', "%0D").replace('\n', "%0A").into()
    } else {
        uri.into()
    }
}
