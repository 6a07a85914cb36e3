//! Starting one stream on a node: its input supervisor, its pipeline (segmenter) and its
//! live channel, registered with the node's routes and metrics. Used at start for the
//! configured streams, and by anything that adds streams while the node runs.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use ingest::supervisor::{self, InputSpec, PublishRegistry, SupervisorConfig};
use server::metrics::Metrics;
use server::stream::package::Package;
use server::stream::pipeline::{self, PipelineSettings};
use server::stream::recorder::{Recorder, RecorderSettings};
use server::AppState;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use super::looped_clip::{LoopedClip, DEMO_CLIP};
use crate::config::{LadderPlan, StreamConfig, StreamDefaults, StreamSettings};
use ingest::input_url::InputUrl;

/// What a node shares with every stream it starts.
#[derive(Clone)]
pub struct StreamContext {
    /// The node's routes see the stream through this.
    pub state: AppState,
    /// The node's metrics registry.
    pub metrics: Arc<Metrics>,
    /// Where RTMP publishers find the stream.
    pub registry: PublishRegistry,
    /// The SRT listener's statistics: the links of the streams' SRT publishers, shown
    /// beside their inputs.
    pub srt: Arc<ingest::srt::SrtStats>,
    /// The node's data directory (timeline counters live under `streams/`).
    pub data_dir: PathBuf,
    /// Defaults for settings a stream leaves out.
    pub defaults: StreamDefaults,
    /// The recordings uploader every archive registers with, when the node has one.
    pub uploader: Option<Arc<recordings::Uploader>>,
}

/// Opens (and repairs) the archive `data_dir/archive/{names…}`, starts its recorder,
/// registers its metrics, and hands it to the recordings uploader when the node has one
/// (its key prefix in the bucket: the same names, then the protocol).
///
/// # Errors
/// A name is not a plain name, or the archive cannot be opened.
fn start_recorder(
    context: &StreamContext,
    names: &[&str],
    label: &str,
    retention: dvr::Retention,
    settings: &StreamSettings,
) -> anyhow::Result<Arc<Recorder>> {
    let (file_span_ms, remote_depth_ms) = (settings.dvr_file_span_ms, settings.dvr_remote_depth_ms);
    let mut path = vec!["archive"];
    path.extend_from_slice(names);
    // The one way an archive path is made from names: plain names only.
    let dir = dvr::store::archive_dir(&context.data_dir, &path)
        .with_context(|| format!("stream {label}: its archive"))?;
    let settings = RecorderSettings {
        file_span_ms,
        ..RecorderSettings::new(dir, retention)
    };
    let recorder = Recorder::start(label, settings)
        .with_context(|| format!("stream {label}: opening its archive"))?;
    recorder.register_metrics(&context.metrics);
    if let Some(uploader) = &context.uploader {
        let mut names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        names.push(dvr::Protocol::Ts.dir_name().to_owned());
        uploader.register(recordings::ArchiveSource {
            names,
            reader: recorder.reader().clone(),
            hold: recorder.upload_hold(),
            remote_depth_ms,
        });
    }
    Ok(recorder)
}

