//! The way in for viewers: `/watch/{group}` on any node answers with the
//! node that should serve this viewer now — a new viewer, or a player that reopens
//! after its node died (VLC, ffmpeg, set-top boxes never switch by themselves).
//!
//! Every node that can take the viewer is a candidate, the entry node included when
//! the stream works there; the choice is the highest rendezvous weight of the viewer
//! session (OTT-CAP-1), so viewers spread evenly and a viewer that reopens lands on the
//! same node as long as it works.

use crate::address::{backup_address, ViewerContext};
use crate::balance::rendezvous_weight;
use crate::eligibility::servable_problems;
use crate::problem::Problem;
use crate::route::{NoTarget, Target};
use crate::view::{Protocol, Snapshot};

/// Where the entry sends a viewer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// This node serves it: the stream named here.
    Here(String),
    /// Another node, with a pass.
    There(Target),
}

/// The node a viewer entering by `group` should watch from. `here` is this node's
/// stream of the group when it works here now (the caller knows: input, freshness,
/// drain).
///
/// # Errors
/// [`NoTarget`] with every other member's problems when no node can take the viewer.
pub fn entry_target(
    snapshot: &Snapshot,
    group: &str,
    protocol: Protocol,
    here: Option<&str>,
    viewer: ViewerContext,
    session: &[u8],
    now_ms: i64,
) -> Result<Entry, NoTarget> {
    let transport = protocol.transport();
    let mut best: Option<(u64, Entry)> = here.map(|stream| {
        (
            rendezvous_weight(session, &snapshot.this.id),
            Entry::Here(stream.to_owned()),
        )
    });
    let mut problems: Vec<Problem> = Vec::new();
    for (node, member) in snapshot.others(group) {
        let mut found = servable_problems(node, member, now_ms, snapshot.min_version);
        if !member.ladder.iter().any(|r| r.transport == transport) {
            found.push(Problem::LadderMismatch {
                node: node.id.clone(),
            });
        }
        if !found.is_empty() {
            problems.extend(found);
            continue;
        }
        let url_base = match backup_address(node, viewer) {
            Ok(url_base) => url_base,
            Err(problem) => {
                problems.push(problem);
                continue;
            }
        };
        let weight = rendezvous_weight(session, &node.id);
        if best.as_ref().is_none_or(|(w, _)| weight > *w) {
            best = Some((
                weight,
                Entry::There(Target {
                    node: node.id.clone(),
                    url_base,
                    stream: member.stream.clone(),
                }),
            ));
        }
    }
    best.map(|(_, entry)| entry).ok_or(NoTarget { problems })
}
