//! The LL-HLS state of one stream: the parts of the segment being cut, the init
//! segments, and the playlists rendered once per change. Complete segments are not
//! kept here: each is stored once, with its TS bytes, in the stream's one window
//! ([`crate::window::StoredSegment::ll`]), and the LL-HLS playlist lists the window's
//! segments that have their LL-HLS view.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use media::hls::{
    LlSegment, LlUris, LowLatencyPlaylist, PendingSegment, PlaylistPart, PlaylistSegment,
};

use super::position::Position;
use crate::window::WindowSnapshot;
use media::llhls::{Opened, Output, PartOut, SegmentOut};
use media::manifest::Manifest;

/// What EXT-X-TARGETDURATION adds to the segment target from the start. A segment ends
/// at the first keyframe past its grid line, so it is often longer than the target
/// (with 1-s GOPs and a 2-s target, up to 2.96 s: 3 once rounded); raising the target
/// duration when such a segment appears made hls.js stop loading in low-latency mode
/// (seen in the e2e runs), so the playlist starts with room for one more second.
pub const TARGET_SLACK_SECS: u64 = 1;

/// Init segments kept (one per discontinuity sequence still in the window).
const MAX_INITS: usize = 4;

/// A segment whose parts are being published.
#[derive(Debug, Clone)]
pub struct PendingParts {
    /// The segment.
    pub info: Opened,
    /// Its parts so far, in order.
    pub parts: Vec<PartOut>,
}

/// The LL-HLS window at one instant; readers hold an `Arc` of it and no lock.
#[derive(Debug, Default)]
pub struct LlSnapshot {
    /// Complete segments as listed, oldest first, consecutive: the LL-HLS views of the
    /// stream window's newest consecutive run of segments that have one.
    pub segments: VecDeque<Arc<SegmentOut>>,
    /// The segment whose parts are listed after the complete ones.
    pub pending: Option<Arc<PendingParts>>,
    /// Init segments by discontinuity sequence.
    pub inits: Vec<(u64, Bytes)>,
    /// `ll.m3u8`: the full playlist.
    pub full: Manifest,
    /// `ll.m3u8?_HLS_skip=YES`: the delta update.
    pub delta: Manifest,
    /// What the playlists list.
    pub position: Position,
}

impl LlSnapshot {
    /// Complete segment `msn`, if in the window.
    pub fn segment(&self, msn: u64) -> Option<&Arc<SegmentOut>> {
        let first = self.segments.front()?.msn;
        let i = usize::try_from(msn.checked_sub(first)?).ok()?;
        self.segments.get(i).filter(|s| s.msn == msn)
    }

    /// Part `index` of segment `msn`, complete or pending.
    pub fn part(&self, msn: u64, index: usize) -> Option<Bytes> {
        if let Some(s) = self.segment(msn) {
            let span = s.parts.get(index)?;
            return s
                .bytes
                .get(span.bytes.clone())
                .map(|_| s.bytes.slice(span.bytes.clone()));
        }
        let pending = self.pending.as_ref().filter(|p| p.info.msn == msn)?;
        pending.parts.get(index).map(|p| p.bytes.clone())
    }

    /// The init segment of discontinuity sequence `seq`.
    pub fn init(&self, seq: u64) -> Option<Bytes> {
        self.inits
            .iter()
            .find(|(s, _)| *s == seq)
            .map(|(_, b)| b.clone())
    }
}

/// How LL-HLS playlists name their files (relative to the playlist).
#[derive(Debug, Clone, Copy)]
pub struct Uris;

impl LlUris for Uris {
    fn map(&self, discontinuity_seq: u64) -> String {
        format!("ll-init-{discontinuity_seq}.mp4")
    }

    fn segment(&self, msn: u64) -> String {
        format!("llseg-{msn}.m4s")
    }

    fn part(&self, msn: u64, index: usize) -> String {
        format!("part-{msn}-{index}.m4s")
    }
}

/// The mutable LL-HLS state the pipeline task owns; [`LlWindow::snapshot`] freezes it
/// with the stream window's complete segments.
#[derive(Debug)]
pub struct LlWindow {
    /// The least EXT-X-TARGETDURATION: the stream's target plus [`TARGET_SLACK_SECS`].
    /// The playlist announces the larger of this and the stream window's target, so it
    /// follows the stream's one target rule and never decreases.
    target_secs: u64,
    part_target_ms: u64,
    hold_back_ms: Option<u64>,
    pending: VecDeque<PendingParts>,
    inits: Vec<(u64, Bytes)>,
    /// The segment the packager completed, until the channel stores it.
    ready: Option<SegmentOut>,
}

impl LlWindow {
    /// The state for a `target_ms` segment target and `part_ms` parts, announcing
    /// `hold_back_ms` as PART-HOLD-BACK (default 3 × PART-TARGET, never below 2 ×).
    pub fn new(target_ms: u64, part_ms: u64, hold_back_ms: Option<u64>) -> Self {
        Self {
            target_secs: target_ms.div_ceil(1000).max(1) + TARGET_SLACK_SECS,
            part_target_ms: part_ms.max(1),
            hold_back_ms,
            pending: VecDeque::new(),
            inits: Vec::new(),
            ready: None,
        }
    }

