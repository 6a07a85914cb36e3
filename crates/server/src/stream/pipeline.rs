//! The per-rendition pipeline: ingest events → segmenter → one rendition of a live
//! channel (the stream's muxed rendition, or a ladder rung a node pulls from its relay).
//!
//! The segmenter starts `Fresh` (this node may be the first to see the source) and adopts
//! an upstream brdyun's timeline as soon as a timeline marker arrives. The last media
//! sequence and discontinuity numbers are persisted after every segment, so after a
//! restart (even `kill -9`) the numbers continue forward and never go back, nor below
//! the archive's newest segment.
//!
//! What to do with each event is decided by the [`Cutter`] (no I/O, tested without a
//! runtime); this loop applies its steps: the LL-HLS parts cut in step with the
//! segmenter, the stream's captions written in the muxed rendition's segments, the live
//! relay log and the frame tap (a ladder encoder's input) fed, every published segment
//! handed to the DVR recorder without waiting for the disk, the input dropped while the
//! operator has paused it (OTT-OPS-2), and the source's timestamp faults counted.

use std::path::PathBuf;
use std::sync::Arc;

use ingest::IngestEvent;
use media::segmenter::{CaptionSource, Segment, Segmenter, SegmenterConfig, StartPoint};
use media::TimelineState;
use packaging::window::TrackSummary;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::clock::unix_ms;
use crate::metrics::Histogram;
use crate::stream::captions::Captioner;
use crate::stream::cutter::{Context, Cutter, LlInput, Step};
use crate::stream::package::{LiveSegment, Package};
use crate::stream::recorder::Recorder;
use crate::stream::rendition::Rendition;

/// How a stream's pipeline cuts and where it remembers its place.
#[derive(Debug, Clone)]
pub struct PipelineSettings {
    /// Target segment duration, milliseconds.
    pub target_duration_ms: u64,
    /// Where the timeline counters are persisted; `None` keeps nothing across restarts.
    pub state_file: Option<PathBuf>,
    /// Time from the event that completes a segment to the segment being listed.
    pub publish_latency: Arc<Histogram>,
    /// The source's other audio languages, cut beside the muxed rendition (each needs a
    /// rendition in the package, [`Package::with_languages`]).
    pub languages: Vec<crate::stream::languages::LanguageSource>,
}

/// The numbers that must never go backwards across a restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersistedTimeline {
    /// The last media sequence number published.
    pub msn: u64,
    /// Its discontinuity sequence number.
    pub discontinuity_seq: u64,
}

/// Runs until the event channel closes.
pub async fn run(
    channel: Arc<Package>,
    events: mpsc::Receiver<IngestEvent>,
    settings: PipelineSettings,
) {
    run_recording(channel, events, settings, None).await;
}

/// [`run`], handing every published segment to `recorder` as well (without waiting
/// for the disk). The numbering continues after the newer of the persisted counters and
/// the archive's newest segment, so the live MSN never reuses an archived one.
pub async fn run_recording(
    channel: Arc<Package>,
    events: mpsc::Receiver<IngestEvent>,
    settings: PipelineSettings,
    recorder: Option<Arc<Recorder>>,
) {
    let main = Arc::clone(channel.main());
    run_rendition(channel, main, events, settings, recorder).await;
}

