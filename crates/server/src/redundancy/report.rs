//! What the Backups screen shows (OTT-OPS-1), as the JSON of `GET /api/ott`: each
//! group with its state and member rows, the nodes of the domain, the "OTT view key"
//! block, the alerts and the answer counters.

use std::sync::atomic::Ordering;
use std::sync::PoisonError;

use serde_json::{json, Value};

use crate::redundancy::Redundancy;

fn problem_json(problem: &ott::Problem) -> Value {
    json!({ "code": problem.code(), "text": problem.to_string() })
}

fn row_json(row: &ott::MemberRow) -> Value {
    json!({
        "node": row.node.as_str(),
        "stream": row.stream,
        "this_node": row.this_node,
        "alive": row.alive,
        "can_substitute": row.can_substitute,
        "same_timeline": row.same_timeline,
        "live_window_age_ms": row.live_window_age_ms,
        "clock_offset_ms": row.clock_offset_ms,
        "version": row.version.to_string(),
        "languages": row.languages,
        "cpu_percent": row.load.cpu_percent,
        "net_percent": row.load.net_percent,
        "backup_sessions": row.load.backup_sessions,
        "eligible": row.eligible,
        "problems": row.problems.iter().map(problem_json).collect::<Vec<_>>(),
    })
}

/// One group's report as JSON.
pub fn group_json(report: &ott::GroupReport) -> Value {
    let (state, problems) = match &report.state {
        ott::GroupState::Protected => ("protected", Vec::new()),
        ott::GroupState::Problems(problems) => {
            ("problems", problems.iter().map(problem_json).collect())
        }
    };
    json!({
        "group": report.group,
        "state": state,
        "eligible_members": report.eligible_members,
        "problems": problems,
        "members": report.rows.iter().map(row_json).collect::<Vec<_>>(),
    })
}

/// The reports of every group this node is in (the input of alerts 70 and 78).
pub fn group_reports(snapshot: &ott::Snapshot, now_ms: i64) -> Vec<ott::GroupReport> {
    snapshot
        .own_groups()
        .into_iter()
        .map(|group| ott::group_report(snapshot, group, now_ms))
        .collect()
}

fn node_json(node: &ott::NodeView, this: bool) -> Value {
    json!({
        "id": node.id.as_str(),
        "this_node": this,
        "alive": node.alive,
        "silent_ms": node.silent_ms,
        "draining": node.draining,
        "version": node.version.to_string(),
        "hostname": node.hostname,
        "addresses": node.addresses.iter().map(|a| json!({
            "url": a.url_base,
            "public": a.public,
            "https": a.scheme == ott::Scheme::Https,
        })).collect::<Vec<_>>(),
        "clock_offset_ms": node.clock_offset_ms,
        "has_view_key": node.has_view_key,
        "cpu_percent": node.load.cpu_percent,
        "net_percent": node.load.net_percent,
        "backup_sessions": node.load.backup_sessions,
    })
}

impl Redundancy {
    /// The Backups screen's data at `now_ms`.
    pub fn report_json(&self, node_name: &str, now_ms: i64) -> Value {
        let alerts = self
            .alerts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .to_json();
        let c = &self.counters;
        let counters = json!({
            "masters_with_backups": c.masters_with_backups.load(Ordering::Relaxed),
            "passes_issued": c.passes_issued.load(Ordering::Relaxed),
            "redirects_open": c.redirects_open.load(Ordering::Relaxed),
            "redirects_archive": c.redirects_archive.load(Ordering::Relaxed),
            "backup_viewers_admitted": c.backup_viewers_admitted.load(Ordering::Relaxed),
            "backup_viewers_refused": c.overload_refusals(),
            "backup_sessions": self.sessions.count(),
        });
        let Some(view) = self.view() else {
            return json!({
                "node": node_name,
                "mesh": "starting",
                "view_key": { "in_use": false, "status": "waiting for the mesh" },
                "groups": [],
                "nodes": [],
                "alerts": alerts,
                "counters": counters,
                "gossip": self.gossip.to_json(),
            });
        };
        let snapshot = &view.snapshot;
        let reports = group_reports(snapshot, now_ms);
        let alive_others: Vec<&ott::NodeView> = snapshot.nodes.iter().filter(|n| n.alive).collect();
        let agreeing = alive_others.iter().filter(|n| n.has_view_key).count();
        let in_use = snapshot.this.has_view_key && agreeing == alive_others.len();
        let mut nodes = vec![node_json(&snapshot.this, true)];
        nodes.extend(snapshot.nodes.iter().map(|n| node_json(n, false)));
        json!({
            "node": node_name,
            "mesh": "up",
            "view_key": {
                "in_use": in_use,
                "status": if in_use { "in use" } else { "not agreed by every node" },
                "key_id": view.keys.current.id(),
                "fingerprint": format!("{:016x}", view.keys.current.fingerprint()),
                "nodes_agreeing": agreeing + usize::from(snapshot.this.has_view_key),
                "nodes_alive": alive_others.len() + 1,
            },
            "min_version": snapshot.min_version.to_string(),
            "groups": reports.iter().map(group_json).collect::<Vec<_>>(),
            "nodes": nodes,
            "alerts": alerts,
            "counters": counters,
            "gossip": self.gossip.to_json(),
        })
    }

    /// One alert tick at `now_ms`: group reports and refusals into the alert machine;
    /// returns the changes to deliver to the webhook. A group whose stream has never
    /// started on this node (a meeting waiting for its publisher) raises no 70 or 78:
    /// there is nothing to protect yet.
    pub fn tick_alerts(
        &self,
        streams: &crate::stream::streams::Streams,
        now_ms: i64,
    ) -> Vec<ott::AlertChange> {
        let Some(view) = self.view() else {
            return Vec::new();
        };
        let started: std::collections::HashSet<String> = self
            .memberships()
            .into_iter()
            .filter(|(stream, _)| {
                streams
                    .channel(stream)
                    .is_some_and(|c| c.pushed_at_ms().is_some())
            })
            .map(|(_, membership)| membership.group)
            .collect();
        let reports: Vec<ott::GroupReport> = group_reports(&view.snapshot, now_ms)
            .into_iter()
            .filter(|report| started.contains(&report.group))
            .collect();
        self.alerts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .tick(now_ms, self.counters.overload_refusals(), &reports)
    }
}
