//! Holding a connection to the device contract (SHED-3): a device told to wait
//! `retryAfterSeconds` before sending a request class again, that sends it again
//! sooner and is refused again, is ignoring the back-pressure answer. Answering every
//! such request costs the node as much as serving a small one (a read, a parse and a
//! write), so under a flood the refusals alone would fill the node. A breach pauses the
//! connection instead: the node stops reading it for a short, bounded time, and TCP's
//! own flow control holds the device back.
//!
//! Only DEGRADED and NON_CRITICAL breaches pause: a connection is never held back
//! because of a CRITICAL request, so a player that retries its playlist too eagerly
//! keeps receiving its segments. The pause never outlasts the wait the device was
//! told, and is capped by the node's setting (1 s by default), so a third-party player
//! that repeats a refused beacon loses at most that on the connection.

use std::time::Duration;

use crate::backpressure::Advice;
use crate::priority::Bucket;
use crate::request::RouteKind;

/// What one connection has been told, per route kind: until when it must not send that
/// kind of request again. Times are `Duration`s since a caller-chosen origin.
#[derive(Debug, Clone, Default)]
pub struct ContractTracker {
    wait_until: [Duration; RouteKind::COUNT],
}

impl ContractTracker {
    /// A connection that has been told nothing yet.
    pub fn new() -> ContractTracker {
        ContractTracker::default()
    }

    /// Records that a request of `route` in `bucket` was refused with `advice` at
    /// `now`. Returns until when the connection should not be read: `Some` only when
    /// the request broke the contract (it came before the wait of an earlier refusal of
    /// the same route kind ended), its bucket is below CRITICAL and `max_pause` is not
    /// zero; the pause is `min(advice's wait, max_pause)` from `now`.
    pub fn refused(
        &mut self,
        route: RouteKind,
        bucket: Bucket,
        advice: Advice,
        now: Duration,
        max_pause: Duration,
    ) -> Option<Duration> {
        let wait = Duration::from_secs(u64::from(advice.retry_after_seconds));
        let slot = &mut self.wait_until[route as usize];
        let early = now < *slot;
        // The newest answer is the one the device must follow.
        *slot = now.saturating_add(wait);
        (early && bucket < Bucket::Critical && !max_pause.is_zero())
            .then(|| now.saturating_add(wait.min(max_pause)))
    }

    /// Until when the device was told to hold back requests of `route` (zero: never).
    pub fn wait_until(&self, route: RouteKind) -> Duration {
        self.wait_until[route as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SECOND: Duration = Duration::from_secs(1);

    fn advice(seconds: u32) -> Advice {
        Advice {
            max_retries: 0,
            retry_after_seconds: seconds,
        }
    }

    /// A telemetry beacon refused with a `wait`-second answer at `now`, pauses capped
    /// at `cap`.
    fn beacon(
        t: &mut ContractTracker,
        wait: u32,
        now: Duration,
        cap: Duration,
    ) -> Option<Duration> {
        t.refused(
            RouteKind::Telemetry,
            Bucket::NonCritical,
            advice(wait),
            now,
            cap,
        )
    }

    #[test]
    fn a_first_refusal_never_pauses() {
        let mut t = ContractTracker::new();
        let pause = beacon(&mut t, 30, SECOND, SECOND);
        assert_eq!(pause, None);
        assert_eq!(t.wait_until(RouteKind::Telemetry), 31 * SECOND);
    }

    #[test]
    fn an_early_repeat_pauses_for_the_capped_wait() {
        let mut t = ContractTracker::new();
        beacon(&mut t, 30, SECOND, SECOND);
        let now = SECOND + Duration::from_millis(5);
        let pause = beacon(&mut t, 30, now, SECOND);
        assert_eq!(pause, Some(now + SECOND));
        // The pause never outlasts the wait the device was told.
        let pause = beacon(&mut t, 1, now, 10 * SECOND);
        assert_eq!(pause, Some(now + SECOND));
    }

    #[test]
    fn a_repeat_after_the_wait_keeps_the_contract() {
        let mut t = ContractTracker::new();
        t.refused(
            RouteKind::ArchivePlaylist,
            Bucket::Degraded,
            advice(2),
            SECOND,
            SECOND,
        );
        let pause = t.refused(
            RouteKind::ArchivePlaylist,
            Bucket::Degraded,
            advice(2),
            3 * SECOND,
            SECOND,
        );
        assert_eq!(pause, None);
    }

    #[test]
    fn another_route_kind_keeps_the_contract() {
        let mut t = ContractTracker::new();
        beacon(&mut t, 30, SECOND, SECOND);
        let pause = t.refused(
            RouteKind::ArchiveSegment,
            Bucket::Degraded,
            advice(30),
            SECOND,
            SECOND,
        );
        assert_eq!(pause, None);
    }

    #[test]
    fn critical_and_disabled_never_pause() {
        let mut t = ContractTracker::new();
        for _ in 0..3 {
            let pause = t.refused(
                RouteKind::LivePlaylist,
                Bucket::Critical,
                advice(5),
                SECOND,
                SECOND,
            );
            assert_eq!(pause, None);
        }
        let mut t = ContractTracker::new();
        for _ in 0..3 {
            let pause = beacon(&mut t, 5, SECOND, Duration::ZERO);
            assert_eq!(pause, None);
        }
    }

    proptest! {
        /// Whatever the sequence of refusals, a pause is bounded by the cap and by the
        /// wait just told, only follows an early repeat, and never concerns CRITICAL.
        #[test]
        fn pauses_are_bounded_and_earned(
            steps in proptest::collection::vec(
                (0usize..RouteKind::COUNT, 0u8..3, 1u32..120, 0u64..5_000),
                1..60,
            ),
            cap_ms in 0u64..5_000,
        ) {
            let mut t = ContractTracker::new();
            let cap = Duration::from_millis(cap_ms);
            let mut now = Duration::ZERO;
            for (route, bucket, wait, gap_ms) in steps {
                now += Duration::from_millis(gap_ms);
                let route = RouteKind::ALL[route];
                let bucket = [Bucket::NonCritical, Bucket::Degraded, Bucket::Critical]
                    [usize::from(bucket)];
                let told_before = t.wait_until(route);
                let pause = t.refused(route, bucket, advice(wait), now, cap);
                if let Some(until) = pause {
                    prop_assert!(now < told_before, "paused without an early repeat");
                    prop_assert!(bucket != Bucket::Critical);
                    prop_assert!(until > now);
                    prop_assert!(until - now <= cap);
                    prop_assert!(until - now <= Duration::from_secs(u64::from(wait)));
                } else {
                    prop_assert!(
                        now >= told_before || bucket == Bucket::Critical || cap.is_zero()
                    );
                }
                prop_assert_eq!(
                    t.wait_until(route),
                    now + Duration::from_secs(u64::from(wait))
                );
            }
        }
    }
}