/// [`run_recording`] into one rendition of the channel's package (a ladder rung that
/// a node pulls from its own relay, in step with the stream's timeline by its markers).
pub async fn run_rendition(
    channel: Arc<Package>,
    rendition: Arc<Rendition>,
    mut events: mpsc::Receiver<IngestEvent>,
    settings: PipelineSettings,
    recorder: Option<Arc<Recorder>>,
) {
    let persisted = match &settings.state_file {
        Some(path) => load(path).await,
        None => None,
    };
    let archived = recorder.as_ref().and_then(|r| r.newest());
    let persisted = match (persisted, archived) {
        (Some(p), Some((msn, discontinuity_seq))) if msn > p.msn => Some(PersistedTimeline {
            msn,
            discontinuity_seq: discontinuity_seq.max(p.discontinuity_seq),
        }),
        (None, Some((msn, discontinuity_seq))) => Some(PersistedTimeline {
            msn,
            discontinuity_seq,
        }),
        (p, _) => p,
    };
    let start = StartPoint::Fresh {
        // After a restart the next segment follows the last one, after a discontinuity.
        min_msn: persisted.map_or(0, |p| p.msn + 1),
        min_discontinuity_seq: persisted.map_or(0, |p| p.discontinuity_seq + 1),
    };
    let config = SegmenterConfig {
        target_duration_ms: u32::try_from(settings.target_duration_ms).unwrap_or(u32::MAX),
        ..SegmenterConfig::default()
    };
    // LL-HLS parts are cut from the frames in step with the segmenter (see `llhls`).
    let mut ll = rendition
        .llhls()
        .map(|c| crate::stream::llhls::Feed::new(Arc::clone(c)));
    let mut cutter = Cutter::new(Segmenter::new(config, start), ll.is_some());
    if rendition.name() == crate::stream::rendition::MAIN {
        cutter.set_languages(crate::stream::languages::LanguageCutters::new(
            &settings.languages,
        ));
    }
    // The stream's captions travel in its muxed rendition's segments, written in them by
    // the segmenter.
    if rendition.name() == crate::stream::rendition::MAIN {
        cutter.set_captions(Box::new(PackageCaptions {
            captioner: Captioner::new(channel.captions.cc_language()),
            package: Arc::clone(&channel),
        }));
    }
    let mut faults_logged: Option<std::time::Instant> = None;
    let started = std::time::Instant::now();
    let out = Out {
        channel: &channel,
        rendition: &rendition,
        state_file: settings.state_file.as_ref(),
        recorder: recorder.as_deref(),
        publish_latency: &settings.publish_latency,
    };
    while let Some(event) = events.recv().await {
        let received = std::time::Instant::now();
        let context = Context {
            paused: channel.input_paused(),
            relay_wanted: rendition.live_log().wanted(),
            arrived_ms: i64::try_from(received.duration_since(started).as_millis())
                .unwrap_or(i64::MAX),
        };
        let step = cutter.on_event(event, unix_ms(), context);
        if let Some(error) = &step.bad_marker {
            tracing::warn!(stream = %channel.name(), %error, "bad timeline marker ignored");
        }
        out.apply(step, ll.as_mut(), Some(received)).await;
        if rendition.name() == crate::stream::rendition::MAIN {
            note_timestamp_faults(&channel, cutter.stats(), &mut faults_logged);
        }
    }
    let step = cutter.finish();
    out.apply(step, ll.as_mut(), None).await;
}

/// Where a pipeline's steps go: the frame tap, the LL-HLS packager, the live relay,
/// the timeline counters on disk, the archive and the window.
struct Out<'a> {
    channel: &'a Package,
    rendition: &'a Rendition,
    state_file: Option<&'a PathBuf>,
    recorder: Option<&'a Recorder>,
    publish_latency: &'a Histogram,
}

impl Out<'_> {
    /// Applies one step in its order (see [`Step`]), timing each segment's publication
    /// from `received` (when the event that finished it arrived).
    async fn apply(
        &self,
        step: Step,
        mut ll: Option<&mut crate::stream::llhls::Feed>,
        received: Option<std::time::Instant>,
    ) {
        if let Some(frame) = &step.tap {
            self.rendition.tap(frame);
        }
        if let Some(feed) = ll.as_mut() {
            for input in step.ll {
                match input {
                    LlInput::Frame(frame, before, after) => feed.frame(frame, before, after),
                    LlInput::Marker(payload) => feed.marker(&payload),
                    LlInput::Discontinuity => feed.discontinuity(),
                }
            }
        }
        // What this step placed goes out before the close of any segment it finished.
        self.rendition.live_log().placed(step.placed);
        let tracks = step.tracks.unwrap_or_default();
        for segment in step.finished {
            publish(
                self.channel,
                self.rendition,
                segment,
                &tracks,
                self.state_file,
                self.recorder,
                ll.as_deref_mut(),
            )
            .await;
            if let Some(received) = received {
                self.publish_latency.observe(received.elapsed());
            }
        }
        // A language's segment follows the source segment whose span it covers, and is
        // recorded beside it when the stream is.
        for done in step.languages {
            if let Some(rendition) = self.channel.language_rendition(done.language) {
                let segment = LiveSegment::from(done.cut.segment);
                if let Some(recorder) = rendition.archive() {
                    recorder.record(&segment);
                }
                self.channel.push_to(rendition, segment, done.tracks, None);
            }
        }
    }
}

