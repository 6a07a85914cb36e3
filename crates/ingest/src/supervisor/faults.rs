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
    /// Counters and instant when frames last advanced (or the watch began).
    frames_mark: (Snapshot, Instant),
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
            frames_mark: (Snapshot::default(), now),
            video_mark: now,
            episodes: Default::default(),
        }
    }

    /// Why an input that delivers bytes delivers no frame, when it has done so for the
    /// source timeout (`now`, with counters `snap`); `None` otherwise.
    pub(crate) fn no_frames(&self, snap: &Snapshot, now: Instant) -> Option<String> {
        let (mark, since) = &self.frames_mark;
        let quiet = now.saturating_duration_since(*since) >= self.source_timeout;
        let bytes = snap.bytes.saturating_sub(mark.bytes);
        if !quiet || snap.frames != mark.frames || bytes == 0 {
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
        if snap.frames != self.frames_mark.0.frames {
            self.frames_mark = (snap, now);
        }
        if snap.video_frames != self.previous.video_frames || !snap.program.video {
            self.video_mark = now;
        }
        let mut changes = Vec::new();
        let no_video = snap.program.video
            && snap.frames != self.previous.frames
            && now.saturating_duration_since(self.video_mark) >= self.source_timeout;
        let conditions: [(bool, Option<String>); KINDS.len()] = [
            match state {
                InputState::Rejected { reason } => (true, Some(reason.clone())),
                _ => (false, None),
            },
            match state {
                InputState::Down { error } => (true, Some(error.clone())),
                InputState::Live => (false, None),
                // Retrying after a failure: the failure goes on until media comes.
                _ => (self.ongoing(1), None),
            },
            (*state == InputState::Stalled, None),
            (
                no_video || (self.ongoing(3) && snap.video_frames == self.previous.video_frames),
                Some("audio frames arrive, video frames do not".to_owned()),
            ),
            (snap.damage_errors() > self.previous.damage_errors(), None),
        ];
        for (i, (on, detail)) in conditions.into_iter().enumerate() {
            self.step(i, on, detail, &snap, now, &mut changes);
        }
        self.previous = snap;
        changes
    }

    fn ongoing(&self, i: usize) -> bool {
        self.episodes[i]
            .as_ref()
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
        let ongoing = self.ongoing(i);
        let slot = &mut self.episodes[i];
        match (ongoing, on) {
            (false, true) => {
                let at_start = if damage { self.previous } else { *snap };
                let mut report = FaultReport {
                    code,
                    detail: String::new(),
                    since: now,
                    ended: None,
                };
                report.detail = describe(code, detail.as_deref(), &at_start, snap);
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

    /// The fault to show: the gravest ongoing one (in the order of `KINDS`: no frames,
    /// down, stalled, no video, damaged), else the latest to end.
    pub(crate) fn report(&self) -> Option<FaultReport> {
        let reports = self.episodes.iter().flatten().map(|e| &e.report);
        reports
            .clone()
            .find(|r| r.ended.is_none())
            .or_else(|| reports.max_by_key(|r| r.ended))
            .cloned()
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

    #[test]
    fn bytes_without_frames_for_the_source_timeout_say_why() {
        let t0 = Instant::now();
        let mut faults = Faults::new(TIMEOUT, t0);
        faults.update(snap(0, 0, 0), &InputState::Connecting, t0);
        let later = t0 + TIMEOUT;
        assert_eq!(faults.no_frames(&snap(0, 0, 0), later), None, "no bytes");
        let garbage = snap(50_000, 0, 0);
        let reason = faults.no_frames(&garbage, later).expect("rejected");
        assert!(reason.contains("no MPEG-TS packet"), "{reason}");
        let no_psi = snap(50_000, 260, 0);
        let reason = faults.no_frames(&no_psi, later).expect("rejected");
        assert!(reason.contains("no PAT or PMT"), "{reason}");
        assert_eq!(
            faults.no_frames(&garbage, t0 + TIMEOUT / 2),
            None,
            "too early"
        );
    }

    #[test]
    fn frames_clear_the_rejection_window() {
        let t0 = Instant::now();
        let mut faults = Faults::new(TIMEOUT, t0);
        faults.update(snap(100, 1, 0), &InputState::Connecting, t0);
        let t1 = t0 + TIMEOUT;
        faults.update(snap(200, 2, 1), &InputState::Live, t1);
        assert_eq!(faults.no_frames(&snap(300, 3, 1), t1 + TIMEOUT / 2), None);
        assert!(faults.no_frames(&snap(300, 3, 1), t1 + TIMEOUT).is_some());
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
        assert!(faults
            .report()
            .unwrap()
            .detail
            .contains("1 transport_errors"));
        // Quiet for less than DAMAGE_QUIET: still going on.
        assert!(faults
            .update(s, &InputState::Live, t + Duration::from_secs(9))
            .is_empty());
        let changes = faults.update(s, &InputState::Live, t + DAMAGE_QUIET);
        assert!(
            matches!(changes.as_slice(), [FaultChange::Ended(r)] if r.code == InputFault::Damaged)
        );
        assert!(faults.report().unwrap().ended.is_some());
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
