//! Wiring one delivery node: listeners, RTMP, and per stream its input supervisor,
//! pipeline (segmenter) and live channel.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use ingest::supervisor::{self, InputSpec, PublishRegistry, SupervisorConfig};
use server::channel::Channel;
use server::metrics::Metrics;
use server::pipeline::{self, PipelineSettings};
use server::{AppState, NodeIdentity};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use crate::config::Config;
use crate::demo::source::{LoopedClip, DEMO_CLIP};
use crate::inputs::InputUrl;

/// A node that is up: its bound addresses and a way to stop it.
pub struct RunningNode {
    /// Where HTTP is served.
    pub http: SocketAddr,
    /// Where RTMP publish is accepted, when configured.
    pub rtmp: Option<SocketAddr>,
    shutdown: watch::Sender<bool>,
    tasks: JoinSet<()>,
}

impl RunningNode {
    /// Stops every task and waits (bounded) for them to finish.
    pub async fn stop(mut self) {
        let _ = self.shutdown.send(true);
        let drain = async { while self.tasks.join_next().await.is_some() {} };
        if tokio::time::timeout(Duration::from_secs(6), drain)
            .await
            .is_err()
        {
            self.tasks.abort_all();
        }
    }
}

/// Runs a node until SIGINT/SIGTERM.
///
/// # Errors
/// The node could not start (a port is taken, a certificate cannot be read, …).
pub async fn run_until_signal(config: Config) -> anyhow::Result<()> {
    let node = start(config).await?;
    wait_for_signal().await;
    tracing::info!("stopping");
    node.stop().await;
    Ok(())
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
    let metrics = Metrics::new();
    let identity = NodeIdentity {
        name: node_config.name.clone(),
        hostname: node_config.hostname.clone(),
    };
    let shedder =
        Arc::new(server::shed::Shedder::new(&config.shedding).context("shedding config")?);
    let state = AppState::with_shedder(
        identity,
        Arc::clone(&metrics),
        node_config.admin_token.clone(),
        shedder,
    );
    let (shutdown, shutdown_rx) = watch::channel(false);
    let mut tasks = JoinSet::new();
    let registry = PublishRegistry::new();

    for stream in &config.streams {
        let settings = stream.settings(&config.defaults);
        let channel = Arc::new(Channel::new(
            stream.name.clone(),
            settings.window_segments,
            server::render::renderer(settings.segment_duration_ms),
        ));
        let (events_tx, events_rx) = mpsc::channel(4096);
        let mut specs = Vec::with_capacity(stream.inputs.len());
        for url in &stream.inputs {
            let parsed = InputUrl::parse(url)?;
            specs.push(parsed.into_spec(|| builtin_source(&mut tasks, &stream.name)));
        }
        let mut supervisor_config = SupervisorConfig::new(stream.name.clone(), specs);
        supervisor_config.source_timeout = Duration::from_millis(settings.source_timeout_ms);
        let handle = supervisor::spawn(
            supervisor_config,
            Some(&registry),
            events_tx,
            shutdown_rx.clone(),
        )
        .with_context(|| format!("stream {}", stream.name))?;
        let status = handle.status();
        let status_source: server::state::StatusSource =
            Arc::new(move || server::ingest_view::inputs_json(&status.borrow()));
        state.add_stream(Arc::clone(&channel), Some(status_source));
        server::channel::register_metrics(&channel, &metrics);
        server::ingest_view::register_inputs(&metrics, &stream.name, handle.counters().to_vec());
        tasks.spawn(handle.join());
        let publish_latency = Arc::new(server::metrics::Histogram::default());
        let latency = Arc::clone(&publish_latency);
        let stream_label = server::metrics::label(&stream.name);
        metrics.register(Box::new(move |out: &mut String| {
            latency.render(
                "brdyun_segment_publish_seconds",
                &format!("stream=\"{stream_label}\""),
                out,
            );
        }));
        let pipeline_settings = PipelineSettings {
            publish_latency,
            target_duration_ms: settings.segment_duration_ms,
            state_file: Some(
                node_config
                    .data_dir
                    .join("streams")
                    .join(format!("{}.timeline.json", stream.name)),
            ),
        };
        let mut stop = shutdown_rx.clone();
        tasks.spawn(async move {
            tokio::select! {
                () = pipeline::run(channel, events_rx, pipeline_settings) => {}
                _ = stop.wait_for(|s| *s) => {}
            }
        });
    }

    let app = server::router(state.clone());
    let http_listener = TcpListener::bind(node_config.http)
        .await
        .with_context(|| format!("binding node.http {}", node_config.http))?;
    let http = http_listener.local_addr()?;
    tasks.spawn(server::run(
        http_listener,
        app.clone(),
        None,
        until(shutdown_rx.clone()),
    ));

    let mut https = None;
    if let (Some(addr), Some(cert), Some(key)) = (
        node_config.https,
        &node_config.tls_cert,
        &node_config.tls_key,
    ) {
        let acceptor = server::serve::tls_acceptor(cert, key)?;
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding node.https {addr}"))?;
        https = Some(listener.local_addr()?);
        tasks.spawn(server::run(
            listener,
            app,
            Some(acceptor),
            until(shutdown_rx.clone()),
        ));
    }

    let mut rtmp = None;
    if let Some(addr) = node_config.rtmp {
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding node.rtmp {addr}"))?;
        rtmp = Some(listener.local_addr()?);
        let stats = Arc::new(ingest::rtmp::RtmpStats::default());
        server::ingest_view::register_rtmp(&metrics, Arc::clone(&stats));
        let authorizer: Arc<dyn ingest::publish::PublishAuthorizer> = Arc::new(registry.clone());
        tasks.spawn(ingest::rtmp::serve_with_stats(
            listener,
            authorizer,
            ingest::rtmp::RtmpLimits::default(),
            stats,
            until(shutdown_rx.clone()),
        ));
    }
    tracing::info!(node = %config.node.name, %http, ?https, ?rtmp, streams = config.streams.len(), "node started");
    // One machine-readable line for scripts and process tests (ports may be 0 in the config).
    println!(
        "listening http={http} https={} rtmp={}",
        https.map_or_else(|| "-".to_owned(), |a| a.to_string()),
        rtmp.map_or_else(|| "-".to_owned(), |a| a.to_string())
    );
    Ok(RunningNode {
        http,
        rtmp,
        shutdown,
        tasks,
    })
}

/// Resolves when the shutdown flag is raised (or its sender is gone).
async fn until(mut shutdown: watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|s| *s).await;
}

/// Starts the built-in looped clip for a stream and returns it as an input. The clip is
/// demuxed once per process and shared by every stream that uses it.
fn builtin_source(tasks: &mut JoinSet<()>, stream: &str) -> InputSpec {
    static CLIP: std::sync::OnceLock<Result<LoopedClip, String>> = std::sync::OnceLock::new();
    let (tx, rx) = mpsc::channel(256);
    match CLIP.get_or_init(|| LoopedClip::from_ts(DEMO_CLIP).map_err(|e| e.to_string())) {
        Ok(clip) => {
            tasks.spawn(clip.clone().run(tx, server::routes::admin::unix_ms()));
        }
        Err(error) => tracing::error!(stream, %error, "built-in source unusable"),
    }
    InputSpec::Channel {
        name: "builtin://meeting".into(),
        events: rx,
    }
}
