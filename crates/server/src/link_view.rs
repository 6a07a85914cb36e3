//! How SRT links show to operators: each SRT publisher's round-trip time, loss,
//! retransmissions, drops and bitrate beside its input in `/api/streams/{name}` (and so
//! on the Backups screen), and as
//! as `/metrics` series (`brdyun_srt_…`).
//!
//! The figures are libsrt's own, as [`ingest::srt::SrtStats`] keeps them: one
//! [`LinkStats`] per connected publisher, by publish name (`<stream>` or
//! `<stream>@<slot>`), totals since that connection began.

use std::fmt::Write as _;
use std::sync::Arc;

use ingest::srt::{LinkStats, SrtStats};
use serde_json::{json, Value};

use crate::metrics::{label, Metrics};

/// The slot label of a stream's own publish name (a slot's is its name: `backup`).
pub const PRIMARY_SLOT: &str = "primary";

/// One link as JSON: the figures an operator judges a path by.
pub fn link_json(link: &LinkStats) -> Value {
    json!({
        "protocol": "srt",
        "rtt_ms": rtt_ms(link),
        "packets_received": link.packets_received,
        "packets_lost": link.packets_lost,
        "loss_percent": loss_percent(link),
        "packets_retransmitted": link.packets_retransmitted,
        "packets_dropped": link.packets_dropped,
        "decrypt_errors": link.decrypt_errors,
        "bytes_received": link.bytes_received,
        "bitrate_bps": link.bitrate_bps,
        "connected_ms": u64::try_from(link.elapsed.as_millis()).unwrap_or(u64::MAX),
    })
}

/// The link's round-trip time in ms to a tenth, or null when none was reported.
fn rtt_ms(link: &LinkStats) -> Option<f64> {
    (!link.rtt.is_zero()).then(|| (link.rtt.as_secs_f64() * 10_000.0).round() / 10.0)
}

/// The share of data packets the path lost on their first trip, in percent to two
/// decimals: the gaps the receiver found against the packets sent (first arrivals and
/// gaps; retransmissions are second trips). 0 before any packet.
pub fn loss_percent(link: &LinkStats) -> f64 {
    let first_trips = link
        .packets_received
        .saturating_sub(link.packets_retransmitted);
    let sent = first_trips.saturating_add(link.packets_lost);
    if sent == 0 {
        return 0.0;
    }
    (link.packets_lost as f64 * 10_000.0 / sent as f64).round() / 100.0
}

/// Adds each input's SRT link (`link`, null when none is connected) to a stream's
/// inputs JSON ([`crate::ingest_view::inputs_json`]); `publish_names` gives, in input
/// order, the publish name of each publish input (`None` for other inputs).
pub fn add_links(inputs: &mut Value, publish_names: &[Option<String>], stats: &SrtStats) {
    let Some(list) = inputs.get_mut("inputs").and_then(Value::as_array_mut) else {
        return;
    };
    for (input, name) in list.iter_mut().zip(publish_names) {
        let link = name.as_deref().and_then(|name| stats.link(name));
        input["link"] = link.as_ref().map_or(Value::Null, link_json);
    }
}

/// A publish name's stream and slot: `m1` is (`m1`, `primary`), `m1@backup` is
/// (`m1`, `backup`).
pub fn split_publish_name(name: &str) -> (&str, &str) {
    name.split_once('@').unwrap_or((name, PRIMARY_SLOT))
}

/// Registers the SRT listener's counters and its publishers' links with the metrics
/// registry: `brdyun_srt_…` for the listener, `brdyun_srt_link_…{stream,slot}` for each
/// connected publisher (a series per link while it is connected; its counters restart
/// with a new connection, as Prometheus counters may).
pub fn register_srt(metrics: &Metrics, stats: Arc<SrtStats>) {
    metrics.describe(
        "brdyun_srt_link_rtt_seconds",
        "gauge",
        "Smoothed round-trip time of an SRT publisher's link.",
    );
    metrics.describe(
        "brdyun_srt_link_packets_lost_total",
        "counter",
        "Data packets an SRT publisher's link lost on their first trip (before retransmission).",
    );
    metrics.describe(
        "brdyun_srt_link_packets_dropped_total",
        "counter",
        "Data packets given up on (too late for the latency, or undecryptable): holes in the received TS.",
    );
    metrics.register(Box::new(move |out: &mut String| render_srt(&stats, out)));
}

