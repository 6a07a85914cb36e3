//! How ingest state shows to operators: input status as JSON for the admin API, and
//! input and RTMP counters as metrics.

use std::fmt::Write as _;
use std::sync::Arc;

use ingest::rtmp::RtmpStats;
use ingest::status::{FaultReport, InputCounters, InputState, StreamInputStatus, DAMAGE_KINDS};
use serde_json::{json, Value};
use tokio::sync::watch;

use crate::metrics::{label, Metrics};

/// A stream's inputs as JSON: which is active, and each one's state and counters, with
/// the damage its source carries by kind when `counters` (in input order) are given.
pub fn inputs_json(status: &StreamInputStatus, counters: &[Arc<InputCounters>]) -> Value {
    let inputs: Vec<Value> = status
        .inputs
        .iter()
        .enumerate()
        .map(|(i, input)| {
            let (state, error) = match &input.state {
                InputState::Connecting => ("connecting", None),
                InputState::Live => ("live", None),
                InputState::Stalled => ("stalled", None),
                InputState::Rejected { reason } => ("rejected", Some(reason.clone())),
                InputState::Down { error } => ("down", Some(error.clone())),
            };
            json!({
                "index": i,
                "active": status.active == Some(i),
                "input": input.description,
                "state": state,
                "error": error,
                "bytes": input.bytes,
                "frames": input.frames,
                "errors": input.errors,
                "dropped": input.dropped,
                "last_data_ms_ago": input.last_data_at.map(|t| t.elapsed().as_millis() as u64),
                "damage": counters.get(i).map(|c| damage_json(c)),
                "fault": input.fault().map(fault_json),
                "faults": input.faults.iter().map(fault_json).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({ "active": status.active, "switches": status.switches, "inputs": inputs })
}

/// An input's fault: its code, words, how long ago it started, and whether it goes
/// on (`ended_ms_ago` null) or ended.
fn fault_json(fault: &FaultReport) -> Value {
    json!({
        "code": fault.code.code(),
        "reason": fault.code.label(),
        "message": fault.detail,
        "since_ms_ago": fault.since.elapsed().as_millis() as u64,
        "ended_ms_ago": fault.ended.map(|t| t.elapsed().as_millis() as u64),
    })
}

/// Whether viewers of a stream without media should hear it is down (111010) rather
/// than not started: an input receives bytes that give nothing usable, and none is
/// live.
pub fn inputs_unusable(status: &StreamInputStatus) -> bool {
    let any = |f: fn(&InputState) -> bool| status.inputs.iter().any(|i| f(&i.state));
    any(|s| matches!(s, InputState::Rejected { .. })) && !any(|s| *s == InputState::Live)
}

/// One input's damage counters by kind.
fn damage_json(counters: &InputCounters) -> Value {
    DAMAGE_KINDS
        .iter()
        .zip(&counters.damage)
        .map(|(kind, counter)| ((*kind).to_owned(), json!(InputCounters::get(counter))))
        .collect::<serde_json::Map<String, Value>>()
        .into()
}

/// Registers a stream's input counters with the metrics registry, and, with the
/// inputs' `status`, each input's ongoing faults as `brdyun_input_fault_active` (1,
/// labelled by the code's reason; no series while the input is well).
pub fn register_inputs(
    metrics: &Metrics,
    stream: &str,
    counters: Vec<Arc<InputCounters>>,
    status: Option<watch::Receiver<StreamInputStatus>>,
) {
    let stream = label(stream);
    metrics.register(Box::new(move |out: &mut String| {
        if let Some(status) = &status {
            for (i, input) in status.borrow().inputs.iter().enumerate() {
                for fault in input.faults.iter().filter(|f| f.ended.is_none()) {
                    let _ = writeln!(
                        out,
                        "brdyun_input_fault_active{{stream=\"{stream}\",input=\"{i}\",reason=\"{}\"}} 1",
                        fault.code.label()
                    );
                }
            }
        }
        for (i, c) in counters.iter().enumerate() {
            for (name, value) in [
                ("bytes", InputCounters::get(&c.bytes)),
                ("frames", InputCounters::get(&c.frames)),
                ("errors", InputCounters::get(&c.errors)),
                ("dropped", InputCounters::get(&c.dropped)),
                ("connects", InputCounters::get(&c.connects)),
                ("demux_errors", InputCounters::get(&c.demux_errors)),
            ] {
                let _ = writeln!(
                    out,
                    "brdyun_input_{name}_total{{stream=\"{stream}\",input=\"{i}\"}} {value}"
                );
            }
            for (kind, counter) in DAMAGE_KINDS.iter().zip(&c.damage) {
                let _ = writeln!(
                    out,
                    "brdyun_input_damage_total{{stream=\"{stream}\",input=\"{i}\",kind=\"{kind}\"}} {}",
                    InputCounters::get(counter)
                );
            }
        }
    }));
}

/// Registers the RTMP server's counters with the metrics registry (`brdyun_rtmp_…`).
pub fn register_rtmp(metrics: &Metrics, stats: Arc<RtmpStats>) {
    register_rtmp_listener(metrics, "rtmp", stats);
}

/// Registers the counters of an RTMP listener under `brdyun_{prefix}_…`: `rtmp` for
/// plain RTMP, `rtmps` for RTMP over TLS, which also has its TLS handshakes.
pub fn register_rtmp_listener(metrics: &Metrics, prefix: &'static str, stats: Arc<RtmpStats>) {
    metrics.register(Box::new(move |out: &mut String| {
        let s = stats.snapshot();
        if prefix == "rtmps" {
            for (name, value) in [
                ("tls_handshakes_total", s.tls_handshakes),
                ("tls_handshake_failures_total", s.tls_handshake_failures),
            ] {
                let _ = writeln!(out, "brdyun_{prefix}_{name} {value}");
            }
        }
        for (name, value) in [
            ("connections_total", s.connections),
            ("active_connections", s.active_connections),
            ("refused_connections_total", s.refused_connections),
            ("publishes_total", s.publishes),
            ("rejections_total", s.rejections),
            ("bytes_total", s.bytes),
            ("frames_total", s.frames),
            ("protocol_errors_total", s.protocol_errors),
        ] {
            let _ = writeln!(out, "brdyun_{prefix}_{name} {value}");
        }
        // Publishes refused after the handshake (unknown meeting, wrong key, busy).
        for (code, count) in stats.rejections_by_code() {
            let _ = writeln!(
                out,
                "brdyun_{prefix}_refused_total{{code=\"{}\",reason=\"{}\"}} {count}",
                code.code(),
                code.label()
            );
        }
        // What the listener's caps and deadlines refused or cut, by code.
        for (code, count) in stats.limits.by_code() {
            let _ = writeln!(
                out,
                "brdyun_{prefix}_limit_total{{code=\"{}\",reason=\"{}\"}} {count}",
                code.code(),
                code.label()
            );
        }
    }));
}