/// Records each language the stream cuts from its inputs beside its source, on the
/// same timeline (`archive/{stream}/languages/audio-{code}`), as a pulled language is.
///
/// # Errors
/// An archive cannot be opened.
fn record_languages(
    context: &StreamContext,
    channel: &Package,
    retention: dvr::Retention,
    settings: &StreamSettings,
) -> anyhow::Result<()> {
    let Some((_, others)) = channel.languages() else {
        return Ok(());
    };
    for (language, rendition) in others {
        let name = language.rendition_name();
        let label = format!("{}/{name}", channel.name());
        let names = [channel.name(), "languages", name.as_str()];
        let recorder = start_recorder(context, &names, &label, retention, settings)?;
        rendition.set_archive(recorder);
    }
    Ok(())
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
    let ladder_names = stream
        .ladder
        .as_ref()
        .map(LadderPlan::names)
        .unwrap_or_default();
    let channel = Arc::new(Package::with_languages(
        stream.name.clone(),
        settings.window_segments,
        packaging::render::renderer(settings.segment_duration_ms),
        &ladder_names,
        &crate::config::audio_languages(&stream.languages),
    ));
    if let Some(language) = &stream.cc_language {
        channel.captions.set_cc_language(language.clone());
    }
    start_llhls(context, channel.main(), &stream.name, &settings);
    let (events_tx, events_rx) = mpsc::channel(4096);
    let mut specs = Vec::with_capacity(stream.inputs.len());
    for url in &stream.inputs {
        let parsed = InputUrl::parse(url)?;
        specs.push(parsed.into_spec(|| builtin_source(tasks, &stream.name)));
    }
    // Each publish input's name (`<stream>`, `<stream>@<slot>`): its SRT link's key.
    let publish_names: Vec<Option<String>> = specs
        .iter()
        .map(|spec| match spec {
            InputSpec::Rtmp { slot, .. } => {
                Some(supervisor::publish_name(&stream.name, slot.as_deref()))
            }
            _ => None,
        })
        .collect();
    let feed_key = super::interpreters::feed_key(&specs);
    let mut supervisor_config = SupervisorConfig::new(stream.name.clone(), specs);
    supervisor_config.source_timeout = Duration::from_millis(settings.source_timeout_ms);
    supervisor_config.publish_timeout = Some(Duration::from_millis(settings.publish_timeout_ms));
    supervisor_config
        .http_bearer
        .clone_from(&stream.relay_token);
    // Languages are cut from the inputs' audio streams here, unless pulled from an MC.
    let cuts_languages = stream.languages.len() > 1 && stream.language_pulls.is_empty();
    supervisor_config.alternate_audio = cuts_languages;
    let language_sources = if cuts_languages {
        crate::config::language_sources(&stream.languages)
    } else {
        Vec::new()
    };
    let interpreters = super::interpreters::start(
        &context.registry,
        &stream.name,
        (&language_sources, feed_key),
        (
            Duration::from_millis(settings.publish_timeout_ms),
            &events_tx,
        ),
        &stop,
        tasks,
    )?;
    channel.set_interpreters(interpreters);
    let handle = supervisor::spawn(
        supervisor_config,
        Some(&context.registry),
        events_tx,
        stop.clone(),
    )
    .with_context(|| format!("stream {}", stream.name))?;
    let status = handle.status();
    channel.set_inputs(status.clone());
    let counters = handle.counters().to_vec();
    let srt = Arc::clone(&context.srt);
    let status_source: server::state::StatusSource = Arc::new(move || {
        let mut inputs = server::ingest_view::inputs_json(&status.borrow(), &counters);
        server::link_view::add_links(&mut inputs, &publish_names, &srt);
        inputs
    });
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
    server::stream::package::register_metrics(&channel, metrics);
    server::ingest_view::register_inputs(
        metrics,
        &stream.name,
        handle.counters().to_vec(),
        Some(handle.status()),
    );
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
        languages: language_sources,
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
            let recorder =
                start_recorder(context, &[&stream.name], &stream.name, retention, &settings)?;
            channel.set_archive(Arc::clone(&recorder));
            if cuts_languages {
                record_languages(context, &channel, retention, &settings)?;
            }
            Some(recorder)
        }
        None => None,
    };
    match &stream.ladder {
        Some(LadderPlan::Encode(ladder))
            if ladder.from == server::stream::ladder::RungSource::Publisher =>
        {
            start_published_ladder(context, &channel, stream, ladder, &stop, tasks)?;
        }
        Some(LadderPlan::Encode(ladder)) => {
            let rungs = ladder
                .validate()
                .map_err(|e| anyhow::anyhow!("stream {}: ladder {e}", stream.name))?;
            let (status, task) = server::stream::ladder::encoder::start(
                Arc::clone(&channel),
                ladder.clone(),
                rungs,
                stop.clone(),
            )
            .map_err(|e| anyhow::anyhow!("stream {}: {e}", stream.name))?;
            channel.set_ladder(Arc::clone(&status));
            let label = server::metrics::label(&stream.name);
            metrics.register(Box::new(move |out: &mut String| {
                status.render_metrics(&label, out);
            }));
            tasks.spawn(task);
        }
        Some(LadderPlan::Pull { inputs, .. }) => {
            for (rung, urls) in inputs {
                let pull = RungPull {
                    rung,
                    urls,
                    bearer: stream.relay_token.as_deref(),
                    kind: PulledKind::Rung,
                };
                start_rung(context, &channel, pull, &settings, &stop, tasks)?;
            }
        }
        None => {}
    }
    // A meeting's languages come cut from the MC: each is pulled as a rung is.
    for (rendition, urls) in &stream.language_pulls {
        let pull = RungPull {
            rung: rendition,
            urls,
            bearer: stream.relay_token.as_deref(),
            kind: PulledKind::Language,
        };
        start_rung(context, &channel, pull, &settings, &stop, tasks)?;
    }
    let mut stop = stop;
    // Every line the pipeline logs (segmenter, packagers) names its stream.
    let span = tracing::warn_span!("pipeline", stream = %stream.name);
    tasks.spawn(tracing::Instrument::instrument(
        async move {
            tokio::select! {
                () = pipeline::run_recording(channel, events_rx, pipeline_settings, recorder) => {}
                _ = stop.wait_for(|s| *s) => {}
            }
        },
        span,
    ));
    Ok(())
}

