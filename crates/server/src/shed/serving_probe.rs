//! One serving thread's queueing-delay probe as the overload monitor reads it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// What one serving thread's queueing-delay probe last read, and since when a probe
/// has been waiting, so the monitor reads the wait as it is now, even while a probe
/// stuck behind a long queue has not come back. Times are on the shedder's axis
/// ([`super::Shedder::now`]).
#[derive(Debug, Default)]
pub(crate) struct ServingProbeSlot {
    /// The last completed probe's wait, in nanoseconds.
    last_nanos: AtomicU64,
    /// When the probe in flight was sent, in nanoseconds plus 1 (0: none in flight).
    sent_at_nanos: AtomicU64,
}

impl ServingProbeSlot {
    /// A probe was sent at `at`.
    pub(crate) fn sent(&self, at: Duration) {
        let nanos = u64::try_from(at.as_nanos()).unwrap_or(u64::MAX - 1);
        self.sent_at_nanos.store(nanos + 1, Ordering::Relaxed);
    }

    /// The probe came back after `wait`.
    pub(crate) fn received(&self, wait: Duration) {
        let nanos = u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX);
        self.last_nanos.store(nanos, Ordering::Relaxed);
        self.sent_at_nanos.store(0, Ordering::Relaxed);
    }

    /// The wait at `now`: the last probe's, or the one in flight's so far if longer.
    pub(crate) fn wait(&self, now: Duration) -> Duration {
        let last = Duration::from_nanos(self.last_nanos.load(Ordering::Relaxed));
        match self.sent_at_nanos.load(Ordering::Relaxed) {
            0 => last,
            sent => last.max(now.saturating_sub(Duration::from_nanos(sent - 1))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A probe stuck behind a long queue counts its wait so far; once back, its
    /// reading stands until the next one is sent.
    #[test]
    fn a_probe_in_flight_counts_its_wait_so_far() {
        let ms = Duration::from_millis;
        let slot = ServingProbeSlot::default();
        assert_eq!(slot.wait(ms(50)), Duration::ZERO);
        slot.received(ms(4));
        assert_eq!(slot.wait(ms(500)), ms(4));
        slot.sent(ms(100));
        assert_eq!(slot.wait(ms(102)), ms(4), "the last reading while shorter");
        assert_eq!(slot.wait(ms(160)), ms(60));
        slot.received(ms(70));
        assert_eq!(slot.wait(ms(10_000)), ms(70));
        slot.sent(Duration::ZERO);
        assert_eq!(slot.wait(ms(90)), ms(90), "sent at the axis' origin");
    }
}
