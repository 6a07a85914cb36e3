//! Placing an interpreter's own feed on the stream's timeline. An interpreter publishes
//! one language on its own (`<stream>@audio-<code>`), on its encoder's clock, which has
//! nothing to do with the floor's timestamps. The interpreter speaks as they hear the
//! floor, so the feed is placed by when it arrives: a feed frame arriving when the
//! floor's audio at PTS `p` arrives is placed at `p + offset`.
//!
//! Both clocks are read through arrival jitter: the floor's position at an instant is
//! taken from its least-delayed audio frame of the last [`WINDOW_MS`] ([`FloorClock`]);
//! a feed is anchored at its first frame, and at the end of each window its placement is
//! compared with the arrival of its least-delayed frame. The first window settles the
//! anchor; afterwards a placement more than [`MAX_DRIFT_TICKS`] off (the two encoders'
//! clocks drifting apart, a stalled link) is corrected by that much at once. Smaller
//! errors are left alone: every correction is a jump in the language's audio. The
//! placement's error is counted in [`FeedStats`] for the status API.
//!
//! No I/O, no runtime: the pipeline's cutter calls it with the wall clock.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use media::{Frame, TrackKind, PTS_MASK};

/// How long each clock's least-delayed frame is looked for, ms.
pub const WINDOW_MS: i64 = 2_000;

/// How far a feed's placement may be from its arrival before it is corrected: 0.25 s in
/// 90 kHz ticks.
pub const MAX_DRIFT_TICKS: i64 = 22_500;

/// A feed frame placed farther than this from its arrival (2 s) is not the feed's clock
/// drifting but jumping (a publisher restarting its timestamps, or a hostile one): the
/// feed is anchored afresh at that frame.
pub const MAX_JUMP_TICKS: i64 = 180_000;

/// The least a feed's frames advance: half an AAC frame at 96 kHz (480 ticks). A frame
/// closer to the previous one (a repeat, a publisher flooding timestamps that barely
/// move) is dropped, so a language's span holds at most as many frames as real audio.
pub const MIN_FRAME_ADVANCE_TICKS: i64 = 480;

/// 90 kHz ticks per ms.
const TICKS_PER_MS: i64 = 90;

/// `to - from` on the 33-bit PTS clock, the shorter way round.
fn delta(to: u64, from: u64) -> i64 {
    let d = to.wrapping_sub(from) & PTS_MASK;
    let d = i64::try_from(d).unwrap_or(i64::MAX);
    if d > (1 << 32) {
        d - (1 << 33)
    } else {
        d
    }
}

/// Whether a window opened at `opened_ms` is over at `now_ms` (a clock that went back
/// ends it too, rather than holding it open).
fn window_over(opened_ms: i64, now_ms: i64) -> bool {
    now_ms < opened_ms || now_ms - opened_ms >= WINDOW_MS
}

/// `pts + ticks` on the 33-bit PTS clock.
fn shift(pts: u64, ticks: i64) -> u64 {
    pts.wrapping_add_signed(ticks) & PTS_MASK
}

/// A clock read through arrival jitter: the reference `(pts, arrival)` is the
/// least-delayed frame of the last full window.
#[derive(Debug, Clone, Copy, Default)]
struct Reference {
    /// `(pts, arrival ms)` of the reference in use.
    current: Option<(u64, i64)>,
    /// The least-delayed frame of the window being filled, and when it opened.
    candidate: Option<(u64, i64)>,
    window_opened_ms: i64,
}

impl Reference {
    /// The PTS `at_ms` under `reference`.
    fn pts_at((pts, arrival_ms): (u64, i64), at_ms: i64) -> u64 {
        shift(pts, (at_ms - arrival_ms).saturating_mul(TICKS_PER_MS))
    }

