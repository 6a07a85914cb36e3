//! `brdyun mc`: the meeting controller. It keeps the meetings (API + store), accepts
//! each live meeting's stream (RTMP publish with the meeting's stream key, or the
//! preset's MPEG-TS inputs), segments it like a node, and serves it as MPEG-TS over
//! HTTP at `/{meeting}/mpegts` — the single origin every node pulls, which is what
//! gives all nodes the same timeline.
//!
//! The node side lives here too: [`watcher`] is a node's loop over its MC.

pub mod config;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ::mc::{McSettings, McState};
use anyhow::Context;
use ingest::supervisor::PublishRegistry;
use meeting::{Action, MeetingId, MeetingSecrets, MeetingState, Meetings, NewMeeting};
use server::metrics::Metrics;
use server::{AppState, NodeIdentity};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::config::StreamConfig;
use crate::node::meeting_streams::MeetingStreams;
use crate::node::stream::StreamContext;
use config::{McConfig, PresetMeeting};

/// A running MC: its addresses and a way to stop it.
pub struct RunningMc {
    /// The HTTP address (API and relays).
    pub http: SocketAddr,
    /// The RTMP publish address, when configured.
    pub rtmp: Option<SocketAddr>,
    /// The RTMPS publish address, when configured.
    pub rtmps: Option<SocketAddr>,
    /// The SRT publish address (UDP), when configured.
    pub srt: Option<SocketAddr>,
    /// The MC's health state (its shutdown flag is raised at SIGTERM).
    pub health: server::health::Health,
    meetings: McState,
    shutdown: watch::Sender<bool>,
    tasks: JoinSet<()>,
}

impl RunningMc {
    /// The stream key of a meeting (to show it to a local publisher).
    pub fn stream_key(&self, id: &str) -> Option<String> {
        let id = MeetingId::parse(id).ok()?;
        let meetings = self.meetings.meetings();
        meetings.get(&id).ok().map(|m| m.stream_key.clone())
    }

    /// The host token of meeting `id` (what a meeting platform gives the meeting's
    /// host and its captioners).
    pub fn host_token(&self, id: &str) -> Option<String> {
        let id = MeetingId::parse(id).ok()?;
        let meetings = self.meetings.meetings();
        meetings.get(&id).ok().map(|m| m.host_token.clone())
    }

    /// Stops every task and waits (bounded) for them.
    pub async fn stop(mut self) {
        crate::node::stop_tasks(&self.shutdown, &mut self.tasks).await;
    }
}

/// Runs the MC until SIGINT/SIGTERM.
///
/// # Errors
/// The MC could not start.
pub async fn run_until_signal(config: McConfig) -> anyhow::Result<()> {
    let delay = Duration::from_secs_f64(config.mc.shutdown_delay);
    let mc = start(config).await?;
    // The machine-readable line scripts and process tests read the ports from.
    println!(
        "listening http={} https=- rtmp={} rtmps={} srt={}",
        mc.http,
        crate::node::or_dash(mc.rtmp),
        crate::node::or_dash(mc.rtmps),
        crate::node::or_dash(mc.srt)
    );
    tracing::info!(http = %mc.http, rtmp = ?mc.rtmp, "mc running");
    let service = crate::service::Service::ready(mc.http);
    crate::node::wait_for_signal().await;
    tracing::info!("stopping");
    service.stopping(&mc.health, delay).await;
    mc.stop().await;
    Ok(())
}

