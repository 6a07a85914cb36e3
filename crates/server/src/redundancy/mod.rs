//! OTT redundancy on the HTTP side of a node (requirements §3, OTT-*).
//!
//! The `mesh` keeps a view of the domain; the node's glue hands it here with
//! [`Redundancy::update_view`] (an [`ott::Snapshot`] plus the view keys) every few hundred
//! milliseconds. Routes then ask the pure `ott` crate, per request:
//!
//! - the **door** ([`door`]): check a pass (403 with a 105xxx code), refuse a backup
//!   viewer when overloaded (503, fast), redirect a new viewer of a stream that does not
//!   work here (302 with a pass), redirect a catch-up request to the node holding most
//!   of the period;
//! - the **master playlist** with backup variants as pathways ([`master`]) and the
//!   steering manifests that order them ([`crate::routes::steering`]);
//! - the live **MPD** with the same nodes as service locations ([`mpd`]);
//! - the operator's **drain** ([`drain`]);
//! - the **Backups screen** and alerts 70/78/79 ([`report`], [`alerts`]).
//!
//! What this node announces about its own members is computed here too
//! ([`Redundancy::own_members`]), from the live channels.

pub mod alerts;
pub mod door;
pub mod drain;
pub mod gossip_counters;
pub mod load;
pub mod master;
pub mod members;
pub mod mpd;
pub mod render_cache;
pub mod report;
mod sessions;
pub mod viewer;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use crate::error::OttRefusal;
use crate::metrics::Metrics;

pub use sessions::BackupSessions;

/// How a stream takes part in an OTT group (`ott_backup`, `backup_group`, OTT-GRP-1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    /// The group name; members of one group on different nodes back each other up.
    pub group: String,
    /// "Can substitute": this node's member is offered as a backup to others.
    pub can_substitute: bool,
}

/// A map read on the path of every request by a key from its URL: foldhash instead of
/// SipHash (its keys, stream and group names, come from the node's own config, so no
/// client chooses what collides).
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// The mesh as this node last saw it.
pub struct MeshView {
    /// Nodes, members and the minimum version, from this node's point of view.
    pub snapshot: ott::Snapshot,
    /// The domain's view keys (sign with the current one, verify with any held).
    pub keys: Arc<ott::KeyRing>,
    /// Per own group, the backup candidates for each kind of viewer and transport,
    /// computed once per snapshot: a master playlist request only picks among them.
    candidates: FastMap<String, GroupCandidates>,
    /// When the master-playlist passes signed under this snapshot expire (4 h from
    /// its making): a viewer's pass for a stream is then the same bytes on every
    /// render of this snapshot, so the viewer's render can be cached.
    master_expires_ms: i64,
    /// The personalised master playlists written under this snapshot.
    pub(crate) rendered: render_cache::RenderCache<media::manifest::Manifest>,
    /// This node's rendezvous key.
    pub this_key: ott::NodeKey,
}

fn viewer_kind(viewer: ott::ViewerContext) -> usize {
    usize::from(viewer.public) * 2 + usize::from(viewer.https)
}

/// The kinds of viewer, in [`viewer_kind`] order.
const VIEWER_KINDS: [ott::ViewerContext; 4] = [
    ott::ViewerContext {
        public: false,
        https: false,
    },
    ott::ViewerContext {
        public: false,
        https: true,
    },
    ott::ViewerContext {
        public: true,
        https: false,
    },
    ott::ViewerContext {
        public: true,
        https: true,
    },
];

/// One own group's backup candidates under a snapshot, per kind of viewer (public ×
/// HTTPS) and per transport: LL-HLS and DASH viewers get only the candidates whose
/// ladder announces fMP4 packaging. Shared, so a viewer's choice holds them without a
/// copy.
#[derive(Debug)]
pub struct GroupCandidates {
    /// The group's name.
    pub group: Arc<str>,
    /// `[viewer kind][0 = TS, 1 = fMP4]`.
    lists: [[Arc<[ott::Target]>; 2]; 4],
    /// The rendezvous keys of each list's nodes, in its order.
    keys: [[Box<[ott::NodeKey]>; 2]; 4],
}

/// One list of backup candidates with its nodes' rendezvous keys, in the same order.
#[derive(Debug, Clone, Copy)]
pub struct Candidates<'a> {
    /// The candidates.
    pub targets: &'a Arc<[ott::Target]>,
    /// `keys[i]` is the key of `targets[i]`'s node.
    pub keys: &'a [ott::NodeKey],
}

impl GroupCandidates {
    fn new(snapshot: &ott::Snapshot, group: &str, now_ms: i64) -> Self {
        let lists: [[Arc<[ott::Target]>; 2]; 4] = VIEWER_KINDS.map(|viewer| {
            let ts = ott::backup_candidates(snapshot, group, viewer, now_ms);
            let fmp4: Vec<ott::Target> = ts
                .iter()
                .filter(|t| {
                    snapshot.members.iter().any(|m| {
                        m.node == t.node
                            && m.group == group
                            && m.ladder.iter().any(|r| r.transport == ott::Transport::Fmp4)
                    })
                })
                .cloned()
                .collect();
            [Arc::from(ts), Arc::from(fmp4)]
        });
        let keys = lists.each_ref().map(|pair| {
            pair.each_ref()
                .map(|list| list.iter().map(|t| ott::NodeKey::of(&t.node)).collect())
        });
        Self {
            group: Arc::from(group),
            lists,
            keys,
        }
    }