/// Starts the rungs a publisher sends itself (`[mc.ladder] from = "publisher"`): an RTMP
/// publish point per rung, `live/{stream}@{rung}` with the stream's own key, whose
/// frames are cut on the source's segments ([`server::stream::ladder::published`]).
fn start_published_ladder(
    context: &StreamContext,
    channel: &Arc<Package>,
    stream: &StreamConfig,
    ladder: &server::stream::ladder::LadderSettings,
    stop: &watch::Receiver<bool>,
    tasks: &mut JoinSet<()>,
) -> anyhow::Result<()> {
    let names = ladder
        .published_rungs()
        .map_err(|e| anyhow::anyhow!("stream {}: ladder {e}", stream.name))?;
    let key = stream
        .inputs
        .iter()
        .find_map(|url| match InputUrl::parse(url) {
            Ok(InputUrl::Publish { key, slot: None }) => Some(key),
            _ => None,
        })
        .ok_or_else(|| {
            anyhow::anyhow!(
                "stream {}: a published ladder needs the stream's RTMP publish input",
                stream.name
            )
        })?;
    let settings = stream.settings(&context.defaults);
    let mut rungs = Vec::with_capacity(names.len());
    for name in names {
        let publish = server::stream::ladder::published_stream_name(&stream.name, &name);
        let specs = vec![InputSpec::Rtmp {
            key: key.clone(),
            slot: None,
        }];
        let registry = Some(&context.registry);
        let inputs = Inputs {
            specs,
            registry,
            bearer: None,
        };
        let events_rx = start_inputs(context, &publish, inputs, &settings, stop, tasks)?;
        rungs.push(server::stream::ladder::published::PublishedRung {
            name,
            events: events_rx,
        });
    }
    let (status, cutters) = server::stream::ladder::published::start(channel, rungs, stop)
        .map_err(|e| anyhow::anyhow!("stream {}: {e}", stream.name))?;
    channel.set_ladder(Arc::clone(&status));
    let label = server::metrics::label(&stream.name);
    context.metrics.register(Box::new(move |out: &mut String| {
        status.render_metrics(&label, out);
    }));
    for cutter in cutters {
        tasks.spawn(cutter);
    }
    Ok(())
}

/// One rung to pull: its name, the MC's relays of it, the node token they take.
struct RungPull<'a> {
    rung: &'a str,
    urls: &'a [String],
    bearer: Option<&'a str>,
    /// What the rendition is: a rung of the ladder or an audio language.
    kind: PulledKind,
}

/// A pulled rendition: a rung (LL-HLS of its own, archived under `rungs/`) or an
/// audio language (archived under `languages/`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum PulledKind {
    Rung,
    Language,
}

