//! Device pauses (SHED-3): how long a connection that broke the device contract (it
//! repeated a refused request before the `{"maxRetries","retryAfterSeconds"}` answer
//! allowed) is not read, and how many were paused. The pause itself is the
//! connection's [`super::gate::ConnectionGate`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::policy::unit_draw;

/// The pause dials of `[shedding]` and the count of pauses.
#[derive(Debug)]
pub struct DevicePauses {
    violator: Duration,
    marginal: Duration,
    count: AtomicU64,
}

impl DevicePauses {
    /// Pauses of at most `violator` (0: never pause), and at most `marginal` (capped
    /// by `violator`) after a refusal at the margin.
    pub fn new(violator: Duration, marginal: Duration) -> DevicePauses {
        DevicePauses {
            violator,
            marginal: marginal.min(violator),
            count: AtomicU64::new(0),
        }
    }

    /// The longest pause for one breach of the device contract: `[shedding]
    /// marginal_pause_ms` after a refusal at the margin (`partial`), short so holding
    /// part of a class stays in step with the level; `violator_pause_ms` otherwise
    /// (zero never pauses). Drawn evenly from the upper half of that setting, from the
    /// node's request count `requests` and the pauses so far, so connections paused
    /// together (one flood, one spike) do not come back together and swing the node
    /// between idle and full.
    pub fn pause_for(&self, partial: bool, requests: u64) -> Duration {
        let longest = if partial {
            self.marginal
        } else {
            self.violator
        };
        let seq = requests ^ self.count.load(Ordering::Relaxed).rotate_left(32);
        longest.mul_f64(0.5 + 0.5 * unit_draw(seq))
    }

    /// Counts a connection paused for breaking the device contract.
    pub fn count_pause(&self) {
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Pauses so far of connections that broke the device contract.
    pub fn connection_pauses(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pauses spread over the upper half of their maximum, so paused connections come
    /// back at different times.
    #[test]
    fn pauses_spread_over_the_upper_half_of_their_maximum() {
        let ms = Duration::from_millis;
        let pauses = DevicePauses::new(ms(1000), ms(100));
        let (mut shortest, mut longest) = (Duration::MAX, Duration::ZERO);
        for requests in 0..500 {
            let pause = pauses.pause_for(false, requests);
            pauses.count_pause();
            assert!((ms(500)..=ms(1000)).contains(&pause), "{pause:?}");
            shortest = shortest.min(pause);
            longest = longest.max(pause);
            let marginal = pauses.pause_for(true, requests);
            assert!((ms(50)..=ms(100)).contains(&marginal));
        }
        assert!(shortest < ms(550) && longest > ms(950));
        assert_eq!(pauses.connection_pauses(), 500);
    }

    #[test]
    fn the_marginal_pause_is_capped_by_the_violator_pause_and_zero_never_pauses() {
        let ms = Duration::from_millis;
        let pauses = DevicePauses::new(ms(40), ms(100));
        assert!((0..100).all(|r| pauses.pause_for(true, r) <= ms(40)));
        let never = DevicePauses::new(Duration::ZERO, ms(100));
        assert!((0..100).all(|r| never.pause_for(false, r) == Duration::ZERO));
    }
}
