//! The bound on the probes' exemption from shedding: the process answers at most
//! [`PROBES_PER_SECOND`] probes a second unshed and uncounted; beyond that, a probe is
//! classified (as an operator request) and counted like any other, so a flood of
//! `/healthz` or `/readyz` is shed under load instead of crowding out viewers. The
//! watchdog's own probe is always exempt (`crate::http::conn_limits::ProbePeer`).
//!
//! One fixed one-second window for the process, in one atomic word: no lock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// Probes a second let through unshed: far above what load balancers, Kubernetes and
/// the watchdog ask (a few a second each), far below what a flood sends.
pub const PROBES_PER_SECOND: u32 = 500;

/// The window's second (high 32 bits) and the probes let through in it (low 32).
static WINDOW: AtomicU64 = AtomicU64::new(0);

fn second_now() -> u32 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let epoch = *EPOCH.get_or_init(Instant::now);
    u32::try_from(epoch.elapsed().as_secs()).unwrap_or(u32::MAX)
}

/// Whether one more probe may pass unshed now (and counts it).
pub fn take() -> bool {
    take_at(second_now(), PROBES_PER_SECOND)
}

fn take_at(second: u32, limit: u32) -> bool {
    let mut current = WINDOW.load(Ordering::Relaxed);
    loop {
        let (window, used) = ((current >> 32) as u32, current as u32);
        let used = if window == second { used } else { 0 };
        if used >= limit {
            return false;
        }
        let next = (u64::from(second) << 32) | u64::from(used + 1);
        match WINDOW.compare_exchange_weak(current, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(seen) => current = seen,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Beyond the limit in one second nothing passes; the next second starts afresh.
    #[test]
    fn a_second_lets_the_limit_through_and_no_more() {
        // Far-off seconds, so that probes of other tests in this process do not count.
        let second = u32::MAX - 7;
        let passed = (0..50).filter(|_| take_at(second, 20)).count();
        assert_eq!(passed, 20);
        assert!(!take_at(second, 20));
        assert!(take_at(second + 1, 20), "a new window");
    }
}
