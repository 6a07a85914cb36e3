//! When a loop that retries something (an input pull, a relay, an MC or etcd link, a
//! mesh publish) should log, so a thing that stays down, or keeps flapping, costs a
//! handful of lines, not one per attempt.
//!
//! A loop keeps one [`FlapLog`] per thing it retries and tells it each outcome with the
//! current time; the answer says whether to write a line and what it should say:
//!
//! - the first failure after being up (or at start) is a [`Failure::Down`]: log it with
//!   its reason;
//! - further failures are counted and stay quiet, except one [`Failure::StillDown`] per
//!   reminder interval, with how many failed since the last line; the interval doubles
//!   after each reminder, up to a ceiling;
//! - the first success after being down is a [`Recovery`]: log how long it was down and
//!   how many attempts failed;
//! - a failure within the reminder interval after a recovery is a flap: quiet, like a
//!   failure while down. Until the thing has stayed up for a whole interval, it is
//!   spoken of once per interval only: a [`Failure::StillDown`] if it is down then, a
//!   [`Recovery`] if it is up (each with how often it flapped), and the interval keeps
//!   growing.
//!
//! Pure state over values: time is passed in, so tests drive it with a manual clock.

use std::time::{Duration, Instant};

/// The first reminder comes this long after the line that said the thing went down.
pub const FIRST_REMINDER: Duration = Duration::from_secs(60);
/// Reminders are never further apart than this.
pub const MAX_REMINDER: Duration = Duration::from_secs(15 * 60);

/// One retried thing's state as far as its logging goes.
#[derive(Debug, Clone)]
pub struct FlapLog {
    first_reminder: Duration,
    max_reminder: Duration,
    state: State,
}

#[derive(Debug, Clone)]
enum State {
    /// Up, and has been for a whole interval (or never failed).
    Up,
    /// Failing.
    Down(Episode),
    /// Up again and said so; a failure before `settled` is a flap.
    Recovered { episode: Episode, settled: Instant },
    /// Failed again soon after a recovery: quiet until the episode's next line.
    Flapping { episode: Episode, up: bool },
}

/// From the first failure until the thing has stayed up for a whole interval.
#[derive(Debug, Clone)]
struct Episode {
    since: Instant,
    failures: u64,
    recoveries: u64,
    /// Failures and recoveries since the last line written.
    unlogged_failures: u64,
    unlogged_recoveries: u64,
    /// No line before this (the last line's time plus `interval`).
    next_line: Instant,
    interval: Duration,
}

impl Episode {
    /// Wrote a line at `now`: the next one no sooner than the interval, which grows.
    fn wrote(&mut self, now: Instant, max: Duration) {
        self.unlogged_failures = 0;
        self.unlogged_recoveries = 0;
        self.next_line = now + self.interval;
        self.interval = (self.interval * 2).min(max);
    }
}

/// A failure to write a line about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The thing was up (or never tried) and failed now.
    Down,
    /// Still down (or flapping): a reminder.
    StillDown {
        /// How long since it first went down.
        down_for: Duration,
        /// Failures since the previous line (this one included).
        repeated: u64,
        /// Failures since it first went down.
        failures: u64,
        /// Times it came up (and failed again) since the previous line.
        recoveries: u64,
    },
}

/// A recovery to write a line about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recovery {
    /// How long since it first went down.
    pub down_for: Duration,
    /// How many attempts failed since it first went down.
    pub failures: u64,
    /// How many times it came up and failed again before this recovery.
    pub flaps: u64,
}

impl Default for FlapLog {
    fn default() -> Self {
        Self::new(FIRST_REMINDER, MAX_REMINDER)
    }
}

impl FlapLog {
    /// Reminders first `first_reminder` after going down, doubling up to `max_reminder`.
    pub fn new(first_reminder: Duration, max_reminder: Duration) -> Self {
        Self {
            first_reminder,
            max_reminder: max_reminder.max(first_reminder),
            state: State::Up,
        }
    }

    /// Whether the last outcome told was a failure.
    pub fn is_down(&self) -> bool {
        matches!(
            self.state,
            State::Down(_) | State::Flapping { up: false, .. }
        )
    }

