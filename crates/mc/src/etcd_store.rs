//! The meetings of an MC pair (or more) in etcd: one key per meeting, changed only by
//! compare-and-swap on its revision, watched by every MC.
//!
//! ```text
//! {prefix}meetings/{id}   the meeting, JSON as the file store keeps it
//! {prefix}viewers/{node}  a node's latest viewer report {"at_ms", "counts"}, under a
//!                         lease: a node that stops reporting leaves no key behind
//! {prefix}timeline/{id}   the meeting's timeline owner (super::timeline)
//! ```
//!
//! - Create is a transaction "put if absent": of racing creates on any MCs exactly one
//!   wins, the others get 102004.
//! - Every other change reads the key, applies the change to it, and puts it back only
//!   if its revision has not moved; a lost race is retried on the fresh value, so two
//!   hosts' changes never overwrite each other.
//! - Each MC watches the prefix: another MC's change reaches this MC's view (and its
//!   nodes' next sync) as soon as etcd commits it.
//! - etcd unreachable: the MC keeps its last view (relays, syncs and gates go on) and
//!   refuses changes with 102005; nothing is acknowledged that etcd has not committed.
//!   The view is also kept in `meetings.json` beside the MC, so an MC that starts while
//!   etcd is away still knows the meetings.
//! - Everything is read in pages ([`etcd::Client::get_prefix`]): no single answer grows
//!   with the number of keys.
//! - One view, changed in revision order: a change this MC made, a watched event and a
//!   reload each replace a meeting only with a newer revision of it (a reload read
//!   before this MC's own change landed cannot undo it), and each change of the view
//!   is published to [`EtcdStore::subscribe`] under the view's lock, so the last value
//!   published is always the view (the MC starts and stops meeting streams from it).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use etcd::{Compare, EtcdError, Event, Op};
use meeting::{Meeting, MeetingError, MeetingId, Meetings};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::store::{read_file, write_file, ChangeError, StoreError};
use super::timeline::TimelineRecord;

/// The key (after the group's prefix) of the pair's session-key ring
/// (the MC's session keys): read and written by their store alone, never a report.
pub const SESSION_KEYS_KEY: &str = "session-keys";
/// How often a lost compare-and-swap is retried before the change is refused (102005).
const MAX_RETRIES: usize = 16;
/// Pause before a broken watch is opened again.
const WATCH_RETRY: Duration = Duration::from_millis(300);
/// A watch that has seen nothing for this long is opened again (a member that hangs
/// without closing the connection would otherwise hide every change).
const WATCH_IDLE: Duration = Duration::from_secs(15);
/// The shortest lease viewer reports are written under, seconds.
const MIN_REPORT_LEASE_S: i64 = 5;

/// The lease viewer reports are written under now, and when it was granted.
#[derive(Debug, Clone, Copy)]
struct ReportLease {
    id: i64,
    granted: std::time::Instant,
}

/// Where the MC's shared store is.
#[derive(Debug, Clone)]
pub struct EtcdSettings {
    /// The cluster's client URLs, `http://host:port`.
    pub endpoints: Vec<String>,
    /// The prefix of every key (one per MC group), ending in `/`.
    pub prefix: String,
    /// The time one call may take on one endpoint.
    pub timeout: Duration,
}

/// A node's viewer report as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedReport {
    /// When the MC that received it got it, Unix ms.
    pub at_ms: i64,
    /// Viewers per meeting.
    pub counts: BTreeMap<MeetingId, u32>,
}

#[derive(Debug, Default)]
struct View {
    meetings: Arc<Meetings>,
    /// The mod revision of each meeting's key as this view holds it.
    revisions: HashMap<MeetingId, i64>,
}

impl View {
    /// The view a read of every meeting at `revision` (`meetings` at `revisions`)
    /// makes of this one: the read, except the meetings this view holds at a later
    /// revision (a change committed while the read was under way), which stay.
    fn after_read(
        &self,
        mut meetings: Meetings,
        mut revisions: HashMap<MeetingId, i64>,
        revision: i64,
    ) -> View {
        for (id, &held) in &self.revisions {
            if held > revision {
                match self.meetings.get(id) {
                    Ok(meeting) => meetings.put(meeting.clone()),
                    Err(_) => meetings.forget(id),
                }
                revisions.insert(id.clone(), held);
            }
        }
        View {
            meetings: Arc::new(meetings),
            revisions,
        }
    }
}

