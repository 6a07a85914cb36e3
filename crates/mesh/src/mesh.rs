//! The running mesh: start, the round ticker, and the handle the node uses.

use std::collections::{HashMap, HashSet};
use std::net::{SocketAddr, UdpSocket};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use chitchat::{
    spawn_chitchat, Chitchat, ChitchatConfig, ChitchatHandle, ChitchatId, FailureDetectorConfig,
    ListenerHandle, ProtocolVersion,
};
use ott::{KeyRing, MemberView, NodeId, Pass, PassError, Snapshot, Version};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use crate::clock::{Clock, OffsetEstimator, SystemClock};
use crate::config::{MeshConfig, MeshError, MAX_OWN_STATE_BYTES};
use crate::crypto::GossipCipher;
use crate::snapshot::{self, node_id, OwnState, PeerState};
use crate::state::{
    encode_member, encode_node, fingerprint_text, member_key, NodeAnnounce, KEY_CLOCK, KEY_NODE,
    KEY_VIEW_KEY, MEMBER_PREFIX,
};
use crate::transport::{SealedTransport, TransportCounters, TransportStats};
use crate::viewkey::ViewKeySchedule;

/// A change of a peer's liveness, as seen by this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MeshEvent {
    /// A node is announced and alive (joined, restarted, or came back).
    NodeUp(NodeId),
    /// A node was declared dead by failure detection.
    NodeDown(NodeId),
}

/// Starts meshes. (A unit type so the entry point reads `Mesh::start`.)
pub struct Mesh;

impl Mesh {
    /// Joins the domain: binds the gossip socket, starts chitchat over the sealed
    /// transport and the round ticker (clock, view key, snapshot refresh).
    ///
    /// # Errors
    /// [`MeshError::Config`], [`MeshError::Bind`], [`MeshError::Start`].
    pub async fn start(config: MeshConfig) -> Result<MeshHandle, MeshError> {
        config.validate()?;
        let schedule =
            ViewKeySchedule::with_any_rotation(&config.domain_secret, config.view_key_rotation);
        let socket = UdpSocket::bind(config.gossip_listen).map_err(|source| MeshError::Bind {
            addr: config.gossip_listen,
            source,
        })?;
        let bound = socket.local_addr().map_err(|source| MeshError::Bind {
            addr: config.gossip_listen,
            source,
        })?;
        let advertise = config.gossip_advertise.unwrap_or(bound);
        let generation = u64::try_from(SystemClock.now_ms()).unwrap_or(0);
        let chitchat_id = ChitchatId::new(config.node_name.clone(), generation, advertise);
        let stats = Arc::new(TransportStats::default());
        let transport = SealedTransport::new(
            GossipCipher::new(&config.domain_secret),
            Some(socket),
            config.links.clone(),
            stats.clone(),
        );
        let now = config.clock.now_ms();
        let initial = vec![
            (KEY_CLOCK.to_owned(), now.to_string()),
            (
                KEY_VIEW_KEY.to_owned(),
                fingerprint_text(schedule.fingerprint(now)),
            ),
        ];
        let interval = config.gossip_interval;
        let chitchat_config = ChitchatConfig {
            chitchat_id: chitchat_id.clone(),
            cluster_id: config.cluster_id.clone(),
            gossip_interval: interval,
            listen_addr: bound,
            seed_nodes: config.seeds.clone(),
            failure_detector_config: FailureDetectorConfig {
                phi_threshold: config.phi_threshold,
                sampling_window_size: 100,
                max_interval: interval * 20,
                initial_interval: interval,
                dead_node_grace_period: config.dead_node_retention,
            },
            marked_for_deletion_grace_period: Duration::from_secs(3600),
            catchup_callback: None,
            extra_liveness_predicate: None,
            protocol_version: ProtocolVersion::V1,
        };
        let handle = spawn_chitchat(chitchat_config, initial, &transport)
            .await
            .map_err(|e| MeshError::Start(format!("{e:#}")))?;
        let chitchat = handle.chitchat();
        let own_node = NodeAnnounce::default();
        let own_id = node_id(&config.node_name, generation);
        let first = snapshot::build(
            &OwnState {
                id: own_id.clone(),
                name: &config.node_name,
                node: &own_node,
                members: &[],
            },
            Vec::new(),
            &[],
            config.min_version,
        );
        let (events, _) = broadcast::channel(64);
        let shared = Arc::new(Shared {
            name: config.node_name.clone(),
            chitchat_id: chitchat_id.clone(),
            node_id: own_id,
            gossip_addr: advertise,
            clock: config.clock.clone(),
            schedule,
            min_version: config.min_version,
            chitchat: chitchat.clone(),
            own: Mutex::new(Own {
                node: own_node,
                members: Vec::new(),
            }),
            offsets: Mutex::new(HashMap::new()),
            snapshot: RwLock::new(Arc::new(first)),
            stats,
            events,
        });
        let listener = {
            let shared = shared.clone();
            let me = chitchat_id;
            chitchat
                .lock()
                .await
                .subscribe_event(KEY_CLOCK, move |event| {
                    if !event.key.is_empty() || *event.node == me {
                        return;
                    }
                    if let Ok(their) = event.value.parse::<i64>() {
                        let ours = shared.clock.now_ms();
                        lock(&shared.offsets)
                            .entry(event.node.clone())
                            .or_default()
                            .observe(their, ours);
                    }
                })
        };
        let ticker = tokio::spawn(tick(shared.clone(), interval));
        Ok(MeshHandle {
            chitchat: Mutex::new(Some(handle)),
            shared,
            ticker,
            _clock_listener: listener,
        })
    }
}

