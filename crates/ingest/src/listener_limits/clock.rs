//! The time rules of one connection, as a state machine over the time it is given:
//! until its publish is accepted a connection has a fixed deadline (bytes do not move
//! it); once publishing it must deliver a floor of bytes in every window.

use std::time::{Duration, Instant};

use super::{Cut, ListenerLimits};

/// One connection's deadline or byte window.
#[derive(Debug, Clone)]
pub struct PhaseClock {
    publish_deadline: Duration,
    min_bytes: u64,
    window: Duration,
    phase: Phase,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Not publishing: cut at `deadline`.
    Pending { deadline: Instant },
    /// Publishing: `bytes` received in the window ending at `window_end`.
    Publishing { window_end: Instant, bytes: u64 },
}

impl PhaseClock {
    /// The clock of a connection accepted at `accepted`.
    pub fn new(accepted: Instant, limits: &ListenerLimits) -> Self {
        Self {
            publish_deadline: limits.publish_deadline,
            min_bytes: limits.min_bytes_per_window,
            window: limits.byte_window,
            phase: Phase::Pending {
                deadline: accepted + limits.publish_deadline,
            },
        }
    }

    /// The publish was accepted at `now`: the first byte window starts.
    pub fn published(&mut self, now: Instant) {
        self.phase = Phase::Publishing {
            window_end: now + self.window,
            bytes: 0,
        };
    }

    /// The publisher stopped at `now` but kept the connection: it has the publish
    /// deadline again to publish anew.
    pub fn unpublished(&mut self, now: Instant) {
        self.phase = Phase::Pending {
            deadline: now + self.publish_deadline,
        };
    }

    /// `n` bytes arrived (they count only towards a publisher's window).
    pub fn received(&mut self, n: usize) {
        if let Phase::Publishing { bytes, .. } = &mut self.phase {
            *bytes = bytes.saturating_add(n as u64);
        }
    }

    /// True once a publish was accepted (and not stopped).
    pub fn is_publishing(&self) -> bool {
        matches!(self.phase, Phase::Publishing { .. })
    }

    /// When [`PhaseClock::check`] must be called next even if no byte arrives.
    pub fn next_check(&self) -> Instant {
        match self.phase {
            Phase::Pending { deadline } => deadline,
            Phase::Publishing { window_end, .. } => window_end,
        }
    }

    /// Applies the rules at `now`: past the publish deadline, or at the end of a window
    /// with too few bytes, the connection must be cut; a window with enough bytes is
    /// followed by a fresh one starting at `now` (so a late check never judges an
    /// empty window the edge itself skipped).
    ///
    /// # Errors
    /// The [`Cut`] to close the connection with.
    pub fn check(&mut self, now: Instant) -> Result<(), Cut> {
        match self.phase {
            Phase::Pending { deadline } if now >= deadline => {
                Err(Cut::PublishDeadline(self.publish_deadline))
            }
            Phase::Publishing { window_end, bytes } if now >= window_end => {
                if bytes < self.min_bytes {
                    return Err(Cut::TooSlow {
                        bytes,
                        min: self.min_bytes,
                        window: self.window,
                    });
                }
                self.published(now);
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn limits() -> ListenerLimits {
        ListenerLimits {
            publish_deadline: Duration::from_secs(10),
            min_bytes_per_window: 100,
            byte_window: Duration::from_secs(5),
            ..ListenerLimits::default()
        }
    }

    #[test]
    fn bytes_do_not_move_the_publish_deadline() {
        let t0 = Instant::now();
        let mut clock = PhaseClock::new(t0, &limits());
        for s in 0..10 {
            clock.received(1_000_000);
            assert_eq!(clock.check(t0 + Duration::from_secs(s)), Ok(()));
        }
        assert_eq!(clock.next_check(), t0 + Duration::from_secs(10));
        assert_eq!(
            clock.check(t0 + Duration::from_secs(10)),
            Err(Cut::PublishDeadline(Duration::from_secs(10)))
        );
    }

    proptest! {
        /// However the bytes of a connection that never publishes arrive, it is cut
        /// exactly when its deadline passes and not before.
        #[test]
        fn only_the_deadline_cuts_a_connection_that_does_not_publish(
            mut arrivals in proptest::collection::vec((0u64..20_000, 0usize..100_000), 0..50),
        ) {
            arrivals.sort_unstable();
            let t0 = Instant::now();
            let mut clock = PhaseClock::new(t0, &limits());
            for (ms, bytes) in arrivals {
                clock.received(bytes);
                let now = t0 + Duration::from_millis(ms);
                prop_assert_eq!(clock.check(now).is_err(), ms >= 10_000);
                prop_assert_eq!(clock.next_check(), t0 + Duration::from_secs(10));
            }
        }
    }

    #[test]
    fn a_publisher_must_fill_every_window() {
        let t0 = Instant::now();
        let mut clock = PhaseClock::new(t0, &limits());
        let published = t0 + Duration::from_secs(3);
        clock.published(published);
        assert!(clock.is_publishing());
        assert_eq!(clock.next_check(), published + Duration::from_secs(5));
        clock.received(60);
        clock.received(40);
        // Enough in the first window: a second one starts at the check.
        let first_end = published + Duration::from_secs(5);
        assert_eq!(clock.check(first_end), Ok(()));
        assert_eq!(clock.next_check(), first_end + Duration::from_secs(5));
        // Past the original publish deadline nothing is cut while windows are full.
        clock.received(99);
        assert_eq!(
            clock.check(first_end + Duration::from_secs(5)),
            Err(Cut::TooSlow {
                bytes: 99,
                min: 100,
                window: Duration::from_secs(5)
            })
        );
    }

    #[test]
    fn a_window_is_judged_only_at_its_end_and_unpublish_rearms_the_deadline() {
        let t0 = Instant::now();
        let mut clock = PhaseClock::new(t0, &limits());
        clock.published(t0);
        assert_eq!(clock.check(t0 + Duration::from_secs(4)), Ok(()));
        let stop = t0 + Duration::from_secs(4);
        clock.unpublished(stop);
        clock.received(1_000);
        assert!(!clock.is_publishing());
        assert_eq!(clock.check(stop + Duration::from_secs(9)), Ok(()));
        assert_eq!(
            clock.check(stop + Duration::from_secs(10)),
            Err(Cut::PublishDeadline(Duration::from_secs(10)))
        );
    }
}