    /// An attempt failed at `now`: `Some` when a line should be written.
    pub fn failed(&mut self, now: Instant) -> Option<Failure> {
        let state = std::mem::replace(&mut self.state, State::Up);
        let (state, line) = match state {
            State::Up => self.went_down(now),
            State::Recovered { settled, .. } if now >= settled => self.went_down(now),
            State::Recovered { episode, .. } => self.still_failing(episode, now, true),
            State::Down(episode) => self.still_failing(episode, now, false),
            State::Flapping { episode, .. } => self.still_failing(episode, now, true),
        };
        self.state = state;
        line
    }

    /// An attempt succeeded at `now`: `Some` when a line should be written.
    pub fn recovered(&mut self, now: Instant) -> Option<Recovery> {
        let max = self.max_reminder;
        let state = std::mem::replace(&mut self.state, State::Up);
        let (state, line) = match state {
            State::Up => (State::Up, None),
            State::Recovered { settled, .. } if now >= settled => (State::Up, None),
            recovered @ State::Recovered { .. } => (recovered, None),
            State::Down(mut episode) => {
                let line = Some(Recovery {
                    down_for: now.saturating_duration_since(episode.since),
                    failures: episode.failures,
                    flaps: episode.recoveries,
                });
                episode.recoveries += 1;
                let settled = now + episode.interval;
                episode.wrote(now, max);
                (State::Recovered { episode, settled }, line)
            }
            State::Flapping {
                mut episode,
                up: was_up,
            } => {
                if !was_up {
                    episode.recoveries += 1;
                    episode.unlogged_recoveries += 1;
                }
                if now < episode.next_line {
                    (State::Flapping { episode, up: true }, None)
                } else {
                    let line = Some(Recovery {
                        down_for: now.saturating_duration_since(episode.since),
                        failures: episode.failures,
                        flaps: episode.recoveries.saturating_sub(1),
                    });
                    let settled = now + episode.interval;
                    episode.wrote(now, max);
                    (State::Recovered { episode, settled }, line)
                }
            }
        };
        self.state = state;
        line
    }

    /// A new episode: the thing went down at `now`.
    fn went_down(&self, now: Instant) -> (State, Option<Failure>) {
        let mut episode = Episode {
            since: now,
            failures: 1,
            recoveries: 0,
            unlogged_failures: 0,
            unlogged_recoveries: 0,
            next_line: now,
            interval: self.first_reminder,
        };
        episode.wrote(now, self.max_reminder);
        (State::Down(episode), Some(Failure::Down))
    }