/// The meetings in etcd, with this MC's view of them.
pub struct EtcdStore {
    client: etcd::Client,
    prefix: String,
    cache_path: PathBuf,
    view: Mutex<View>,
    /// The view as it changes, published under the view's lock.
    changes: watch::Sender<Arc<Meetings>>,
    /// Held while `meetings.json` is written, so writes do not cross.
    cache_file: Mutex<()>,
    /// What this MC last wrote for each node: a report is rewritten when it changes or
    /// has aged a third of its lifetime, not on every sync.
    written: Mutex<HashMap<String, SharedReport>>,
    /// Each meeting's timeline owner with its key's revision.
    timelines: Mutex<HashMap<MeetingId, (TimelineRecord, i64)>>,
    /// The lease reports are written under: granted for twice a report's lifetime and
    /// replaced after half of it, so a live node's key (rewritten at least every third
    /// of a lifetime) always sits under a lease that has time left, and a dead node's
    /// key goes with the last lease it was written under.
    lease: tokio::sync::Mutex<Option<ReportLease>>,
    /// Whether etcd answered the last read and this MC follows it (`/readyz`).
    reachable: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for EtcdStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdStore")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

fn unavailable(e: &EtcdError) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

impl EtcdStore {
    /// Connects to the cluster and reads every meeting; when etcd cannot be reached,
    /// starts from the view kept in `cache_path` and catches up once it can.
    ///
    /// # Errors
    /// An endpoint is malformed, or the cache is unreadable while etcd is away.
    pub async fn open(settings: &EtcdSettings, cache_path: PathBuf) -> Result<Self, StoreError> {
        let client = etcd::Client::new(&settings.endpoints, settings.timeout)
            .map_err(|e| unavailable(&e))?;
        let store = Self {
            client,
            prefix: settings.prefix.clone(),
            cache_path,
            view: Mutex::new(View::default()),
            changes: watch::Sender::new(Arc::new(Meetings::new())),
            cache_file: Mutex::new(()),
            written: Mutex::new(HashMap::new()),
            timelines: Mutex::new(HashMap::new()),
            lease: tokio::sync::Mutex::new(None),
            reachable: std::sync::atomic::AtomicBool::new(false),
        };
        match store.load().await {
            Ok(_) => store.set_reachable(true),
            Err(e) => {
                let cached = Arc::new(read_file(&store.cache_path)?);
                tracing::warn!(error = %e, meetings = cached.len(), "etcd unavailable at start: serving the last view");
                let mut view = store.lock();
                view.meetings = Arc::clone(&cached);
                store.changes.send_replace(cached);
            }
        }
        Ok(store)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, View> {
        // Replaced field by field under the lock, never left torn by a panic.
        self.view.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn meetings_prefix(&self) -> String {
        format!("{}meetings/", self.prefix)
    }

    fn viewers_prefix(&self) -> String {
        format!("{}viewers/", self.prefix)
    }

    fn timeline_prefix(&self) -> String {
        format!("{}timeline/", self.prefix)
    }

    fn key(&self, id: &MeetingId) -> Vec<u8> {
        format!("{}{id}", self.meetings_prefix()).into_bytes()
    }

    /// Whether etcd answered this MC's last read and its watch runs.
    pub fn reachable(&self) -> bool {
        self.reachable.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn set_reachable(&self, reachable: bool) {
        self.reachable
            .store(reachable, std::sync::atomic::Ordering::Relaxed);
    }

    /// The meetings now, as this MC sees them.
    pub fn snapshot(&self) -> Arc<Meetings> {
        Arc::clone(&self.lock().meetings)
    }

    /// The view, now and as it changes (every change of it, in order).
    pub fn subscribe(&self) -> watch::Receiver<Arc<Meetings>> {
        self.changes.subscribe()
    }

    /// Reads every key of the group: installs the meetings and timeline owners, and
    /// returns the revision to watch from with the viewer reports found.
    async fn load(&self) -> Result<(i64, Vec<etcd::KeyValue>), EtcdError> {
        let (kvs, revision) = self.client.get_prefix(self.prefix.as_bytes()).await?;
        let mut meetings = Meetings::new();
        let mut revisions = HashMap::new();
        let mut timelines = HashMap::new();
        let mut reports = Vec::new();
        let meetings_prefix = self.meetings_prefix();
        let timeline_prefix = self.timeline_prefix();
        for kv in kvs {
            let key = String::from_utf8_lossy(&kv.key).into_owned();
            if let Some(id) = key.strip_prefix(&timeline_prefix) {
                let parsed = MeetingId::parse(id)
                    .ok()
                    .zip(serde_json::from_slice::<TimelineRecord>(&kv.value).ok());
                if let Some((id, record)) = parsed {
                    timelines.insert(id, (record, kv.mod_revision));
                }
                continue;
            }
            if key.strip_prefix(self.prefix.as_str()) == Some(SESSION_KEYS_KEY) {
                // The session-key ring: read by its own store, never a report.
                continue;
            }
            if !key.starts_with(&meetings_prefix) {
                reports.push(kv);
                continue;
            }
            match serde_json::from_slice::<Meeting>(&kv.value) {
                Ok(meeting) => {
                    revisions.insert(meeting.id.clone(), kv.mod_revision);
                    meetings.put(meeting);
                }
                Err(e) => {
                    tracing::error!(key = %String::from_utf8_lossy(&kv.key), error = %e, "a meeting in etcd is not readable: skipped")
                }
            }
        }
        {
            let mut view = self.lock();
            *view = view.after_read(meetings, revisions, revision);
            self.changes.send_replace(Arc::clone(&view.meetings));
        }
        *self
            .timelines
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = timelines;
        self.keep();
        Ok((revision, reports))
    }

    /// Puts `value` at `key` if the key is still at `revision` (0: absent), else runs
    /// `failure`.
    async fn put_if_unchanged(
        &self,
        key: &[u8],
        revision: i64,
        value: &impl Serialize,
        failure: &[Op],
    ) -> Result<etcd::TxnOutcome, StoreError> {
        let compare = if revision == 0 {
            Compare::Absent(key.to_vec())
        } else {
            Compare::ModRevision(key.to_vec(), revision)
        };
        let value =
            serde_json::to_vec(value).map_err(|e| StoreError::Unavailable(e.to_string()))?;
        let put = Op::Put {
            key: key.to_vec(),
            value,
        };
        self.client
            .txn(&[compare], &[put], failure)
            .await
            .map_err(|e| unavailable(&e))
    }

    /// The value of the group's key `name` (after the prefix) with its revision.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`]: etcd cannot be reached.
    pub(crate) async fn read_key(&self, name: &str) -> Result<Option<(Vec<u8>, i64)>, StoreError> {
        let key = format!("{}{name}", self.prefix);
        let (kv, _) = self
            .client
            .get(key.as_bytes())
            .await
            .map_err(|e| unavailable(&e))?;
        Ok(kv.map(|kv| (kv.value, kv.mod_revision)))
    }

    /// Writes `value` at the group's key `name` if it is still at `revision` (0:
    /// absent); whether it was written.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`]: etcd cannot be reached.
    pub(crate) async fn write_key_if(
        &self,
        name: &str,
        revision: i64,
        value: &impl Serialize,
    ) -> Result<bool, StoreError> {
        let key = format!("{}{name}", self.prefix);
        let outcome = self
            .put_if_unchanged(key.as_bytes(), revision, value, &[])
            .await?;
        Ok(outcome.succeeded)
    }

    /// The timeline owner of `id` as this MC last saw it.
    pub fn timeline(&self, id: &MeetingId) -> Option<TimelineRecord> {
        self.timelines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .map(|(record, _)| record.clone())
    }

    /// Writes `record` as `id`'s timeline owner if the owner record has not changed
    /// since this MC last saw it.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`]: etcd cannot be reached, or another MC wrote the
    /// record first (this MC then sees that record).
    pub async fn claim_timeline(
        &self,
        id: &MeetingId,
        record: TimelineRecord,
    ) -> Result<(), StoreError> {
        let key = format!("{}{id}", self.timeline_prefix()).into_bytes();
        let seen = self
            .timelines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .map_or(0, |(_, rev)| *rev);
        let outcome = self
            .put_if_unchanged(&key, seen, &record, &[Op::Get(key.clone())])
            .await?;
        let mut timelines = self
            .timelines
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if outcome.succeeded {
            timelines.insert(id.clone(), (record, outcome.revision));
            return Ok(());
        }
        let current = outcome
            .gets
            .first()
            .and_then(|kvs| kvs.first())
            .and_then(|kv| {
                serde_json::from_slice::<TimelineRecord>(&kv.value)
                    .ok()
                    .map(|r| (r, kv.mod_revision))
            });
        match current {
            Some(current) => {
                timelines.insert(id.clone(), current);
            }
            None => {
                timelines.remove(id);
            }
        }
        Err(StoreError::Unavailable(format!(
            "meeting {id}: another mc wrote the timeline owner first"
        )))
    }

    /// Keeps the view on disk for a start while etcd is away: the view as it is now,
    /// one writer at a time, so the file ends as the latest view.
    fn keep(&self) {
        let _writing = self
            .cache_file
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = write_file(&self.cache_path, &self.snapshot()) {
            tracing::warn!(error = %e, "cannot keep the meeting view on disk");
        }
    }

    /// Takes a meeting record at `revision` into the view unless the view holds a
    /// newer one, and publishes the view; returns it when it changed.
    fn install(
        &self,
        id: &MeetingId,
        record: Option<Meeting>,
        revision: i64,
    ) -> Option<Arc<Meetings>> {
        let mut view = self.lock();
        if view.revisions.get(id).is_some_and(|&held| held >= revision) {
            return None;
        }
        let mut next = Meetings::clone(&view.meetings);
        match record {
            Some(meeting) => {
                next.put(meeting);
                view.revisions.insert(id.clone(), revision);
            }
            None => {
                next.forget(id);
                view.revisions.insert(id.clone(), revision);
            }
        }
        let next = Arc::new(next);
        view.meetings = Arc::clone(&next);
        self.changes.send_replace(Arc::clone(&next));
        drop(view);
        self.keep();
        Some(next)
    }

    /// Applies `change` to meeting `id` as etcd holds it and writes it back only if
    /// nobody changed it meanwhile (retried on the fresh value when someone did).
    ///
    /// # Errors
    /// The change's own refusal (on the freshest value), or
    /// [`StoreError::Unavailable`] when etcd cannot be reached or the races never end.
    pub async fn change<T>(
        &self,
        id: &MeetingId,
        mut change: impl FnMut(&mut Meetings) -> Result<T, MeetingError>,
    ) -> Result<(T, Arc<Meetings>), ChangeError> {
        let key = self.key(id);
        for _ in 0..MAX_RETRIES {
            let (fresh, _) = self.client.get(&key).await.map_err(|e| unavailable(&e))?;
            let (record, revision) = match &fresh {
                Some(kv) => (
                    Some(serde_json::from_slice::<Meeting>(&kv.value).map_err(|e| {
                        StoreError::Unavailable(format!("meeting {id} in etcd unreadable: {e}"))
                    })?),
                    kv.mod_revision,
                ),
                None => (None, 0),
            };
            let mut scratch = Meetings::clone(&self.snapshot());
            match record {
                Some(meeting) => scratch.put(meeting),
                None => scratch.forget(id),
            }
            let out = change(&mut scratch)?;
            let Ok(changed) = scratch.get(id).cloned() else {
                return Err(
                    StoreError::Unavailable(format!("meeting {id} vanished in a change")).into(),
                );
            };
            let outcome = self.put_if_unchanged(&key, revision, &changed, &[]).await?;
            if outcome.succeeded {
                let meetings = self
                    .install(id, Some(changed), outcome.revision)
                    .unwrap_or_else(|| self.snapshot());
                return Ok((out, meetings));
            }
            tracing::debug!(meeting = %id, "meeting changed meanwhile: trying again on the fresh value");
        }
        Err(StoreError::Unavailable(format!("meeting {id}: too many concurrent changes")).into())
    }

    /// Shares a node's viewer report with the other MCs (written when it changed or has
    /// aged a third of `ttl_ms`; the write runs in the background, under a lease of
    /// about twice `ttl_ms`, so the key of a node that stops reporting expires).
    pub fn share_report(self: &Arc<Self>, node: &str, report: SharedReport, ttl_ms: i64) {
        {
            let mut written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
            let fresh = written.get(node).is_some_and(|last| {
                last.counts == report.counts && report.at_ms - last.at_ms < ttl_ms / 3
            });
            if fresh {
                return;
            }
            if !written.contains_key(node) {
                // A new name: forget the nodes that stopped reporting, so the map holds
                // live nodes only.
                written.retain(|_, last| report.at_ms - last.at_ms <= ttl_ms);
            }
            written.insert(node.to_owned(), report.clone());
        }
        let store = Arc::clone(self);
        let key = format!("{}{node}", store.viewers_prefix()).into_bytes();
        tokio::spawn(async move {
            let Ok(value) = serde_json::to_vec(&report) else {
                return;
            };
            if let Err(e) = store.put_report(&key, &value, ttl_ms).await {
                tracing::debug!(error = %e, "viewer report not shared");
                // Written again at the next sync.
                store
                    .written
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clear();
            }
        });
    }

    /// Puts a report under the current report lease (granting a new one when there is
    /// none or it is half spent).
    async fn put_report(&self, key: &[u8], value: &[u8], ttl_ms: i64) -> Result<(), EtcdError> {
        let lease_s = (2 * ttl_ms / 1000).max(MIN_REPORT_LEASE_S);
        let half = Duration::from_millis(u64::try_from(lease_s * 500).unwrap_or(u64::MAX));
        let lease = {
            let mut current = self.lease.lock().await;
            match *current {
                Some(lease) if lease.granted.elapsed() < half => lease.id,
                _ => {
                    let granted = std::time::Instant::now();
                    let id = self.client.grant_lease(lease_s).await?;
                    *current = Some(ReportLease { id, granted });
                    id
                }
            }
        };
        match self.client.put_with_lease(key, value, lease).await {
            Ok(_) => Ok(()),
            Err(e) => {
                // The lease may be gone (etcd restored, clock jump): a new one next time.
                *self.lease.lock().await = None;
                Err(e)
            }
        }
    }

    /// Follows etcd for as long as the MC runs: every meeting change goes to the view
    /// ([`EtcdStore::subscribe`]), every node report to `on_report`. Reloads everything
    /// after any break.
    pub async fn follow(
        self: Arc<Self>,
        on_report: impl Fn(&str, SharedReport) + Send + Sync + 'static,
        mut shutdown: watch::Receiver<bool>,
    ) {
        // A broken watch is logged once, then reminded of while it stays broken.
        let mut broken = flap_log::FlapLog::default();
        loop {
            let broken_now = &mut broken;
            let followed = async {
                let (revision, reports) = self.load().await?;
                for kv in reports {
                    self.apply(Event::Put(kv), &on_report);
                }
                let mut watch = self
                    .client
                    .watch_prefix(self.prefix.as_bytes(), revision + 1)
                    .await?;
                self.set_reachable(true);
                if let Some(recovery) = broken_now.recovered(std::time::Instant::now()) {
                    tracing::info!(
                        down_ms = recovery.down_for.as_millis() as u64,
                        failures = recovery.failures,
                        flaps = recovery.flaps,
                        "etcd watch followed again"
                    );
                }
                loop {
                    let batch = tokio::time::timeout(WATCH_IDLE, watch.next())
                        .await
                        .map_err(|_| EtcdError::Unavailable("watch idle".into()))??;
                    for event in batch.events {
                        self.apply(event, &on_report);
                    }
                }
                #[allow(unreachable_code)]
                Ok::<(), EtcdError>(())
            };
            tokio::select! {
                result = followed => {
                    if let Err(e) = result {
                        if !matches!(e, EtcdError::Unavailable(ref why) if why == "watch idle") {
                            self.set_reachable(false);
                        }
                        match e {
                            EtcdError::Unavailable(ref why) if why == "watch idle" => {}
                            e => match broken.failed(std::time::Instant::now()) {
                                Some(flap_log::Failure::Down) => {
                                    tracing::warn!(error = %e, "etcd watch broken: reloading")
                                }
                                Some(flap_log::Failure::StillDown {
                                    down_for, repeated, ..
                                }) => tracing::warn!(
                                    error = %e,
                                    down_s = down_for.as_secs(),
                                    repeated,
                                    "etcd watch still broken"
                                ),
                                None => tracing::debug!(error = %e, "etcd watch broken: reloading"),
                            },
                        }
                    }
                }
                _ = shutdown.wait_for(|s| *s) => return,
            }
            tokio::select! {
                () = tokio::time::sleep(WATCH_RETRY) => {}
                _ = shutdown.wait_for(|s| *s) => return,
            }
        }
    }

    fn apply(&self, event: Event, on_report: &impl Fn(&str, SharedReport)) {
        let (kv, deleted) = match event {
            Event::Put(kv) => (kv, false),
            Event::Delete(kv) => (kv, true),
        };
        let key = String::from_utf8_lossy(&kv.key);
        if let Some(id) = key.strip_prefix(&self.meetings_prefix()) {
            let Ok(id) = MeetingId::parse(id) else {
                return;
            };
            let record = if deleted {
                None
            } else {
                match serde_json::from_slice::<Meeting>(&kv.value) {
                    Ok(meeting) => Some(meeting),
                    Err(e) => {
                        tracing::error!(meeting = %id, error = %e, "a meeting in etcd is not readable: skipped");
                        return;
                    }
                }
            };
            self.install(&id, record, kv.mod_revision);
        } else if let Some(id) = key.strip_prefix(&self.timeline_prefix()) {
            let Ok(id) = MeetingId::parse(id) else {
                return;
            };
            let mut timelines = self
                .timelines
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if timelines
                .get(&id)
                .is_some_and(|(_, held)| *held >= kv.mod_revision)
            {
                return;
            }
            match serde_json::from_slice::<TimelineRecord>(&kv.value) {
                Ok(record) if !deleted => {
                    timelines.insert(id, (record, kv.mod_revision));
                }
                _ => {
                    timelines.remove(&id);
                }
            }
        } else if let Some(node) = key.strip_prefix(&self.viewers_prefix()) {
            if let Ok(report) = serde_json::from_slice::<SharedReport>(&kv.value) {
                on_report(node, report);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meeting::{Action, MeetingSecrets, MeetingState, NewMeeting};

    /// Meetings `ids`, created; those in `live` started.
    fn meetings(ids: &[&str], live: &[&str]) -> Meetings {
        let mut all = Meetings::new();
        for id in ids {
            let meeting = MeetingId::parse(id).expect("an id");
            let request = NewMeeting {
                id: (*id).to_owned(),
                title: String::new(),
                viewer_limit: None,
                private: false,
                recording_depth_days: None,
                languages: Vec::new(),
            };
            let secrets = MeetingSecrets {
                stream_key: "k".repeat(24),
                host_token: "h".repeat(24),
            };
            all.create(meeting.clone(), &request, secrets, 0)
                .expect("created");
            if live.contains(id) {
                all.apply(&meeting, Action::Start, 1).expect("started");
            }
        }
        all
    }

    fn revisions(pairs: &[(&str, i64)]) -> HashMap<MeetingId, i64> {
        pairs
            .iter()
            .map(|(id, r)| (MeetingId::parse(id).expect("an id"), *r))
            .collect()
    }

    fn state(view: &View, id: &str) -> Option<MeetingState> {
        let id = MeetingId::parse(id).expect("an id");
        view.meetings.get(&id).ok().map(|m| m.state)
    }

    /// A reload whose read was answered before this MC's own start of a meeting landed
    /// (the read at revision 3, the start at 4) keeps the meeting live: the MC's
    /// meeting stream is not stopped by an older read.
    #[test]
    fn a_read_older_than_the_views_change_does_not_undo_it() {
        let view = View {
            meetings: Arc::new(meetings(&["a", "b", "c", "d"], &["a"])),
            revisions: revisions(&[("a", 4), ("b", 1), ("c", 5), ("d", 2)]),
        };
        // The read at revision 3: `a` as created, `b` changed (started) at 3, `c` not
        // yet made, `d` deleted.
        let read = meetings(&["a", "b"], &["b"]);
        let after = view.after_read(read, revisions(&[("a", 2), ("b", 3)]), 3);
        assert_eq!(
            state(&after, "a"),
            Some(MeetingState::Live),
            "own start kept"
        );
        assert_eq!(after.revisions[&MeetingId::parse("a").unwrap()], 4);
        assert_eq!(
            state(&after, "b"),
            Some(MeetingState::Live),
            "the read's newer b"
        );
        assert_eq!(
            state(&after, "c"),
            Some(MeetingState::Created),
            "made after the read"
        );
        assert_eq!(state(&after, "d"), None, "deleted by the read's time");
    }
}
