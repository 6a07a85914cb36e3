//! The MC's shared state: its settings, the meeting store, the nodes' viewer reports,
//! and the watch every change is published on.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use meeting::{ClientVersion, MeetingId, Meetings, ViewerCounts};
use tokio::sync::watch;

use super::etcd_store::{EtcdSettings, EtcdStore, SharedReport};
use super::session_key_store::SessionKeyStore;
use super::store::{self, Store, StoreError};
use super::timeline::{Decision, TimelineRecord};
use server::clock::Clock;

/// How the MC's API behaves.
#[derive(Debug, Clone)]
pub struct McSettings {
    /// The store file (with etcd: the copy of the last view, for a start while etcd
    /// is away).
    pub store_path: PathBuf,
    /// The shared store of an MC pair (none: the store file is the store).
    pub etcd: Option<EtcdSettings>,
    /// Bearer token of admins (the meeting platform): create, and everything a host can
    /// do. Without it the admin API is open (bind the MC to a private address).
    pub admin_token: Option<String>,
    /// Token nodes present to sync; without it any caller may sync.
    pub node_token: Option<String>,
    /// Clients below this version get 102011 (create/join) or 16 (in session).
    pub min_client_version: Option<ClientVersion>,
    /// How long a node's viewer report counts.
    pub viewer_report_ttl: Duration,
    /// The ladder every meeting's stream is encoded into (rung names in master-playlist
    /// order; empty: none), told to nodes with each meeting so they pull every rung.
    pub ladder: Vec<String>,
    /// Meetings that do not get the ladder (their presets say so).
    pub without_ladder: std::collections::HashSet<String>,
    /// The meeting platform's public keys for private meetings' viewer tokens.
    pub viewer_keys: Vec<ott::ViewerKey>,
    /// The MC's own key for the tokens it mints on request (none: it mints none).
    pub minter: Option<Arc<super::minter::Minter>>,
    /// The recordings store the nodes upload to, read by the recordings API (none: the
    /// MC lists no recordings).
    pub recordings: Option<recordings::Bucket>,
}

/// Where the meetings are kept.
#[derive(Debug)]
pub(crate) enum Backend {
    /// One MC: the JSON file.
    File(Store),
    /// An MC pair or more: etcd.
    Etcd(Arc<EtcdStore>),
}

pub(crate) struct McShared {
    pub(crate) settings: McSettings,
    pub(crate) store: Backend,
    pub(crate) viewers: Mutex<ViewerCounts>,
    /// The file store's meetings as they change (the etcd store publishes its own).
    pub(crate) changes: watch::Sender<Arc<Meetings>>,
    /// The MC's wall clock: meetings and viewer reports are dated by it.
    pub(crate) clock: Clock,
    /// Who each meeting's relay is served to, as the group timeline decides (a meeting
    /// absent here is served to all: a lone MC).
    pub(crate) relays: Mutex<std::collections::HashMap<String, Decision>>,
    /// The keys private meetings' sessions are signed with (see [`server::access::session_keys`]).
    pub(crate) session_keys: SessionKeyStore,
}

/// The MC's shared state: meetings, viewer counts, settings.
#[derive(Clone)]
pub struct McState {
    pub(crate) inner: Arc<McShared>,
}

impl McState {
    /// Opens the store and builds the state.
    ///
    /// # Errors
    /// The store exists but cannot be read or parsed.
    pub fn open(settings: McSettings) -> Result<Self, StoreError> {
        let store = Store::open(&settings.store_path)?;
        let keys = SessionKeyStore::open_file(
            settings.store_path.with_file_name("session_keys.json"),
            Clock::system().unix_ms() / 1000,
        )?;
        Ok(Self::with_backend(settings, Backend::File(store), keys))
    }