    /// One more failure in `episode` at `now` (`flapping`: it came up since it began).
    fn still_failing(
        &self,
        mut episode: Episode,
        now: Instant,
        flapping: bool,
    ) -> (State, Option<Failure>) {
        episode.failures = episode.failures.saturating_add(1);
        episode.unlogged_failures = episode.unlogged_failures.saturating_add(1);
        let line = (now >= episode.next_line).then(|| Failure::StillDown {
            down_for: now.saturating_duration_since(episode.since),
            repeated: episode.unlogged_failures,
            failures: episode.failures,
            recoveries: episode.unlogged_recoveries,
        });
        if line.is_some() {
            episode.wrote(now, self.max_reminder);
        }
        let state = if flapping {
            State::Flapping { episode, up: false }
        } else {
            State::Down(episode)
        };
        (state, line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    /// Fails every `step` from `start` for `span`, answering how many lines it wrote.
    fn fail_for(log: &mut FlapLog, start: Instant, span: Duration, step: Duration) -> usize {
        let mut lines = 0;
        let mut t = Duration::ZERO;
        while t < span {
            lines += usize::from(log.failed(start + t).is_some());
            t += step;
        }
        lines
    }

    #[test]
    fn a_failure_after_up_is_logged_then_quiet_until_the_reminder() {
        let t0 = Instant::now();
        let mut log = FlapLog::default();
        assert!(!log.is_down());
        assert_eq!(log.failed(t0), Some(Failure::Down));
        assert!(log.is_down());
        for i in 1..60 {
            assert_eq!(log.failed(t0 + i * S), None, "second {i}");
        }
        assert_eq!(
            log.failed(t0 + 60 * S),
            Some(Failure::StillDown {
                down_for: 60 * S,
                repeated: 60,
                failures: 61,
                recoveries: 0,
            })
        );
    }

    #[test]
    fn reminders_grow_to_the_ceiling() {
        let t0 = Instant::now();
        let mut log = FlapLog::new(10 * S, 40 * S);
        let mut logged = Vec::new();
        for i in 0..=200 {
            if log.failed(t0 + i * S).is_some() {
                logged.push(i);
            }
        }
        // Down at 0, then 10 s, 20 s, 40 s, 40 s ... apart.
        assert_eq!(logged, vec![0, 10, 30, 70, 110, 150, 190]);
    }

    #[test]
    fn a_recovery_says_how_long_and_how_many_failed() {
        let t0 = Instant::now();
        let mut log = FlapLog::default();
        assert_eq!(log.recovered(t0), None, "up from the start: nothing to say");
        assert_eq!(fail_for(&mut log, t0, 30 * S, S / 2), 1);
        assert_eq!(
            log.recovered(t0 + 31 * S),
            Some(Recovery {
                down_for: 31 * S,
                failures: 60,
                flaps: 0,
            })
        );
        assert!(!log.is_down());
        assert_eq!(log.recovered(t0 + 32 * S), None, "said once");
        // Up for longer than the interval (120 s after the first line's doubling):
        // settled, and a failure then is a new episode, logged again.
        assert_eq!(log.recovered(t0 + 200 * S), None);
        assert_eq!(log.failed(t0 + 201 * S), Some(Failure::Down));
    }

    #[test]
    fn a_failure_soon_after_a_recovery_is_a_flap_spoken_of_once_per_interval() {
        let t0 = Instant::now();
        let mut log = FlapLog::new(10 * S, 100 * S);
        assert_eq!(log.failed(t0), Some(Failure::Down));
        assert!(log.recovered(t0 + S).is_some());
        // Down and up every two seconds: quiet until the interval (20 s after the
        // recovery line) is over.
        let mut t = 2;
        while t < 20 {
            assert_eq!(log.failed(t0 + t * S), None, "flap at {t}");
            assert_eq!(log.recovered(t0 + (t + 1) * S), None, "up at {t}");
            t += 2;
        }
        assert!(!log.is_down());
        // The first outcome past it speaks for them all: here a failure.
        assert_eq!(
            log.failed(t0 + 22 * S),
            Some(Failure::StillDown {
                down_for: 22 * S,
                repeated: 10,
                failures: 11,
                recoveries: 9,
            })
        );
        // Then up past the next interval (40 s): a recovery with the flaps counted.
        assert_eq!(log.recovered(t0 + 30 * S), None);
        assert_eq!(
            log.recovered(t0 + 62 * S),
            Some(Recovery {
                down_for: 62 * S,
                failures: 11,
                flaps: 10,
            })
        );
    }

    #[test]
    fn twenty_failures_a_second_for_an_hour_is_a_handful_of_lines() {
        let t0 = Instant::now();
        let mut log = FlapLog::default();
        let lines = fail_for(&mut log, t0, 3600 * S, S / 20);
        // Down, then reminders at 1, 3, 7, 15, 30, 45 min.
        assert_eq!(lines, 7);
    }

    #[test]
    fn flapping_every_four_seconds_for_an_hour_is_a_handful_of_lines() {
        let t0 = Instant::now();
        let mut log = FlapLog::default();
        let mut lines = Vec::new();
        for cycle in 0..900u32 {
            let start = t0 + cycle * 4 * S;
            if log.failed(start).is_some() {
                lines.push(cycle * 4);
            }
            // Up from the next second, told every half second.
            for half in 2..8u32 {
                if log.recovered(start + half * S / 2).is_some() {
                    lines.push(cycle * 4 + half / 2);
                }
            }
        }
        // Down, up, then one line per growing interval.
        assert_eq!(lines.len(), 8, "{lines:?}");
        assert_eq!(lines[..2], [0, 1]);
    }
}
