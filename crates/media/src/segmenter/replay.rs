//! Is a standby that took over the same feed? After a takeover the standby replays its
//! last GOPs; when those frames are the very frames already segmented (same track, same
//! timestamp, same bytes), the standby is another output of the same encoder and the
//! timeline goes on without a discontinuity. Anything else is another source.

use std::collections::VecDeque;
use std::hash::{Hash, Hasher};

use crate::{Frame, TrackKind};

/// How many recent frames are remembered: more than two GOPs of video and their audio
/// at common rates (2 s of 60 fps video and 48 kHz AAC is 214 frames).
const REMEMBERED: usize = 512;

/// What the replayed frames say about the new input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// A replayed frame is one already segmented: the same feed.
    Same,
    /// A replayed frame differs from the one segmented at its timestamp, or the new
    /// input reached new media before any frame matched: another source.
    Different,
    /// Too old to compare (before the remembered frames) or not remembered: look at
    /// the next frame.
    Undecided,
}

/// The last frames taken, as (track, extended PTS, digest of the bytes).
#[derive(Debug, Default)]
pub(super) struct RecentFrames {
    frames: VecDeque<(TrackKind, u64, u64)>,
}

impl RecentFrames {
    /// Remembers a frame the segmenter took.
    pub(super) fn taken(&mut self, ext_pts: u64, frame: &Frame) {
        if self.frames.len() == REMEMBERED {
            self.frames.pop_front();
        }
        self.frames
            .push_back((frame.kind(), ext_pts, digest(frame)));
    }

    /// Forgets everything (a new period starts).
    pub(super) fn clear(&mut self) {
        self.frames.clear();
    }

    /// Judges one frame of a standby that took over: `already` when its track had
    /// reached this decode time before the takeover (a replayed frame), `too_old` when
    /// it lies further back than any replay (another clock).
    pub(super) fn judge(
        &self,
        ext_pts: u64,
        frame: &Frame,
        already: bool,
        too_old: bool,
    ) -> Verdict {
        if too_old || !already {
            return Verdict::Different;
        }
        let kind = frame.kind();
        match self
            .frames
            .iter()
            .rev()
            .find(|(k, pts, _)| *k == kind && *pts == ext_pts)
        {
            Some((_, _, seen)) if *seen == digest(frame) => Verdict::Same,
            Some(_) => Verdict::Different,
            None => Verdict::Undecided,
        }
    }
}

/// A standby that took over, while its replay is being dropped.
#[derive(Debug, Clone, Copy)]
pub(super) struct Standby {
    /// Each track's last decode time taken before the takeover (video, audio).
    pub(super) last_dts: [Option<u64>; 2],
    /// Its replay matched what was cut: the same feed.
    pub(super) same: bool,
}

impl Standby {
    /// Whether a frame of track `idx` at `ext_dts` was taken before the takeover.
    pub(super) fn already(&self, idx: usize, ext_dts: u64) -> bool {
        self.last_dts[idx].is_some_and(|last| ext_dts <= last)
    }

    /// Whether a frame lies further back than a replay reaches (`span` ticks).
    pub(super) fn too_old(&self, idx: usize, ext_dts: u64, span: u64) -> bool {
        self.last_dts[idx].is_some_and(|last| ext_dts.saturating_add(span) < last)
    }
}

/// A digest of a frame's bytes: the same encoder output twice gives the same digest.
fn digest(frame: &Frame) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    frame.data.len().hash(&mut hasher);
    frame.data.hash(&mut hasher);
    hasher.finish()
}
