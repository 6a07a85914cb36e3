//! Alerts 70, 78 and 79 of OTT redundancy (OTT-OPS-3, OTT-OVL-3), raised and cleared
//! with hysteresis: a condition must hold for its raise delay before the alert fires,
//! and be gone for its clear delay before it clears, so gossip churn and single
//! refusals do not page anyone.
//!
//! | code | name | raised when | instance |
//! |---|---|---|---|
//! | 70 | `reserve-ott-unprotected` | a group has fewer than two eligible members (this node's included) for 10 s; clears after 30 s protected | group |
//! | 78 | `reserve-ott-problem` | a member or node of a group has a problem (version, clock, view key, timeline, ladder, addresses, can substitute, live window, node down) for 30 s; clears after 60 s without | group + node |
//! | 79 | `reserve-ott-overload` | this node has refused viewers from other nodes for more than 30 s (refusals no more than 10 s apart); clears after 60 s without refusals | node |

use std::collections::BTreeMap;

use crate::problem::Problem;
use crate::report::GroupReport;
use crate::view::NodeId;

/// Refusals no further apart than this belong to one overload episode.
pub const REFUSAL_GAP_MS: i64 = 10_000;

/// The OTT alert codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AlertCode {
    /// 70: a group lost its protection (fewer than two eligible members).
    Unprotected,
    /// 78: a member or node of a group has a configuration or health problem.
    MemberProblem,
    /// 79: refusals of backup viewers lasted more than 30 s (OTT-OVL-3).
    Overload,
}

impl AlertCode {
    /// The numeric code.
    pub fn number(self) -> u16 {
        match self {
            AlertCode::Unprotected => 70,
            AlertCode::MemberProblem => 78,
            AlertCode::Overload => 79,
        }
    }

    /// The alert name (Alertmanager `alertname`).
    pub fn name(self) -> &'static str {
        match self {
            AlertCode::Unprotected => "reserve-ott-unprotected",
            AlertCode::MemberProblem => "reserve-ott-problem",
            AlertCode::Overload => "reserve-ott-overload",
        }
    }

    /// How long the condition must hold before the alert is raised, ms.
    pub fn raise_after_ms(self) -> i64 {
        match self {
            AlertCode::Unprotected => 10_000,
            AlertCode::MemberProblem => 30_000,
            AlertCode::Overload => 30_000,
        }
    }

    /// How long the condition must be gone before the alert clears, ms.
    pub fn clear_after_ms(self) -> i64 {
        match self {
            AlertCode::Unprotected => 30_000,
            AlertCode::MemberProblem | AlertCode::Overload => 60_000,
        }
    }
}

/// What the alert machine looks at on each tick.
#[derive(Debug, Clone, Copy)]
pub struct Observations<'a> {
    /// Backup viewers refused since the node started (a monotonic counter).
    pub refusals_total: u64,
    /// The current report of each group this node is in.
    pub groups: &'a [GroupReport],
}

/// Raised or cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AlertKind {
    /// The alert starts firing.
    Raised,
    /// The alert is resolved.
    Cleared,
}

/// Which alert of which subject.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AlertKey {
    /// The code.
    pub code: AlertCode,
    /// The group (70, 78).
    pub group: Option<String>,
    /// The node (78).
    pub node: Option<NodeId>,
}

/// One change to deliver to the webhook, the log, `/metrics` and the screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertChange {
    /// Which alert.
    pub key: AlertKey,
    /// Raised or cleared.
    pub kind: AlertKind,
    /// When, Unix ms.
    pub at_ms: i64,
    /// Plain-words description at the time of the change.
    pub summary: String,
}

#[derive(Debug, Clone, Default)]
struct Debounce {
    active: bool,
    /// Since when the condition disagrees with `active`.
    pending_since: Option<i64>,
    summary: String,
}

/// The alert state machine; feed it every tick with [`AlertState::update`].
#[derive(Debug, Clone, Default)]
pub struct AlertState {
    last_refusals_total: Option<u64>,
    last_refusal_at_ms: Option<i64>,
    instances: BTreeMap<AlertKey, Debounce>,
}

impl AlertState {
    /// A state with nothing raised.
    pub fn new() -> Self {
        Self::default()
    }

    /// Advances to `now_ms` with the current observations; returns the alerts raised
    /// and cleared by this tick.
    pub fn update(&mut self, now_ms: i64, obs: Observations<'_>) -> Vec<AlertChange> {
        if self
            .last_refusals_total
            .is_some_and(|prev| obs.refusals_total > prev)
        {
            self.last_refusal_at_ms = Some(now_ms);
        }
        self.last_refusals_total = Some(obs.refusals_total);

        let mut conditions: BTreeMap<AlertKey, String> = BTreeMap::new();
        if self
            .last_refusal_at_ms
            .is_some_and(|at| now_ms.saturating_sub(at) <= REFUSAL_GAP_MS)
        {
            conditions.insert(
                AlertKey {
                    code: AlertCode::Overload,
                    group: None,
                    node: None,
                },
                "this node refuses viewers from other nodes: the headroom is not enough".into(),
            );
        }
        for report in obs.groups {
            if report.eligible_members < 2 {
                conditions.insert(
                    AlertKey {
                        code: AlertCode::Unprotected,
                        group: Some(report.group.clone()),
                        node: None,
                    },
                    format!(
                        "group {} is not protected: {} eligible member(s)",
                        report.group, report.eligible_members
                    ),
                );
            }
            for row in &report.rows {
                let problems: Vec<&Problem> = row
                    .problems
                    .iter()
                    .filter(|p| p.is_member_problem())
                    .collect();
                if problems.is_empty() {
                    continue;
                }
                let text: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
                conditions.insert(
                    AlertKey {
                        code: AlertCode::MemberProblem,
                        group: Some(report.group.clone()),
                        node: Some(row.node.clone()),
                    },
                    text.join("; "),
                );
            }
        }

        for key in conditions.keys() {
            self.instances.entry(key.clone()).or_default();
        }
        let mut changes = Vec::new();
        for (key, state) in &mut self.instances {
            let condition = conditions.get(key);
            if condition.is_some() == state.active {
                state.pending_since = None;
                if let Some(summary) = condition {
                    state.summary.clone_from(summary);
                }
                continue;
            }
            let since = *state.pending_since.get_or_insert(now_ms);
            let delay = if state.active {
                key.code.clear_after_ms()
            } else {
                key.code.raise_after_ms()
            };
            let held = now_ms.saturating_sub(since);
            // 79 fires when refusals last *more than* 30 s.
            let due = if key.code == AlertCode::Overload && !state.active {
                held > delay
            } else {
                held >= delay
            };
            if !due {
                continue;
            }
            state.active = !state.active;
            state.pending_since = None;
            if let Some(summary) = condition {
                state.summary.clone_from(summary);
            }
            changes.push(AlertChange {
                key: key.clone(),
                kind: if state.active {
                    AlertKind::Raised
                } else {
                    AlertKind::Cleared
                },
                at_ms: now_ms,
                summary: state.summary.clone(),
            });
        }
        self.instances
            .retain(|_, s| s.active || s.pending_since.is_some());
        changes
    }

    /// The alerts firing now, with their latest summary (for `/metrics` and the
    /// screen).
    pub fn active(&self) -> Vec<(AlertKey, String)> {
        self.instances
            .iter()
            .filter(|(_, s)| s.active)
            .map(|(k, s)| (k.clone(), s.summary.clone()))
            .collect()
    }
}