    /// The completed segment `msn`, for the channel to store with its TS twin.
    pub fn take_ready(&mut self, msn: u64) -> Option<SegmentOut> {
        if self.ready.as_ref().is_some_and(|s| s.msn == msn) {
            self.ready.take()
        } else {
            None
        }
    }

    /// Applies one packager output; true when what the playlists list changed.
    pub fn apply(&mut self, output: Output) -> bool {
        match output {
            Output::Init {
                discontinuity_seq,
                bytes,
            } => {
                self.inits.retain(|(s, _)| *s != discontinuity_seq);
                self.inits.push((discontinuity_seq, bytes));
                while self.inits.len() > MAX_INITS {
                    self.inits.remove(0);
                }
                false
            }
            Output::Opened(info) => {
                self.pending.retain(|p| p.info.msn < info.msn);
                self.pending.push_back(PendingParts {
                    info,
                    parts: Vec::new(),
                });
                false
            }
            Output::Part(part) => {
                // PART-TARGET must hold every part; it only ever grows.
                let ms = part.duration_ticks.div_ceil(90);
                self.part_target_ms = self.part_target_ms.max(ms);
                let Some(i) = self.pending.iter().position(|p| p.info.msn == part.msn) else {
                    return false;
                };
                let listed = i == 0;
                let pending = &mut self.pending[i];
                if part.index != pending.parts.len() {
                    return false;
                }
                pending.parts.push(part);
                listed
            }
            Output::Segment(segment) => {
                self.pending.retain(|p| p.info.msn > segment.msn);
                if let Some(ms) = segment
                    .parts
                    .iter()
                    .map(|p| p.duration_ticks.div_ceil(90))
                    .max()
                {
                    self.part_target_ms = self.part_target_ms.max(ms);
                }
                self.ready = Some(segment);
                true
            }
        }
    }

    /// The complete segments the playlist lists: the LL-HLS views of `window`'s newest
    /// run of consecutive segments that have one.
    fn listed(window: &WindowSnapshot) -> VecDeque<Arc<SegmentOut>> {
        let mut listed = VecDeque::new();
        for stored in window.segments.iter().rev() {
            let Some(ll) = stored.ll() else { break };
            if listed
                .front()
                .is_some_and(|next: &Arc<SegmentOut>| ll.msn.checked_add(1) != Some(next.msn))
            {
                break;
            }
            listed.push_front(Arc::clone(ll));
        }
        listed
    }

    /// The playlist model of `segments` and the pending parts.
    fn playlist(
        &self,
        segments: &VecDeque<Arc<SegmentOut>>,
        window_target_secs: u64,
    ) -> LowLatencyPlaylist {
        let target_secs = self.target_secs.max(window_target_secs);
        let mut playlist = LowLatencyPlaylist::new(target_secs, self.part_target_ms);
        let minimum = self.part_target_ms.saturating_mul(2);
        if let Some(hold_back) = self.hold_back_ms {
            playlist.part_hold_back_ms = hold_back.max(minimum);
        }
        playlist.segments = segments
            .iter()
            .map(|s| LlSegment {
                segment: PlaylistSegment {
                    msn: s.msn,
                    discontinuity_seq: s.discontinuity_seq,
                    discontinuous: s.discontinuous,
                    duration_ticks: s.duration_ticks,
                    program_date_time_ms: s.program_date_time_ms,
                    gap: false,
                },
                parts: s
                    .parts
                    .iter()
                    .map(|p| PlaylistPart {
                        duration_ticks: p.duration_ticks,
                        independent: p.independent,
                    })
                    .collect(),
            })
            .collect();
        let next_msn = segments.back().map(|s| s.msn.saturating_add(1));
        playlist.pending = self
            .pending
            .front()
            .filter(|p| next_msn.is_none_or(|n| n == p.info.msn))
            .map(|p| PendingSegment {
                msn: p.info.msn,
                discontinuity_seq: p.info.discontinuity_seq,
                discontinuous: p.info.discontinuous,
                program_date_time_ms: p.info.program_date_time_ms,
                parts: p
                    .parts
                    .iter()
                    .map(|p| PlaylistPart {
                        duration_ticks: p.duration_ticks,
                        independent: p.independent,
                    })
                    .collect(),
            });
        playlist
    }

    /// Freezes the state with `window`'s complete segments, its playlists rendered.
    pub fn snapshot(&self, window: &WindowSnapshot) -> LlSnapshot {
        let segments = Self::listed(window);
        let playlist = self.playlist(&segments, window.target_secs);
        let listed_pending = playlist.pending.as_ref().map(|p| p.msn);
        LlSnapshot {
            pending: self
                .pending
                .front()
                .filter(|p| Some(p.info.msn) == listed_pending)
                .map(|p| Arc::new(p.clone())),
            inits: self.inits.clone(),
            full: playlist.manifest(&Uris, false),
            delta: playlist.manifest(&Uris, true),
            position: Position {
                last_complete: segments.back().map(|s| (s.msn, s.parts.len())),
                pending: listed_pending.zip(playlist.pending.as_ref().map(|p| p.parts.len())),
            },
            segments,
        }
    }
}