    /// Notes a frame of `pts` arriving at `now_ms`.
    fn observe(&mut self, pts: u64, now_ms: i64) {
        let ahead = |(best_pts, best_ms)| delta(pts, Self::pts_at((best_pts, best_ms), now_ms)) > 0;
        match self.candidate {
            Some(best) if !ahead(best) => {}
            _ => self.candidate = Some((pts, now_ms)),
        }
        if self.current.is_none() {
            self.current = self.candidate;
            self.window_opened_ms = now_ms;
        }
        if window_over(self.window_opened_ms, now_ms) {
            self.current = self.candidate.take();
            self.window_opened_ms = now_ms;
        }
    }

    fn at(&self, at_ms: i64) -> Option<u64> {
        self.current.map(|reference| Self::pts_at(reference, at_ms))
    }
}

/// Where the floor is, by the arrival of its audio (its video when it has none).
#[derive(Debug, Default)]
pub struct FloorClock {
    audio: Reference,
    video: Reference,
    last_audio_ms: Option<i64>,
}

impl FloorClock {
    /// Notes a floor frame arriving at `now_ms`.
    pub fn observe(&mut self, frame: &Frame, now_ms: i64) {
        match frame.kind() {
            TrackKind::Audio => {
                self.audio.observe(frame.pts, now_ms);
                self.last_audio_ms = Some(now_ms);
            }
            TrackKind::Video => self.video.observe(frame.dts, now_ms),
        }
    }

    /// The floor's PTS at `at_ms`: by its audio while it has some, else its video.
    pub fn at(&self, at_ms: i64) -> Option<u64> {
        let audio_fresh = self
            .last_audio_ms
            .is_some_and(|last| at_ms - last <= WINDOW_MS);
        if audio_fresh {
            self.audio.at(at_ms)
        } else {
            self.video.at(at_ms)
        }
    }

    /// The floor changed under the stream: its clock is read afresh.
    pub fn reset(&mut self) {
        *self = Self::default();
    }
}

/// How a feed's placement goes, for the status API and metrics (shared with the
/// pipeline, which writes it).
#[derive(Debug, Default)]
pub struct FeedStats {
    /// Frames placed.
    pub frames: AtomicU64,
    /// Frames dropped because the floor's clock was not known yet.
    pub waiting: AtomicU64,
    /// Frames dropped because they did not advance past the previous one.
    pub crowded: AtomicU64,
    /// Times the feed's clock jumped (more than 2 s off its arrival) and was anchored
    /// afresh.
    pub jumps: AtomicU64,
    /// Times the feed was anchored afresh (its first frame, a new publish, the floor's
    /// change).
    pub anchors: AtomicU64,
    /// Corrections of a drifting placement.
    pub corrections: AtomicU64,
    /// The last window's error: placement minus arrival, ms.
    pub error_ms: AtomicI64,
    /// The largest error seen after the first window, ms (absolute).
    pub max_error_ms: AtomicU64,
}

/// An interpreter's feed as operators see it: its placement and its publish input.
#[derive(Debug, Clone)]
pub struct InterpreterView {
    /// The language it speaks.
    pub language: media::Language,
    /// Its placement against its arrival, ms.
    pub offset_ms: i32,
    /// How its placement goes.
    pub stats: std::sync::Arc<FeedStats>,
    /// Its publish input (`<stream>@audio-<code>`), as ingest reports it.
    pub input: tokio::sync::watch::Receiver<ingest::status::StreamInputStatus>,
}