fn render_srt(stats: &SrtStats, out: &mut String) {
    use std::sync::atomic::Ordering::Relaxed;
    for (name, value) in [
        ("connections_total", stats.connections.load(Relaxed)),
        ("active_connections", stats.active_connections.load(Relaxed)),
        ("bytes_total", stats.bytes.load(Relaxed)),
        ("frames_total", stats.frames.load(Relaxed)),
        ("restarts_total", stats.restarts.load(Relaxed)),
    ] {
        let _ = writeln!(out, "brdyun_srt_{name} {value}");
    }
    for (code, count) in stats.refusals() {
        let _ = writeln!(
            out,
            "brdyun_srt_refused_total{{code=\"{}\",reason=\"{}\"}} {count}",
            code.code(),
            code.label()
        );
    }
    for (code, count) in stats.limits.by_code() {
        let _ = writeln!(
            out,
            "brdyun_srt_limit_total{{code=\"{}\",reason=\"{}\"}} {count}",
            code.code(),
            code.label()
        );
    }
    for (name, link) in stats.links() {
        let (stream, slot) = split_publish_name(&name);
        let labels = format!("stream=\"{}\",slot=\"{}\"", label(stream), label(slot));
        // No series rather than a false 0 when the RTT is not reported.
        if !link.rtt.is_zero() {
            let _ = writeln!(
                out,
                "brdyun_srt_link_rtt_seconds{{{labels}}} {}",
                link.rtt.as_secs_f64()
            );
        }
        for (metric, value) in [
            ("packets_received_total", link.packets_received),
            ("packets_lost_total", link.packets_lost),
            ("packets_retransmitted_total", link.packets_retransmitted),
            ("packets_dropped_total", link.packets_dropped),
            ("decrypt_errors_total", link.decrypt_errors),
            ("bytes_total", link.bytes_received),
            ("receive_bits_per_second", link.bitrate_bps),
        ] {
            let _ = writeln!(out, "brdyun_srt_link_{metric}{{{labels}}} {value}");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn link() -> LinkStats {
        LinkStats {
            rtt: Duration::from_micros(12_345),
            packets_received: 1_050,
            packets_lost: 100,
            packets_retransmitted: 50,
            packets_dropped: 3,
            decrypt_errors: 0,
            bytes_received: 1_400_000,
            bitrate_bps: 3_000_000,
            elapsed: Duration::from_secs(4),
        }
    }

    #[test]
    fn loss_is_the_gaps_against_the_first_trips_and_gaps() {
        // 1000 first arrivals and 100 gaps: 100 of 1100 sent.
        assert_eq!(loss_percent(&link()), 9.09);
        assert_eq!(loss_percent(&LinkStats::default()), 0.0);
        let doc = link_json(&link());
        assert_eq!(doc["rtt_ms"], 12.3);
        assert_eq!(link_json(&LinkStats::default())["rtt_ms"], Value::Null);
        assert_eq!(doc["packets_dropped"], 3);
        assert_eq!(doc["connected_ms"], 4000);
    }

    #[test]
    fn each_publish_input_shows_its_own_link_and_the_others_none() {
        let stats = SrtStats::default();
        stats.set_link("m1@backup", link());
        let mut inputs = json!({ "inputs": [{ "index": 0 }, { "index": 1 }, { "index": 2 }] });
        let names = [None, Some("m1".to_owned()), Some("m1@backup".to_owned())];
        add_links(&mut inputs, &names, &stats);
        assert_eq!(inputs["inputs"][0]["link"], Value::Null);
        assert_eq!(
            inputs["inputs"][1]["link"],
            Value::Null,
            "no SRT publisher on m1"
        );
        assert_eq!(inputs["inputs"][2]["link"]["packets_lost"], 100);
    }

    #[test]
    fn metrics_name_each_link_by_stream_and_slot_and_every_refusal_code() {
        let stats = SrtStats::default();
        stats.set_link("m1", link());
        stats.set_link("m1@backup", LinkStats::default());
        stats.refused(codes::InputFault::WrongKey);
        let mut out = String::new();
        render_srt(&stats, &mut out);
        assert!(
            out.contains(
                "brdyun_srt_link_packets_lost_total{stream=\"m1\",slot=\"primary\"} 100\n"
            ),
            "{out}"
        );
        assert!(out.contains(
            "brdyun_srt_link_receive_bits_per_second{stream=\"m1\",slot=\"backup\"} 0\n"
        ));
        assert!(out.contains("brdyun_srt_restarts_total 0\n"));
        assert!(
            out.contains("brdyun_srt_link_rtt_seconds{stream=\"m1\",slot=\"primary\"} 0.012345\n")
        );
        assert!(
            !out.contains("brdyun_srt_link_rtt_seconds{stream=\"m1\",slot=\"backup\"}"),
            "an RTT of 0 is not reported"
        );
        assert!(
            out.contains(
                "brdyun_srt_refused_total{code=\"111028\",reason=\"ingest_wrong_key\"} 1\n"
            ),
            "{out}"
        );
        let refusal_lines = out
            .lines()
            .filter(|l| l.starts_with("brdyun_srt_refused_total"))
            .count();
        assert_eq!(refusal_lines, ingest::srt::stats::REFUSAL_CODES.len());
    }
}
