//! Input faults as operators see them: which faults an input has (damage, bytes
//! without frames, a stall, a failed connection, a program without pictures), since
//! when, and what changed at each tick, so the supervisor can log a fault once when
//! it starts and once when it ends.
//!
//! Pure: it reads counter snapshots and the switcher's state at given instants.

use std::time::Duration;

use codes::InputFault;
use media::ts::ProgramView;
use tokio::time::Instant;

use crate::status::{is_damage_error, FaultReport, InputCounters, InputState, DAMAGE_KINDS};

/// How long an input must be free of new damage before its damage fault ends (so a
/// source that is damaged every few seconds logs one start and one end, not a line
/// per burst).
pub(crate) const DAMAGE_QUIET: Duration = Duration::from_secs(10);

/// The fault kinds tracked per input, in the order of [`Faults::episodes`].
const KINDS: [InputFault; 5] = [
    InputFault::NoFrames,
    InputFault::Down,
    InputFault::Stalled,
    InputFault::NoVideo,
    InputFault::Damaged,
];

/// One input's counters at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub(crate) bytes: u64,
    pub(crate) packets: u64,
    pub(crate) frames: u64,
    pub(crate) video_frames: u64,
    pub(crate) damage: [u64; DAMAGE_KINDS.len()],
    pub(crate) program: ProgramView,
}

impl Snapshot {
    /// Reads an input's counters now.
    pub(crate) fn of(counters: &InputCounters) -> Self {
        Snapshot {
            bytes: InputCounters::get(&counters.bytes),
            packets: InputCounters::get(&counters.packets),
            frames: InputCounters::get(&counters.frames),
            video_frames: InputCounters::get(&counters.video_frames),
            damage: counters.damage_now(),
            program: counters.program(),
        }
    }

    fn damage_errors(&self) -> u64 {
        (0..DAMAGE_KINDS.len())
            .filter(|&k| is_damage_error(k))
            .map(|k| self.damage[k])
            .sum()
    }
}

/// A change of an input's faults, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FaultChange {
    /// A fault began.
    Started(FaultReport),
    /// A fault ended (the report carries its end).
    Ended(FaultReport),
}

/// One fault's ongoing or last episode.
#[derive(Debug, Clone)]
struct Episode {
    report: FaultReport,
    /// Counters when it began (for damage: what this episode added).
    at_start: Snapshot,
    /// Last time its condition was seen (for damage: the last new damage).
    last_seen: Instant,
}

/// The faults of one input.
#[derive(Debug)]
pub(crate) struct Faults {
    source_timeout: Duration,
    previous: Snapshot,
    /// When `previous` was read.
    previous_at: Instant,
    /// The current run of ticks in which bytes arrived and no frame did: the counters
    /// and instant before its first tick.
    byte_run: Option<(Snapshot, Instant)>,
    /// Instant when video frames last advanced (or the program last lacked video).
    video_mark: Instant,
    episodes: [Option<Episode>; KINDS.len()],
}

impl Faults {
    /// A watch that has seen nothing yet.
    pub(crate) fn new(source_timeout: Duration, now: Instant) -> Self {
        Faults {
            source_timeout,
            previous: Snapshot::default(),
            previous_at: now,
            byte_run: None,
            video_mark: now,
            episodes: Default::default(),
        }
    }

    /// Why an input that delivers bytes delivers no frame, when bytes have kept
    /// arriving without a frame for the source timeout (`now`, with counters `snap`);
    /// `None` otherwise. A tick without bytes starts the count again, so a source that
    /// comes back after an outage is judged on its new bytes alone, and one whose bytes
    /// stopped is stalled, not rejected.
    pub(crate) fn no_frames(&self, snap: &Snapshot, now: Instant) -> Option<String> {
        if snap.bytes == self.previous.bytes || snap.frames != self.previous.frames {
            return None;
        }
        let (mark, since) = self
            .byte_run
            .as_ref()
            .map_or((&self.previous, &self.previous_at), |(m, t)| (m, t));
        let quiet = now.saturating_duration_since(*since) >= self.source_timeout;
        let bytes = snap.bytes.saturating_sub(mark.bytes);
        if !quiet || snap.frames != mark.frames {
            return None;
        }
        let packets = snap.packets.saturating_sub(mark.packets);
        let seconds = now.saturating_duration_since(*since).as_secs();
        Some(if packets == 0 {
            format!("{bytes} bytes in {seconds} s hold no MPEG-TS packet (no sync)")
        } else if !snap.program.found {
            format!("{packets} packets in {seconds} s carry no program (no PAT or PMT)")
        } else if !snap.program.video && !snap.program.audio {
            "the program lists no H.264, H.265 or AAC stream".to_owned()
        } else {
            let damage = damage_words(&mark.damage, &snap.damage);
            if damage.is_empty() {
                format!("{packets} packets in {seconds} s complete no PES with a timestamp")
            } else {
                format!("{packets} packets in {seconds} s give no frame: {damage}")
            }
        })
    }