/// This node's membership in the domain. `Send + Sync`: share it behind an `Arc`.
/// Dropping it leaves silently (peers detect the silence); [`MeshHandle::shutdown`]
/// waits for gossip to stop.
pub struct MeshHandle {
    chitchat: Mutex<Option<ChitchatHandle>>,
    shared: Arc<Shared>,
    ticker: JoinHandle<()>,
    _clock_listener: ListenerHandle,
}

struct Own {
    node: NodeAnnounce,
    members: Vec<MemberView>,
}

struct Shared {
    name: String,
    chitchat_id: ChitchatId,
    node_id: NodeId,
    gossip_addr: SocketAddr,
    clock: Arc<dyn Clock>,
    schedule: ViewKeySchedule,
    min_version: Version,
    chitchat: Arc<tokio::sync::Mutex<Chitchat>>,
    own: Mutex<Own>,
    offsets: Mutex<HashMap<ChitchatId, OffsetEstimator>>,
    snapshot: RwLock<Arc<Snapshot>>,
    stats: Arc<TransportStats>,
    events: broadcast::Sender<MeshEvent>,
}

/// Locks a std mutex; a poisoned one still holds consistent plain data here.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

async fn tick(shared: Arc<Shared>, interval: Duration) {
    let mut timer = tokio::time::interval(interval);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        timer.tick().await;
        let now = shared.clock.now_ms();
        {
            let mut cc = shared.chitchat.lock().await;
            let me = cc.self_node_state();
            me.set(KEY_CLOCK, now);
            me.set(
                KEY_VIEW_KEY,
                fingerprint_text(shared.schedule.fingerprint(now)),
            );
        }
        shared.refresh().await;
    }
}

