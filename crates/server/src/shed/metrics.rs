//! The shedding layer's counters and their Prometheus rendering: outcomes and latency
//! per bucket, requests in flight, and the `brdyun_shed_*` families (names and help
//! texts are part of the node's public surface: see `docs/load-shedding.md`).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use shed::Bucket;

use super::policy::Decision;
use crate::metrics::Histogram;

/// Outcome counters of one bucket, as read by tests and the admin view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ShedCounts {
    /// Requests passed to the routes.
    pub admitted: u64,
    /// Requests refused by the shed curve (real overload).
    pub shed: u64,
    /// Requests refused by a fault-injection rule.
    pub injected: u64,
}

#[derive(Debug, Default)]
struct BucketStats {
    admitted: AtomicU64,
    shed: AtomicU64,
    injected: AtomicU64,
    latency: Histogram,
}

/// What the other parts of the shedder read at render time, for the gauges.
#[derive(Debug, Clone, Copy)]
pub struct Readings {
    /// Overload level in use.
    pub level: f64,
    /// Lowest priority admitted.
    pub threshold: u8,
    /// The adaptive concurrency limit.
    pub concurrency_limit: u32,
    /// CPU utilisation last sampled.
    pub cpu: f64,
    /// Queueing delay last probed.
    pub queue_delay: Duration,
    /// Whether an operator override pins the level.
    pub forced: bool,
    /// Connections paused for breaking the device contract.
    pub connection_pauses: u64,
    /// Connections handed to the priority lane.
    pub laned_connections: u64,
    /// Active fault rules.
    pub fault_rules: usize,
}

/// The layer's per-bucket counters and in-flight count.
#[derive(Debug, Default)]
pub struct ShedMetrics {
    stats: [BucketStats; 3],
    in_flight: AtomicU32,
}

impl ShedMetrics {
    fn bucket(&self, bucket: Bucket) -> &BucketStats {
        &self.stats[bucket as usize]
    }

    /// Counts the outcome of one decision.
    pub fn record(&self, decision: &Decision) {
        match decision {
            Decision::Admit(c) => self
                .bucket(c.bucket)
                .admitted
                .fetch_add(1, Ordering::Relaxed),
            Decision::Shed {
                classified,
                injected_by: None,
                experiment: false,
                ..
            } => self
                .bucket(classified.bucket)
                .shed
                .fetch_add(1, Ordering::Relaxed),
            Decision::Shed { classified, .. } => self
                .bucket(classified.bucket)
                .injected
                .fetch_add(1, Ordering::Relaxed),
        };
    }

    /// Outcome counters of a bucket.
    pub fn counts(&self, bucket: Bucket) -> ShedCounts {
        let s = self.bucket(bucket);
        ShedCounts {
            admitted: s.admitted.load(Ordering::Relaxed),
            shed: s.shed.load(Ordering::Relaxed),
            injected: s.injected.load(Ordering::Relaxed),
        }
    }

    /// Counts an admitted request in flight; returns the count including it.
    pub fn enter(&self) -> u32 {
        self.in_flight
            .fetch_add(1, Ordering::Relaxed)
            .saturating_add(1)
    }

