//! What a run's samples say, per traffic class.

use std::time::Duration;

use super::Sample;

/// Per-class figures of a run, counting requests sent in `from..to`.
#[derive(Debug, Clone, Default)]
pub struct ClassReport {
    /// Requests sent in the window.
    pub sent: usize,
    /// Answered 2xx.
    pub ok: usize,
    /// Answered with the back-pressure 503.
    pub shed: usize,
    /// Anything else (other status, failure, timeout).
    pub failed: usize,
    /// Body bytes of the 2xx answers.
    pub ok_bytes: u64,
    /// Latencies (from due) of the 2xx answers, sorted.
    pub ok_latencies: Vec<Duration>,
    /// Service times (from sent) of the 2xx answers, sorted.
    pub ok_service: Vec<Duration>,
    /// Requests actually sent in the window (by send time).
    pub sent_in_window: usize,
    /// Send time of the first request answered with back-pressure.
    pub first_shed: Option<Duration>,
    /// 2xx answers completed in the window (by completion time, whenever due): the
    /// node's goodput over the window even when the generator falls behind.
    pub ok_done_in_window: usize,
    /// Body bytes of those answers.
    pub ok_bytes_done_in_window: u64,
}

impl ClassReport {
    /// Share of requests answered 2xx.
    pub fn success(&self) -> f64 {
        self.ok as f64 / self.sent.max(1) as f64
    }

    /// Share of requests shed.
    pub fn shed_share(&self) -> f64 {
        self.shed as f64 / self.sent.max(1) as f64
    }

    /// A percentile (0..=100) of the 2xx latencies (from due).
    pub fn percentile(&self, p: f64) -> Duration {
        percentile(&self.ok_latencies, p)
    }

    /// A percentile (0..=100) of the 2xx service times (from sent).
    pub fn service_percentile(&self, p: f64) -> Duration {
        percentile(&self.ok_service, p)
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Splits samples by class, keeping requests due in `from..to`.
pub fn report(
    samples: &[Sample],
    classes: usize,
    from: Duration,
    to: Duration,
) -> Vec<ClassReport> {
    let mut out = vec![ClassReport::default(); classes];
    for s in samples {
        let r = &mut out[s.class];
        if s.back_pressure {
            r.first_shed = Some(r.first_shed.map_or(s.sent, |f| f.min(s.sent)));
        }
        if s.sent >= from && s.sent < to {
            r.sent_in_window += 1;
        }
        let done = s.due.saturating_add(s.latency);
        if (200..300).contains(&s.status) && done >= from && done < to {
            r.ok_done_in_window += 1;
            r.ok_bytes_done_in_window += s.bytes as u64;
        }
        // By send time: a connection far behind its schedule still counts what it sent.
        if s.sent < from || s.sent >= to {
            continue;
        }
        r.sent += 1;
        if (200..300).contains(&s.status) {
            r.ok += 1;
            r.ok_bytes += s.bytes as u64;
            r.ok_latencies.push(s.latency);
            r.ok_service.push(s.service);
        } else if s.back_pressure {
            r.shed += 1;
        } else {
            r.failed += 1;
        }
    }
    for r in &mut out {
        r.ok_latencies.sort_unstable();
        r.ok_service.sort_unstable();
    }
    out
}