/// A package's [`Captioner`] as its muxed rendition's segmenter asks for it, with the
/// package's caption inbox and counters.
#[derive(Debug)]
struct PackageCaptions {
    captioner: Captioner,
    package: Arc<Package>,
}

impl CaptionSource for PackageCaptions {
    fn frame(&mut self, frame: &media::Frame, state: Option<TimelineState>, following: bool) {
        let package = &self.package;
        self.captioner.frame(
            frame,
            state,
            following,
            &package.captions,
            &package.caption_counters,
        );
    }

    fn upstream(&mut self, block: &bytes::Bytes) {
        self.captioner
            .upstream_block(block, &self.package.caption_counters);
    }

    fn block_for(
        &mut self,
        marker: &media::TimelineMarker,
        following: bool,
    ) -> Option<media::captions::CaptionBlock> {
        self.captioner.block_for(marker, following)
    }
}

/// How often a stream's timestamp faults are logged at most.
const FAULT_LOG_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);

/// Publishes the source segmenter's timestamp-fault counts in the channel's counters
/// (status and metrics) and logs, at most every [`FAULT_LOG_INTERVAL`], when they grew.
fn note_timestamp_faults(
    channel: &Package,
    stats: &media::SegmenterStats,
    logged_at: &mut Option<std::time::Instant>,
) {
    if !channel.counters.note_timestamp_faults(stats) {
        return;
    }
    if logged_at.is_some_and(|at| at.elapsed() < FAULT_LOG_INTERVAL) {
        return;
    }
    *logged_at = Some(std::time::Instant::now());
    tracing::warn!(
        stream = %channel.name(),
        bad_pts_frames = stats.dropped_bad_pts,
        timestamp_jumps = stats.jumps,
        untimed = stats.untimed,
        "the source's timestamps are damaged: frames dropped or the timeline broken"
    );
}

/// Stores one finished segment: its LL-HLS twin completed first (when LL-HLS is on),
/// the counters persisted, the archive handed the segment, then the segment and its
/// views pushed into the one window and the LL-HLS playlists rendered from it.
async fn publish(
    channel: &Package,
    rendition: &Rendition,
    segment: Segment,
    tracks: &TrackSummary,
    state_file: Option<&PathBuf>,
    recorder: Option<&Recorder>,
    mut ll: Option<&mut crate::stream::llhls::Feed>,
) {
    let ll_view = ll.as_mut().and_then(|feed| {
        feed.segment(&segment);
        feed.take_ready(segment.msn)
    });
    let persisted = PersistedTimeline {
        msn: segment.msn,
        discontinuity_seq: segment.discontinuity_seq,
    };
    // The live relay closes the segment when whole-segment relays get it (an MC
    // following its peer's whole relay is then no later than a node on the live one).
    // (Only once a live relay was asked for: nobody reads the log before.)
    let closing = rendition.live_log().wanted().then(|| segment.clone());
    let live = LiveSegment::from(segment);
    // Persist before publishing: a number a viewer has seen is never handed out again.
    if let Some(path) = state_file {
        if let Err(error) = save(path, persisted).await {
            tracing::warn!(stream = %channel.name(), %error, "cannot persist timeline counters");
        }
    }
    if let Some(recorder) = recorder {
        recorder.record(&live);
    }
    channel.push_to(rendition, live, tracks.clone(), ll_view);
    if let Some(closing) = closing {
        rendition.live_log().written(&closing);
    }
    if let Some(feed) = ll {
        feed.publish(rendition.snapshot());
    }
}

async fn load(path: &PathBuf) -> Option<PersistedTimeline> {
    let text = tokio::fs::read_to_string(path).await.ok()?;
    match serde_json::from_str(&text) {
        Ok(state) => Some(state),
        Err(error) => {
            tracing::warn!(path = %path.display(), %error, "timeline state unreadable, starting fresh");
            None
        }
    }
}

async fn save(path: &PathBuf, state: PersistedTimeline) -> std::io::Result<()> {
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_vec(&state).map_err(std::io::Error::other)?;
    tokio::fs::write(&tmp, text).await?;
    tokio::fs::rename(&tmp, path).await
}
