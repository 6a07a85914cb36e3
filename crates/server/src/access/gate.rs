//! The node's side of meetings: before a viewer gets a meeting's stream, the node
//! checks what it knows from its MC (`meeting::admit_new_viewer`) and the client's
//! version, and counts distinct viewers so the MC can enforce the viewer limit across
//! nodes.
//!
//! The MC watcher feeds the gate ([`MeetingGate::connected`], [`MeetingGate::failed`])
//! and reads the counts back ([`MeetingGate::viewer_counts`]) for its next report.
//!
//! A viewer is who the node observed or issued ([`ViewerId`]: the connection's address,
//! a private meeting's session), never a name the client sent: inventing names cannot
//! fill a meeting.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use meeting::{
    admit_new_viewer, check_client, ClientVersion, ConnectCause, ErrorCode, McLink, MeetingView,
};

use super::viewer_table::ViewerTable;
use crate::access::viewer_id::ViewerId;

/// A viewer stays counted this long after their last playlist request.
pub const VIEWER_IDLE: Duration = Duration::from_secs(20);
/// Most distinct viewers tracked per meeting (beyond it, new viewers are refused as full).
pub const MAX_VIEWERS_TRACKED: usize = 200_000;
/// Most sessions tracked per private viewer on this node (beyond it a new session of
/// that viewer is refused as one too many, whatever its token allows).
const MAX_SESSIONS_PER_VIEWER: usize = 64;
/// The header a player may use to name itself as a member: read for shedding and
/// balancing only, never to count viewers.
pub const VIEWER_HEADER: &str = "x-brdyun-member";

/// When each session of a private meeting was last seen: by viewer hash, then nonce.
type SessionsSeen = HashMap<[u8; 8], HashMap<[u8; 4], Instant>>;

#[derive(Debug)]
struct GateState {
    link: McLink,
    views: HashMap<String, MeetingView>,
    reported: HashMap<String, u64>,
    min_version: Option<ClientVersion>,
    managed: std::collections::HashSet<String>,
    /// Private meetings and the viewers their hosts removed (by viewer hash).
    private: HashMap<String, std::collections::HashSet<[u8; 8]>>,
    /// The keys viewer tokens verify with, from the MC.
    keys: Arc<ott::ViewerKeySet>,
    /// The sessions of private meetings' viewers seen here lately, by meeting, each by
    /// viewer and nonce (a token's `max_sessions` counts them).
    sessions: HashMap<String, SessionsSeen>,
}