/// Starts the MC: its meeting store, its HTTP API and relays, its publish listeners,
/// and the loops that follow the meetings and their timeline ownership.
///
/// # Errors
/// A listener cannot bind, the data directory cannot be made, the store is unreadable.
pub async fn start(config: McConfig) -> anyhow::Result<RunningMc> {
    let section = &config.mc;
    std::fs::create_dir_all(section.data_dir.join("streams"))
        .with_context(|| format!("creating data_dir {}", section.data_dir.display()))?;
    let (shutdown, shutdown_rx) = watch::channel(false);
    let (mc, admin_token, node_token) = open_store(&config, shutdown_rx.clone()).await?;
    apply_presets(&mc, &config.meetings).await?;

    let metrics = Metrics::new();
    let identity = NodeIdentity {
        name: section.name.clone(),
        hostname: None,
    };
    let state = AppState::new(identity, Arc::clone(&metrics), admin_token);
    let mut tasks = JoinSet::new();
    // The main runtime's heartbeat: `/healthz` fails if meetings and pipelines hang.
    tasks.spawn(server::health::heartbeat::beat(
        "main",
        crate::node::until(shutdown_rx.clone()),
    ));
    let registry = PublishRegistry::new();
    let srt_stats: Arc<ingest::srt::SrtStats> = Arc::default();
    let context = StreamContext {
        state: state.clone(),
        metrics: Arc::clone(&metrics),
        registry: registry.clone(),
        srt: Arc::clone(&srt_stats),
        data_dir: section.data_dir.clone(),
        defaults: config.defaults,
        // The MC relays to nodes; recordings go to object storage from the nodes.
        uploader: None,
    };
    let http = serve_http(section, &mc, &state, &shutdown_rx, &mut tasks).await?;
    let publish = PublishListeners {
        registry,
        srt_stats,
        state: &state,
        shutdown: &shutdown_rx,
    };
    let (rtmp, rtmps, srt) = publish.start(section, &mut tasks).await?;

    let plan = MeetingPlan {
        presets: config.meetings.clone(),
        ladder: section.ladder.clone(),
        peers: section.peers.clone(),
        node_token,
    };
    if !section.peers.is_empty() {
        tasks.spawn(::mc::ownership::run(
            mc.clone(),
            state.clone(),
            section.name.clone(),
            section.peers.len(),
            shutdown_rx.clone(),
        ));
    }
    tasks.spawn(mc.clone().keep_session_keys(shutdown_rx.clone()));
    if let Some(recordings) = &config.recordings {
        // The meetings' recordings past their retention, closed meetings' included.
        let keep_ms = recordings
            .depth
            .map(|d| i64::try_from(d.0).unwrap_or(i64::MAX));
        tasks.spawn(::mc::recordings::keep_retention(
            mc.clone(),
            keep_ms,
            shutdown_rx.clone(),
        ));
    }
    tasks.spawn(follow_meetings(
        MeetingStreams::new(context),
        mc.subscribe(),
        plan,
        shutdown_rx,
    ));
    tracing::info!(mc = %section.name, %http, ?rtmp, ?srt, meetings = mc.meetings().len(), "mc started");
    Ok(RunningMc {
        http,
        rtmp,
        rtmps,
        srt,
        health: state.health().clone(),
        meetings: mc,
        shutdown,
        tasks,
    })
}

/// Opens the meeting store (the local file, or the etcd cluster) with the MC's admin
/// and node tokens (resolved as a node resolves its own) and its viewer-token keys.
async fn open_store(
    config: &McConfig,
    shutdown: watch::Receiver<bool>,
) -> anyhow::Result<(McState, Option<String>, Option<String>)> {
    let section = &config.mc;
    let min_client_version = match &section.min_client_version {
        Some(v) => Some(v.parse().context("mc.min_client_version")?),
        None => None,
    };
    let (admin_token, token_source) = crate::admin_token::resolve(
        section.admin_token.as_deref(),
        &[section.http],
        section.trust_loopback,
        &section.data_dir,
    )?;
    crate::admin_token::log_source("mc", &token_source);
    // Nodes sync and pull private relays with their own key: an MC off loopback never
    // takes anonymous viewer reports.
    let (node_token, node_token_source) = crate::admin_token::resolve_node_token(
        section.node_token.as_deref(),
        &[section.http],
        section.trust_loopback,
        &section.data_dir,
    )?;
    crate::admin_token::log_node_token_source(&node_token_source);
    let etcd = (!section.etcd.is_empty()).then(|| ::mc::EtcdSettings {
        endpoints: section.etcd.clone(),
        prefix: section.etcd_prefix.clone(),
        timeout: Duration::from_secs(2),
    });
    let mc = McState::connect(
        McSettings {
            store_path: section.data_dir.join("meetings.json"),
            etcd,
            admin_token: admin_token.clone(),
            node_token: node_token.clone(),
            min_client_version,
            viewer_report_ttl: Duration::from_secs_f64(section.viewer_report_ttl),
            ladder: section
                .ladder
                .as_ref()
                .map(server::stream::ladder::LadderSettings::names)
                .unwrap_or_default(),
            without_ladder: config
                .meetings
                .iter()
                .filter(|m| !m.ladder)
                .map(|m| m.id.clone())
                .collect(),
            viewer_keys: section
                .viewer_keys
                .iter()
                .map(|k| ott::ViewerKey::from_base64url(&k.kid, &k.public))
                .collect::<Result<_, _>>()
                .map_err(|e| anyhow::anyhow!("mc.viewer_keys: {e}"))?,
            recordings: config
                .recordings
                .as_ref()
                .map(crate::node::open_recordings_store)
                .transpose()?,
            minter: Some(Arc::new(
                ::mc::minter::Minter::load_or_create(&section.data_dir)
                    .context("the mc's viewer-token key")?,
            )),
        },
        shutdown,
    )
    .await
    .context("opening the meeting store")?;
    Ok((mc, admin_token, node_token))
}

