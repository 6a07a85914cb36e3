//! When a loop that retries something (an input pull, a relay, an MC or etcd link, a
//! mesh publish) should log, so a thing that stays down costs a handful of lines, not
//! one per attempt.
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
//!   how many attempts failed.
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
    down: Option<Down>,
}

#[derive(Debug, Clone)]
struct Down {
    since: Instant,
    failures: u64,
    /// Failures since the last line written.
    unlogged: u64,
    next_reminder: Instant,
    interval: Duration,
}

/// A failure to write a line about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The thing was up (or never tried) and failed now.
    Down,
    /// Still down: a reminder.
    StillDown {
        /// How long it has been down.
        down_for: Duration,
        /// Failures since the previous line (this one included).
        repeated: u64,
        /// Failures since it went down.
        failures: u64,
    },
}

/// A recovery to write a line about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recovery {
    /// How long it was down.
    pub down_for: Duration,
    /// How many attempts failed while it was down.
    pub failures: u64,
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
            down: None,
        }
    }

    /// Whether the last outcome told was a failure.
    pub fn is_down(&self) -> bool {
        self.down.is_some()
    }

    /// An attempt failed at `now`: `Some` when a line should be written.
    pub fn failed(&mut self, now: Instant) -> Option<Failure> {
        let Some(down) = self.down.as_mut() else {
            self.down = Some(Down {
                since: now,
                failures: 1,
                unlogged: 0,
                next_reminder: now + self.first_reminder,
                interval: self.first_reminder,
            });
            return Some(Failure::Down);
        };
        down.failures = down.failures.saturating_add(1);
        down.unlogged = down.unlogged.saturating_add(1);
        if now < down.next_reminder {
            return None;
        }
        let repeated = std::mem::take(&mut down.unlogged);
        down.interval = (down.interval * 2).min(self.max_reminder);
        down.next_reminder = now + down.interval;
        Some(Failure::StillDown {
            down_for: now.saturating_duration_since(down.since),
            repeated,
            failures: down.failures,
        })
    }

    /// An attempt succeeded at `now`: `Some` when the thing was down.
    pub fn recovered(&mut self, now: Instant) -> Option<Recovery> {
        self.down.take().map(|down| Recovery {
            down_for: now.saturating_duration_since(down.since),
            failures: down.failures,
        })
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
            })
        );
        assert!(!log.is_down());
        assert_eq!(log.recovered(t0 + 32 * S), None, "said once");
        // Down again: a new state change, logged again, reminders from the start.
        assert_eq!(log.failed(t0 + 40 * S), Some(Failure::Down));
    }

    #[test]
    fn twenty_failures_a_second_for_an_hour_is_a_handful_of_lines() {
        let t0 = Instant::now();
        let mut log = FlapLog::default();
        let lines = fail_for(&mut log, t0, 3600 * S, S / 20);
        // Down, then reminders at 1, 3, 7, 15, 30, 45 min.
        assert_eq!(lines, 7);
    }
}