/// What a node knows of its MC's meetings, and who watches them here.
#[derive(Debug)]
pub struct MeetingGate {
    state: Mutex<GateState>,
    /// The viewers of each meeting seen here lately.
    viewers: ViewerTable,
    refusals: Mutex<std::collections::BTreeMap<u32, (&'static str, u64)>>,
    /// Exchanges with the MC that answered (`brdyun_mc_syncs_total`).
    syncs: std::sync::atomic::AtomicU64,
    /// The keys private meetings' sessions are signed with, as the MC last handed
    /// them out (see [`crate::access::private`]); none before the first sync.
    session_keys: std::sync::RwLock<Arc<ott::SessionKeys>>,
    /// The credential of this node's MC link, which a node pulling a meeting's relay
    /// from this node must present (none: the relay is open, as the MC's is).
    node_token: std::sync::OnceLock<String>,
}

impl Default for MeetingGate {
    fn default() -> Self {
        Self::new()
    }
}

impl MeetingGate {
    /// A gate that has not heard from the MC yet (new viewers get 102005).
    pub fn new() -> Self {
        Self {
            state: Mutex::new(GateState {
                link: McLink::Starting,
                views: HashMap::new(),
                reported: HashMap::new(),
                min_version: None,
                managed: std::collections::HashSet::new(),
                private: HashMap::new(),
                keys: Arc::new(ott::ViewerKeySet::default()),
                sessions: HashMap::new(),
            }),
            viewers: ViewerTable::new(VIEWER_IDLE),
            refusals: Mutex::new(std::collections::BTreeMap::new()),
            syncs: std::sync::atomic::AtomicU64::new(0),
            session_keys: std::sync::RwLock::new(Arc::new(ott::SessionKeys::default())),
            node_token: std::sync::OnceLock::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        // Every update is one assignment: the state stays consistent after a panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The MC answered: its meetings, its minimum client version, the keys of viewer
    /// tokens, and the counts this node reported in that same exchange.
    pub fn connected(
        &self,
        views: Vec<MeetingView>,
        min_version: Option<ClientVersion>,
        reported: HashMap<String, u64>,
        viewer_keys: &[(String, String)],
    ) {
        self.syncs
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let keys: Vec<ott::ViewerKey> = viewer_keys
            .iter()
            .filter_map(
                |(kid, public)| match ott::ViewerKey::from_base64url(kid, public) {
                    Ok(key) => Some(key),
                    Err(error) => {
                        tracing::warn!(%error, "a viewer-token key from the mc is unusable");
                        None
                    }
                },
            )
            .collect();
        let private = views
            .iter()
            .filter(|v| v.private)
            .map(|v| {
                let removed = v.removed.iter().map(|id| ott::viewer_hash(id)).collect();
                (v.id.clone(), removed)
            })
            .collect();
        let mut state = self.lock();
        state.private = private;
        if state.keys.keys() != keys.as_slice() {
            state.keys = Arc::new(ott::ViewerKeySet::new(keys));
        }
        state.link = McLink::Connected;
        state.views = views.into_iter().map(|v| (v.id.clone(), v)).collect();
        state.reported = reported;
        state.min_version = min_version;
    }

    /// Installs the session keys the MC handed out with its last sync (current, next
    /// and the older ones still in use).
    pub fn set_session_keys(&self, keys: ott::SessionKeys) {
        *self
            .session_keys
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(keys);
    }

    /// Sets the node credential a meeting's relay asks of its caller: the token of
    /// this node's MC link, which every node of that MC holds. The first call wins.
    pub fn set_node_token(&self, token: String) {
        let _ = self.node_token.set(token);
    }

    /// Whether a request from `peer` carries the node credential (`Authorization:
    /// Bearer`). A node without one (its MC on loopback, trusted) answers a caller on
    /// this machine only: a meeting's relay is never open to the network.
    pub fn is_node(&self, headers: &axum::http::HeaderMap, peer: Option<std::net::IpAddr>) -> bool {
        match self.node_token.get() {
            Some(token) => crate::credentials::token_matches(
                Some(token.as_str()),
                crate::credentials::bearer(headers),
            ),
            None => peer.is_some_and(|ip| ip.to_canonical().is_loopback()),
        }
    }

    /// The session keys held now.
    pub(crate) fn session_keys(&self) -> Arc<ott::SessionKeys> {
        Arc::clone(
            &self
                .session_keys
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// The audio languages of `meeting` as the MC last named them, the floor first;
    /// empty for one audio or a meeting the MC did not name.
    pub fn languages(&self, meeting: &str) -> Vec<meeting::MeetingLanguage> {
        self.lock()
            .views
            .get(meeting)
            .map_or_else(Vec::new, |view| view.languages.clone())
    }

    /// Whether `meeting` is private (viewers need a token).
    pub fn is_private(&self, meeting: &str) -> bool {
        self.lock().private.contains_key(meeting)
    }

    /// Whether the host of `meeting` removed the viewer of this hash.
    pub(crate) fn is_removed(&self, meeting: &str, viewer: &[u8; 8]) -> bool {
        self.lock()
            .private
            .get(meeting)
            .is_some_and(|removed| removed.contains(viewer))
    }

    /// The keys viewer tokens verify with now.
    pub(crate) fn viewer_keys(&self) -> Arc<ott::ViewerKeySet> {
        Arc::clone(&self.lock().keys)
    }

    /// Notes a request of the session `nonce` of `viewer` in `meeting` (no allocation
    /// once the session is known).
    pub(crate) fn saw_session(&self, meeting: &str, viewer: [u8; 8], nonce: [u8; 4]) {
        let mut state = self.lock();
        let now = Instant::now();
        let sessions = match state.sessions.get_mut(meeting) {
            Some(sessions) => sessions,
            None => state.sessions.entry(meeting.to_owned()).or_default(),
        };
        if sessions.len() >= MAX_VIEWERS_TRACKED && !sessions.contains_key(&viewer) {
            return;
        }
        let mine = sessions.entry(viewer).or_default();
        if let Some(seen) = mine.get_mut(&nonce) {
            *seen = now;
        } else {
            mine.retain(|_, seen| now.duration_since(*seen) < VIEWER_IDLE);
            if mine.len() < MAX_SESSIONS_PER_VIEWER {
                mine.insert(nonce, now);
            }
        }
    }

    /// How many sessions of `viewer` in `meeting` made a request here lately (bounded:
    /// one viewer's sessions only, never the meeting's).
    pub(crate) fn live_sessions(&self, meeting: &str, viewer: [u8; 8]) -> usize {
        let now = Instant::now();
        self.lock()
            .sessions
            .get(meeting)
            .and_then(|sessions| sessions.get(&viewer))
            .map_or(0, |mine| {
                mine.values()
                    .filter(|seen| now.duration_since(**seen) < VIEWER_IDLE)
                    .count()
            })
    }

    /// The last exchange with the MC failed with `cause`. What the node knew stays.
    pub fn failed(&self, cause: ConnectCause) {
        let mut state = self.lock();
        state.link = state.link.failed(cause);
    }

    /// Marks `stream` as a meeting delivered for the MC (`true`) or no longer
    /// (`false`). Streams of the node's own config are not meetings and pass ungated.
    pub fn set_managed(&self, stream: &str, managed: bool) {
        let mut state = self.lock();
        if managed {
            state.managed.insert(stream.to_owned());
        } else {
            state.managed.remove(stream);
            drop(state);
            self.viewers.forget(stream);
        }
    }

    /// The live meetings whose MC has no media yet (waiting for their publisher), by
    /// id: the Backups screen shows each in one line, as nothing is delivered for it.
    pub fn waiting_meetings(&self) -> Vec<String> {
        let state = self.lock();
        let mut ids: Vec<String> = state
            .views
            .values()
            .filter(|v| v.waiting && v.state == meeting::MeetingState::Live)
            .filter(|v| !state.managed.contains(&v.id))
            .map(|v| v.id.clone())
            .collect();
        ids.sort();
        ids
    }

    /// Whether `stream` is a meeting delivered for the MC (see [`MeetingGate::set_managed`]).
    pub fn is_managed(&self, stream: &str) -> bool {
        self.lock().managed.contains(stream)
    }

    /// Counts one refusal by its code (metric `brdyun_meeting_refusals_total`).
    pub fn count_refusal(&self, code: ErrorCode) {
        let mut refusals = self.refusals.lock().unwrap_or_else(PoisonError::into_inner);
        refusals.entry(code.code()).or_insert((code.label(), 0)).1 += 1;
    }

    /// Counts one private meeting's refusal (same metric, its 113xxx code).
    pub fn count_access_refusal(&self, refusal: codes::AccessRefusal) {
        let mut refusals = self.refusals.lock().unwrap_or_else(PoisonError::into_inner);
        refusals
            .entry(refusal.code())
            .or_insert((refusal.label(), 0))
            .1 += 1;
    }

    /// Exchanges with the MC that answered so far.
    pub fn syncs(&self) -> u64 {
        self.syncs.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Appends the refusal counters, the sync count and each meeting's viewers (the
    /// count reported to the MC; no series for a meeting without viewers) in the
    /// Prometheus text format.
    pub fn render_metrics(&self, out: &mut String) {
        use std::fmt::Write;
        let _ = writeln!(out, "brdyun_mc_syncs_total {}", self.syncs());
        let mut viewers: Vec<(String, u64)> =
            self.viewers.counts(Instant::now()).into_iter().collect();
        viewers.sort_unstable();
        for (meeting, count) in viewers {
            // Meeting ids follow the id grammar: nothing to escape.
            let _ = writeln!(
                out,
                "brdyun_meeting_viewers{{meeting=\"{meeting}\"}} {count}"
            );
        }
        let refusals = self.refusals.lock().unwrap_or_else(PoisonError::into_inner);
        for (code, (label, count)) in refusals.iter() {
            let _ = writeln!(
                out,
                "brdyun_meeting_refusals_total{{code=\"{code}\",reason=\"{label}\"}} {count}"
            );
        }
    }

    /// The link to the MC as the gate sees it.
    pub fn link(&self) -> McLink {
        self.lock().link
    }

    /// Distinct viewers per meeting right now (idle ones are forgotten).
    pub fn viewer_counts(&self) -> HashMap<String, u64> {
        let now = Instant::now();
        let counts = self.viewers.counts(now);
        let mut state = self.lock();
        state.sessions.retain(|_, sessions| {
            sessions.retain(|_, mine| {
                mine.retain(|_, seen| now.duration_since(*seen) < VIEWER_IDLE);
                !mine.is_empty()
            });
            !sessions.is_empty()
        });
        counts
    }

    /// Decides one request for a meeting's media (playlists, segments, parts, catch-up):
    /// a viewer seen recently continues (only the version rule, in-session form,
    /// applies); a new viewer must be admitted — the lock, the viewer limit, the MC's
    /// state — and is counted from then on.
    ///
    /// # Errors
    /// The code the viewer gets.
    pub fn check_viewer(
        &self,
        meeting: &str,
        viewer: ViewerId,
        version: Option<&str>,
        delivering: bool,
    ) -> Result<(), ErrorCode> {
        let now = Instant::now();
        if self.viewers.touch_known(meeting, viewer, now) {
            let min_version = self.lock().min_version;
            return check_client(version, min_version, true);
        }
        let here_now = self.viewers.count(meeting, now) as u64;
        {
            let state = self.lock();
            check_client(version, state.min_version, false)?;
            if here_now >= MAX_VIEWERS_TRACKED as u64 {
                return Err(ErrorCode::Full);
            }
            let reported = state.reported.get(meeting).copied().unwrap_or(0);
            admit_new_viewer(
                state.link,
                state.views.get(meeting),
                reported,
                here_now,
                delivering,
            )?;
        }
        self.viewers.insert(meeting, viewer, now);
        Ok(())
    }

    /// The code for a meeting the node does not deliver (nothing to serve yet).
    pub fn not_here(&self, meeting: &str) -> ErrorCode {
        let state = self.lock();
        match admit_new_viewer(state.link, state.views.get(meeting), 0, 0, false) {
            Err(code) => code,
            // Unreachable by `admit_new_viewer`'s contract (not delivering is never Ok);
            // answer "starting" rather than panic.
            Ok(()) => ErrorCode::NotStarted,
        }
    }
}