/// Starts the pull of one ladder rung of a meeting stream: its inputs (the MC's relays
/// of the rung) and a pipeline that follows their timeline markers into the rung's
/// rendition, on the source's timeline.
fn start_rung(
    context: &StreamContext,
    channel: &Arc<Package>,
    pull: RungPull<'_>,
    settings: &crate::config::StreamSettings,
    stop: &watch::Receiver<bool>,
    tasks: &mut JoinSet<()>,
) -> anyhow::Result<()> {
    let RungPull {
        rung,
        urls,
        bearer,
        kind,
    } = pull;
    let name = format!("{}/{rung}", channel.name());
    let Some(rendition) = channel.rendition(rung).map(Arc::clone) else {
        anyhow::bail!("stream {}: rung {rung} has no rendition", channel.name());
    };
    let mut specs = Vec::with_capacity(urls.len());
    for url in urls {
        specs.push(InputUrl::parse(url)?.into_spec(|| unreachable_builtin(&name)));
    }
    // Every rung has LL-HLS of its own, cut from its frames in step with its segments
    // (the LL-HLS master lists the ladder, each playlist reports its siblings).
    if kind == PulledKind::Rung {
        start_llhls(context, &rendition, &name, settings);
    }
    let inputs = Inputs {
        specs,
        registry: None,
        bearer,
    };
    let events_rx = start_inputs(context, &name, inputs, settings, stop, tasks)?;
    let pipeline_settings = PipelineSettings {
        languages: Vec::new(),
        publish_latency: Arc::default(),
        target_duration_ms: settings.segment_duration_ms,
        state_file: None,
    };
    // A recorded stream records every rung beside its source, on the same timeline, so
    // a catch-up viewer gets the ladder (`archive/{stream}/rungs/{rung}`); each language
    // alike (`archive/{stream}/languages/audio-{code}`).
    let recorder = match settings.dvr {
        Some(retention) => {
            let dir = match kind {
                PulledKind::Rung => "rungs",
                PulledKind::Language => "languages",
            };
            let names = [channel.name(), dir, rung];
            let recorder = start_recorder(context, &names, &name, retention, settings)?;
            rendition.set_archive(Arc::clone(&recorder));
            Some(recorder)
        }
        None => None,
    };
    let span = tracing::warn_span!("pipeline", stream = %channel.name(), rung = %rendition.name());
    let channel = Arc::clone(channel);
    let mut stop = stop.clone();
    tasks.spawn(tracing::Instrument::instrument(
        async move {
            tokio::select! {
                () = pipeline::run_rendition(channel, rendition, events_rx, pipeline_settings, recorder) => {}
                _ = stop.wait_for(|s| *s) => {}
            }
        },
        span,
    ));
    Ok(())
}

/// A rung's inputs: their specs, the RTMP publish registry when it is published, and
/// the bearer its HTTP inputs send (the node token, for an MC's relays).
struct Inputs<'a> {
    specs: Vec<InputSpec>,
    registry: Option<&'a PublishRegistry>,
    bearer: Option<&'a str>,
}

/// Starts the input supervisor of a rung (`name`: `stream/rung` for a pulled rung,
/// `stream@rung` for a published one, its RTMP publish point when `registry` is given)
/// and registers its input metrics; returns what its inputs deliver.
fn start_inputs(
    context: &StreamContext,
    name: &str,
    inputs: Inputs<'_>,
    settings: &crate::config::StreamSettings,
    stop: &watch::Receiver<bool>,
    tasks: &mut JoinSet<()>,
) -> anyhow::Result<mpsc::Receiver<ingest::IngestEvent>> {
    let (events_tx, events_rx) = mpsc::channel(4096);
    let mut config = SupervisorConfig::new(name.to_owned(), inputs.specs);
    config.source_timeout = Duration::from_millis(settings.source_timeout_ms);
    config.publish_timeout = Some(Duration::from_millis(settings.publish_timeout_ms));
    config.http_bearer = inputs.bearer.map(str::to_owned);
    let handle = supervisor::spawn(config, inputs.registry, events_tx, stop.clone())
        .with_context(|| format!("stream {name}"))?;
    server::ingest_view::register_inputs(
        &context.metrics,
        name,
        handle.counters().to_vec(),
        Some(handle.status()),
    );
    tasks.spawn(handle.join());
    Ok(events_rx)
}

/// Turns on LL-HLS for one rendition (`name`: the stream, or `stream/rung`, for its
/// metrics), before its pipeline starts.
fn start_llhls(
    context: &StreamContext,
    rendition: &server::stream::rendition::Rendition,
    name: &str,
    settings: &crate::config::StreamSettings,
) {
    let ll = Arc::new(server::stream::llhls::LlChannel::new(
        server::stream::llhls::LlSettings {
            part_ms: settings.part_duration_ms,
            hold_back_ms: settings.part_hold_back_ms,
            target_ms: settings.segment_duration_ms,
        },
    ));
    rendition.set_llhls(Arc::clone(&ll));
    server::stream::llhls::register_metrics(&ll, name, &context.metrics);
}

/// A rung is pulled over HTTP only: a built-in source there is a wiring error.
fn unreachable_builtin(name: &str) -> InputSpec {
    tracing::error!(
        stream = name,
        "a ladder rung cannot use the built-in source"
    );
    let (_tx, rx) = mpsc::channel(1);
    InputSpec::Channel {
        name: "builtin://none".into(),
        events: rx,
    }
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