impl Shared {
    /// Rebuilds the snapshot from chitchat and announces liveness changes.
    async fn refresh(&self) {
        let now = self.clock.now_ms();
        let mut peers = {
            let cc = self.chitchat.lock().await;
            let live: HashSet<&ChitchatId> = cc.live_nodes().collect();
            cc.node_states()
                .iter()
                .filter(|(id, _)| **id != self.chitchat_id)
                .map(|(id, state)| PeerState {
                    name: id.node_id.to_string(),
                    generation: id.generation_id,
                    alive: live.contains(id),
                    node_json: state.get(KEY_NODE).map(str::to_owned),
                    view_key: state.get(KEY_VIEW_KEY).map(str::to_owned),
                    members: state
                        .iter_prefix(MEMBER_PREFIX)
                        .map(|(_, v)| v.value.clone())
                        .collect(),
                    clock_offset_ms: None,
                    silent_ms: 0,
                })
                .collect::<Vec<_>>()
        };
        {
            let mut offsets = lock(&self.offsets);
            // Forget estimators of identities chitchat has forgotten.
            offsets.retain(|id, _| {
                peers
                    .iter()
                    .any(|p| p.generation == id.generation_id && *p.name == *id.node_id)
            });
            for p in &mut peers {
                let estimator = offsets
                    .iter()
                    .find(|(id, _)| id.generation_id == p.generation && *id.node_id == *p.name)
                    .map(|(_, e)| e);
                p.clock_offset_ms = estimator.and_then(OffsetEstimator::offset_ms);
                p.silent_ms = estimator.map_or(0, |e| e.silent_ms(now));
            }
        }
        let next = {
            let own = lock(&self.own);
            snapshot::build(
                &OwnState {
                    id: self.node_id.clone(),
                    name: &self.name,
                    node: &own.node,
                    members: &own.members,
                },
                peers,
                &self.schedule.accepted_fingerprints(now),
                self.min_version,
            )
        };
        let prev = self.snapshot();
        for n in &next.nodes {
            let was = prev.nodes.iter().find(|p| p.id == n.id).map(|p| p.alive);
            match (was, n.alive) {
                (Some(true), false) => {
                    tracing::info!(node = %n.id, "mesh node down");
                    let _ = self.events.send(MeshEvent::NodeDown(n.id.clone()));
                }
                (None | Some(false), true) => {
                    tracing::info!(node = %n.id, "mesh node up");
                    let _ = self.events.send(MeshEvent::NodeUp(n.id.clone()));
                }
                _ => {}
            }
        }
        *self.snapshot.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(next);
    }

    fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl MeshHandle {
    /// This node's id in snapshots (`name@generation`).
    pub fn node_id(&self) -> &NodeId {
        &self.shared.node_id
    }

    /// The address peers gossip with this node at (the bound port when the config
    /// asked for port 0).
    pub fn gossip_addr(&self) -> SocketAddr {
        self.shared.gossip_addr
    }

    /// Publishes this node's announce (version, addresses, load, thresholds).
    /// Unchanged values cost no gossip traffic.
    ///
    /// # Errors
    /// [`MeshError::StateTooLarge`] when it and the members exceed
    /// [`MAX_OWN_STATE_BYTES`].
    pub async fn set_node(&self, node: NodeAnnounce) -> Result<(), MeshError> {
        let json = encode_node(&node);
        let members_bytes: usize = lock(&self.shared.own)
            .members
            .iter()
            .map(|m| encode_member(m).len())
            .sum();
        check_size(json.len() + members_bytes)?;
        self.shared
            .chitchat
            .lock()
            .await
            .self_node_state()
            .set(KEY_NODE, json);
        lock(&self.shared.own).node = node;
        self.shared.refresh().await;
        Ok(())
    }

    /// Replaces this node's members: new and changed ones are published, removed
    /// ones deleted from gossip. Each member's `node` is this node's id whatever it
    /// says (a node announces only its own members).
    ///
    /// # Errors
    /// [`MeshError::DuplicateMember`], [`MeshError::StateTooLarge`].
    pub async fn set_members(&self, mut members: Vec<MemberView>) -> Result<(), MeshError> {
        for m in &mut members {
            m.node.clone_from(&self.shared.node_id);
        }
        let mut wanted: HashMap<String, String> = HashMap::new();
        for m in &members {
            if wanted
                .insert(member_key(&m.stream), encode_member(m))
                .is_some()
            {
                return Err(MeshError::DuplicateMember(m.stream.clone()));
            }
        }
        let node_bytes = encode_node(&lock(&self.shared.own).node).len();
        check_size(node_bytes + wanted.values().map(String::len).sum::<usize>())?;
        {
            let mut cc = self.shared.chitchat.lock().await;
            let me = cc.self_node_state();
            let stale: Vec<String> = me
                .iter_prefix(MEMBER_PREFIX)
                .map(|(k, _)| k.to_owned())
                .filter(|k| !wanted.contains_key(k))
                .collect();
            for key in stale {
                me.delete(&key);
            }
            for (key, json) in wanted {
                me.set(key, json);
            }
        }
        lock(&self.shared.own).members = members;
        self.shared.refresh().await;
        Ok(())
    }

    /// The mesh as this node sees it. Rebuilt every gossip round and after each
    /// `set_*`, so this is an `Arc` clone, cheap enough per request; it lags gossip
    /// by at most one round.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.shared.snapshot()
    }

