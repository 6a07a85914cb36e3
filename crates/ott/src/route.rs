//! Where to send viewers: backups for the master playlist (OTT-GRP-2, OTT-PROT-1),
//! a redirect on open (OTT-PROT-2/4) and the archive redirect (OTT-PROT-3,
//! OTT-ARCH-1/2).

use crate::address::{backup_address, ViewerContext};
use crate::balance::choose_backup_indices;
use crate::eligibility::{eligibility_problems, same_package, servable_problems};
use crate::problem::Problem;
use crate::variants::{backup_uri, BackupLink};
use crate::view::{NodeId, Protocol, Snapshot, Transport};

/// A node to send a viewer to, at the address chosen for that viewer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Target {
    /// The node.
    pub node: NodeId,
    /// Its address for this viewer (OTT-ADDR-*), no trailing slash.
    pub url_base: String,
    /// The stream's name there.
    pub stream: String,
}

impl Target {
    /// The URL of `file` (a path relative to the stream's folder, e.g. `index.m3u8`,
    /// possibly with a query) on the target, with the pass: the `Location` of a 302.
    pub fn location(&self, file: &str, pass: &str) -> String {
        backup_uri(file, &self.link(pass.to_owned()))
    }

    /// The target as a master playlist backup.
    pub fn link(&self, pass: String) -> BackupLink {
        BackupLink {
            url_base: self.url_base.clone(),
            stream: self.stream.clone(),
            pass,
        }
    }
}

/// The other nodes whose member of `group` is an eligible backup for this node's
/// member now (OTT-ELIG-1..5), in member order; empty if this node has no member.
pub fn eligible_backups(snapshot: &Snapshot, group: &str, now_ms: i64) -> Vec<NodeId> {
    let Some(own) = snapshot.own_member(group) else {
        return Vec::new();
    };
    let mut ids: Vec<NodeId> = snapshot
        .others(group)
        .filter(|(node, member)| {
            eligibility_problems(
                &snapshot.this,
                node,
                member,
                own,
                now_ms,
                snapshot.min_version,
            )
            .is_empty()
        })
        .map(|(node, _)| node.id.clone())
        .collect();
    ids.dedup();
    ids
}

/// The candidates that pass a filter and have an address for the viewer, one per node
/// in member order; `problems` collects why the others did not.
fn filter_candidates(
    snapshot: &Snapshot,
    group: &str,
    viewer: ViewerContext,
    ok: impl Fn(&crate::view::NodeView, &crate::view::MemberView) -> Vec<Problem>,
    problems: &mut Vec<Problem>,
) -> Vec<Target> {
    let mut candidates: Vec<Target> = Vec::new();
    for (node, member) in snapshot.others(group) {
        if candidates.iter().any(|t| t.node == node.id) {
            continue;
        }
        let found = ok(node, member);
        if !found.is_empty() {
            problems.extend(found);
            continue;
        }
        match backup_address(node, viewer) {
            Ok(url_base) => candidates.push(Target {
                node: node.id.clone(),
                url_base,
                stream: member.stream.clone(),
            }),
            Err(problem) => problems.push(problem),
        }
    }
    candidates
}

/// The balanced choice among `candidates` for one viewer session (OTT-CAP-1): up to
/// two, first backup first. `this` is never chosen.
pub fn pick_backups(candidates: &[Target], session: &[u8], this: &NodeId) -> Vec<Target> {
    choose_backup_indices(session, candidates.iter().map(|t| &t.node), this)
        .into_iter()
        .flatten()
        .map(|index| candidates[index].clone())
        .collect()
}

fn choose(
    snapshot: &Snapshot,
    group: &str,
    viewer: ViewerContext,
    session: &[u8],
    ok: impl Fn(&crate::view::NodeView, &crate::view::MemberView) -> Vec<Problem>,
    problems: &mut Vec<Problem>,
) -> Vec<Target> {
    let candidates = filter_candidates(snapshot, group, viewer, ok, problems);
    pick_backups(&candidates, session, &snapshot.this.id)
}

/// Every member that may back up this node's member of `group` for viewers of this
/// kind (OTT-ELIG-1..5 and OTT-ADDR-*), at its address for them, in member order:
/// the part of [`backups_for_viewer`] that does not depend on the session, so a
/// node can compute it once per mesh snapshot and only [`pick_backups`] per viewer.
pub fn backup_candidates(
    snapshot: &Snapshot,
    group: &str,
    viewer: ViewerContext,
    now_ms: i64,
) -> Vec<Target> {
    let Some(own) = snapshot.own_member(group) else {
        return Vec::new();
    };
    let check = |node: &crate::view::NodeView, member: &crate::view::MemberView| {
        eligibility_problems(
            &snapshot.this,
            node,
            member,
            own,
            now_ms,
            snapshot.min_version,
        )
    };
    filter_candidates(snapshot, group, viewer, check, &mut Vec::new())
}

/// Up to two backups for one viewer of this node's member of `group`, first backup
/// first (OTT-GRP-2): eligible members with an address this viewer may use,
/// balanced by the viewer session (OTT-CAP-1). Only for switching players
/// (OTT-PLAY-1) and HLS over MPEG-TS (OTT-PROT-4): the caller decides that.
pub fn backups_for_viewer(
    snapshot: &Snapshot,
    group: &str,
    viewer: ViewerContext,
    session: &[u8],
    now_ms: i64,
) -> Vec<Target> {
    let candidates = backup_candidates(snapshot, group, viewer, now_ms);
    pick_backups(&candidates, session, &snapshot.this.id)
}

