//! Wiring one delivery node: listeners, RTMP, and per stream its input supervisor,
//! pipeline (segmenter) and live channel (`stream`).

mod interpreters;
pub mod looped_clip;
pub mod mc_link;
pub mod meeting_streams;
mod recordings;

pub use recordings::open_store as open_recordings_store;
pub(crate) mod rtmps;
mod shutdown;
pub(crate) mod srt;
pub mod stream;
pub mod tls;

pub(crate) use shutdown::until;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use ingest::supervisor::PublishRegistry;
use server::metrics::Metrics;
use server::{AppState, NodeIdentity};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::config::Config;
use stream::StreamContext;

/// A node that is up: its bound addresses and a way to stop it.
pub struct RunningNode {
    /// Where HTTP is served.
    pub http: SocketAddr,
    /// Where HTTPS is served, when configured.
    pub https: Option<SocketAddr>,
    /// Where RTMP publish is accepted, when configured.
    pub rtmp: Option<SocketAddr>,
    /// Where gossip of the mesh domain is received, when the node has `[ott]`.
    pub gossip: Option<SocketAddr>,
    /// Where RTMPS publish is accepted, when configured.
    pub rtmps: Option<SocketAddr>,
    /// Where SRT publish is accepted (UDP), when configured.
    pub srt: Option<SocketAddr>,
    /// The node's health state (its shutdown flag is raised at SIGTERM).
    pub health: server::health::Health,
    shutdown: watch::Sender<bool>,
    tasks: JoinSet<()>,
}

impl RunningNode {
    /// The one machine-readable line scripts and process tests read the ports from
    /// (they may be 0 in the config), printed on stdout by `brdyun node`.
    pub fn listening_line(&self) -> String {
        format!(
            "listening http={} https={} rtmp={} gossip={} rtmps={} srt={}",
            self.http,
            or_dash(self.https),
            or_dash(self.rtmp),
            or_dash(self.gossip),
            or_dash(self.rtmps),
            or_dash(self.srt)
        )
    }

    /// Stops every task and waits (bounded) for them to finish.
    pub async fn stop(mut self) {
        crate::node::stop_tasks(&self.shutdown, &mut self.tasks).await;
    }
}

/// Raises the shutdown flag and waits (at most 6 s) for the tasks to finish, then
/// aborts the rest.
pub(crate) async fn stop_tasks(shutdown: &watch::Sender<bool>, tasks: &mut JoinSet<()>) {
    let _ = shutdown.send(true);
    let drain = async { while tasks.join_next().await.is_some() {} };
    if tokio::time::timeout(Duration::from_secs(6), drain)
        .await
        .is_err()
    {
        tasks.abort_all();
    }
}

/// Runs a node until SIGINT/SIGTERM.
///
/// # Errors
/// The node could not start (a port is taken, a certificate cannot be read, …).
pub async fn run_until_signal(config: Config) -> anyhow::Result<()> {
    let delay = Duration::from_secs_f64(config.node.shutdown_delay);
    let node = start(config).await?;
    println!("{}", node.listening_line());
    let service = crate::service::Service::ready(node.http);
    wait_for_signal().await;
    tracing::info!("stopping");
    service.stopping(&node.health, delay).await;
    node.stop().await;
    Ok(())
}

/// An address, or `-` for none (the `listening` line's fields).
pub fn or_dash(addr: Option<SocketAddr>) -> String {
    addr.map_or_else(|| "-".to_owned(), |a| a.to_string())
}

/// Waits for Ctrl-C or SIGTERM.
pub async fn wait_for_signal() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                    return;
                }
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

