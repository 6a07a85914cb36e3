//! Low-Latency HLS live delivery (draft-pantos-hls-rfc8216bis): fMP4 parts cut as the
//! frames arrive, in step with the TS segmenter, and blocking playlist reloads.
//!
//! ```text
//! pipeline ─ frame ──► Segmenter ──► TS segment N ──► Package (mono.m3u8)
//!     │  (state before/after) │
//!     └──── frame ─────► Packager ─► parts of N+1 … ─► LlWindow ─► LlChannel
//!                            ▲                         (snapshot + watch of Position)
//!           segment N ───────┘ verify, finish N                     │
//!                                                     routes/llhls.rs (blocking reload)
//! ```
//!
//! # Design: parts on the TS segmenter's cut points
//!
//! The segmenter decides where segments start; the [`Packager`] never decides a cut, it
//! learns it as early as the segmenter shows it and assigns every frame to a segment by
//! the segmenter's own rule:
//!
//! - **Where a segment starts.** In source mode the segmenter opens segment N+1 at the
//!   video frame that crosses the grid: [`media::Segmenter::state`] changes its MSN on
//!   that very `push`, so the pipeline passes the state before and after each frame and
//!   a changed MSN opens N+1 at that frame (its PTS is the segment's start, its date
//!   `state.unix_ms_at(pts)`, exactly the TS segment's). In adopt mode (a node pulling
//!   an upstream brdyun) the upstream's timeline markers announce each segment's start
//!   PTS before its frames; the leading frame with that PTS opens it.
//! - **Which frames belong to it.** Video arrives in DTS order and a segment's video
//!   ends where the next one's first frame begins, so video goes to the newest opened
//!   segment. Audio belongs to the segment with the latest start at or before its PTS
//!   (the segmenter's rule); it is placed once video has passed it (or after 1 s), so
//!   an audio frame of segment N that arrives after N+1 opened still goes to N.
//! - **Parts.** Each opened segment has a [`media::fmp4::PartBuilder`]; its parts are
//!   published as soon as the builder writes them (a part is complete when video
//!   crosses the next part-grid line and audio has passed it).
//! - **Completion and verification.** When the segmenter publishes TS segment N, the
//!   packager compares the frames its builder got with the frames of the TS segment
//!   (same DTS and tracks). Equal: the builder finishes its last samples as the live
//!   edge estimates them (`NextDts::estimated`, not the next segment's first frames,
//!   which depend on arrival), and the fMP4 segment is the concatenation of the live
//!   parts, byte-identical to the packaging of the TS segment — the stream's muxed
//!   fMP4 file of that MSN (`seg-N.m4s` is `llseg-N.m4s`). Different (the first
//!   segment, after a discontinuity, a forced cut the state did not show, late audio):
//!   N is packaged from its TS bytes with the same part rule (`package_ts_segment`); its
//!   parts appear at once, and a mismatch is counted (it replaces parts already listed).
//!
//! The window keeps the stream's live window of complete segments (for the playlist
//! and delta updates) plus the parts of the segment being cut; parts are listed for the
//! last three target durations, as the draft says.
//!
//! # Blocking reloads cost a watch receiver
//!
//! A request for `_HLS_msn`/`_HLS_part` that is not there yet waits on a
//! `tokio::sync::watch` of [`Position`] (no task, no buffer, no timer wheel entry beyond
//! the timeout): the pipeline sends the new position after each snapshot swap, every
//! waiter checks its predicate and answers with the pre-rendered playlist.
//!
//! # Part size
//!
//! `part_duration` trades latency for requests and overhead: a player holds back
//! PART-HOLD-BACK (3 × PART-TARGET unless configured, at least 2 ×) from the live edge,
//! so 1-s parts give ~3.3 s of latency at the player and 0.5-s parts about half, at
//! twice the playlist reloads and part requests per viewer and more `moof` overhead
//! per second of media. A shorter hold-back lowers latency and leaves the player less
//! margin for network jitter.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use media::{Frame, Segment, TimelineState};

use packaging::window::WindowSnapshot;
use tokio::sync::watch;

pub use media::llhls::{Opened, Output, Packager, PackagerStats, PartOut, PartSpan, SegmentOut};
pub use packaging::llhls::position::Position;
pub use packaging::llhls::window::{LlSnapshot, LlWindow, PendingParts, Uris};

/// Default LL-HLS part duration, milliseconds.
pub const DEFAULT_PART_MS: u64 = 1000;