/// Binds the MC's HTTP listener and serves its API and relays under a node's caps
/// and deadlines; returns the bound address.
async fn serve_http(
    section: &config::McSection,
    mc: &McState,
    state: &AppState,
    shutdown: &watch::Receiver<bool>,
    tasks: &mut JoinSet<()>,
) -> anyhow::Result<SocketAddr> {
    let app = ::mc::router(mc.clone(), state.clone());
    let listener = TcpListener::bind(section.http)
        .await
        .with_context(|| format!("binding mc.http {}", section.http))?;
    let http = listener.local_addr()?;
    // The same caps and deadlines as a node's: one host cannot take every descriptor
    // (syncs, relays, etcd and RTMP need theirs) nor hold a body open.
    let limits = crate::descriptors::http_limits(
        "mc",
        section.max_connections,
        section.max_connections_per_client,
        Duration::from_secs_f64(section.body_timeout),
    );
    limits.register_metrics(state.metrics());
    tasks.spawn(server::http::serve::run_with_lane(
        listener,
        app,
        None,
        crate::node::until(shutdown.clone()),
        None,
        Some(limits),
    ));
    Ok(http)
}

/// What the MC's publish listeners share: the registry that holds exactly the live
/// meetings, each with its stream key (a publish to a meeting that is not live, or
/// with another key, is refused), and the SRT counters.
struct PublishListeners<'a> {
    registry: PublishRegistry,
    srt_stats: Arc<ingest::srt::SrtStats>,
    state: &'a AppState,
    shutdown: &'a watch::Receiver<bool>,
}

/// The RTMP, RTMPS and SRT addresses bound, each when configured.
type Bound = (Option<SocketAddr>, Option<SocketAddr>, Option<SocketAddr>);

impl PublishListeners<'_> {
    /// Starts the configured RTMP, RTMPS and SRT listeners.
    async fn start(
        self,
        section: &config::McSection,
        tasks: &mut JoinSet<()>,
    ) -> anyhow::Result<Bound> {
        let (registry, state, shutdown) = (self.registry, self.state, self.shutdown);
        let rtmp = match section.rtmp {
            Some(addr) => Some(
                crate::node::start_rtmp(
                    addr,
                    "mc.rtmp",
                    &section.rtmp_limits,
                    Arc::new(registry.clone()),
                    state,
                    shutdown,
                    tasks,
                )
                .await?,
            ),
            None => None,
        };
        let srt = match section.srt {
            Some(addr) => {
                // The listener's counters and its publishers' links as brdyun_srt_*.
                server::link_view::register_srt(state.metrics(), Arc::clone(&self.srt_stats));
                let bound = crate::node::srt::start_srt(
                    crate::node::srt::SrtListener {
                        addr,
                        key: "mc.srt",
                        options: &section.srt_options,
                        limits: &section.rtmp_limits,
                    },
                    Arc::new(registry.clone()),
                    Arc::clone(&self.srt_stats),
                    shutdown,
                    tasks,
                )?;
                state.ingest_listeners().add_srt(bound, self.srt_stats);
                Some(bound)
            }
            None => None,
        };
        let rtmps = match (section.rtmps, &section.rtmps_cert, &section.rtmps_key) {
            (Some(addr), Some(cert), Some(tls_key)) => Some(
                crate::node::rtmps::start_rtmps(
                    crate::node::rtmps::RtmpsListener {
                        addr,
                        key: "mc.rtmps",
                        cert: cert.clone(),
                        tls_key: tls_key.clone(),
                        names: section.hostname.clone().into_iter().collect(),
                        settings: &section.rtmp_limits,
                    },
                    Arc::new(registry),
                    state,
                    shutdown,
                    tasks,
                )
                .await?,
            ),
            _ => None,
        };
        Ok((rtmp, rtmps, srt))
    }
}

