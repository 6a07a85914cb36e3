//! Progressive ("faststart") MP4 of a run of segments: `ftyp`, a `moov` holding every
//! sample's index, then one `mdat` — the classic file editors and some players need,
//! where [`crate::fmp4`] writes fragments.
//!
//! ```text
//! pass 1: each segment's frames ─► SampleTables::push_segment ─► finish ─► ProgressiveHead
//!                                     (sizes, times, sync flags)       (ftyp, moov, mdat header)
//! pass 2: each segment's frames ─► write_chunks ─► that segment's bytes of the mdat
//! ```
//!
//! The `moov` lists every sample's size and place before the first sample's bytes, so
//! a file is written in two passes over the same frames; memory holds one segment's
//! frames and the sample tables (about four bytes per sample), never the media.
//!
//! # Choices
//!
//! - **Samples as the fragments hold them:** one 90 kHz timescale, video track 1 and
//!   audio track 2, the same sample entries, video as 4-byte length-prefixed NAL units
//!   and audio as raw AAC, measured and written by the code [`crate::fmp4`] uses (see
//!   its docs). Frames of a track the config does not carry are left out.
//! - **Chunks:** a segment's samples are one chunk per track, video then audio; its
//!   chunks' bytes follow the previous segment's, so pass 2 writes segment after
//!   segment. `co64` gives absolute offsets whatever the file's size; the `mdat` takes
//!   its 64-bit size form past 4 GiB.
//! - **Durations** are DTS differences across segments; the last sample lasts as long as
//!   the one before it (else one frame).
//! - **Timeline from zero, A/V sync kept:** each track's media time starts at its first
//!   sample; an edit list (`edts`/`elst`) places the track's first presented sample
//!   where its PTS lies after the file's start (the earliest PTS of any track: an empty
//!   edit) and starts presentation at that sample's composition time (B-frames' delay).
//!   A track that starts at the file's start with PTS = DTS needs none.
//! - **Composition offsets** (`ctts`) only when some sample has PTS ≠ DTS, version 1
//!   (signed) when one is negative.

mod chunks;
mod head;
mod stbl;
mod tables;
#[cfg(test)]
mod tests;
mod track;

pub use chunks::write_chunks;
pub use tables::SampleTables;

/// What pass 1 gives: the file's first bytes and how long the rest is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgressiveHead {
    /// `ftyp`, `moov` and the `mdat` header: the file up to the first sample's bytes.
    pub bytes: Vec<u8>,
    /// The whole file's length, head included (an HTTP answer's Content-Length).
    pub total_len: u64,
    /// The bytes [`write_chunks`] writes for each segment given to
    /// [`SampleTables::push_segment`], in that order (0 for a segment without samples):
    /// pass 2 checks its output against them, so a changed input fails rather than
    /// yields a file whose index points at the wrong bytes.
    pub segment_lens: Vec<u64>,
}
