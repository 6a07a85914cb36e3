//! One timeline for every MC of a group (docs/mc-pair.md).
//!
//! The first MC to ingest a meeting fixes its timeline: its anchor (the wall clock at a
//! reference PTS), its wraps and MSN, carried in every segment's marker packet. It
//! records itself in the shared store as the meeting's **timeline owner**, with the
//! anchor and a heartbeat. Every other MC pulls the owner's relay as its first input
//! and follows its markers, so its segments are the owner's, byte for byte; its own
//! publish (dual publish) waits behind as a hot standby.
//!
//! When the owner dies, a follower's relay input fails, its publish takes over, and its
//! segmenter *continues* the followed timeline (same anchor, MSN onward): no PDT step,
//! and nodes switching to it at any moment get the same segments. Once the owner's
//! heartbeat is stale the follower records itself as the owner.
//!
//! Who serves its relay:
//! - to nodes: an MC on the group's timeline (following, or cutting a timeline the
//!   record names, or the owner);
//! - to other MCs (`?origin=peer`): only the owner, as the store records it. A
//!   follower, or an MC whose claim has not landed (etcd away), never serves a peer, so
//!   two MCs never follow each other.
//!
//! An MC that cut a timeline of its own (it restarted while another MC owns the
//! meeting) serves nobody until it follows the owner.

use media::timeline::TimelineState;
use serde::{Deserialize, Serialize};

/// How long an owner's heartbeat counts: after this the owner is taken as gone and a
/// follower that carries the timeline on becomes the owner.
pub const OWNER_STALE_MS: i64 = 2_000;
/// How often an owner renews its record.
pub const HEARTBEAT_MS: i64 = 500;
/// The query a relay request from another MC carries.
pub const PEER_QUERY: &str = "origin=peer";

/// A meeting's timeline owner as the shared store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineRecord {
    /// The owner MC's name.
    pub mc: String,
    /// The owner's last heartbeat, Unix ms by its clock.
    pub at_ms: i64,
    /// The discontinuity sequence of the owner's timeline.
    pub discontinuity_seq: u64,
    /// The anchor's extended 90 kHz timestamp.
    pub anchor_ts: u64,
    /// The wall clock at `anchor_ts`, Unix ms.
    pub anchor_unix_ms: i64,
}

impl TimelineRecord {
    /// The record `mc` writes for the timeline it cuts, at `now_ms`.
    pub fn of(mc: &str, state: &TimelineState, now_ms: i64) -> Self {
        Self {
            mc: mc.to_owned(),
            at_ms: now_ms,
            discontinuity_seq: state.discontinuity_seq,
            anchor_ts: state.anchor_ts,
            anchor_unix_ms: state.anchor_unix_ms,
        }
    }

    /// Whether `state` is on this record's timeline (same period, same anchor).
    pub fn names(&self, state: &TimelineState) -> bool {
        self.discontinuity_seq == state.discontinuity_seq
            && self.anchor_ts == state.anchor_ts
            && self.anchor_unix_ms == state.anchor_unix_ms
    }

    fn fresh(&self, now_ms: i64) -> bool {
        now_ms.saturating_sub(self.at_ms) < OWNER_STALE_MS
    }
}

/// What a meeting's stream on this MC is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// No segment yet.
    Starting,
    /// Pulling another MC's relay and following its markers.
    Following,
    /// Cutting segments from its own input, with this state at its newest segment.
    Cutting(TimelineState),
    /// Cutting from its own input right after following: carrying the followed
    /// timeline on (its owner has just died).
    CarryingOn(TimelineState),
}

/// What this MC does about a meeting's timeline now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// Serve the relay to nodes.
    pub serve_nodes: bool,
    /// Serve the relay to other MCs (only the owner does).
    pub serve_peers: bool,
    /// Write this MC as the owner (claim or heartbeat).
    pub claim: bool,
}