/// How one stream's LL-HLS is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LlSettings {
    /// Part duration (EXT-X-PART-INF PART-TARGET), milliseconds.
    pub part_ms: u64,
    /// PART-HOLD-BACK, milliseconds: how far behind the live edge players stay. `None`:
    /// 3 × PART-TARGET (the draft's recommendation); never below 2 × (its minimum).
    pub hold_back_ms: Option<u64>,
    /// The stream's segment target, milliseconds.
    pub target_ms: u64,
}

impl LlSettings {
    /// The part grid in 90 kHz ticks: what the packager cuts at and the muxed fMP4 file
    /// of every segment is fragmented at.
    pub fn part_ticks(&self) -> u64 {
        self.part_ms.saturating_mul(90).max(1)
    }
}

/// Counters of one stream's LL-HLS.
#[derive(Debug, Default)]
pub struct LlCounters {
    /// Parts published.
    pub parts: AtomicU64,
    /// Segments whose parts were cut live.
    pub live_segments: AtomicU64,
    /// Segments packaged from their TS segment.
    pub packaged_segments: AtomicU64,
    /// Segments whose live parts were replaced.
    pub mismatches: AtomicU64,
    /// Blocking requests waiting now.
    pub blocked: AtomicU64,
}

/// One stream's LL-HLS state as the routes see it: the current snapshot and the
/// position watch.
#[derive(Debug)]
pub struct LlChannel {
    settings: LlSettings,
    snapshot: RwLock<Arc<LlSnapshot>>,
    position: watch::Sender<Position>,
    /// Counters for metrics and tests.
    pub counters: LlCounters,
}

impl LlChannel {
    /// An empty LL-HLS channel.
    pub fn new(settings: LlSettings) -> Self {
        Self {
            settings,
            snapshot: RwLock::new(Arc::new(LlSnapshot::default())),
            position: watch::channel(Position::default()).0,
            counters: LlCounters::default(),
        }
    }

    /// The settings.
    pub fn settings(&self) -> LlSettings {
        self.settings
    }

