//! Viewer counts across nodes (103006): each node reports how many viewers it has per
//! meeting; the MC sums the fresh reports. A node that stops reporting stops counting
//! after the report lifetime, so a dead node does not hold seats forever.

use std::collections::BTreeMap;

use crate::meeting::MeetingId;

/// Most nodes the MC tracks; reports from more are ignored.
pub const MAX_NODES: usize = 1024;
/// Most meetings one node report may name.
pub const MAX_MEETINGS_PER_REPORT: usize = 4096;

#[derive(Debug, Clone, Default)]
struct NodeReport {
    at_ms: i64,
    counts: BTreeMap<MeetingId, u32>,
}

/// The latest report of every node.
#[derive(Debug, Clone)]
pub struct ViewerCounts {
    ttl_ms: i64,
    nodes: BTreeMap<String, NodeReport>,
}

impl ViewerCounts {
    /// Counts where a report is trusted for `ttl_ms`.
    pub fn new(ttl_ms: i64) -> Self {
        Self {
            ttl_ms,
            nodes: BTreeMap::new(),
        }
    }

    /// Replaces `node`'s report. Returns false when it was ignored (too many nodes, or
    /// too many meetings in one report).
    pub fn report(
        &mut self,
        node: &str,
        counts: impl IntoIterator<Item = (MeetingId, u32)>,
        now_ms: i64,
    ) -> bool {
        self.expire(now_ms);
        if !self.nodes.contains_key(node) && self.nodes.len() >= MAX_NODES {
            return false;
        }
        let mut map = BTreeMap::new();
        for (id, count) in counts {
            if map.len() >= MAX_MEETINGS_PER_REPORT {
                return false;
            }
            map.insert(id, count);
        }
        self.nodes.insert(
            node.to_owned(),
            NodeReport {
                at_ms: now_ms,
                counts: map,
            },
        );
        true
    }

    /// Viewers of `meeting` across all nodes with a fresh report.
    pub fn total(&self, meeting: &MeetingId, now_ms: i64) -> u64 {
        self.nodes
            .values()
            .filter(|r| now_ms.saturating_sub(r.at_ms) <= self.ttl_ms)
            .filter_map(|r| r.counts.get(meeting))
            .map(|&c| u64::from(c))
            .sum()
    }

    /// What `node` last reported for `meeting` (0 when stale or absent).
    pub fn reported_by(&self, node: &str, meeting: &MeetingId, now_ms: i64) -> u32 {
        self.nodes
            .get(node)
            .filter(|r| now_ms.saturating_sub(r.at_ms) <= self.ttl_ms)
            .and_then(|r| r.counts.get(meeting).copied())
            .unwrap_or(0)
    }

    fn expire(&mut self, now_ms: i64) {
        let ttl = self.ttl_ms;
        self.nodes
            .retain(|_, r| now_ms.saturating_sub(r.at_ms) <= ttl);
    }
}