impl InterpreterView {
    /// The feed's state for the status API: its publish input's state (`publishing`,
    /// or `connecting` — no one publishes —, `stalled`, `rejected`, `down`, with the
    /// reason), its publish name, the placement's offset, error and counters.
    pub fn json(&self, stream: &str) -> serde_json::Value {
        use ingest::status::InputState;
        let (state, reason) = match self.input.borrow().inputs.first().map(|i| &i.state) {
            Some(InputState::Live) => ("publishing", None),
            Some(InputState::Stalled) => ("stalled", None),
            Some(InputState::Rejected { reason }) => ("rejected", Some(reason.clone())),
            Some(InputState::Down { error }) => ("down", Some(error.clone())),
            Some(InputState::Connecting) | None => ("connecting", None),
        };
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        serde_json::json!({
            "publish": format!("{stream}@{}", packaging::languages::rendition_name(self.language)),
            "state": state,
            "reason": reason,
            "offset_ms": self.offset_ms,
            "frames": load(&self.stats.frames),
            "waiting_for_floor": load(&self.stats.waiting),
            "crowded": load(&self.stats.crowded),
            "anchors": load(&self.stats.anchors),
            "jumps": load(&self.stats.jumps),
            "corrections": load(&self.stats.corrections),
            "error_ms": self.stats.error_ms.load(Ordering::Relaxed),
            "max_error_ms": load(&self.stats.max_error_ms),
        })
    }
}

/// One feed's anchor and window.
#[derive(Debug, Clone, Copy)]
struct Anchor {
    feed_pts: u64,
    placed_pts: u64,
    settled: bool,
    /// The largest error (placement minus arrival) of the window, ticks, and when it
    /// opened.
    window_error: Option<i64>,
    window_opened_ms: i64,
}

/// Places one interpreter's feed on the floor's timeline; see the module docs.
#[derive(Debug)]
pub struct FeedPlacer {
    offset_ticks: i64,
    anchor: Option<Anchor>,
    /// The last frame placed, on the floor's timeline.
    last_placed: Option<u64>,
    stats: std::sync::Arc<FeedStats>,
}

impl FeedPlacer {
    /// A placer that puts the feed `offset_ms` from its arrival, counting in `stats`.
    pub fn new(offset_ms: i32, stats: std::sync::Arc<FeedStats>) -> Self {
        Self {
            offset_ticks: i64::from(offset_ms) * TICKS_PER_MS,
            anchor: None,
            last_placed: None,
            stats,
        }
    }

    /// The feed started again, or the floor changed: the next frame anchors it afresh.
    pub fn restart(&mut self) {
        self.anchor = None;
        self.last_placed = None;
    }

