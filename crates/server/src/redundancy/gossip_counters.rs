//! The mesh domain's datagram counts as the node's operators see them: how much gossip
//! went out and came in, and how much was refused — datagrams that did not open (another
//! domain's secret, tampering, garbage) are how a misconfigured or hostile peer shows.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use serde_json::{json, Value};

/// One reading of the mesh transport's totals since the node joined.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GossipCount {
    /// Datagrams sealed and sent.
    pub sent: u64,
    /// Datagrams that opened with the domain secret.
    pub received: u64,
    /// Datagrams that did not open: another domain's, tampered, truncated, garbage.
    pub rejected: u64,
    /// Datagrams that opened but held no message this version understands.
    pub undecodable: u64,
    /// Messages too large for one datagram, not sent.
    pub oversized: u64,
}

/// The last [`GossipCount`] the mesh loop reported, shared with `/api/ott` and
/// `/metrics`.
#[derive(Debug, Default)]
pub struct GossipCounters {
    sent: AtomicU64,
    received: AtomicU64,
    rejected: AtomicU64,
    undecodable: AtomicU64,
    oversized: AtomicU64,
}

impl GossipCounters {
    /// Stores the transport's current totals.
    pub fn record(&self, count: GossipCount) {
        self.sent.store(count.sent, Relaxed);
        self.received.store(count.received, Relaxed);
        self.rejected.store(count.rejected, Relaxed);
        self.undecodable.store(count.undecodable, Relaxed);
        self.oversized.store(count.oversized, Relaxed);
    }

    /// The last totals stored.
    pub fn get(&self) -> GossipCount {
        GossipCount {
            sent: self.sent.load(Relaxed),
            received: self.received.load(Relaxed),
            rejected: self.rejected.load(Relaxed),
            undecodable: self.undecodable.load(Relaxed),
            oversized: self.oversized.load(Relaxed),
        }
    }

    /// The totals as the `gossip` object of `/api/ott`.
    pub fn to_json(&self) -> Value {
        let c = self.get();
        json!({
            "sent": c.sent,
            "received": c.received,
            "rejected": c.rejected,
            "undecodable": c.undecodable,
            "oversized": c.oversized,
        })
    }

    /// `brdyun_mesh_datagrams_total{outcome}` lines.
    pub fn render_metrics(&self, out: &mut String) {
        let c = self.get();
        for (outcome, value) in [
            ("sent", c.sent),
            ("received", c.received),
            ("rejected", c.rejected),
            ("undecodable", c.undecodable),
            ("oversized", c.oversized),
        ] {
            let _ = writeln!(
                out,
                "brdyun_mesh_datagrams_total{{outcome=\"{outcome}\"}} {value}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_reading_is_what_the_report_and_metrics_show() {
        let counters = GossipCounters::default();
        let count = GossipCount {
            sent: 5,
            received: 4,
            rejected: 3,
            undecodable: 2,
            oversized: 1,
        };
        counters.record(count);
        assert_eq!(counters.get(), count);
        assert_eq!(counters.to_json()["rejected"], 3);
        let mut out = String::new();
        counters.render_metrics(&mut out);
        assert!(
            out.contains("brdyun_mesh_datagrams_total{outcome=\"rejected\"} 3\n"),
            "{out}"
        );
        assert!(
            out.contains("brdyun_mesh_datagrams_total{outcome=\"sent\"} 5\n"),
            "{out}"
        );
    }
}