/// Creates the preset meetings that do not exist yet, and starts those marked `start`
/// that are still in `created`.
async fn apply_presets(mc: &McState, presets: &[PresetMeeting]) -> anyhow::Result<()> {
    let now = server::clock::unix_ms();
    for preset in presets {
        let id = MeetingId::parse(&preset.id).context("preset meeting id")?;
        let exists = mc.meetings().get(&id).is_ok();
        if !exists {
            let request = NewMeeting {
                id: preset.id.clone(),
                title: preset.title.clone(),
                viewer_limit: preset.viewer_limit,
                private: preset.private,
                recording_depth_days: preset.recording_depth_days,
                languages: preset.languages.clone(),
            };
            let secrets = MeetingSecrets {
                stream_key: ::mc::store::random_secret(),
                host_token: ::mc::store::random_secret(),
            };
            let created = mc
                .change(&id, |m| {
                    m.create(id.clone(), &request, secrets.clone(), now)
                        .map(|_| ())
                })
                .await;
            match created {
                // Another MC of the pair made it first: the same preset.
                Err(::mc::store::ChangeError::Meeting(meeting::MeetingError::Exists)) => {}
                other => other.with_context(|| format!("creating preset meeting {id}"))?,
            }
        }
        let created = mc
            .meetings()
            .get(&id)
            .is_ok_and(|m| m.state == MeetingState::Created);
        if preset.start && created {
            mc.change(&id, |m| m.apply(&id, Action::Start, now).map(|_| ()))
                .await
                .with_context(|| format!("starting preset meeting {id}"))?;
        }
    }
    Ok(())
}

/// The publish slot of a meeting's backup feed: publishers of it publish to
/// `<meeting>@backup` (RTMP, RTMPS and SRT alike).
pub const BACKUP_SLOT: &str = "backup";

/// What the MC's meeting streams are made of besides the meeting: the presets' inputs
/// and the ladder.
struct MeetingPlan {
    presets: Vec<PresetMeeting>,
    ladder: Option<server::stream::ladder::LadderSettings>,
    /// The other MCs of the group: their relays come first (see
    /// [`::mc::ownership`]).
    peers: Vec<String>,
    /// The token MCs of a group pull each other's private relays with.
    node_token: Option<String>,
}

/// The stream of a live meeting on the MC: the other MCs' relays (an MC of a group
/// follows the meeting's timeline owner), RTMP publish with its key, then the preset's
/// inputs; encoded into the MC's ladder unless the preset turns it off.
fn meeting_stream(meeting: &meeting::Meeting, plan: &MeetingPlan) -> anyhow::Result<StreamConfig> {
    let mut inputs: Vec<String> = plan
        .peers
        .iter()
        .map(|peer| {
            format!(
                "{}/{}/mpegts?{}",
                peer.trim_end_matches('/'),
                meeting.id,
                ::mc::timeline::PEER_QUERY
            )
        })
        .collect();
    // A platform's primary feed publishes to `<meeting>`, its backup feed (the same
    // encoder's second output, or a second encoder) to `<meeting>@backup`; the backup
    // runs as a hot standby and takes over when the primary goes silent.
    inputs.push(format!("publish://?key={}", meeting.stream_key));
    inputs.push(format!(
        "publish://?key={}&slot={BACKUP_SLOT}",
        meeting.stream_key
    ));
    let preset = plan.presets.iter().find(|p| p.id == meeting.id.as_str());
    if let Some(preset) = preset {
        inputs.extend(preset.inputs.iter().cloned());
    }
    let mut stream = config::stream_from(meeting.id.as_str(), inputs, &toml::Table::new())?;
    if preset.is_none_or(|p| p.ladder) {
        stream.ladder = plan.ladder.clone().map(crate::config::LadderPlan::Encode);
    }
    stream.cc_language = preset.and_then(|p| p.cc_language.clone());
    stream.languages.clone_from(&meeting.languages);
    if !plan.peers.is_empty() {
        stream.relay_token.clone_from(&plan.node_token);
    }
    Ok(stream)
}

/// Starts a stream for each live meeting and stops it when the meeting leaves `live`.
async fn follow_meetings(
    mut streams: MeetingStreams,
    mut changes: watch::Receiver<Arc<Meetings>>,
    plan: MeetingPlan,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let meetings = Arc::clone(&changes.borrow_and_update());
        for id in streams.ids() {
            let live = MeetingId::parse(&id)
                .ok()
                .and_then(|id| {
                    meetings
                        .get(&id)
                        .ok()
                        .map(|m| m.state == MeetingState::Live)
                })
                .unwrap_or(false);
            if !live {
                streams.stop(&id);
            }
        }
        for meeting in meetings.iter().filter(|m| m.state == MeetingState::Live) {
            let started = meeting_stream(meeting, &plan).and_then(|s| streams.ensure(&s));
            if let Err(error) = started {
                tracing::error!(meeting = %meeting.id, error = %format!("{error:#}"), "cannot start meeting stream");
            }
        }
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { break },
            _ = shutdown.wait_for(|s| *s) => break,
        }
    }
    streams.stop_all();
}