/// Starts a node from its config.
///
/// # Errors
/// A listener cannot bind, TLS files cannot be loaded, the data directory cannot be
/// created, or a stream's inputs are inconsistent.
pub async fn start(config: Config) -> anyhow::Result<RunningNode> {
    let node_config = &config.node;
    std::fs::create_dir_all(node_config.data_dir.join("streams"))
        .with_context(|| format!("creating data_dir {}", node_config.data_dir.display()))?;
    let (state, metrics, shedder) = node_state(&config)?;
    let (shutdown, shutdown_rx) = watch::channel(false);
    let mut tasks = JoinSet::new();
    start_loops(&config, &state, &shedder, &shutdown_rx, &mut tasks)?;
    let registry = PublishRegistry::new();
    let srt_stats: Arc<ingest::srt::SrtStats> = Arc::default();

    if !config.logins.is_empty() {
        state.set_logins(Arc::new(server::access::logins::Logins::new(
            config.logins.iter().map(|l| server::access::logins::Login {
                name: l.name.clone(),
                token: l.token.clone(),
                max_connections: l.max_connections,
            }),
        )));
    }
    // The OTT state exists before the streams, which register their group membership.
    let redundancy = config.ott.as_ref().map(|_| crate::ott::attach(&state));
    let uploader = match &config.recordings {
        Some(recordings) => Some(recordings::start(
            recordings,
            &node_config.name,
            &state,
            &shutdown_rx,
            &mut tasks,
        )?),
        None => None,
    };
    let context = StreamContext {
        uploader,
        state: state.clone(),
        metrics: Arc::clone(&metrics),
        registry: registry.clone(),
        srt: Arc::clone(&srt_stats),
        data_dir: node_config.data_dir.clone(),
        defaults: config.defaults,
    };
    for stream in &config.streams {
        stream::start_stream(&context, stream, shutdown_rx.clone(), &mut tasks)?;
    }
    if let Some(mc) = &config.mc {
        attach_mc(&context, mc, &node_config.name, &shutdown_rx, &mut tasks);
    }
    let served = serve_http(&config, &state, &metrics, &shutdown_rx, &mut tasks)?;
    let (http, https) = (served.http, served.https);
    let gossip = match (&config.ott, redundancy) {
        (Some(ott), Some(redundancy)) => Some(
            crate::ott::start(
                ott,
                node_config,
                http,
                https,
                crate::ott::OttRuntime {
                    state: state.clone(),
                    redundancy,
                    shedder: Arc::clone(&shedder),
                    certificate_mismatch: served.certificate_mismatch,
                },
                shutdown_rx.clone(),
                &mut tasks,
            )
            .await?,
        ),
        _ => None,
    };
    let (rtmp, rtmps, srt) = start_ingest(
        &config,
        &registry,
        &state,
        srt_stats,
        &shutdown_rx,
        &mut tasks,
    )
    .await?;
    tracing::info!(node = %config.node.name, %http, ?https, ?rtmp, ?rtmps, ?srt, streams = config.streams.len(), "node started");
    Ok(RunningNode {
        http,
        https,
        rtmp,
        gossip,
        rtmps,
        srt,
        health: state.health().clone(),
        shutdown,
        tasks,
    })
}

/// The node's state: its identity, metrics, shedder (from `[shedding]`) and admin
/// token (configured, or made and kept in the data directory).
fn node_state(
    config: &Config,
) -> anyhow::Result<(AppState, Arc<Metrics>, Arc<server::shed::Shedder>)> {
    let node_config = &config.node;
    let listeners: Vec<_> = std::iter::once(node_config.http)
        .chain(node_config.https)
        .collect();
    let (admin_token, token_source) = crate::admin_token::resolve(
        node_config.admin_token.as_deref(),
        &listeners,
        node_config.trust_loopback,
        &node_config.data_dir,
    )?;
    crate::admin_token::log_source("node", &token_source);
    if config.ott.is_some()
        && matches!(
            token_source,
            crate::admin_token::TokenSource::Created(_) | crate::admin_token::TokenSource::Kept(_)
        )
    {
        tracing::warn!(
            "this node is in a mesh domain with a token of its own: its peers cannot pull its \
             experiment reports; give every member the same admin_token"
        );
    }
    let metrics = Metrics::new();
    let identity = NodeIdentity {
        name: node_config.name.clone(),
        hostname: node_config.hostname.clone(),
    };
    let shedder =
        Arc::new(server::shed::Shedder::new(&config.shedding).context("shedding config")?);
    let state = AppState::builder(identity, Arc::clone(&metrics))
        .admin_token(admin_token)
        .shedder(Arc::clone(&shedder))
        .build();
    Ok((state, metrics, shedder))
}

/// The loops every node runs: its main runtime's heartbeat, the overload monitor and
/// the continuous experiments.
fn start_loops(
    config: &Config,
    state: &AppState,
    shedder: &Arc<server::shed::Shedder>,
    shutdown_rx: &watch::Receiver<bool>,
    tasks: &mut JoinSet<()>,
) -> anyhow::Result<()> {
    // The main runtime's heartbeat: `/healthz` fails if ingest and pipelines hang.
    tasks.spawn(server::health::heartbeat::beat(
        "main",
        until(shutdown_rx.clone()),
    ));
    // The overload monitor publishes the level the shedding layer reads (CPU of this
    // process, in-flight vs the adaptive limit, runtime queueing delay).
    tasks.spawn(server::shed::overload::run_monitor(
        Arc::clone(shedder),
        until(shutdown_rx.clone()),
    ));
    // Continuous shedding experiments (EXP-1, EXP-2): the configured definitions, a
    // 1 s tick, and in an OTT domain the peers' KPI reports.
    let experiments = shedder.experiments();
    experiments.set_segment_ms((config.defaults.segment_duration * 1000.0).round() as u64);
    experiments
        .set_definitions(config.experiments.clone(), server::clock::unix_ms_u64())
        .context("experiment config")?;
    tasks.spawn(server::experiment_pull::run(
        state.clone(),
        until(shutdown_rx.clone()),
    ));
    Ok(())
}

