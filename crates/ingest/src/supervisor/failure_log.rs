//! The supervisor's lines about inputs that fail and come back: one when an input goes
//! down (with the reason), a reminder with a repeat count at growing intervals while it
//! stays down, and one when media flows again (how long it was down, how many attempts
//! failed); an input that flaps (fails again soon after coming back) is spoken of once
//! per growing interval. An input whose source answers 503 ten times a second costs a
//! handful of lines an hour, not ten a second ([`flap_log::FlapLog`]).
//! An input counts as up when it delivers media, not when it connects.

use flap_log::{Failure, FlapLog};
use tokio::time::Instant;

/// One [`FlapLog`] per input of a stream, in configuration order.
pub(super) struct FailureLog {
    inputs: Vec<FlapLog>,
}

impl FailureLog {
    /// For `count` inputs, all up.
    pub(super) fn new(count: usize) -> Self {
        Self {
            inputs: (0..count).map(|_| FlapLog::default()).collect(),
        }
    }

    /// Input `index` (`input` in logs) of `stream` failed with `error` at `now`.
    pub(super) fn failed(
        &mut self,
        stream: &str,
        index: usize,
        input: &str,
        error: &dyn std::fmt::Display,
        now: Instant,
    ) {
        let Some(flap) = self.inputs.get_mut(index) else {
            return;
        };
        match flap.failed(now.into_std()) {
            Some(Failure::Down) => {
                tracing::warn!(stream = %stream, input = %input, error = %error, "input down");
            }
            Some(Failure::StillDown {
                down_for,
                repeated,
                failures,
                recoveries,
            }) => tracing::warn!(
                stream = %stream,
                input = %input,
                error = %error,
                down_s = down_for.as_secs(),
                repeated,
                failures,
                recoveries,
                "input still down"
            ),
            None => tracing::debug!(stream = %stream, input = %input, error = %error, "input down"),
        }
    }

    /// Input `index` of `stream` delivered media at `now`.
    pub(super) fn delivered(&mut self, stream: &str, index: usize, input: &str, now: Instant) {
        let Some(flap) = self.inputs.get_mut(index) else {
            return;
        };
        if let Some(recovery) = flap.recovered(now.into_std()) {
            tracing::info!(
                stream = %stream,
                input = %input,
                down_ms = recovery.down_for.as_millis() as u64,
                failures = recovery.failures,
                flaps = recovery.flaps,
                "input up"
            );
        }
    }
}
