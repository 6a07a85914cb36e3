//! A ladder the meeting platform encodes itself (`[mc.ladder] from = "publisher"`): the
//! platform publishes the source at `live/{meeting}` and every rung at
//! `live/{meeting}@{rung}` (one RTMP publish each, the meeting's stream key, the same
//! timestamps as the source: one encoder's outputs). Each rung is cut on the source's
//! segments by a [`RungCutter`] with the rung's own audio, exactly as the MC's encoder's
//! rungs are, and checked segment by segment: a rung whose keyframes are not where the
//! source cuts is counted and logged (110004) and not offered in the master playlists
//! while such a segment is in its window (see [`packaging::window::switchable`]), so players
//! are never given a ladder they cannot switch in.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use ingest::IngestEvent;
use media::segmenter::RungCutter;
use tokio::sync::{mpsc, watch};

use super::status::LadderStatus;
use super::RungSource;
use crate::stream::package::Package;
use crate::stream::rendition::Rendition;
use packaging::tracks::TrackProbe;

/// One published rung: its name (a rendition of the channel) and the events of its
/// publish (the rung's input supervisor's output).
pub struct PublishedRung {
    /// The rung's name.
    pub name: String,
    /// What the rung's publisher sends.
    pub events: mpsc::Receiver<IngestEvent>,
}

/// Starts cutting the published rungs of `channel` (whose renditions include every
/// rung): returns the ladder's status and one task per rung (run until `stop`).
///
/// # Errors
/// A rung has no rendition in the channel.
pub fn start(
    channel: &Arc<Package>,
    rungs: Vec<PublishedRung>,
    stop: &watch::Receiver<bool>,
) -> Result<
    (
        Arc<LadderStatus>,
        Vec<impl std::future::Future<Output = ()> + Send + 'static>,
    ),
    String,
> {
    let names = rungs.iter().map(|r| r.name.clone()).collect();
    let status = Arc::new(LadderStatus::new(RungSource::Publisher, names));
    let mut tasks = Vec::with_capacity(rungs.len());
    for (index, rung) in rungs.into_iter().enumerate() {
        let rendition = channel
            .rendition(&rung.name)
            .ok_or_else(|| format!("rung {} has no rendition", rung.name))?;
        tasks.push(cut_rung(
            Arc::clone(channel),
            Arc::clone(rendition),
            index,
            rung.events,
            Arc::clone(&status),
            stop.clone(),
        ));
    }
    Ok((status, tasks))
}

/// Cuts one published rung: its frames as they come, on each source segment as the
/// source cuts it, until its publish input ends or the stream stops.
async fn cut_rung(
    channel: Arc<Package>,
    rendition: Arc<Rendition>,
    index: usize,
    mut events: mpsc::Receiver<IngestEvent>,
    status: Arc<LadderStatus>,
    mut stop: watch::Receiver<bool>,
) {
    let source = Arc::clone(channel.main());
    let mut updates = source.subscribe();
    let mut announced = source.snapshot().newest().map(|s| s.msn);
    let mut cutter = RungCutter::new();
    let mut probe = TrackProbe::default();
    loop {
        let done = tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            event = events.recv() => match event {
                None => return,
                Some(IngestEvent::Frame(frame)) => {
                    status.counters[index].frames.fetch_add(1, Ordering::Relaxed);
                    probe.observe(&frame);
                    cutter.frame(frame)
                }
                // The rung's publisher went away and came back (or another took over):
                // what was collected is dropped and the rung follows a discontinuity.
                Some(IngestEvent::Discontinuity | IngestEvent::Takeover) => {
                    cutter.restart();
                    probe.reset();
                    Vec::new()
                }
                Some(
                    IngestEvent::Marker(_)
                    | IngestEvent::Captions(_)
                    | IngestEvent::AlternateAudio { .. }
                    | IngestEvent::InterpreterFeed { .. },
                ) => Vec::new(),
            },
            changed = updates.changed() => {
                if changed.is_err() {
                    return;
                }
                let mut done = Vec::new();
                for segment in super::cut::new_source_segments(&source, &mut announced) {
                    if let Some(view) = segment.fmp4() {
                        done.extend(cutter.source_segment(view.marker));
                    }
                }
                done
            }
        };
        if !done.is_empty() {
            super::cut::publish(
                &channel,
                &rendition,
                &status,
                index,
                cutter.stats().skipped,
                &probe.summary(),
                done,
            );
        }
    }
}