    /// Updates the faults from the counters and the switcher's state at `now`; returns
    /// what started and ended.
    pub(crate) fn update(
        &mut self,
        snap: Snapshot,
        state: &InputState,
        now: Instant,
    ) -> Vec<FaultChange> {
        if snap.frames != self.previous.frames || snap.bytes == self.previous.bytes {
            self.byte_run = None;
        } else if self.byte_run.is_none() {
            self.byte_run = Some((self.previous, self.previous_at));
        }
        if snap.video_frames != self.previous.video_frames || !snap.program.video {
            self.video_mark = now;
        }
        let mut changes = Vec::new();
        let live = *state == InputState::Live;
        let video_quiet = snap.video_frames == self.previous.video_frames;
        let no_video = snap.program.video
            && live
            && video_quiet
            && (self.ongoing(InputFault::NoVideo)
                || (snap.frames != self.previous.frames
                    && now.saturating_duration_since(self.video_mark) >= self.source_timeout));
        let conditions: [(bool, Option<String>); KINDS.len()] = [
            match state {
                InputState::Rejected { reason } => (true, Some(reason.clone())),
                InputState::Live => (false, None),
                // Reconnected, no frame yet: still without frames.
                _ => (self.ongoing(InputFault::NoFrames), None),
            },
            match state {
                InputState::Down { error } => (true, Some(error.clone())),
                InputState::Live => (false, None),
                // Retrying after a failure: the failure goes on until media comes.
                _ => (self.ongoing(InputFault::Down), None),
            },
            (*state == InputState::Stalled, None),
            (
                no_video,
                Some("audio frames arrive, video frames do not".to_owned()),
            ),
            (snap.damage_errors() > self.previous.damage_errors(), None),
        ];
        for (i, (on, detail)) in conditions.into_iter().enumerate() {
            self.step(i, on, detail, &snap, now, &mut changes);
        }
        self.previous = snap;
        self.previous_at = now;
        changes
    }

    /// Whether the episode of `code` (one of `KINDS`) goes on.
    fn ongoing(&self, code: InputFault) -> bool {
        KINDS
            .iter()
            .position(|&k| k == code)
            .and_then(|i| self.episodes[i].as_ref())
            .is_some_and(|e| e.report.ended.is_none())
    }

    fn step(
        &mut self,
        i: usize,
        on: bool,
        detail: Option<String>,
        snap: &Snapshot,
        now: Instant,
        changes: &mut Vec<FaultChange>,
    ) {
        let code = KINDS[i];
        let damage = code == InputFault::Damaged;
        let ongoing = self.ongoing(code);
        let slot = &mut self.episodes[i];
        match (ongoing, on) {
            (false, true) => {
                let at_start = if damage { self.previous } else { *snap };
                let report = FaultReport {
                    code,
                    detail: describe(code, detail.as_deref(), &at_start, snap),
                    since: now,
                    ended: None,
                };
                *slot = Some(Episode {
                    report: report.clone(),
                    at_start,
                    last_seen: now,
                });
                changes.push(FaultChange::Started(report));
            }
            (true, true) => {
                if let Some(e) = slot.as_mut() {
                    e.last_seen = now;
                    e.report.detail = describe(code, detail.as_deref(), &e.at_start, snap);
                }
            }
            (true, false) => {
                let Some(e) = slot.as_mut() else { return };
                // Damage ends after a quiet spell; the other faults when their
                // condition goes.
                if damage && now.saturating_duration_since(e.last_seen) < DAMAGE_QUIET {
                    return;
                }
                e.report.ended = Some(now);
                changes.push(FaultChange::Ended(e.report.clone()));
            }
            (false, false) => {}
        }
    }

