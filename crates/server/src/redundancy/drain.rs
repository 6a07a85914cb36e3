//! Draining a node (see `docs/ott-redundancy.md`, "Drain"): the operator's way to
//! empty a node before an upgrade without anyone noticing.
//!
//! While draining, the node announces it in the mesh: every node's steering manifests
//! put its pathway last (switching viewers move to their backups within one TTL), no
//! node offers it as a backup or a redirect target, and its own door redirects new
//! viewers — and the playlist reloads of players that do not steer — to a node that
//! serves the stream, with a pass. It is *drained* once it has served no live playlist
//! or segment for [`DRAINED_AFTER_QUIET_MS`].

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

use serde_json::{json, Value};

/// A draining node with no live playlist or segment served for this long has no
/// viewer left: 10 s, several reloads of any player's playlist.
pub const DRAINED_AFTER_QUIET_MS: i64 = 10_000;

/// Where a node stands with its operator's drain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrainState {
    /// Taking viewers as usual.
    Serving,
    /// Draining; viewers are still being served.
    Draining,
    /// Draining and no viewer left: safe to stop.
    Drained,
}

impl DrainState {
    /// The word the Backups screen and the API show.
    pub fn label(self) -> &'static str {
        match self {
            DrainState::Serving => "serving",
            DrainState::Draining => "draining",
            DrainState::Drained => "drained",
        }
    }
}

/// The drain switch of a node and what it observed of its viewers since.
#[derive(Debug, Default)]
pub struct Drain {
    draining: AtomicBool,
    since_ms: AtomicI64,
    /// Live playlists and segments served, as last observed.
    served: AtomicU64,
    /// When that count last moved, Unix ms.
    last_served_ms: AtomicI64,
}

impl Drain {
    /// Starts draining at `now_ms` (again: keeps the first start).
    pub fn start(&self, now_ms: i64) {
        if !self.draining.swap(true, Ordering::SeqCst) {
            self.since_ms.store(now_ms, Ordering::SeqCst);
            self.last_served_ms.store(now_ms, Ordering::SeqCst);
            tracing::info!("draining: new viewers go to other nodes, steering moves the rest");
        }
    }

    /// Stops draining: the node takes viewers again.
    pub fn stop(&self) {
        if self.draining.swap(false, Ordering::SeqCst) {
            tracing::info!("undrained: taking viewers again");
        }
    }

    /// Whether the operator drains this node.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed)
    }

    /// Records the node's count of live playlists and segments served so far, seen at
    /// `now_ms` (called every mesh round).
    pub fn observe(&self, served: u64, now_ms: i64) {
        if self.served.swap(served, Ordering::Relaxed) != served {
            self.last_served_ms.store(now_ms, Ordering::Relaxed);
        }
    }

    /// The state at `now_ms`.
    pub fn state(&self, now_ms: i64) -> DrainState {
        if !self.is_draining() {
            return DrainState::Serving;
        }
        let quiet = now_ms.saturating_sub(self.last_served_ms.load(Ordering::Relaxed));
        if quiet >= DRAINED_AFTER_QUIET_MS {
            DrainState::Drained
        } else {
            DrainState::Draining
        }
    }

    /// The `drain` object of the API and the Backups screen.
    pub fn json(&self, now_ms: i64) -> Value {
        let state = self.state(now_ms);
        let since = self.since_ms.load(Ordering::Relaxed);
        let last = self.last_served_ms.load(Ordering::Relaxed);
        json!({
            "state": state.label(),
            "since_ms": (state != DrainState::Serving).then_some(since),
            "quiet_ms": (state != DrainState::Serving).then(|| now_ms.saturating_sub(last).max(0)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draining_turns_drained_after_a_quiet_stretch_and_undrain_serves_again() {
        let drain = Drain::default();
        assert_eq!(drain.state(0), DrainState::Serving);
        drain.observe(5, 0);
        drain.start(1_000);
        assert!(drain.is_draining());
        assert_eq!(drain.state(1_000), DrainState::Draining);
        // Viewers still fetch: the quiet stretch restarts.
        drain.observe(9, 8_000);
        assert_eq!(drain.state(17_999), DrainState::Draining);
        drain.observe(9, 17_999);
        assert_eq!(drain.state(18_000), DrainState::Drained);
        assert_eq!(drain.json(18_000)["state"], "drained");
        assert_eq!(drain.json(18_000)["since_ms"], 1_000);
        // A second start keeps the first.
        drain.start(20_000);
        assert_eq!(drain.json(20_000)["since_ms"], 1_000);
        drain.stop();
        assert_eq!(drain.state(30_000), DrainState::Serving);
        assert_eq!(drain.json(30_000)["since_ms"], Value::Null);
    }
}