    /// The key ring to sign passes with now (current epoch's key, previous one too).
    pub fn key_ring(&self) -> KeyRing {
        self.shared.schedule.ring(self.shared.clock.now_ms())
    }

    /// Verifies a pass now with the previous, current or next view key
    /// (see [`ViewKeySchedule::verify`]).
    ///
    /// # Errors
    /// As [`KeyRing::verify`].
    pub fn verify_pass(
        &self,
        text: &str,
        stream: &str,
        viewer_ip: Option<std::net::IpAddr>,
    ) -> Result<Pass, PassError> {
        self.shared
            .schedule
            .verify(text, stream, viewer_ip, self.shared.clock.now_ms())
    }

    /// The view-key schedule, for callers that pass their own time.
    pub fn view_keys(&self) -> &ViewKeySchedule {
        &self.shared.schedule
    }

    /// The fingerprint of the view key in use now, for the Backups screen's "OTT view
    /// key: in use" block (OTT-OPS-1).
    pub fn view_key_fingerprint(&self) -> u64 {
        self.shared.schedule.fingerprint(self.shared.clock.now_ms())
    }

    /// Liveness changes of peers, as the snapshot sees them.
    pub fn subscribe(&self) -> broadcast::Receiver<MeshEvent> {
        self.shared.events.subscribe()
    }

    /// Datagrams that did not open with the domain key since start.
    pub fn rejected_datagrams(&self) -> u64 {
        self.shared.stats.counters().rejected
    }

    /// All transport counters.
    pub fn transport_counters(&self) -> TransportCounters {
        self.shared.stats.counters()
    }

    /// Leaves the domain: stops the ticker and gossip and releases the socket. Peers
    /// see this node die like any silent node (chitchat has no goodbye).
    /// Later calls do nothing.
    pub async fn shutdown(&self) {
        self.ticker.abort();
        let handle = lock(&self.chitchat).take();
        if let Some(h) = handle {
            if let Err(e) = h.shutdown().await {
                tracing::debug!(error = %e, "gossip stopped with an error");
            }
        }
    }
}

impl Drop for MeshHandle {
    fn drop(&mut self) {
        self.ticker.abort();
        if let Some(h) = lock(&self.chitchat).take() {
            h.abort();
        }
    }
}

// The server shares the handle behind an `Arc` across tasks.
const _: () = {
    const fn is_send_sync<T: Send + Sync>() {}
    is_send_sync::<MeshHandle>();
};

fn check_size(bytes: usize) -> Result<(), MeshError> {
    if bytes > MAX_OWN_STATE_BYTES {
        return Err(MeshError::StateTooLarge {
            bytes,
            max: MAX_OWN_STATE_BYTES,
        });
    }
    Ok(())
}
