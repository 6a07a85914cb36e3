//! Balanced backup choice (OTT-GRP-2, OTT-CAP-1) by rendezvous (highest random
//! weight) hashing of the viewer session over the eligible nodes.
//!
//! Each viewer's first backup is the eligible node (other than its own) with the
//! highest weight `H(session, node)`, its second the next. For viewers of a node F,
//! the first backup is the maximum of N−1 independent uniform weights, so each other
//! node is first for 1/(N−1) of F's viewers: when F fails (and the player moves to its
//! first backup) its viewers spread evenly. Removing any node changes only the
//! choices that named it.
//!
//! The weight is a fixed, portable function ([`stable_hash`] of the session and of the
//! node id, mixed), so every node computes the same choice for the same session. It is
//! not a cryptographic hash: a viewer who picks its session (the `X-Brdyun-Member`
//! header) picks its backups anyway, and the session is reduced once per request
//! ([`SessionDigest`]) instead of once per candidate, on the path of every master
//! playlist and steering manifest.

use crate::view::NodeId;

/// A 64-bit hash of `bytes` that is the same on every machine, build and version of
/// this code: eight bytes at a time (little-endian), multiply and rotate, the length,
/// then a full avalanche. For choosing and telling apart, not for secrets.
pub fn stable_hash(bytes: &[u8]) -> u64 {
    let mut hasher = StableHasher::default();
    hasher.write(bytes);
    hasher.finish()
}

/// [`stable_hash`] of bytes given in pieces: the pieces hash as their concatenation
/// does, so a key need not be written out to be hashed.
#[derive(Debug, Clone, Default)]
pub struct StableHasher {
    h: u64,
    /// Bytes of a word not yet complete, little-endian from the lowest byte.
    pending: u64,
    /// How many bytes `pending` holds (0..8).
    pending_len: u32,
    len: u64,
}

impl StableHasher {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;

    fn step(&mut self, word: u64) {
        self.h = (self.h ^ word).wrapping_mul(Self::K).rotate_left(29);
    }

    /// Adds `bytes` after those given so far. The bytes of an incomplete word are
    /// shifted into place one by one: a short piece costs a few instructions, not a
    /// copy.
    pub fn write(&mut self, mut bytes: &[u8]) {
        self.len += bytes.len() as u64;
        if self.pending_len > 0 {
            while self.pending_len < 8 {
                let Some((&byte, rest)) = bytes.split_first() else {
                    return;
                };
                self.pending |= u64::from(byte) << (8 * self.pending_len);
                self.pending_len += 1;
                bytes = rest;
            }
            self.step(self.pending);
            self.pending = 0;
            self.pending_len = 0;
        }
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let mut w = [0u8; 8];
            w.copy_from_slice(word);
            self.step(u64::from_le_bytes(w));
        }
        for &byte in words.remainder() {
            self.pending |= u64::from(byte) << (8 * self.pending_len);
            self.pending_len += 1;
        }
    }

    /// The hash of everything written.
    pub fn finish(mut self) -> u64 {
        // An incomplete word counts as if padded with zero bytes.
        if self.pending_len > 0 {
            self.step(self.pending);
        }
        self.step(self.len);
        avalanche(self.h)
    }
}

/// MurmurHash3's 64-bit finaliser: every input bit flips each output bit with
/// probability about ½, and it is a bijection.
const fn avalanche(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    h
}

/// A viewer session reduced once, weighed against any number of nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionDigest(u64);

impl SessionDigest {
    /// The digest of a viewer session's bytes.
    pub fn of(session: &[u8]) -> Self {
        Self(stable_hash(session))
    }

    /// The digest of a session whose bytes were written to `hasher`.
    pub fn from_hasher(hasher: StableHasher) -> Self {
        Self(hasher.finish())
    }

    /// The rendezvous weight of `node` for this session.
    pub fn weight(self, node: &NodeId) -> u64 {
        self.weight_of(NodeKey::of(node))
    }

    /// The rendezvous weight of the node whose key is `node`.
    pub fn weight_of(self, node: NodeKey) -> u64 {
        avalanche(self.0 ^ node.0)
    }
}

/// A node id reduced once for its rendezvous weights: lists of candidates kept for a
/// mesh snapshot carry their nodes' keys, so a viewer's pick hashes no node id. Two
/// ids with different keys differ, so comparing keys first spares most id
/// comparisons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeKey(u64);

