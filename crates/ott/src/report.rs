//! The state of an OTT group for the Backups screen (OTT-OPS-1) and alerts 70/78.

use crate::address::{backup_address, ViewerContext};
use crate::eligibility::{eligibility_problems, live_window_age_ms, servable_problems};
use crate::problem::Problem;
use crate::view::{Load, NodeId, NodeView, Scheme, Snapshot, Version};

/// One member's row on the Backups screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberRow {
    /// Its node.
    pub node: NodeId,
    /// The stream or package name there.
    pub stream: String,
    /// The row of this node's own member.
    pub this_node: bool,
    /// Failure detection says the node is up.
    pub alive: bool,
    /// "Can substitute" (OTT-ELIG-1).
    pub can_substitute: bool,
    /// Same timeline as this node's member (OTT-ELIG-2); `true` on the own row when
    /// it has a fingerprint.
    pub same_timeline: bool,
    /// Live-window age in this node's clock, ms (OTT-ELIG-1).
    pub live_window_age_ms: Option<i64>,
    /// Its clock minus ours, ms (OTT-ELIG-4).
    pub clock_offset_ms: i64,
    /// Its version (OTT-GRP-5).
    pub version: Version,
    /// Its audio languages, ISO 639-2, the floor's first (OTT-ELIG-3).
    pub languages: Vec<String>,
    /// Its load and backup sessions (OTT-ELIG-5).
    pub load: Load,
    /// It counts towards the group's protection.
    pub eligible: bool,
    /// What is wrong, in plain words.
    pub problems: Vec<Problem>,
}

/// A group's overall state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupState {
    /// At least two eligible members and no problem ("protected").
    Protected,
    /// What is wrong, group-level first.
    Problems(Vec<Problem>),
}

/// What the Backups screen shows for one group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupReport {
    /// The group name.
    pub group: String,
    /// Protected, or its problems.
    pub state: GroupState,
    /// Eligible members, this node's included (alert 70 when under two).
    pub eligible_members: usize,
    /// This node's row first, then the others in member order.
    pub rows: Vec<MemberRow>,
}

/// The viewers this node has to find backups for: public if it announces a public
/// address, HTTPS if it announces an HTTPS one. Backups that cannot serve them are
/// shown with the address problem (OTT-ADDR-2/3).
fn own_viewers(this: &NodeView) -> ViewerContext {
    let own = this.addresses.iter().filter(|a| !a.cdn_shared);
    ViewerContext {
        public: own.clone().any(|a| a.public),
        https: own.into_iter().any(|a| a.scheme == Scheme::Https),
    }
}

/// The report of `group` from this node's point of view at `now_ms`.
pub fn group_report(snapshot: &Snapshot, group: &str, now_ms: i64) -> GroupReport {
    let min = snapshot.min_version;
    let own = snapshot.own_member(group);
    let viewers = own_viewers(&snapshot.this);
    let mut rows = Vec::new();
    if let Some(own) = own {
        let mut problems = servable_problems(&snapshot.this, own, now_ms, min);
        // Its own certificate (OTT-ADDR-3): the other nodes send it no HTTPS viewer.
        if snapshot.this.certificate_mismatch {
            problems.push(Problem::CertificateNotForHostname {
                node: snapshot.this.id.clone(),
            });
        }
        rows.push(MemberRow {
            node: snapshot.this.id.clone(),
            stream: own.stream.clone(),
            this_node: true,
            alive: true,
            can_substitute: own.can_substitute,
            same_timeline: own.timeline_fingerprint.is_some(),
            live_window_age_ms: live_window_age_ms(&snapshot.this, own, now_ms),
            clock_offset_ms: 0,
            version: snapshot.this.version,
            languages: own.languages.clone(),
            load: snapshot.this.load,
            eligible: problems.is_empty(),
            problems,
        });
    }
    for (node, member) in snapshot.others(group) {
        let mut problems = match own {
            Some(own) => eligibility_problems(&snapshot.this, node, member, own, now_ms, min),
            None => servable_problems(node, member, now_ms, min),
        };
        if let Err(problem) = backup_address(node, viewers) {
            problems.push(problem);
        }
        rows.push(MemberRow {
            node: node.id.clone(),
            stream: member.stream.clone(),
            this_node: false,
            alive: node.alive,
            can_substitute: member.can_substitute,
            same_timeline: own.is_some_and(|own| {
                own.timeline_fingerprint.is_some()
                    && own.timeline_fingerprint == member.timeline_fingerprint
            }),
            live_window_age_ms: live_window_age_ms(node, member, now_ms),
            clock_offset_ms: node.clock_offset_ms,
            version: node.version,
            languages: member.languages.clone(),
            load: node.load,
            eligible: own.is_some() && problems.is_empty(),
            problems,
        });
    }
    let eligible_members = rows.iter().filter(|r| r.eligible).count();
    let mut problems = Vec::new();
    if own.is_none() {
        problems.push(Problem::NotInGroup {
            group: group.to_owned(),
        });
    }
    if eligible_members < 2 {
        problems.push(Problem::NotEnoughMembers {
            group: group.to_owned(),
            eligible: eligible_members,
        });
    }
    problems.extend(rows.iter().flat_map(|r| r.problems.iter().cloned()));
    let state = if problems.is_empty() {
        GroupState::Protected
    } else {
        GroupState::Problems(problems)
    };
    GroupReport {
        group: group.to_owned(),
        state,
        eligible_members,
        rows,
    }
}
