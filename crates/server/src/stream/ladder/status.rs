//! The state of a stream's ladder encoder, shared with the status API and metrics.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use codes::LadderFault;

use super::RungSource;

/// What a ladder's rung did, for status and metrics.
#[derive(Debug, Default)]
pub struct RungCounters {
    /// Segments cut.
    pub segments: AtomicU64,
    /// Segments that did not start on the source's keyframe (110004).
    pub misaligned: AtomicU64,
    /// Source segments the rung has nothing for (the encoder or the rung's publisher
    /// was down).
    pub skipped: AtomicU64,
    /// Frames a publisher sent for the rung (a published rung only).
    pub frames: AtomicU64,
}

/// A ladder's state, shared with the status API and metrics.
#[derive(Debug)]
pub struct LadderStatus {
    /// Where the rungs come from.
    pub from: RungSource,
    /// The rung names, in ladder order (transcoded or published rungs only).
    pub rungs: Vec<String>,
    /// Per rung, in the same order.
    pub counters: Vec<RungCounters>,
    /// Encoder starts since the stream started.
    pub starts: AtomicU64,
    /// Encoder failures (110001–110003) since the stream started.
    pub failures: AtomicU64,
    last_fault: Mutex<Option<(LadderFault, String)>>,
    /// When a failing encoder is logged: once when it fails, reminders while it keeps
    /// failing, once when it works again (not once per restart).
    log: Mutex<flap_log::FlapLog>,
    pub(super) running: std::sync::atomic::AtomicBool,
    pub(super) pid: std::sync::atomic::AtomicU32,
}

impl LadderStatus {
    pub(super) fn new(from: RungSource, rungs: Vec<String>) -> Self {
        Self {
            from,
            counters: rungs.iter().map(|_| RungCounters::default()).collect(),
            rungs,
            starts: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            last_fault: Mutex::new(None),
            log: Mutex::new(flap_log::FlapLog::default()),
            running: std::sync::atomic::AtomicBool::new(false),
            pid: std::sync::atomic::AtomicU32::new(0),
        }
    }

    /// The running encoder's process id (for an operator, and a test that kills it).
    pub fn pid(&self) -> Option<u32> {
        let pid = self.pid.load(Ordering::Relaxed);
        (self.running() && pid != 0).then_some(pid)
    }

    /// Whether an encoder runs now.
    pub fn running(&self) -> bool {
        self.running.load(Ordering::Relaxed)
    }

    /// The last fault: its code and what was seen (the encoder's last words).
    pub fn last_fault(&self) -> Option<(LadderFault, String)> {
        match self.last_fault.lock() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    pub(super) fn fault(&self, stream: &str, code: LadderFault, detail: String) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        let line = self
            .log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .failed(std::time::Instant::now());
        let (repeated, failing_s) = match line {
            None => {
                tracing::debug!(stream, code = code.code(), detail = %detail, "{}", code.message());
                (0, 0)
            }
            Some(flap_log::Failure::Down) => (1, 0),
            Some(flap_log::Failure::StillDown {
                repeated, down_for, ..
            }) => (repeated, down_for.as_secs()),
        };
        if repeated > 0 {
            match code {
                LadderFault::EncoderMissing => {
                    tracing::error!(stream, code = code.code(), detail = %detail, repeated, failing_s, "{}", code.message())
                }
                _ => {
                    tracing::warn!(stream, code = code.code(), detail = %detail, repeated, failing_s, "{}", code.message())
                }
            }
        }
        let mut guard = match self.last_fault.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        *guard = Some((code, detail));
    }

    /// The encoder ran long enough to count as working: after failures, one line says
    /// how long it failed.
    pub(super) fn worked(&self, stream: &str) {
        let recovery = self
            .log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .recovered(std::time::Instant::now());
        if let Some(recovery) = recovery {
            tracing::info!(
                stream,
                failed_s = recovery.down_for.as_secs(),
                failures = recovery.failures,
                "the ladder encoder works again"
            );
        }
    }

    /// The `ladder` object of the stream's status.
    pub fn json(&self) -> serde_json::Value {
        let rungs: Vec<serde_json::Value> = self
            .rungs
            .iter()
            .zip(&self.counters)
            .map(|(name, c)| {
                serde_json::json!({
                    "name": name,
                    "segments": c.segments.load(Ordering::Relaxed),
                    "misaligned": c.misaligned.load(Ordering::Relaxed),
                    "skipped": c.skipped.load(Ordering::Relaxed),
                })
            })
            .collect();
        let fault = self.last_fault().map(|(code, detail)| {
            serde_json::json!({"code": code.code(), "message": code.message(), "detail": detail})
        });
        if self.from == RungSource::Publisher {
            // No encoder: the rungs are the publisher's, and what it sent is counted.
            let rungs: Vec<serde_json::Value> = rungs
                .into_iter()
                .zip(&self.counters)
                .map(|(mut rung, c)| {
                    rung["frames"] = c.frames.load(Ordering::Relaxed).into();
                    rung
                })
                .collect();
            return serde_json::json!({ "from": "publisher", "rungs": rungs });
        }
        serde_json::json!({
            "from": "encoder",
            "encoder": if self.running() { "running" } else { "restarting" },
            "pid": self.pid(),
            "starts": self.starts.load(Ordering::Relaxed),
            "failures": self.failures.load(Ordering::Relaxed),
            "last_fault": fault,
            "rungs": rungs,
        })
    }

    /// Writes the ladder's metrics for `stream` (a label already escaped).
    pub fn render_metrics(&self, stream: &str, out: &mut String) {
        use std::fmt::Write as _;
        if self.from == RungSource::Encoder {
            self.render_encoder_metrics(stream, out);
        }
        for (name, c) in self.rungs.iter().zip(&self.counters) {
            let rung = crate::metrics::label(name);
            for (metric, value) in [
                ("segments", &c.segments),
                ("misaligned", &c.misaligned),
                ("skipped", &c.skipped),
            ] {
                let _ = writeln!(
                    out,
                    "brdyun_ladder_rung_{metric}_total{{stream=\"{stream}\",rung=\"{rung}\"}} {}",
                    value.load(Ordering::Relaxed)
                );
            }
        }
    }

    fn render_encoder_metrics(&self, stream: &str, out: &mut String) {
        use std::fmt::Write as _;
        let _ = writeln!(
            out,
            "brdyun_ladder_encoder_starts_total{{stream=\"{stream}\"}} {}",
            self.starts.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "brdyun_ladder_encoder_failures_total{{stream=\"{stream}\"}} {}",
            self.failures.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "brdyun_ladder_encoder_running{{stream=\"{stream}\"}} {}",
            u8::from(self.running())
        );
    }
}