    /// Each kind's latest fault: the ongoing ones first, gravest first (in the order
    /// of `KINDS`: no frames, down, stalled, no video, damaged), then the ended ones,
    /// latest end first.
    pub(crate) fn reports(&self) -> Vec<FaultReport> {
        let reports = self.episodes.iter().flatten().map(|e| &e.report);
        let mut ended: Vec<&FaultReport> = reports.clone().filter(|r| r.ended.is_some()).collect();
        ended.sort_by_key(|r| std::cmp::Reverse(r.ended));
        reports
            .filter(|r| r.ended.is_none())
            .chain(ended)
            .cloned()
            .collect()
    }
}

/// A fault in words: the code's message, then what was seen.
fn describe(code: InputFault, detail: Option<&str>, start: &Snapshot, now: &Snapshot) -> String {
    let seen = match (code, detail) {
        (InputFault::Damaged, _) => damage_words(&start.damage, &now.damage),
        (_, Some(detail)) => detail.to_owned(),
        (_, None) => String::new(),
    };
    if seen.is_empty() {
        code.message().to_owned()
    } else {
        format!("{}: {seen}", code.message())
    }
}

/// The damage added between two counter readings, by kind: "3 cc_errors, 1
/// transport_errors".
fn damage_words(before: &[u64], after: &[u64]) -> String {
    DAMAGE_KINDS
        .iter()
        .zip(before.iter().zip(after))
        .map(|(kind, (b, a))| (kind, a.saturating_sub(*b)))
        .filter(|(_, n)| *n > 0)
        .map(|(kind, n)| format!("{n} {kind}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMEOUT: Duration = Duration::from_secs(2);

    fn snap(bytes: u64, packets: u64, frames: u64) -> Snapshot {
        Snapshot {
            bytes,
            packets,
            frames,
            ..Snapshot::default()
        }
    }

    const TICK: Duration = Duration::from_millis(500);

    /// Ticks `faults` with `bytes` more bytes (and `packets` more packets) each tick
    /// until `until`; returns the last snapshot and instant.
    fn feed(
        faults: &mut Faults,
        mut s: Snapshot,
        mut t: Instant,
        until: Instant,
        bytes: u64,
        packets: u64,
    ) -> (Snapshot, Instant) {
        while t + TICK <= until {
            t += TICK;
            s.bytes += bytes;
            s.packets += packets;
            faults.update(s, &InputState::Connecting, t);
        }
        (s, t)
    }

    fn more(s: Snapshot, bytes: u64, packets: u64) -> Snapshot {
        Snapshot {
            bytes: s.bytes + bytes,
            packets: s.packets + packets,
            ..s
        }
    }

    #[test]
    fn bytes_without_frames_for_the_source_timeout_say_why() {
        let t0 = Instant::now();
        let mut faults = Faults::new(TIMEOUT, t0);
        // An hour of silence before the source starts does not count.
        let hour = t0 + Duration::from_secs(3600);
        let (s, t) = feed(&mut faults, snap(0, 0, 0), t0, hour, 0, 0);
        assert_eq!(
            faults.no_frames(&more(s, 1000, 0), t + TICK),
            None,
            "too early"
        );
        let (s, t) = feed(&mut faults, s, t, t + TIMEOUT - TICK, 1000, 0);
        let reason = faults
            .no_frames(&more(s, 1000, 0), t + TICK)
            .expect("rejected");
        assert!(reason.contains("no MPEG-TS packet"), "{reason}");
        let reason = faults
            .no_frames(&more(s, 1000, 5), t + TICK)
            .expect("rejected");
        assert!(reason.contains("no PAT or PMT"), "{reason}");
        // Bytes that stop are not judged: a source that went quiet is stalled.
        assert_eq!(faults.no_frames(&s, t + TICK), None);
    }

    #[test]
    fn a_pause_or_a_frame_starts_the_count_again() {
        let t0 = Instant::now();
        let mut faults = Faults::new(TIMEOUT, t0);
        let (s, t) = feed(&mut faults, snap(0, 0, 0), t0, t0 + TIMEOUT / 2, 100, 1);
        // A tick without bytes, then bytes again: the count starts afresh.
        let (s, t) = feed(&mut faults, s, t, t + TICK, 0, 0);
        let (s, t) = feed(&mut faults, s, t, t + TIMEOUT - TICK * 2, 100, 1);
        assert_eq!(faults.no_frames(&more(s, 100, 1), t + TICK), None);
        // A frame does too.
        let framed = Snapshot {
            frames: s.frames + 1,
            ..more(s, 100, 1)
        };
        faults.update(framed, &InputState::Live, t + TICK);
        let (s, t) = feed(&mut faults, framed, t + TICK, t + TIMEOUT - TICK, 100, 1);
        assert_eq!(faults.no_frames(&more(s, 100, 1), t + TICK), None);
        let (s, t) = feed(&mut faults, s, t, t + TICK, 100, 1);
        assert!(faults.no_frames(&more(s, 100, 1), t + TICK).is_some());
    }
    #[test]
    fn damage_starts_once_and_ends_after_a_quiet_spell() {
        let t0 = Instant::now();
        let mut faults = Faults::new(TIMEOUT, t0);
        let mut s = snap(0, 0, 0);
        assert!(faults.update(s, &InputState::Live, t0).is_empty());
        s.damage[1] = 3;
        let changes = faults.update(s, &InputState::Live, t0 + Duration::from_secs(1));
        let [FaultChange::Started(report)] = changes.as_slice() else {
            panic!("{changes:?}")
        };
        assert_eq!(report.code, InputFault::Damaged);
        assert!(
            report.detail.ends_with(": 3 cc_errors"),
            "{}",
            report.detail
        );
        // More damage 5 s later: the same episode, no new line.
        s.damage[2] = 1;
        let t = t0 + Duration::from_secs(6);
        assert!(faults.update(s, &InputState::Live, t).is_empty());
        assert!(faults.reports()[0].detail.contains("1 transport_errors"));
        // Quiet for less than DAMAGE_QUIET: still going on.
        assert!(faults
            .update(s, &InputState::Live, t + Duration::from_secs(9))
            .is_empty());
        let changes = faults.update(s, &InputState::Live, t + DAMAGE_QUIET);
        assert!(
            matches!(changes.as_slice(), [FaultChange::Ended(r)] if r.code == InputFault::Damaged)
        );
        assert!(faults.reports()[0].ended.is_some());
    }

    #[test]
    fn audio_without_video_from_a_program_with_video_is_a_fault() {
        let t0 = Instant::now();
        let mut faults = Faults::new(TIMEOUT, t0);
        let mut s = snap(0, 0, 0);
        s.program = ProgramView {
            found: true,
            video: true,
            audio: true,
        };
        let mut changes = Vec::new();
        for tick in 1..=8u64 {
            s.frames += 10;
            changes.extend(faults.update(
                s,
                &InputState::Live,
                t0 + Duration::from_millis(500 * tick),
            ));
        }
        assert!(
            matches!(changes.as_slice(), [FaultChange::Started(r)] if r.code == InputFault::NoVideo),
            "{changes:?}"
        );
        s.video_frames = 1;
        let changes = faults.update(s, &InputState::Live, t0 + Duration::from_secs(5));
        assert!(
            matches!(changes.as_slice(), [FaultChange::Ended(r)] if r.code == InputFault::NoVideo)
        );
    }

    #[test]
    fn a_failed_connection_is_a_fault_until_media_comes() {
        let t0 = Instant::now();
        let mut faults = Faults::new(TIMEOUT, t0);
        let down = InputState::Down {
            error: "connection refused".into(),
        };
        let changes = faults.update(snap(0, 0, 0), &down, t0);
        assert!(
            matches!(changes.as_slice(), [FaultChange::Started(r)] if r.detail.ends_with("connection refused"))
        );
        assert!(faults
            .update(snap(0, 0, 0), &InputState::Connecting, t0)
            .is_empty());
        let changes = faults.update(snap(10, 1, 1), &InputState::Live, t0);
        assert!(
            matches!(changes.as_slice(), [FaultChange::Ended(r)] if r.code == InputFault::Down)
        );
    }
}