    /// The request left (answered or cancelled).
    pub fn leave(&self) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
    }

    /// Requests currently being handled (admitted, response not yet produced).
    pub fn in_flight(&self) -> u32 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Records an admitted request's time to its response.
    pub fn observe(&self, bucket: Bucket, rtt: Duration) {
        self.bucket(bucket).latency.observe(rtt);
    }

    /// Appends the `brdyun_shed_*` families in the Prometheus text format.
    pub fn render(&self, readings: &Readings, out: &mut String) {
        out.push_str("# HELP brdyun_shed_requests_total Requests by bucket and shedding outcome (shed: overload, injected: fault rule).\n");
        out.push_str("# TYPE brdyun_shed_requests_total counter\n");
        for bucket in Bucket::ALL {
            let c = self.counts(bucket);
            for (outcome, value) in [
                ("admitted", c.admitted),
                ("shed", c.shed),
                ("injected", c.injected),
            ] {
                let _ = writeln!(
                    out,
                    "brdyun_shed_requests_total{{bucket=\"{}\",outcome=\"{outcome}\"}} {value}",
                    bucket.as_str()
                );
            }
        }
        let gauges: [(&str, &str, f64); 7] = [
            (
                "in_flight",
                "Admitted requests being handled.",
                f64::from(self.in_flight()),
            ),
            (
                "overload_level",
                "Overload level in use (0..1).",
                readings.level,
            ),
            (
                "threshold",
                "Lowest priority admitted (0..99).",
                f64::from(readings.threshold),
            ),
            (
                "concurrency_limit",
                "Adaptive concurrency limit (Gradient2).",
                f64::from(readings.concurrency_limit),
            ),
            (
                "cpu_utilisation",
                "CPU utilisation last sampled from shedding.cpu_source (0..1).",
                readings.cpu,
            ),
            (
                "queue_delay_seconds",
                "Runtime queueing delay last probed.",
                readings.queue_delay.as_nanos() as f64 / 1e9,
            ),
            (
                "level_forced",
                "1 while an operator override pins the level.",
                if readings.forced { 1.0 } else { 0.0 },
            ),
        ];
        for (name, help, value) in gauges {
            let _ = writeln!(out, "# HELP brdyun_shed_{name} {help}");
            let _ = writeln!(out, "# TYPE brdyun_shed_{name} gauge");
            let _ = writeln!(out, "brdyun_shed_{name} {value}");
        }
        out.push_str("# HELP brdyun_shed_connection_pauses_total Pauses of connections (not read for a moment) that repeated a refused request before its Retry-After.\n");
        out.push_str("# TYPE brdyun_shed_connection_pauses_total counter\n");
        let _ = writeln!(
            out,
            "brdyun_shed_connection_pauses_total {}",
            readings.connection_pauses
        );
        out.push_str("# HELP brdyun_shed_lane_connections_total Connections served on the priority lane (their first request was CRITICAL).\n");
        out.push_str("# TYPE brdyun_shed_lane_connections_total counter\n");
        let _ = writeln!(
            out,
            "brdyun_shed_lane_connections_total {}",
            readings.laned_connections
        );
        let _ = writeln!(
            out,
            "# HELP brdyun_shed_fault_rules Active fault-injection rules."
        );
        let _ = writeln!(out, "# TYPE brdyun_shed_fault_rules gauge");
        let _ = writeln!(out, "brdyun_shed_fault_rules {}", readings.fault_rules);
        out.push_str("# HELP brdyun_shed_request_duration_seconds Time to produce the response of admitted requests, by bucket.\n");
        out.push_str("# TYPE brdyun_shed_request_duration_seconds histogram\n");
        for bucket in Bucket::ALL {
            let labels = format!("bucket=\"{}\"", bucket.as_str());
            self.bucket(bucket).latency.render(
                "brdyun_shed_request_duration_seconds",
                &labels,
                out,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shed::{Advice, Classified, Priority, RuleId};

    fn classified(bucket: Bucket) -> Classified {
        Classified {
            bucket,
            priority: Priority::new(10).expect("in range"),
        }
    }

    fn shed(bucket: Bucket, injected_by: Option<RuleId>, experiment: bool) -> Decision {
        Decision::Shed {
            classified: classified(bucket),
            advice: Advice {
                max_retries: 1,
                retry_after_seconds: 5,
            },
            injected_by,
            experiment,
            partial: false,
        }
    }

    /// Overload refusals count as shed; rule and experiment refusals as injected.
    #[test]
    fn outcomes_are_counted_per_bucket() {
        let m = ShedMetrics::default();
        m.record(&Decision::Admit(classified(Bucket::Critical)));
        m.record(&shed(Bucket::NonCritical, None, false));
        m.record(&shed(Bucket::NonCritical, Some(RuleId(1)), false));
        m.record(&shed(Bucket::NonCritical, None, true));
        assert_eq!(
            m.counts(Bucket::Critical),
            ShedCounts {
                admitted: 1,
                ..ShedCounts::default()
            }
        );
        assert_eq!(
            m.counts(Bucket::NonCritical),
            ShedCounts {
                admitted: 0,
                shed: 1,
                injected: 2
            }
        );
        assert_eq!(m.enter(), 1);
        assert_eq!(m.enter(), 2);
        m.leave();
        assert_eq!(m.in_flight(), 1);
    }

    #[test]
    fn the_rendering_keeps_its_family_names() {
        let m = ShedMetrics::default();
        m.record(&shed(Bucket::Degraded, None, false));
        m.observe(Bucket::Critical, Duration::from_millis(3));
        let readings = Readings {
            level: 0.5,
            threshold: 42,
            concurrency_limit: 200,
            cpu: 0.25,
            queue_delay: Duration::from_millis(20),
            forced: true,
            connection_pauses: 3,
            laned_connections: 4,
            fault_rules: 1,
        };
        let mut out = String::new();
        m.render(&readings, &mut out);
        for line in [
            "brdyun_shed_requests_total{bucket=\"degraded\",outcome=\"shed\"} 1",
            "brdyun_shed_in_flight 0",
            "brdyun_shed_overload_level 0.5",
            "brdyun_shed_threshold 42",
            "brdyun_shed_concurrency_limit 200",
            "brdyun_shed_cpu_utilisation 0.25",
            "brdyun_shed_queue_delay_seconds 0.02",
            "brdyun_shed_level_forced 1",
            "brdyun_shed_connection_pauses_total 3",
            "brdyun_shed_lane_connections_total 4",
            "brdyun_shed_fault_rules 1",
        ] {
            assert!(out.lines().any(|l| l == line), "{line} in\n{out}");
        }
        assert!(out.contains("brdyun_shed_request_duration_seconds_count{bucket=\"critical\"} 1"));
    }
}