    /// Opens the store the settings name: etcd when they have it (and follows it until
    /// `shutdown`), else the file.
    ///
    /// # Errors
    /// As [`McState::open`]; with etcd, a malformed endpoint, or an unreadable copy of
    /// the last view while etcd is away.
    pub async fn connect(
        settings: McSettings,
        shutdown: watch::Receiver<bool>,
    ) -> Result<Self, StoreError> {
        let Some(etcd) = settings.etcd.clone() else {
            return Self::open(settings);
        };
        let store = Arc::new(EtcdStore::open(&etcd, settings.store_path.clone()).await?);
        let keys =
            SessionKeyStore::open_etcd(Arc::clone(&store), Clock::system().unix_ms() / 1000).await;
        let state = Self::with_backend(settings, Backend::Etcd(Arc::clone(&store)), keys);
        let reports = state.clone();
        tokio::spawn(store.follow(
            move |node, report: SharedReport| {
                reports.viewers().report(node, report.counts, report.at_ms);
            },
            shutdown,
        ));
        Ok(state)
    }

    fn with_backend(settings: McSettings, store: Backend, session_keys: SessionKeyStore) -> Self {
        let ttl_ms = i64::try_from(settings.viewer_report_ttl.as_millis()).unwrap_or(i64::MAX);
        let snapshot = match &store {
            Backend::File(s) => s.snapshot(),
            Backend::Etcd(s) => s.snapshot(),
        };
        let (changes, _) = watch::channel(snapshot);
        Self {
            inner: Arc::new(McShared {
                settings,
                store,
                viewers: Mutex::new(ViewerCounts::new(ttl_ms)),
                changes,
                clock: Clock::system(),
                relays: Mutex::new(std::collections::HashMap::new()),
                session_keys,
            }),
        }
    }

    /// The session keys handed to nodes with every sync.
    pub fn session_keys(&self) -> meeting::SessionKeysWire {
        self.inner.session_keys.ring().wire()
    }

    /// Rotates the session keys when due (with etcd: adopts the pair's ring). Called
    /// about once a minute by the MC's maintenance loop.
    ///
    /// # Errors
    /// The new ring cannot be stored; the old one stays in use.
    pub async fn maintain_session_keys(&self) -> Result<(), StoreError> {
        let now_s = self.inner.clock.unix_ms() / 1000;
        self.inner.session_keys.maintain(now_s).await
    }

    /// Keeps the session keys rotated (once a minute, a rotation when due) until
    /// `shutdown` turns true.
    pub async fn keep_session_keys(self, mut shutdown: watch::Receiver<bool>) {
        loop {
            tokio::select! {
                () = tokio::time::sleep(std::time::Duration::from_secs(60)) => {}
                _ = shutdown.wait_for(|s| *s) => return,
            }
            if let Err(error) = self.maintain_session_keys().await {
                tracing::warn!(%error, "session keys: rotation failed, the current ring stays");
            }
        }
    }

    /// Whether `meeting`'s relay may be served now, to another MC (`peer`) or to a
    /// node (see [`super::timeline`]).
    pub fn relay_open(&self, meeting: &str, peer: bool) -> bool {
        let relays = self
            .inner
            .relays
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        relays
            .get(meeting)
            .is_none_or(|d| if peer { d.serve_peers } else { d.serve_nodes })
    }

    /// Sets whom `meeting`'s relay is served to (`None`: everyone, as a lone MC).
    pub fn set_relay(&self, meeting: &str, decision: Option<Decision>) {
        let mut relays = self
            .inner
            .relays
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match decision {
            Some(d) => relays.insert(meeting.to_owned(), d),
            None => relays.remove(meeting),
        };
    }

    /// `Some(reachable)` with a shared store (etcd): whether etcd answered this MC's
    /// last read and its watch runs; `None` with the file store.
    pub fn store_reachable(&self) -> Option<bool> {
        match &self.inner.store {
            Backend::File(_) => None,
            Backend::Etcd(store) => Some(store.reachable()),
        }
    }