    /// The feed's `frame`, arrived at `now_ms` (a monotonic clock, ms), with its
    /// timestamps on the floor's timeline; `None` while the floor's clock is not known,
    /// or for a frame that does not advance past the previous one.
    pub fn place(&mut self, mut frame: Frame, floor: &FloorClock, now_ms: i64) -> Option<Frame> {
        let Some(floor_pts) = floor.at(now_ms) else {
            self.stats.waiting.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        let arrival = shift(floor_pts, self.offset_ticks);
        let jumped = self.anchor.is_some_and(|anchor| {
            let placed = shift(anchor.placed_pts, delta(frame.pts, anchor.feed_pts));
            delta(placed, arrival).abs() > MAX_JUMP_TICKS
        });
        if jumped {
            self.stats.jumps.fetch_add(1, Ordering::Relaxed);
            self.anchor = None;
        }
        let anchor = self.anchor.get_or_insert_with(|| {
            self.stats.anchors.fetch_add(1, Ordering::Relaxed);
            Anchor {
                feed_pts: frame.pts,
                placed_pts: arrival,
                settled: false,
                window_error: None,
                window_opened_ms: now_ms,
            }
        });
        let placed = shift(anchor.placed_pts, delta(frame.pts, anchor.feed_pts));
        let error = delta(placed, arrival);
        anchor.window_error = Some(anchor.window_error.map_or(error, |e| e.max(error)));
        if window_over(anchor.window_opened_ms, now_ms) {
            let window_error = anchor.window_error.take().unwrap_or(error);
            anchor.window_opened_ms = now_ms;
            let off = window_error.abs() > MAX_DRIFT_TICKS;
            if !anchor.settled || off {
                // The least-delayed frame of the window is where the feed truly is.
                anchor.placed_pts = shift(anchor.placed_pts, -window_error);
                if anchor.settled {
                    self.stats.corrections.fetch_add(1, Ordering::Relaxed);
                }
            }
            if anchor.settled {
                let ms = window_error / TICKS_PER_MS;
                self.stats.error_ms.store(ms, Ordering::Relaxed);
                self.stats
                    .max_error_ms
                    .fetch_max(ms.unsigned_abs(), Ordering::Relaxed);
            }
            anchor.settled = true;
        }
        let placed = shift(anchor.placed_pts, delta(frame.pts, anchor.feed_pts));
        if self
            .last_placed
            .is_some_and(|last| delta(placed, last) < MIN_FRAME_ADVANCE_TICKS)
        {
            self.stats.crowded.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        self.last_placed = Some(placed);
        let dts_offset = delta(frame.dts, frame.pts);
        frame.pts = placed;
        frame.dts = shift(placed, dts_offset);
        self.stats.frames.fetch_add(1, Ordering::Relaxed);
        Some(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use bytes::Bytes;
    use media::Codec;

    /// One AAC frame at 48 kHz, in ticks and (rounded) ms.
    const FRAME_TICKS: u64 = 1920;

    fn audio(pts: u64) -> Frame {
        Frame {
            codec: Codec::Aac,
            pts: pts & PTS_MASK,
            dts: pts & PTS_MASK,
            keyframe: true,
            data: Bytes::from_static(&[0xff, 0xf1]),
        }
    }

    /// Frame `i` of a clock starting at `base`, arriving at `t0 + i × 21.33 ms` plus
    /// `jitter(i)` ms.
    fn arrival(t0: i64, i: u64, jitter: i64) -> i64 {
        t0 + (i * FRAME_TICKS / 90) as i64 + jitter
    }

    /// A floor at PTS `floor_base` and a feed at `feed_base` that starts `late_ms` after
    /// it, both with `jitter` ms of arrival jitter; returns the placements, ticks after
    /// the floor's PTS at the feed frame's true send time.
    fn run(
        feed_rate: f64,
        jitter: fn(u64) -> i64,
        offset_ms: i32,
        frames: u64,
    ) -> (Vec<i64>, Arc<FeedStats>) {
        let t0 = 1_800_000_000_000;
        let floor_base = (1u64 << 33) - 500_000; // wraps during the run
        let feed_base = 7_000;
        let stats = Arc::new(FeedStats::default());
        let mut placer = FeedPlacer::new(offset_ms, Arc::clone(&stats));
        let mut floor = FloorClock::default();
        let mut out = Vec::new();
        for i in 0..frames {
            floor.observe(
                &audio(floor_base + i * FRAME_TICKS),
                arrival(t0, i, jitter(i)),
            );
            // The feed sends its frame i at the floor's frame i's time, on a clock of
            // its own rate.
            let feed_pts = feed_base + (i as f64 * FRAME_TICKS as f64 * feed_rate) as u64;
            let at = arrival(t0, i, jitter(i + 7));
            if let Some(placed) = placer.place(audio(feed_pts), &floor, at) {
                let truth = shift(floor_base + i * FRAME_TICKS, i64::from(offset_ms) * 90);
                out.push(delta(placed.pts, truth));
            }
        }
        (out, stats)
    }

    fn no_jitter(_: u64) -> i64 {
        0
    }

    fn jitter_40ms(i: u64) -> i64 {
        // Late by 0 to 39 ms, never early: a network queue.
        ((i * 7_919) % 40) as i64
    }

    #[test]
    fn a_steady_feed_is_placed_where_it_arrives_across_the_pts_wrap() {
        let (errors, stats) = run(1.0, no_jitter, 0, 3_000);
        assert_eq!(errors.len(), 3_000);
        assert!(errors.iter().all(|e| e.abs() <= 90), "{:?}", &errors[..10]);
        assert_eq!(stats.anchors.load(Ordering::Relaxed), 1);
        assert_eq!(stats.corrections.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn jitter_is_read_through_by_the_least_delayed_frame() {
        let (errors, stats) = run(1.0, jitter_40ms, 0, 3_000);
        // After the first window, within a few ms of the truth though each arrival is up
        // to 39 ms late.
        let settled = &errors[200..];
        let worst = settled.iter().map(|e| e.abs()).max().unwrap();
        assert!(worst <= 5 * 90, "worst {worst} ticks");
        assert!(stats.max_error_ms.load(Ordering::Relaxed) <= 40);
        assert_eq!(stats.corrections.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn an_offset_moves_the_feed() {
        let (errors, _) = run(1.0, no_jitter, -1_500, 1_000);
        assert!(errors[200..].iter().all(|e| e.abs() <= 90));
    }

    #[test]
    fn a_drifting_feed_clock_is_corrected_when_a_quarter_second_off() {
        // 1 % fast: 0.25 s off after 25 s of feed.
        let (errors, stats) = run(1.01, no_jitter, 0, 6_000);
        let worst = errors[200..].iter().map(|e| e.abs()).max().unwrap();
        assert!(worst <= MAX_DRIFT_TICKS + 3_000, "worst {worst} ticks");
        assert!(stats.corrections.load(Ordering::Relaxed) >= 3);
    }

    #[test]
    fn a_jumping_clock_is_anchored_afresh_and_crowded_frames_are_dropped() {
        let stats = Arc::new(FeedStats::default());
        let mut placer = FeedPlacer::new(0, Arc::clone(&stats));
        let mut floor = FloorClock::default();
        floor.observe(&audio(900_000), 1_000);
        assert_eq!(
            placer.place(audio(0), &floor, 1_000).map(|f| f.pts),
            Some(900_000)
        );
        // The same timestamp again, and one a tick later: no audio advances so little.
        assert!(placer.place(audio(0), &floor, 1_000).is_none());
        assert!(placer.place(audio(1), &floor, 1_000).is_none());
        assert_eq!(stats.crowded.load(Ordering::Relaxed), 2);
        // Timestamps jumping 6 hours ahead are placed where they arrive, not 6 h away.
        let jumped = placer
            .place(audio(6 * 3_600 * 90_000), &floor, 1_030)
            .expect("placed");
        assert_eq!(delta(jumped.pts, 900_000 + 30 * 90), 0);
        assert_eq!(stats.jumps.load(Ordering::Relaxed), 1);
        assert_eq!(stats.anchors.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn a_wall_clock_going_back_ends_the_window() {
        assert!(window_over(10_000, 9_000));
        assert!(!window_over(10_000, 11_999));
        assert!(window_over(10_000, 12_000));
    }

    #[test]
    fn a_feed_waits_for_the_floor_and_restarts_afresh() {
        let stats = Arc::new(FeedStats::default());
        let mut placer = FeedPlacer::new(0, Arc::clone(&stats));
        let mut floor = FloorClock::default();
        assert!(placer.place(audio(0), &floor, 1_000).is_none());
        assert_eq!(stats.waiting.load(Ordering::Relaxed), 1);
        floor.observe(&audio(900_000), 1_000);
        let first = placer.place(audio(5), &floor, 1_000).expect("placed");
        assert_eq!(first.pts, 900_000);
        // A new publish starts its clock at 0 again, 10 s later.
        placer.restart();
        floor.observe(&audio(1_800_000), 11_000);
        let again = placer.place(audio(0), &floor, 11_000).expect("placed");
        assert_eq!(again.pts, 1_800_000);
        assert_eq!(stats.anchors.load(Ordering::Relaxed), 2);
        assert_eq!(delta(5, (1 << 33) - 5), 10);
        assert_eq!(delta((1 << 33) - 5, 5), -10);
    }
}