    /// The candidates for this kind of viewer over `transport`.
    pub fn for_viewer(
        &self,
        viewer: ott::ViewerContext,
        transport: ott::Transport,
    ) -> Candidates<'_> {
        let (kind, fmp4) = (
            viewer_kind(viewer),
            usize::from(transport == ott::Transport::Fmp4),
        );
        Candidates {
            targets: &self.lists[kind][fmp4],
            keys: &self.keys[kind][fmp4],
        }
    }
}

impl MeshView {
    /// A view of `snapshot` at `now_ms`, with the backup candidates of every group this
    /// node is in.
    pub fn new(snapshot: ott::Snapshot, keys: Arc<ott::KeyRing>, now_ms: i64) -> Self {
        let mut candidates = FastMap::default();
        for group in snapshot.own_groups() {
            candidates.insert(
                group.to_owned(),
                GroupCandidates::new(&snapshot, group, now_ms),
            );
        }
        Self {
            this_key: ott::NodeKey::of(&snapshot.this.id),
            snapshot,
            keys,
            candidates,
            master_expires_ms: now_ms.saturating_add(ott::MASTER_PASS_LIFETIME_MS),
            rendered: render_cache::RenderCache::default(),
        }
    }

    /// The master-playlist pass for a candidate's stream, bound to the viewer at
    /// `viewer` (an IPv6 one by its /64), so a pass copied out of one viewer's master
    /// admits nobody else; `None` when it cannot be signed (a stream name over 255
    /// bytes).
    pub fn master_pass(&self, stream: &str, viewer: Option<std::net::IpAddr>) -> Option<String> {
        let pass = ott::Pass {
            stream: stream.to_owned(),
            expires_at_ms: self.master_expires_ms,
            viewer,
            key_id: 0,
        };
        match self.keys.sign(&pass) {
            Ok(text) => Some(text),
            Err(error) => {
                tracing::warn!(stream, %error, "cannot sign a pass");
                None
            }
        }
    }

    /// The backup candidates of `group`, if this node is in it.
    pub fn candidates(&self, group: &str) -> Option<&GroupCandidates> {
        self.candidates.get(group)
    }
}

/// Tunables of the HTTP side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RedundancySettings {
    /// A stream whose newest segment is older than this (or whose input is paused) does
    /// not work here: new viewers are redirected (OTT-PROT-2) and the member announces
    /// no live window, so other nodes stop offering it within seconds.
    pub stale_after_ms: i64,
    /// A backup viewer (arrived with a pass) stays counted this long after its last
    /// playlist request.
    pub session_idle_ms: i64,
}

impl Default for RedundancySettings {
    fn default() -> Self {
        Self {
            stale_after_ms: 8_000,
            session_idle_ms: 20_000,
        }
    }
}

/// Counters of the OTT answers, for `/metrics` and the Backups screen.
#[derive(Debug, Default)]
pub struct RedundancyCounters {
    /// Master playlists served with backup variants.
    pub masters_with_backups: AtomicU64,
    /// Passes signed (master playlist backups and redirects).
    pub passes_issued: AtomicU64,
    /// New viewers redirected because the stream does not work here.
    pub redirects_open: AtomicU64,
    /// Catch-up requests redirected to the node holding most of the period.
    pub redirects_archive: AtomicU64,
    /// Viewers admitted with a pass from another node.
    pub backup_viewers_admitted: AtomicU64,
    refusals: [AtomicU64; OttRefusal::ALL.len()],
}

