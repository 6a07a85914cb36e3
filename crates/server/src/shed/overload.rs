//! The overload monitor: the I/O half of overload detection. It samples host CPU
//! utilisation from `/proc/stat`, probes the runtime's queueing delay (how long a
//! freshly spawned task waits before it first runs) and, every tick, feeds them with
//! the in-flight count and the adaptive limit to [`shed::OverloadEstimator`], then
//! publishes the level the request path reads.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use shed::{OverloadEstimator, OverloadInputs};
use tokio::time::{Instant, MissedTickBehavior};

use super::shedder::Shedder;

/// Cumulative CPU time counters from the aggregate `cpu` line of `/proc/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuTimes {
    /// All jiffies (user, nice, system, idle, iowait, irq, softirq, steal).
    pub total: u64,
    /// Idle and iowait jiffies.
    pub idle: u64,
}

/// Parses the first (`cpu `) line of `/proc/stat`; `None` when it is missing or
/// malformed. Never panics, whatever the text.
pub fn parse_proc_stat(text: &str) -> Option<CpuTimes> {
    let line = text.lines().next()?;
    let mut fields = line.split_ascii_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    // user nice system idle iowait irq softirq steal; guest time is already in user.
    let mut values = [0u64; 8];
    let mut count = 0;
    for (slot, field) in values.iter_mut().zip(fields) {
        *slot = field.parse().ok()?;
        count += 1;
    }
    if count < 4 {
        return None;
    }
    let total = values.iter().try_fold(0u64, |acc, v| acc.checked_add(*v))?;
    let idle = values[3].checked_add(values[4])?;
    Some(CpuTimes { total, idle })
}

/// Utilisation between two samples, in 0..=1; `None` when no time passed (or the
/// counters went backwards).
pub fn utilisation(before: CpuTimes, after: CpuTimes) -> Option<f64> {
    let total = after.total.checked_sub(before.total)?;
    let idle = after.idle.checked_sub(before.idle)?;
    if total == 0 {
        return None;
    }
    let busy = total.saturating_sub(idle);
    Some((busy as f64 / total as f64).clamp(0.0, 1.0))
}

fn read_cpu() -> Option<CpuTimes> {
    // A small in-memory file: reading it inline costs microseconds.
    match std::fs::read_to_string("/proc/stat") {
        Ok(text) => parse_proc_stat(&text),
        Err(error) => {
            tracing::debug!(%error, "cpu sampling unavailable");
            None
        }
    }
}

/// How long a task spawned now waits before the runtime first polls it.
async fn probe_queue_delay() -> Duration {
    let sent = Instant::now();
    tokio::spawn(async move { sent.elapsed() })
        .await
        .unwrap_or_default()
}

impl Shedder {
    /// Runs the overload monitor until `shutdown` completes: every `tick_ms` it
    /// recomputes and publishes the overload level and drops expired fault rules; every
    /// `cpu_sample_ms` it re-samples CPU. Only one monitor runs per shedder; a second
    /// call returns at once. The lead's node wiring spawns this once per node.
    pub async fn run_monitor(self: Arc<Self>, shutdown: impl Future<Output = ()>) {
        if !self.claim_monitor() {
            tracing::warn!("shedding monitor already running");
            return;
        }
        let mut estimator = match OverloadEstimator::new(self.overload_cfg.clone()) {
            Ok(e) => e,
            Err(error) => {
                // Shedder::new validated the same config, so this is unreachable in
                // practice; shedding then runs on forced levels and fault rules only.
                tracing::error!(%error, "overload estimator refused its config");
                self.release_monitor();
                return;
            }
        };
        let mut ticker = tokio::time::interval(self.tick_period);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut last_cpu = read_cpu();
        let mut last_cpu_at = Instant::now();
        let mut cpu = 0.0;
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                _ = ticker.tick() => {}
            }
            if last_cpu_at.elapsed() >= self.cpu_period {
                let sample = read_cpu();
                if let (Some(before), Some(after)) = (last_cpu, sample) {
                    if let Some(u) = utilisation(before, after) {
                        cpu = u;
                    }
                }
                last_cpu = sample;
                last_cpu_at = Instant::now();
            }
            let queue_delay = probe_queue_delay().await;
            let inputs = OverloadInputs {
                cpu,
                in_flight: self.in_flight(),
                limit: self.concurrency_limit(),
                queue_delay,
            };
            let before = self.level();
            let level = estimator.tick(inputs, self.now());
            self.publish_inputs(cpu, queue_delay);
            self.publish_level(level);
            if (level.get() - before.get()).abs() >= 0.1 && !self.is_forced() {
                tracing::info!(
                    level = level.get(),
                    threshold = self.threshold().get(),
                    cpu,
                    in_flight = inputs.in_flight,
                    limit = inputs.limit,
                    "overload level changed"
                );
            }
            self.purge_rules();
        }
        self.release_monitor();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_a_real_line_and_computes_utilisation() {
        let a = parse_proc_stat("cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3 4\n");
        assert_eq!(
            a,
            Some(CpuTimes {
                total: 1000,
                idle: 800
            })
        );
        let b = parse_proc_stat("cpu  400 0 200 900 100 0 0 0 0 0\n");
        assert_eq!(
            b,
            Some(CpuTimes {
                total: 1600,
                idle: 1000
            })
        );
        let u = utilisation(a.unwrap_or_default(), b.unwrap_or_default());
        assert_eq!(u, Some(400.0 / 600.0));
        assert_eq!(
            utilisation(b.unwrap_or_default(), a.unwrap_or_default()),
            None
        );
        assert_eq!(parse_proc_stat("cpu0 1 2 3 4"), None);
        assert_eq!(parse_proc_stat("cpu 1 2 x 4"), None);
        assert_eq!(parse_proc_stat("cpu 1 2"), None);
        assert_eq!(parse_proc_stat(""), None);
        let host = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        if !host.is_empty() {
            assert!(parse_proc_stat(&host).is_some(), "this host's /proc/stat");
        }
    }

    proptest! {
        #[test]
        fn parser_never_panics_and_idle_fits_total(text in ".{0,200}", nums in proptest::collection::vec(any::<u64>(), 0..12)) {
            let _ = parse_proc_stat(&text);
            let line = format!("cpu {}", nums.iter().map(u64::to_string).collect::<Vec<_>>().join(" "));
            if let Some(t) = parse_proc_stat(&line) {
                prop_assert!(t.idle <= t.total);
            }
        }
    }
}