/// Why no node could take a redirected viewer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no node of the group can serve this viewer ({} problem(s))", problems.len())]
pub struct NoTarget {
    /// What is wrong with each other member.
    pub problems: Vec<Problem>,
}

/// The node a new viewer of this node's member of `group` should be redirected to
/// when the stream is not working here (OTT-PROT-2, OTT-OPS-2): a member that can
/// take a viewer with a pass, packages the protocol's container, and has an address
/// for this viewer; balanced by session. The timeline need not match: the player
/// starts afresh (any player; HLS, LL-HLS and DASH, OTT-PROT-4).
///
/// # Errors
/// [`NoTarget`] with every member's problems when none qualifies.
pub fn redirect_target(
    snapshot: &Snapshot,
    group: &str,
    protocol: Protocol,
    viewer: ViewerContext,
    session: &[u8],
    now_ms: i64,
) -> Result<Target, NoTarget> {
    let transport = protocol.transport();
    let check = |node: &crate::view::NodeView, member: &crate::view::MemberView| {
        let mut found = servable_problems(node, member, now_ms, snapshot.min_version);
        if !member.ladder.iter().any(|r| r.transport == transport) {
            let node = node.id.clone();
            found.push(match transport {
                Transport::Ts => Problem::NotHlsTs { node },
                Transport::Fmp4 => Problem::LadderMismatch { node },
            });
        }
        found
    };
    let mut problems = Vec::new();
    choose(snapshot, group, viewer, session, check, &mut problems)
        .into_iter()
        .next()
        .ok_or(NoTarget { problems })
}

/// What to do with a catch-up request (OTT-PROT-3, OTT-ARCH-1/2).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ArchiveDecision {
    /// The period is inside this node's archive range (gaps included), or this node
    /// holds at least as much of it as any other: serve it here.
    ServeHere,
    /// Another node holds the largest part of the period: 302 there with a pass.
    Redirect(Target),
    /// No node of the group holds any of it.
    NotRecorded,
}

/// Milliseconds of `[from, to]` inside `[a, b]`.
fn overlap(from: i64, to: i64, (a, b): (i64, i64)) -> i64 {
    to.min(b).saturating_sub(from.max(a)).max(0)
}

/// Where the archive period `[from_ms, to_ms]` of this node's member of `group` is
/// served, judged by each member's archive range in the request's protocol (MPEG-TS
/// for HLS, fMP4 for LL-HLS and DASH). Other nodes count only if they can take a
/// viewer with a pass (up, version, clock, view key, not overloaded) at an address
/// this viewer may use; a live window is not needed. Ties favour this node, then the
/// earlier member.
pub fn archive_target(
    snapshot: &Snapshot,
    group: &str,
    protocol: Protocol,
    from_ms: i64,
    to_ms: i64,
    viewer: ViewerContext,
    now_ms: i64,
) -> ArchiveDecision {
    let transport = protocol.transport();
    let (from, end) = (from_ms.min(to_ms), from_ms.max(to_ms));
    let own_span = snapshot
        .own_member(group)
        .and_then(|m| m.archive.span(transport));
    if let Some((a, b)) = own_span {
        if a <= from && end <= b {
            return ArchiveDecision::ServeHere;
        }
    }
    // A zero-length period asks for the instant at `from`: count it as 1 ms.
    let to = end.max(from.saturating_add(1));
    let own_part = own_span.map_or(0, |span| overlap(from, to, span));
    // A package's catch-up goes to a member that recorded the same ladder when one holds
    // any of the period; to a member with another ladder only when none does.
    let own_ladder = snapshot.own_member(group).map(|m| m.ladder.as_slice());
    let holder = |admit: &dyn Fn(&crate::view::MemberView) -> bool| {
        archive_holder(
            snapshot,
            group,
            transport,
            (from, to),
            viewer,
            now_ms,
            admit,
        )
    };
    let best = holder(&|m| own_ladder.is_none_or(|own| same_package(own, &m.ladder)))
        .or_else(|| holder(&|_| true));
    match best {
        Some((part, target)) if part > own_part => ArchiveDecision::Redirect(target),
        Some(_) => ArchiveDecision::ServeHere,
        None if own_part > 0 => ArchiveDecision::ServeHere,
        None => ArchiveDecision::NotRecorded,
    }
}

/// The member of `group` on another node, among those `admit` takes, that holds the
/// most of `[from, to)` in its `transport` archive and can serve the viewer: how much it
/// holds and where it is.
fn archive_holder(
    snapshot: &Snapshot,
    group: &str,
    transport: Transport,
    (from, to): (i64, i64),
    viewer: ViewerContext,
    now_ms: i64,
    admit: &dyn Fn(&crate::view::MemberView) -> bool,
) -> Option<(i64, Target)> {
    let mut best: Option<(i64, Target)> = None;
    for (node, member) in snapshot.others(group) {
        if !admit(member) {
            continue;
        }
        let Some(span) = member.archive.span(transport) else {
            continue;
        };
        let part = overlap(from, to, span);
        if part == 0 || best.as_ref().is_some_and(|(p, _)| part <= *p) {
            continue;
        }
        let blocked = servable_problems(node, member, now_ms, snapshot.min_version)
            .into_iter()
            .any(|p| {
                !matches!(
                    p,
                    Problem::CannotSubstitute { .. } | Problem::LiveWindowStale { .. }
                )
            });
        if blocked {
            continue;
        }
        if let Ok(url_base) = backup_address(node, viewer) {
            let target = Target {
                node: node.id.clone(),
                url_base,
                stream: member.stream.clone(),
            };
            best = Some((part, target));
        }
    }
    best
}