/// The decision of MC `me` in `mode`, given the store's `record` (none: no MC owns the
/// meeting yet, or the store has not been read).
pub fn decide(me: &str, mode: Mode, record: Option<&TimelineRecord>, now_ms: i64) -> Decision {
    const NONE: Decision = Decision {
        serve_nodes: false,
        serve_peers: false,
        claim: false,
    };
    match mode {
        Mode::Starting => NONE,
        Mode::Following => Decision {
            serve_nodes: true,
            ..NONE
        },
        Mode::Cutting(state) | Mode::CarryingOn(state) => match record {
            // The owner: everyone may follow it.
            Some(r) if r.mc == me => Decision {
                serve_nodes: true,
                serve_peers: true,
                claim: true,
            },
            // No owner yet, or the owner is gone: this MC claims the meeting (the one
            // that carries the timeline on, or the one its publisher came back to).
            // Peers follow it only once the store says so: two MCs that both think
            // they own a meeting never follow each other.
            None => Decision {
                serve_nodes: true,
                claim: true,
                ..NONE
            },
            Some(r) if !r.fresh(now_ms) => Decision {
                serve_nodes: true,
                claim: true,
                ..NONE
            },
            // Another MC owns the meeting: serve nodes only while carrying its timeline
            // on (the owner has just died). An MC cutting on its own never does, even
            // with the same anchor: it would hand nodes the segment it cuts short when
            // it starts following.
            Some(r) => Decision {
                serve_nodes: matches!(mode, Mode::CarryingOn(_)) && r.names(&state),
                ..NONE
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(disc: u64, anchor_unix_ms: i64) -> TimelineState {
        TimelineState {
            discontinuity_seq: disc,
            anchor_ts: 900_000,
            anchor_unix_ms,
            ..TimelineState::default()
        }
    }

    #[test]
    fn the_first_to_cut_claims_and_serves_peers_once_the_store_says_so() {
        let d = decide("mc1", Mode::Cutting(state(0, 5)), None, 0);
        assert!(d.serve_nodes && !d.serve_peers && d.claim);
        let own = TimelineRecord::of("mc1", &state(0, 5), 0);
        let d = decide("mc1", Mode::Cutting(state(0, 5)), Some(&own), 100);
        assert!(d.serve_nodes && d.serve_peers && d.claim);
    }

    #[test]
    fn a_follower_serves_nodes_never_peers_and_claims_nothing() {
        let owner = TimelineRecord::of("mc1", &state(0, 5), 0);
        let d = decide("mc2", Mode::Following, Some(&owner), 100);
        assert!(d.serve_nodes && !d.serve_peers && !d.claim);
        assert!(!decide("mc2", Mode::Starting, Some(&owner), 100).serve_nodes);
    }

    #[test]
    fn carrying_the_owners_timeline_on_serves_nodes_then_takes_over() {
        let owner = TimelineRecord::of("mc1", &state(0, 5), 0);
        let carrying = Mode::CarryingOn(state(0, 5));
        let d = decide("mc2", carrying, Some(&owner), OWNER_STALE_MS - 1);
        assert!(d.serve_nodes && !d.serve_peers && !d.claim);
        let d = decide("mc2", carrying, Some(&owner), OWNER_STALE_MS);
        assert!(d.serve_nodes && !d.serve_peers && d.claim);
        let taken = TimelineRecord::of("mc2", &state(0, 5), OWNER_STALE_MS);
        let d = decide("mc2", carrying, Some(&taken), OWNER_STALE_MS + 1);
        assert!(d.serve_nodes && d.serve_peers && d.claim);
    }

    #[test]
    fn a_timeline_of_its_own_serves_nobody_while_the_owner_lives() {
        let owner = TimelineRecord::of("mc1", &state(0, 5), 0);
        let same_anchor = Mode::Cutting(state(0, 5));
        assert!(!decide("mc2", same_anchor, Some(&owner), 100).serve_nodes);
        for other in [state(0, 6), state(1, 5)] {
            let d = decide("mc2", Mode::CarryingOn(other), Some(&owner), 100);
            assert_eq!(
                d,
                Decision {
                    serve_nodes: false,
                    serve_peers: false,
                    claim: false
                }
            );
        }
        // With the owner gone, the publisher that came back here makes it the owner.
        let d = decide("mc2", Mode::Cutting(state(1, 9)), Some(&owner), 10_000);
        assert!(d.claim && d.serve_nodes);
    }
}