/// Puts the node behind its MC (`[mc]`): the meetings become streams, and their
/// viewers go through the meeting gate.
fn attach_mc(
    context: &StreamContext,
    mc: &crate::config::McLinkConfig,
    node_name: &str,
    shutdown_rx: &watch::Receiver<bool>,
    tasks: &mut JoinSet<()>,
) {
    let (state, metrics) = (&context.state, &context.metrics);
    // Meetings of the MC become streams; viewers of them go through the gate.
    let gate = Arc::new(server::access::gate::MeetingGate::new());
    if let Some(token) = &mc.token {
        gate.set_node_token(token.clone());
    }
    state.set_meeting_gate(Arc::clone(&gate));
    metrics.describe(
        "brdyun_meeting_refusals_total",
        "counter",
        "Viewers of meetings answered with a meeting code instead of the stream, by code.",
    );
    metrics.describe(
        "brdyun_meeting_viewers",
        "gauge",
        "Viewers of each meeting on this node, as reported to the MC (seen within the idle period).",
    );
    metrics.describe(
        "brdyun_mc_syncs_total",
        "counter",
        "Exchanges with the MC that answered (meetings and viewer counts synced).",
    );
    let for_metrics = Arc::clone(&gate);
    metrics.register(Box::new(move |out: &mut String| {
        for_metrics.render_metrics(out);
    }));
    tasks.spawn(mc_link::run(
        context.clone(),
        mc.clone(),
        node_name.to_owned(),
        gate,
        shutdown_rx.clone(),
    ));
}

/// Where the node serves HTTP(S), and whether its certificate names what it announces.
struct Served {
    http: SocketAddr,
    https: Option<SocketAddr>,
    certificate_mismatch: Arc<std::sync::atomic::AtomicBool>,
}

/// Serves the node's application over HTTP and, when configured, HTTPS.
fn serve_http(
    config: &Config,
    state: &AppState,
    metrics: &Arc<Metrics>,
    shutdown_rx: &watch::Receiver<bool>,
    tasks: &mut JoinSet<()>,
) -> anyhow::Result<Served> {
    let node_config = &config.node;
    let app = server::router(state.clone());
    // Connections opening with a CRITICAL request get a thread above the others
    // (`[shedding] priority_lane`, `lane_threads`; nice −10, one per core by default).
    let lane = server::http::lane::PriorityLane::start(
        app.clone(),
        std::sync::Arc::clone(state.shedder()),
        shutdown_rx.clone(),
    )
    .context("starting the priority lane")?;
    // HTTP(S) is served nginx-style: one thread per core, each with its own runtime and
    // its own SO_REUSEPORT listener; ingest and pipelines stay on this runtime. Plain
    // HTTP's threads are pinned beside the lane's, one per CPU, each connection accepted
    // on the CPU its SYN came in on (`[shedding] lane_pinned`).
    let threads = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
    let placement = lane.as_ref().and_then(|lane| lane.cpu_placement().cloned());
    // One set of connection caps for HTTP and HTTPS together.
    let limits = crate::descriptors::http_limits(
        "node",
        node_config.max_connections,
        node_config.max_connections_per_client,
        std::time::Duration::from_secs_f64(node_config.body_timeout),
    );
    limits.register_metrics(metrics);
    let http_listeners = match placement {
        Some(placement) => server::http::serve::bind_reuseport_placed(node_config.http, placement),
        None => server::http::serve::bind_reuseport(node_config.http, threads),
    }
    .with_context(|| format!("binding node.http {}", node_config.http))?;
    let http = http_listeners.local_addr();
    tasks.spawn(
        server::http::serve::serve_on_threads(
            http_listeners,
            app.clone(),
            None,
            shutdown_rx.clone(),
            lane,
            Some(std::sync::Arc::clone(state.shedder())),
            Some(std::sync::Arc::clone(&limits)),
        )
        .context("starting the http threads")?,
    );

    let mut https = None;
    let mut certificate_mismatch = Arc::new(std::sync::atomic::AtomicBool::new(false));
    if let (Some(addr), Some(cert), Some(key)) = (
        node_config.https,
        &node_config.tls_cert,
        &node_config.tls_key,
    ) {
        let names = tls::viewer_names(
            node_config.hostname.as_deref(),
            config.ott.as_ref().map_or(&[][..], |o| &o.announce[..]),
        );
        let node_tls = tls::NodeTls::load(cert, key, names)?;
        node_tls.reload_on_sighup(shutdown_rx.clone(), tasks);
        let acceptor = node_tls.store.acceptor()?;
        certificate_mismatch = Arc::clone(&node_tls.mismatch);
        let listeners = server::http::serve::bind_reuseport(addr, threads)
            .with_context(|| format!("binding node.https {addr}"))?;
        https = Some(listeners.local_addr());
        tasks.spawn(
            server::http::serve::serve_on_threads(
                listeners,
                app,
                Some(acceptor),
                shutdown_rx.clone(),
                None,
                Some(std::sync::Arc::clone(state.shedder())),
                Some(limits),
            )
            .context("starting the https threads")?,
        );
    }

    Ok(Served {
        http,
        https,
        certificate_mismatch,
    })
}

