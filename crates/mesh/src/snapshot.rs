//! Building the [`ott::Snapshot`] from what chitchat holds: a pure function over
//! plain values, so its rules are tested without sockets.
//!
//! Rules:
//! - a peer appears once its node announce has arrived; before that it is unknown;
//! - of several generations of one node name, the snapshot keeps one: an alive one
//!   first, then the newest (a restarted node replaces its dead former self);
//!   generations of this node's own name are former selves and are left out;
//! - a dead node stays listed with `alive = false` until chitchat forgets it (the
//!   configured retention), with its members, so the Backups screen can show it;
//! - `has_view_key` = the peer's published fingerprint is one this node accepts;
//! - `clock_offset_ms` = the estimate, 0 before the first clock sample.

use std::collections::BTreeMap;

use ott::{MemberView, NodeId, NodeView, Snapshot, Version};

use crate::state::{decode_member, decode_node, parse_fingerprint, NodeAnnounce};

/// One gossip identity as chitchat knows it, with its raw key values.
#[derive(Debug, Clone)]
pub(crate) struct PeerState {
    /// Node name.
    pub name: String,
    /// Generation (start time, ms).
    pub generation: u64,
    /// Failure detection says it is up.
    pub alive: bool,
    /// [`crate::state::KEY_NODE`] value.
    pub node_json: Option<String>,
    /// [`crate::state::KEY_VIEW_KEY`] value.
    pub view_key: Option<String>,
    /// Member values.
    pub members: Vec<String>,
    /// Estimated clock offset, when sampled.
    pub clock_offset_ms: Option<i64>,
    /// Since its heartbeat (its clock key) last changed here, ms; 0 before the first.
    pub silent_ms: i64,
}

/// The text of a node id: `name@generation`.
pub fn node_id(name: &str, generation: u64) -> NodeId {
    NodeId::new(format!("{name}@{generation}"))
}

/// The node name part of a node id (the whole id when it has no generation).
pub fn node_name(id: &NodeId) -> &str {
    id.as_str()
        .rsplit_once('@')
        .map_or(id.as_str(), |(name, _)| name)
}

/// This node's own part of the snapshot.
pub(crate) struct OwnState<'a> {
    pub id: NodeId,
    pub name: &'a str,
    pub node: &'a NodeAnnounce,
    pub members: &'a [MemberView],
}

pub(crate) fn build(
    own: &OwnState<'_>,
    peers: Vec<PeerState>,
    accepted_fingerprints: &[u64],
    min_version: Version,
) -> Snapshot {
    let mut chosen: BTreeMap<String, PeerState> = BTreeMap::new();
    for peer in peers {
        if peer.name == own.name {
            continue;
        }
        match chosen.get(&peer.name) {
            Some(best) if (best.alive, best.generation) >= (peer.alive, peer.generation) => {}
            _ => {
                chosen.insert(peer.name.clone(), peer);
            }
        }
    }
    let this = node_view(own.id.clone(), own.node, 0, true, true, 0);
    let mut members: Vec<MemberView> = own
        .members
        .iter()
        .map(|m| MemberView {
            node: own.id.clone(),
            ..m.clone()
        })
        .collect();
    let mut nodes = Vec::with_capacity(chosen.len());
    for peer in chosen.into_values() {
        let Some(announce) = peer.node_json.as_deref().and_then(decode_node) else {
            continue;
        };
        let id = node_id(&peer.name, peer.generation);
        let has_view_key = peer
            .view_key
            .as_deref()
            .and_then(parse_fingerprint)
            .is_some_and(|fp| accepted_fingerprints.contains(&fp));
        nodes.push(node_view(
            id.clone(),
            &announce,
            peer.clock_offset_ms.unwrap_or(0),
            has_view_key,
            peer.alive,
            peer.silent_ms,
        ));
        members.extend(
            peer.members
                .iter()
                .filter_map(|json| decode_member(json, id.clone())),
        );
    }
    let mut snapshot = Snapshot {
        this,
        nodes,
        members,
        min_version,
    };
    ott::mark_shared_names(&mut snapshot);
    snapshot
}

fn node_view(
    id: NodeId,
    n: &NodeAnnounce,
    clock_offset_ms: i64,
    has_view_key: bool,
    alive: bool,
    silent_ms: i64,
) -> NodeView {
    NodeView {
        id,
        version: n.version,
        hostname: n.hostname.clone(),
        addresses: n.addresses.clone(),
        clock_offset_ms,
        has_view_key,
        load: n.load,
        thresholds: n.thresholds,
        alive,
        silent_ms,
        draining: n.draining,
        certificate_mismatch: n.certificate_mismatch,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{encode_member, encode_node, fingerprint_text};

    fn announce(version: Version) -> NodeAnnounce {
        NodeAnnounce {
            version,
            ..NodeAnnounce::default()
        }
    }

    fn member(stream: &str) -> MemberView {
        MemberView {
            node: NodeId::new("announcer"),
            group: "g".into(),
            stream: stream.into(),
            can_substitute: true,
            live_window_at_ms: Some(5),
            timeline_fingerprint: Some(9),
            ladder: vec![],
            languages: vec![],
            archive: Default::default(),
        }
    }

    fn peer(name: &str, generation: u64, alive: bool, fp: u64) -> PeerState {
        PeerState {
            name: name.into(),
            generation,
            alive,
            node_json: Some(encode_node(&announce(Version::new(2, 1, 0, 456)))),
            view_key: Some(fingerprint_text(fp)),
            members: vec![encode_member(&member(&format!("{name}-s")))],
            clock_offset_ms: Some(1_500),
            silent_ms: 0,
        }
    }

    #[test]
    fn generations_dead_nodes_view_keys_and_unannounced_peers() {
        let own_node = announce(Version::new(3, 0, 0, 0));
        let own_members = [member("mine")];
        let own = OwnState {
            id: node_id("a", 10),
            name: "a",
            node: &own_node,
            members: &own_members,
        };
        let mut silent = peer("d", 1, true, 7);
        silent.node_json = None;
        let peers = vec![
            peer("a", 3, false, 7),  // former self
            peer("b", 1, false, 7),  // b's dead first life
            peer("b", 2, true, 7),   // b restarted
            peer("c", 1, false, 99), // dead, wrong key
            silent,
        ];
        let s = build(&own, peers, &[6, 7, 8], Version::SEED_MINIMUM);
        assert_eq!(s.this.id.as_str(), "a@10");
        let ids: Vec<_> = s.nodes.iter().map(|n| n.id.as_str()).collect();
        assert_eq!(ids, ["b@2", "c@1"]);
        assert!(s.nodes[0].alive && s.nodes[0].has_view_key);
        assert!(!s.nodes[1].alive && !s.nodes[1].has_view_key);
        assert_eq!(s.nodes[0].clock_offset_ms, 1_500);
        let streams: Vec<_> = s
            .members
            .iter()
            .map(|m| (m.node.as_str(), m.stream.as_str()))
            .collect();
        assert_eq!(streams, [("a@10", "mine"), ("b@2", "b-s"), ("c@1", "c-s")]);
        assert_eq!(node_name(&s.nodes[0].id), "b");
    }
}