impl NodeKey {
    /// The key of `node`.
    pub fn of(node: &NodeId) -> Self {
        Self(stable_hash(node.as_str().as_bytes()))
    }
}

/// The rendezvous weight of `node` for `session` ([`SessionDigest::weight`]).
pub fn rendezvous_weight(session: &[u8], node: &NodeId) -> u64 {
    SessionDigest::of(session).weight(node)
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
    choose_backup_indices_by(SessionDigest::of(viewer_session), eligible, self_id)
}

/// [`choose_backup_indices`] for a session already reduced.
pub fn choose_backup_indices_by<'a>(
    session: SessionDigest,
    eligible: impl Iterator<Item = &'a NodeId>,
    self_id: &NodeId,
) -> [Option<usize>; 2] {
    choose_backup_indices_keyed(
        session,
        eligible.map(|id| (id, NodeKey::of(id))),
        (self_id, NodeKey::of(self_id)),
    )
}

/// [`choose_backup_indices_by`] over nodes whose keys are known ([`NodeKey`]), this
/// node's too: the same choice, with no node id hashed.
pub fn choose_backup_indices_keyed<'a>(
    session: SessionDigest,
    eligible: impl Iterator<Item = (&'a NodeId, NodeKey)>,
    self_id: (&NodeId, NodeKey),
) -> [Option<usize>; 2] {
    let same =
        |(a, a_key): (&NodeId, NodeKey), (b, b_key): (&NodeId, NodeKey)| a_key == b_key && a == b;
    let mut best: [Option<(u64, &NodeId, NodeKey, usize)>; 2] = [None, None];
    let better = |w: u64, id: &NodeId, than: Option<(u64, &NodeId, NodeKey, usize)>| match than {
        None => true,
        Some((tw, tid, _, _)) => w > tw || (w == tw && id < tid),
    };
    for (index, (id, key)) in eligible.enumerate() {
        if same((id, key), self_id)
            || best
                .iter()
                .flatten()
                .any(|&(_, b, b_key, _)| same((id, key), (b, b_key)))
        {
            continue;
        }
        let w = session.weight_of(key);
        if better(w, id, best[0]) {
            best[1] = best[0];
            best[0] = Some((w, id, key, index));
        } else if better(w, id, best[1]) {
            best[1] = Some((w, id, key, index));
        }
    }
    best.map(|b| b.map(|(_, _, _, index)| index))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_fixed_across_builds_and_machines() {
        // Golden values: a change here moves every viewer's backups (rolling upgrades
        // would disagree between old and new nodes until the last one is upgraded).
        assert_eq!(stable_hash(b""), GOLDEN[0]);
        assert_eq!(stable_hash(b"a"), GOLDEN[1]);
        assert_eq!(stable_hash(b"node-1@1764500000"), GOLDEN[2]);
    }

    // Computed by an independent implementation of the same definition.
    const GOLDEN: [u64; 3] = [0, 0xa50d_2566_c9b1_fdd8, 0xbd87_1668_307b_c5f3];

    #[test]
    fn pieces_hash_as_their_concatenation() {
        let text = b"ip:203.0.113.7\nMozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36";
        for cut in 0..text.len() {
            for second in cut..text.len() {
                let mut hasher = StableHasher::default();
                hasher.write(&text[..cut]);
                hasher.write(&text[cut..second]);
                hasher.write(&text[second..]);
                assert_eq!(
                    hasher.finish(),
                    stable_hash(text),
                    "cut at {cut} and {second}"
                );
            }
        }
    }

    #[test]
    fn every_byte_and_the_length_count() {
        let base = b"ip:203.0.113.7\nMozilla/5.0 (X11; Linux x86_64)".to_vec();
        let mut seen = std::collections::HashSet::new();
        assert!(seen.insert(stable_hash(&base)));
        for i in 0..base.len() {
            let mut changed = base.clone();
            changed[i] ^= 1;
            assert!(seen.insert(stable_hash(&changed)), "byte {i}");
        }
        assert!(seen.insert(stable_hash(&base[..base.len() - 1])));
        let mut padded = base.clone();
        padded.push(0);
        assert!(
            seen.insert(stable_hash(&padded)),
            "a trailing zero byte counts"
        );
    }
}
