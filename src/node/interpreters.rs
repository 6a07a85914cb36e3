//! The languages interpreters publish on their own (`[[stream.language]] interpreter =
//! true`): each is a publish input of its own, `<stream>@audio-<code>` with the
//! language's interpreter key ([`meeting::languages::interpreter_key`], made from the
//! stream's publish key; RTMP, RTMPS or SRT), run by a supervisor of its own so it never takes
//! the floor's place. Its audio goes to the stream's pipeline as
//! [`ingest::IngestEvent::InterpreterFeed`], where it is placed on the floor's timeline
//! by its arrival ([`server::stream::interpreter`]); its video, if any, is dropped.

use std::time::Duration;

use anyhow::Context;
use ingest::supervisor::{self, InputSpec, PublishRegistry, SupervisorConfig};
use ingest::IngestEvent;
use media::TrackKind;
use server::stream::interpreter::InterpreterView;
use server::stream::languages::LanguageSource;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

/// Events of one feed in flight to its forwarder (about 5 s of AAC).
const FEED_CAPACITY: usize = 256;

/// The stream's own publish key, which interpreters' keys are made from (its first
/// publish input's, the primary slot's first); `None` when the stream takes no publish,
/// `Some(None)` when it takes any publisher.
pub fn feed_key(specs: &[InputSpec]) -> Option<Option<String>> {
    let publish = |primary: bool| {
        specs.iter().find_map(|spec| match spec {
            InputSpec::Rtmp { key, slot } if slot.is_none() == primary => Some(key.clone()),
            _ => None,
        })
    };
    publish(true).or_else(|| publish(false))
}

/// Starts the publish input of every language of `languages` an interpreter publishes,
/// forwarding each one's audio to `events` (the stream's pipeline); returns what the
/// status API shows of each.
///
/// # Errors
/// The stream takes no publish (no key to give interpreters), or a publish name is
/// taken.
pub fn start(
    registry: &PublishRegistry,
    stream: &str,
    (languages, key): (&[LanguageSource], Option<Option<String>>),
    (publish_timeout, events): (Duration, &mpsc::Sender<IngestEvent>),
    stop: &watch::Receiver<bool>,
    tasks: &mut JoinSet<()>,
) -> anyhow::Result<Vec<InterpreterView>> {
    let mut views = Vec::new();
    for source in languages {
        let Some(feed) = &source.interpreter else {
            continue;
        };
        let Some(key) = key.clone() else {
            anyhow::bail!(
                "stream {stream}: language {} is an interpreter's feed, but the stream takes no publish (its key is the interpreter's)",
                source.language
            );
        };
        let language = source.language;
        // Each interpreter has a key of their own, made from the stream's.
        let key = key.map(|key| meeting::languages::interpreter_key(&key, language.as_str()));
        let slot = packaging::languages::rendition_name(language);
        let mut config = SupervisorConfig::new(
            stream,
            vec![InputSpec::Rtmp {
                key,
                slot: Some(slot),
            }],
        );
        config.source_timeout = publish_timeout;
        let (feed_tx, feed_rx) = mpsc::channel(FEED_CAPACITY);
        let handle = supervisor::spawn(config, Some(registry), feed_tx, stop.clone())
            .with_context(|| format!("stream {stream}: the {language} interpreter's feed"))?;
        views.push(InterpreterView {
            language,
            offset_ms: feed.offset_ms,
            stats: std::sync::Arc::clone(&feed.stats),
            input: handle.status(),
        });
        tasks.spawn(handle.join());
        tasks.spawn(forward(language, feed_rx, events.clone()));
    }
    Ok(views)
}

/// Hands the feed's audio to the pipeline, and each restart (a new publish) as a
/// restart; video and anything else is dropped. Ends with the feed's supervisor.
async fn forward(
    language: media::Language,
    mut feed: mpsc::Receiver<IngestEvent>,
    events: mpsc::Sender<IngestEvent>,
) {
    while let Some(event) = feed.recv().await {
        let frame = match event {
            IngestEvent::Frame(frame) if frame.kind() == TrackKind::Audio => Some(frame),
            IngestEvent::Discontinuity | IngestEvent::Takeover => None,
            _ => continue,
        };
        let event = IngestEvent::InterpreterFeed { language, frame };
        if events.send(event).await.is_err() {
            return;
        }
    }
}