impl RedundancyCounters {
    /// Counts one refusal.
    pub fn refused(&self, refusal: OttRefusal) {
        if let Some(i) = OttRefusal::ALL.iter().position(|r| *r == refusal) {
            self.refusals[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Refusals of one kind so far.
    pub fn refusals(&self, refusal: OttRefusal) -> u64 {
        OttRefusal::ALL
            .iter()
            .position(|r| *r == refusal)
            .map_or(0, |i| self.refusals[i].load(Ordering::Relaxed))
    }

    /// Backup viewers refused for overload so far (the input of alert 79).
    pub fn overload_refusals(&self) -> u64 {
        [
            OttRefusal::OverloadCpu,
            OttRefusal::OverloadNetwork,
            OttRefusal::OverloadSessions,
        ]
        .into_iter()
        .map(|r| self.refusals(r))
        .sum()
    }
}

/// The OTT state of one node: memberships, the last mesh view, backup sessions,
/// counters and alerts.
pub struct Redundancy {
    settings: RedundancySettings,
    memberships: RwLock<FastMap<String, Membership>>,
    view: RwLock<Option<Arc<MeshView>>>,
    /// Viewers that arrived from another node with a pass (OTT-OVL-1).
    pub sessions: BackupSessions,
    /// The operator's drain of this node.
    pub drain: drain::Drain,
    /// Answer counters.
    pub counters: RedundancyCounters,
    /// The mesh transport's datagram counts, as the mesh loop last read them.
    pub gossip: gossip_counters::GossipCounters,
    /// Alerts 70/78/79 and their delivery.
    pub alerts: Mutex<alerts::AlertBook>,
    /// The key this node signs its pulls of peers' experiment reports with, and checks
    /// theirs (derived from the domain secret; set when the node joins the mesh).
    pub peer_key: std::sync::OnceLock<crate::experiments::peer_auth::PeerKey>,
}

impl Redundancy {
    /// A node's redundancy state; no mesh view yet (no backups are offered, passes are
    /// refused as signed with an unknown key) until [`Redundancy::update_view`].
    pub fn new(settings: RedundancySettings) -> Self {
        Self {
            settings,
            memberships: RwLock::new(FastMap::default()),
            view: RwLock::new(None),
            sessions: BackupSessions::new(settings.session_idle_ms),
            drain: drain::Drain::default(),
            counters: RedundancyCounters::default(),
            gossip: gossip_counters::GossipCounters::default(),
            alerts: Mutex::new(alerts::AlertBook::default()),
            peer_key: std::sync::OnceLock::new(),
        }
    }

    /// The tunables.
    pub fn settings(&self) -> RedundancySettings {
        self.settings
    }

    /// Puts `stream` in an OTT group (or takes it out with `None`).
    pub fn set_membership(&self, stream: &str, membership: Option<Membership>) {
        let mut map = self
            .memberships
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        match membership {
            Some(m) => map.insert(stream.to_owned(), m),
            None => map.remove(stream),
        };
    }

    /// The group membership of a stream of this node.
    pub fn membership(&self, stream: &str) -> Option<Membership> {
        self.memberships
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(stream)
            .cloned()
    }

    /// `read` of the stream's membership, if it is in a group, without copying it (the
    /// master playlist asks on every request).
    pub fn with_membership<R>(
        &self,
        stream: &str,
        read: impl FnOnce(&Membership) -> R,
    ) -> Option<R> {
        self.memberships
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(stream)
            .map(read)
    }

    /// Every stream of this node in a group, sorted by stream name.
    pub fn memberships(&self) -> Vec<(String, Membership)> {
        let mut all: Vec<(String, Membership)> = self
            .memberships
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(s, m)| (s.clone(), m.clone()))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// Replaces the mesh view (called by the node's mesh loop).
    pub fn update_view(&self, view: MeshView) {
        *self.view.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(view));
    }

    /// The last mesh view, if the mesh has reported.
    pub fn view(&self) -> Option<Arc<MeshView>> {
        self.view
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Registers the OTT metrics.
    pub fn register_metrics(self: &Arc<Self>, metrics: &Metrics) {
        metrics.describe(
            "brdyun_ott_answers_total",
            "counter",
            "OTT answers: master playlists with backups, passes, redirects, admitted backup viewers.",
        );
        metrics.describe(
            "brdyun_ott_refusals_total",
            "counter",
            "OTT refusals by code: bad passes (403) and backup viewers refused for overload (503).",
        );
        metrics.describe(
            "brdyun_ott_backup_sessions",
            "gauge",
            "Viewers served here that arrived from another node with a pass.",
        );
        metrics.describe(
            "brdyun_mesh_datagrams_total",
            "counter",
            "Mesh gossip datagrams by outcome: sent, received, rejected (did not open with the domain secret), undecodable, oversized.",
        );
        metrics.describe(
            "brdyun_ott_alert_active",
            "gauge",
            "OTT alerts firing now (70 unprotected group, 78 member or node problem, 79 overload refusals).",
        );
        let this = Arc::clone(self);
        metrics.register(Box::new(move |out: &mut String| this.render_metrics(out)));
    }

    fn render_metrics(&self, out: &mut String) {
        use std::fmt::Write as _;
        let c = &self.counters;
        for (kind, value) in [
            ("master_with_backups", &c.masters_with_backups),
            ("pass_issued", &c.passes_issued),
            ("redirect_open", &c.redirects_open),
            ("redirect_archive", &c.redirects_archive),
            ("backup_viewer_admitted", &c.backup_viewers_admitted),
        ] {
            let _ = writeln!(
                out,
                "brdyun_ott_answers_total{{kind=\"{kind}\"}} {}",
                value.load(Ordering::Relaxed)
            );
        }
        for &refusal in OttRefusal::ALL {
            let _ = writeln!(
                out,
                "brdyun_ott_refusals_total{{code=\"{}\",reason=\"{}\"}} {}",
                refusal.code(),
                refusal.label(),
                c.refusals(refusal)
            );
        }
        let _ = writeln!(out, "brdyun_ott_backup_sessions {}", self.sessions.count());
        self.gossip.render_metrics(out);
        self.alerts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .render_metrics(out);
    }
}
