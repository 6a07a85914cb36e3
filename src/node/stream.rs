//! Starting one stream on a node: its input supervisor, its pipeline (segmenter) and its
//! live channel, registered with the node's routes and metrics. Used at start for the
//! configured streams, and by anything that adds streams while the node runs.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use ingest::supervisor::{self, InputSpec, PublishRegistry, SupervisorConfig};
use server::channel::Channel;
use server::metrics::Metrics;
use server::pipeline::{self, PipelineSettings};
use server::recorder::{Recorder, RecorderSettings};
use server::AppState;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use crate::config::{StreamConfig, StreamDefaults};
use crate::demo::source::{LoopedClip, DEMO_CLIP};
use crate::inputs::InputUrl;

/// What a node shares with every stream it starts.
#[derive(Clone)]
pub struct StreamContext {
    /// The node's routes see the stream through this.
    pub state: AppState,
    /// The node's metrics registry.
    pub metrics: Arc<Metrics>,
    /// Where RTMP publishers find the stream.
    pub registry: PublishRegistry,
    /// The node's data directory (timeline counters live under `streams/`).
    pub data_dir: PathBuf,
    /// Defaults for settings a stream leaves out.
    pub defaults: StreamDefaults,
}

/// Starts a stream. Its tasks go into `tasks` and stop when `stop` turns true.
///
/// # Errors
/// An input URL does not parse, or the inputs cannot run together (e.g. two RTMP inputs).
pub fn start_stream(
    context: &StreamContext,
    stream: &StreamConfig,
    stop: watch::Receiver<bool>,
    tasks: &mut JoinSet<()>,
) -> anyhow::Result<()> {
    let settings = stream.settings(&context.defaults);
    let channel = Arc::new(Channel::new(
        stream.name.clone(),
        settings.window_segments,
        server::render::renderer(settings.segment_duration_ms),
    ));
    let ll = Arc::new(server::llhls::LlChannel::new(server::llhls::LlSettings {
        part_ms: settings.part_duration_ms,
        hold_back_ms: settings.part_hold_back_ms,
        target_ms: settings.segment_duration_ms,
    }));
    channel.set_llhls(Arc::clone(&ll));
    server::llhls::register_metrics(&ll, &stream.name, &context.metrics);
    let (events_tx, events_rx) = mpsc::channel(4096);
    let mut specs = Vec::with_capacity(stream.inputs.len());
    for url in &stream.inputs {
        let parsed = InputUrl::parse(url)?;
        specs.push(parsed.into_spec(|| builtin_source(tasks, &stream.name)));
    }
    let mut supervisor_config = SupervisorConfig::new(stream.name.clone(), specs);
    supervisor_config.source_timeout = Duration::from_millis(settings.source_timeout_ms);
    let handle = supervisor::spawn(
        supervisor_config,
        Some(&context.registry),
        events_tx,
        stop.clone(),
    )
    .with_context(|| format!("stream {}", stream.name))?;
    let status = handle.status();
    let status_source: server::state::StatusSource =
        Arc::new(move || server::ingest_view::inputs_json(&status.borrow()));
    if let Some(redundancy) = context.state.redundancy() {
        let membership = crate::ott::membership(
            &stream.name,
            stream.ott_backup,
            stream.backup_group.as_deref(),
        );
        redundancy.set_membership(&stream.name, membership);
    }
    context
        .state
        .add_stream(Arc::clone(&channel), Some(status_source));
    let metrics = &context.metrics;
    server::channel::register_metrics(&channel, metrics);
    server::ingest_view::register_inputs(metrics, &stream.name, handle.counters().to_vec());
    tasks.spawn(handle.join());
    metrics.describe(
        "brdyun_segment_publish_seconds",
        "histogram",
        "Time from the event that completes a segment to the segment being listed.",
    );
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
            context
                .data_dir
                .join("streams")
                .join(format!("{}.timeline.json", stream.name)),
        ),
    };
    let recorder = match settings.dvr {
        Some(retention) => {
            let dir = context.data_dir.join("archive").join(&stream.name);
            let recorder = Recorder::start(&stream.name, RecorderSettings::new(dir, retention))
                .with_context(|| format!("stream {}: opening its archive", stream.name))?;
            channel.set_archive(Arc::clone(&recorder));
            recorder.register_metrics(metrics);
            Some(recorder)
        }
        None => None,
    };
    let mut stop = stop;
    tasks.spawn(async move {
        tokio::select! {
            () = pipeline::run_recording(channel, events_rx, pipeline_settings, recorder) => {}
            _ = stop.wait_for(|s| *s) => {}
        }
    });
    Ok(())
}

/// Starts the built-in looped clip for a stream and returns it as an input. The clip is
/// demuxed once per process and shared by every stream that uses it.
fn builtin_source(tasks: &mut JoinSet<()>, stream: &str) -> InputSpec {
    static CLIP: std::sync::OnceLock<Result<LoopedClip, String>> = std::sync::OnceLock::new();
    let (tx, rx) = mpsc::channel(256);
    match CLIP.get_or_init(|| LoopedClip::from_ts(DEMO_CLIP).map_err(|e| e.to_string())) {
        Ok(clip) => {
            tasks.spawn(clip.clone().run(tx, server::clock::unix_ms()));
        }
        Err(error) => tracing::error!(stream, %error, "built-in source unusable"),
    }
    InputSpec::Channel {
        name: "builtin://meeting".into(),
        events: rx,
    }
}
