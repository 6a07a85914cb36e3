//! Overload refusal (OTT-OVL-1..3, DESIGN invariant 4): a node refuses a *new viewer
//! arriving from another node with a pass* when it is above its error thresholds or at
//! its backup-session limit, and never refuses its own viewers.

use crate::view::NodeView;

/// Why a backup viewer is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Overload {
    /// CPU load above the alert settings' error threshold.
    Cpu,
    /// Network load above the alert settings' error threshold.
    Network,
    /// The backup-session limit is reached.
    SessionLimit,
}

impl Overload {
    /// A stable key for the refusal answer and the metric label.
    pub fn code(self) -> &'static str {
        match self {
            Overload::Cpu => "cpu",
            Overload::Network => "network",
            Overload::SessionLimit => "backup-session-limit",
        }
    }
}

/// The answer to a viewer at the door.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Admit {
    /// Serve it.
    Accept,
    /// Refuse it at once (no hang) so the player moves to its second backup (OTT-OVL-3).
    Refuse(Overload),
}

/// Whether the node is overloaded for backup viewers (OTT-OVL-1, OTT-ELIG-5), and why.
/// A limit of 0 sessions means the node takes no backup viewers at all.
pub fn overload(node: &NodeView) -> Option<Overload> {
    let (load, limits) = (&node.load, &node.thresholds);
    if load.cpu_percent > limits.cpu_error_percent {
        Some(Overload::Cpu)
    } else if load.net_percent > limits.net_error_percent {
        Some(Overload::Network)
    } else if limits
        .backup_session_limit
        .is_some_and(|limit| load.backup_sessions >= limit)
    {
        Some(Overload::SessionLimit)
    } else {
        None
    }
}

/// Admits or refuses a new viewer on `node` (this node, with its current load).
/// Own viewers (`arriving_with_pass == false`) are always admitted (OTT-OVL-2);
/// viewers with a pass from another node are refused when overloaded (OTT-OVL-1).
pub fn admit_backup_viewer(node: &NodeView, arriving_with_pass: bool) -> Admit {
    if !arriving_with_pass {
        return Admit::Accept;
    }
    match overload(node) {
        Some(why) => Admit::Refuse(why),
        None => Admit::Accept,
    }
}