    /// The timeline owner of `meeting` as the shared store says (none without etcd,
    /// or when no MC owns it yet).
    pub fn timeline_owner(&self, meeting: &MeetingId) -> Option<TimelineRecord> {
        match &self.inner.store {
            Backend::File(_) => None,
            Backend::Etcd(store) => store.timeline(meeting),
        }
    }

    /// Records this MC as `meeting`'s timeline owner (a claim, or a heartbeat).
    ///
    /// # Errors
    /// The store cannot be reached, or another MC wrote the record meanwhile.
    pub async fn claim_timeline(
        &self,
        meeting: &MeetingId,
        record: TimelineRecord,
    ) -> Result<(), StoreError> {
        match &self.inner.store {
            Backend::File(_) => Ok(()),
            Backend::Etcd(store) => store.claim_timeline(meeting, record).await,
        }
    }

    /// This state with `clock` as the MC's wall clock (a test's manual clock); only
    /// before the state is shared.
    ///
    /// # Panics
    /// When a clone of the state exists already.
    #[must_use]
    pub fn with_clock(mut self, clock: Clock) -> Self {
        Arc::get_mut(&mut self.inner)
            .expect("the clock is set before the state is shared")
            .clock = clock;
        self
    }

    /// The MC's wall clock.
    pub fn clock(&self) -> &Clock {
        &self.inner.clock
    }

    /// The ladder of `meeting`'s stream (rung names in master-playlist order; empty:
    /// none), as nodes learn it with the meeting.
    pub fn ladder_of(&self, meeting: &str) -> Vec<String> {
        let settings = &self.inner.settings;
        if settings.without_ladder.contains(meeting) {
            Vec::new()
        } else {
            settings.ladder.clone()
        }
    }

    /// The meetings, updated after every change (the MC starts and stops meeting
    /// streams from this).
    pub fn subscribe(&self) -> watch::Receiver<Arc<Meetings>> {
        match &self.inner.store {
            Backend::File(_) => self.inner.changes.subscribe(),
            Backend::Etcd(s) => s.subscribe(),
        }
    }

    /// The meetings now.
    pub fn meetings(&self) -> Arc<Meetings> {
        match &self.inner.store {
            Backend::File(s) => s.snapshot(),
            Backend::Etcd(s) => s.snapshot(),
        }
    }

    /// Applies a change to meeting `id` through the store and publishes the result.
    /// With etcd the change may run more than once (on a fresher meeting after a lost
    /// race), so it must depend only on what it is given.
    ///
    /// # Errors
    /// As [`Store::change`] and [`EtcdStore::change`].
    pub async fn change<T>(
        &self,
        id: &MeetingId,
        change: impl FnMut(&mut Meetings) -> Result<T, meeting::MeetingError>,
    ) -> Result<T, store::ChangeError> {
        let out = match &self.inner.store {
            Backend::File(s) => {
                let (out, meetings) = s.change(change)?;
                self.inner.changes.send_replace(meetings);
                out
            }
            // The store publishes its view itself, in the order it changes.
            Backend::Etcd(s) => s.change(id, change).await?.0,
        };
        Ok(out)
    }

    /// Records a node's viewer report (and shares it with the other MCs of a pair).
    /// Returns false when it was ignored (too many nodes): an ignored report is not
    /// shared either.
    pub fn report_viewers(&self, node: &str, counts: Vec<(MeetingId, u32)>, now_ms: i64) -> bool {
        let shared = SharedReport {
            at_ms: now_ms,
            counts: counts.iter().cloned().collect(),
        };
        if !self.viewers().report(node, counts, now_ms) {
            return false;
        }
        if let Backend::Etcd(store) = &self.inner.store {
            let ttl_ms = i64::try_from(self.inner.settings.viewer_report_ttl.as_millis())
                .unwrap_or(i64::MAX);
            store.share_report(node, shared, ttl_ms);
        }
        true
    }

    pub(crate) fn viewers(&self) -> std::sync::MutexGuard<'_, ViewerCounts> {
        self.inner
            .viewers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