    /// The current snapshot (one `Arc` clone under a short read lock).
    pub fn snapshot(&self) -> Arc<LlSnapshot> {
        match self.snapshot.read() {
            Ok(guard) => Arc::clone(&guard),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Watches the position (what a blocking reload waits on).
    pub fn subscribe(&self) -> watch::Receiver<Position> {
        self.position.subscribe()
    }

    fn publish(&self, snapshot: LlSnapshot) {
        let position = snapshot.position;
        let next = Arc::new(snapshot);
        match self.snapshot.write() {
            Ok(mut guard) => *guard = next,
            Err(poisoned) => *poisoned.into_inner() = next,
        }
        self.position.send_if_modified(|p| {
            let changed = *p != position;
            *p = position;
            changed
        });
    }
}

/// The pipeline's side: owns the packager and the LL-HLS state, publishes to the
/// channel. Complete segments go to the stream's window with their TS twin
/// ([`Feed::take_ready`], then [`Feed::publish`] with the new window).
#[derive(Debug)]
pub struct Feed {
    channel: Arc<LlChannel>,
    packager: Packager,
    window: LlWindow,
    /// The stream window the last snapshot was rendered with.
    stream: Arc<WindowSnapshot>,
    out: Vec<Output>,
    stats: PackagerStats,
    /// When mismatching segments are logged (see [`Feed::log_mismatches`]).
    mismatch_log: flap_log::FlapLog,
}

impl Feed {
    /// A feed publishing into `channel`.
    pub fn new(channel: Arc<LlChannel>) -> Self {
        let s = channel.settings();
        Self {
            packager: Packager::new(s.part_ticks()),
            window: LlWindow::new(s.target_ms, s.part_ms, s.hold_back_ms),
            stream: Arc::default(),
            channel,
            out: Vec::new(),
            stats: PackagerStats::default(),
            mismatch_log: flap_log::FlapLog::default(),
        }
    }

    /// A frame the segmenter was just given, with its state before and after.
    pub fn frame(
        &mut self,
        frame: Frame,
        before: Option<TimelineState>,
        after: Option<TimelineState>,
    ) {
        let mut out = std::mem::take(&mut self.out);
        self.packager.frame(frame, before, after, &mut out);
        if self.apply(out) {
            self.republish();
        }
    }

    /// A timeline marker the segmenter was given.
    pub fn marker(&mut self, payload: &[u8]) {
        self.packager.marker(payload);
    }

    /// The input changed under the stream.
    pub fn discontinuity(&mut self) {
        self.packager.discontinuity();
    }

    /// A segment the segmenter published: its LL-HLS twin is completed, to be taken
    /// with [`Feed::take_ready`] and stored with the TS segment; nothing is published
    /// until [`Feed::publish`] brings the window that holds it.
    pub fn segment(&mut self, segment: &Segment) {
        let mut out = std::mem::take(&mut self.out);
        self.packager.segment(segment, &mut out);
        self.apply(out);
    }

    /// The LL-HLS twin of segment `msn`, completed by [`Feed::segment`].
    pub fn take_ready(&mut self, msn: u64) -> Option<SegmentOut> {
        self.window.take_ready(msn)
    }

    /// Publishes the LL-HLS playlists with the stream's new window.
    pub fn publish(&mut self, stream: Arc<WindowSnapshot>) {
        self.stream = stream;
        self.republish();
    }

    fn republish(&self) {
        self.channel.publish(self.window.snapshot(&self.stream));
    }

    /// Applies the packager's outputs; true when what the playlists list changed.
    fn apply(&mut self, mut out: Vec<Output>) -> bool {
        if out.is_empty() {
            self.out = out;
            return false;
        }
        let mut changed = false;
        for output in out.drain(..) {
            if matches!(output, Output::Part(_)) {
                self.channel.counters.parts.fetch_add(1, Ordering::Relaxed);
            }
            changed |= self.window.apply(output);
        }
        self.out = out;
        let stats = self.packager.stats();
        if stats != self.stats {
            let c = &self.channel.counters;
            c.live_segments
                .store(stats.live_segments, Ordering::Relaxed);
            c.packaged_segments
                .store(stats.packaged_segments, Ordering::Relaxed);
            c.mismatches.store(stats.mismatches, Ordering::Relaxed);
            self.log_mismatches(&stats);
            self.stats = stats;
        }
        changed
    }

    /// A segment whose live parts differed from the TS segment (an input that flaps
    /// cuts one short at every break) is logged once when it starts, with reminders
    /// and a line when segments match again (flap-log), not once per segment.
    fn log_mismatches(&mut self, stats: &PackagerStats) {
        let now = std::time::Instant::now();
        if stats.mismatches > self.stats.mismatches {
            match self.mismatch_log.failed(now) {
                Some(flap_log::Failure::Down) => tracing::warn!(
                    mismatches = stats.mismatches,
                    "ll-hls live parts differed from the ts segment; packaged it again"
                ),
                Some(flap_log::Failure::StillDown { repeated, .. }) => tracing::warn!(
                    mismatches = stats.mismatches,
                    repeated,
                    "ll-hls live parts still differ from ts segments; packaged them again"
                ),
                None => tracing::debug!(
                    mismatches = stats.mismatches,
                    "ll-hls live parts differed from the ts segment; packaged it again"
                ),
            }
        } else if stats.live_segments > self.stats.live_segments {
            if let Some(recovery) = self.mismatch_log.recovered(now) {
                tracing::info!(
                    mismatched = recovery.failures,
                    "ll-hls live parts match the ts segments again"
                );
            }
        }
    }
}

/// Registers a stream's LL-HLS counters with the metrics registry:
/// `brdyun_llhls_{parts,live_segments,packaged_segments,mismatches}_total` and
/// `brdyun_llhls_blocked_requests` (waiting now).
pub fn register_metrics(ll: &Arc<LlChannel>, stream: &str, metrics: &crate::metrics::Metrics) {
    metrics.describe(
        "brdyun_llhls_mismatches_total",
        "counter",
        "LL-HLS segments whose live parts did not hold the TS segment's frames (replaced).",
    );
    metrics.describe(
        "brdyun_llhls_blocked_requests",
        "gauge",
        "LL-HLS blocking playlist and part requests waiting now.",
    );
    let ll = Arc::clone(ll);
    let stream = crate::metrics::label(stream);
    metrics.register(Box::new(move |out: &mut String| {
        use std::fmt::Write as _;
        let c = &ll.counters;
        for (name, value) in [
            ("parts_total", &c.parts),
            ("live_segments_total", &c.live_segments),
            ("packaged_segments_total", &c.packaged_segments),
            ("mismatches_total", &c.mismatches),
            ("blocked_requests", &c.blocked),
        ] {
            let value = value.load(Ordering::Relaxed);
            let _ = writeln!(out, "brdyun_llhls_{name}{{stream=\"{stream}\"}} {value}");
        }
    }));
}

#[cfg(test)]
mod tests;
