//! The node's one wall clock. Every module that dates something (segments, passes,
//! experiments, the MC's records) reads it through a [`Clock`], the lowest layer of
//! the crate, so no module reaches into another's file for the time, and a test can
//! give a node a clock it sets and moves ([`Clock::manual`]).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// A wall clock in Unix milliseconds: the system's ([`Clock::system`], the default),
/// or a manual one that only moves when told ([`Clock::manual`]). Cloning shares it: a
/// manual clock moved through one clone has moved for all.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    manual: Option<Arc<AtomicI64>>,
}

impl Clock {
    /// The system's wall clock.
    pub fn system() -> Clock {
        Clock { manual: None }
    }

    /// A clock that reads `start_ms` until [`Clock::set`] or [`Clock::advance`] moves it.
    pub fn manual(start_ms: i64) -> Clock {
        Clock {
            manual: Some(Arc::new(AtomicI64::new(start_ms))),
        }
    }

    /// Now, in Unix milliseconds (0 before 1970, saturating far in the future).
    pub fn unix_ms(&self) -> i64 {
        match &self.manual {
            Some(ms) => ms.load(Ordering::Relaxed),
            None => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
        }
    }

    /// [`Clock::unix_ms`] as an unsigned count (what the experiments' records carry).
    pub fn unix_ms_u64(&self) -> u64 {
        u64::try_from(self.unix_ms()).unwrap_or(0)
    }

    /// Sets a manual clock to `ms`; false (and nothing changes) on the system clock.
    pub fn set(&self, ms: i64) -> bool {
        self.manual
            .as_ref()
            .map(|now| now.store(ms, Ordering::Relaxed))
            .is_some()
    }

    /// Moves a manual clock by `ms`; false (and nothing changes) on the system clock.
    pub fn advance(&self, ms: i64) -> bool {
        self.manual
            .as_ref()
            .map(|now| now.fetch_add(ms, Ordering::Relaxed))
            .is_some()
    }
}

/// The system clock now, in Unix milliseconds: for the layers that date what they make
/// before any node state exists (the pipeline's segments, the recorder's retention).
pub fn unix_ms() -> i64 {
    Clock::system().unix_ms()
}

/// [`unix_ms`] as an unsigned count.
pub fn unix_ms_u64() -> u64 {
    Clock::system().unix_ms_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told_and_clones_share_it() {
        let clock = Clock::manual(1_000);
        let shared = clock.clone();
        assert_eq!(shared.unix_ms(), 1_000);
        assert!(clock.advance(500));
        assert_eq!(shared.unix_ms(), 1_500);
        assert!(shared.set(-5));
        assert_eq!(clock.unix_ms(), -5);
        assert_eq!(clock.unix_ms_u64(), 0);
    }

    #[test]
    fn the_system_clock_is_now_and_cannot_be_moved() {
        let clock = Clock::system();
        let before = unix_ms();
        let read = clock.unix_ms();
        assert!(read >= before && read - before < 60_000, "{before} {read}");
        assert!(!clock.set(0));
        assert!(!clock.advance(1));
        assert!(clock.unix_ms() >= read);
    }
}
