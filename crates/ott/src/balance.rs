//! Balanced backup choice (OTT-GRP-2, OTT-CAP-1) by rendezvous (highest random
//! weight) hashing of the viewer session over the eligible nodes.
//!
//! Each viewer's first backup is the eligible node (other than its own) with the
//! highest weight `H(session, node)`, its second the next. For viewers of a node F,
//! the first backup is the maximum of N−1 independent uniform weights, so each other
//! node is first for 1/(N−1) of F's viewers: when F fails (and the player moves to its
//! first backup) its viewers spread evenly. Removing any node changes only the
//! choices that named it. The weight is SHA-256, so every node computes the same
//! choice for the same session.

use ring::digest;

use crate::view::NodeId;

/// The rendezvous weight of `node` for `session`: the first 8 bytes of
/// SHA-256(len(session) ‖ session ‖ node id).
pub fn rendezvous_weight(session: &[u8], node: &NodeId) -> u64 {
    let mut ctx = digest::Context::new(&digest::SHA256);
    ctx.update(&(session.len() as u64).to_be_bytes());
    ctx.update(session);
    ctx.update(node.as_str().as_bytes());
    let d = ctx.finish();
    let mut first = [0u8; 8];
    first.copy_from_slice(&d.as_ref()[..8]);
    u64::from_be_bytes(first)
}

/// Up to two backups for a viewer session among `eligible`, never `self_id`, never
/// the same node twice, highest weight first. Ties (practically impossible) go to the
/// smaller node id, so the answer is deterministic.
pub fn choose_backups(
    viewer_session: &[u8],
    eligible: &[NodeId],
    self_id: &NodeId,
) -> [Option<NodeId>; 2] {
    choose_backup_indices(viewer_session, eligible.iter(), self_id)
        .map(|i| i.map(|i| eligible[i].clone()))
}

/// [`choose_backups`] over any list of node ids, answering their positions in it (the
/// first position of a node listed twice): a node picks among its candidates without
/// copying their ids.
pub fn choose_backup_indices<'a>(
    viewer_session: &[u8],
    eligible: impl Iterator<Item = &'a NodeId>,
    self_id: &NodeId,
) -> [Option<usize>; 2] {
    let mut best: [Option<(u64, &NodeId, usize)>; 2] = [None, None];
    let better = |w: u64, id: &NodeId, than: Option<(u64, &NodeId, usize)>| match than {
        None => true,
        Some((tw, tid, _)) => w > tw || (w == tw && id < tid),
    };
    for (index, id) in eligible.enumerate() {
        if id == self_id || best.iter().flatten().any(|(_, b, _)| *b == id) {
            continue;
        }
        let w = rendezvous_weight(viewer_session, id);
        if better(w, id, best[0]) {
            best[1] = best[0];
            best[0] = Some((w, id, index));
        } else if better(w, id, best[1]) {
            best[1] = Some((w, id, index));
        }
    }
    best.map(|b| b.map(|(_, _, index)| index))
}