/// The node's RTMP, RTMPS and SRT listeners, when configured.
async fn start_ingest(
    config: &Config,
    registry: &PublishRegistry,
    state: &AppState,
    srt_stats: Arc<ingest::srt::SrtStats>,
    shutdown_rx: &watch::Receiver<bool>,
    tasks: &mut JoinSet<()>,
) -> anyhow::Result<(Option<SocketAddr>, Option<SocketAddr>, Option<SocketAddr>)> {
    let node_config = &config.node;
    let rtmp = match node_config.rtmp {
        Some(addr) => Some(
            start_rtmp(
                addr,
                "node.rtmp",
                &node_config.rtmp_limits,
                Arc::new(registry.clone()),
                state,
                shutdown_rx,
                tasks,
            )
            .await?,
        ),
        None => None,
    };
    let rtmps = match (node_config.rtmps, node_config.rtmps_files()) {
        (Some(addr), Some((cert, tls_key))) => Some(
            rtmps::start_rtmps(
                rtmps::RtmpsListener {
                    addr,
                    key: "node.rtmps",
                    cert,
                    tls_key,
                    names: node_config.hostname.clone().into_iter().collect(),
                    settings: &node_config.rtmp_limits,
                },
                Arc::new(registry.clone()),
                state,
                shutdown_rx,
                tasks,
            )
            .await?,
        ),
        _ => None,
    };
    if node_config.srt.is_some() {
        // The listener's counters and its publishers' links as brdyun_srt_*.
        server::link_view::register_srt(state.metrics(), Arc::clone(&srt_stats));
    }
    let srt = match node_config.srt {
        Some(addr) => Some(srt::start_srt(
            srt::SrtListener {
                addr,
                key: "node.srt",
                options: &node_config.srt_options,
                limits: &node_config.rtmp_limits,
            },
            Arc::new(registry.clone()),
            Arc::clone(&srt_stats),
            shutdown_rx,
            tasks,
        )?),
        None => None,
    };
    if let Some(addr) = srt {
        state.ingest_listeners().add_srt(addr, srt_stats);
    }
    Ok((rtmp, rtmps, srt))
}

/// Binds `addr` and accepts RTMP publishers there, each authorized by `authorizer`,
/// within the caps and deadlines of `settings`, with the server's counters in the
/// metrics and ingest listeners of `state`; returns the bound address.
///
/// # Errors
/// A setting out of range, or the address cannot be bound (`key` names the config
/// key in the message).
pub(crate) async fn start_rtmp(
    addr: SocketAddr,
    key: &str,
    settings: &crate::config::RtmpLimitsConfig,
    authorizer: Arc<dyn ingest::publish::PublishAuthorizer>,
    state: &AppState,
    shutdown: &watch::Receiver<bool>,
    tasks: &mut JoinSet<()>,
) -> anyhow::Result<SocketAddr> {
    let limits = settings.limits(&format!("{key}_limits"))?;
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {key} {addr}"))?;
    let bound = listener.local_addr()?;
    let stats = Arc::new(ingest::rtmp::RtmpStats::default());
    server::ingest_view::register_rtmp(state.metrics(), Arc::clone(&stats));
    state
        .ingest_listeners()
        .add_rtmp("rtmp", bound, Arc::clone(&stats));
    tasks.spawn(ingest::rtmp::serve_with_stats(
        listener,
        authorizer,
        limits,
        stats,
        until(shutdown.clone()),
    ));
    Ok(bound)
}
