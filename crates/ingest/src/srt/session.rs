//! One accepted SRT publisher: its MPEG-TS payloads through the shared demuxer path
//! to the stream, under the listener's deadline to the first media bytes and its byte
//! floor, with the link's statistics published as they come.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use media::ts::demux::Demuxer;
use tokio::sync::watch;
use tokio::time::sleep_until;
use tracing::{debug, info, warn};

use super::reader::{Incoming, Reader};
use super::stats::SrtStats;
use crate::listener_limits::{Cut, ListenerLimits, PhaseClock, Slot};
use crate::status::{demux_events, InputCounters};
use crate::{IngestEvent, IngestSender};

/// How one publisher's session ended.
#[derive(Debug)]
pub(crate) enum Ended {
    /// The publisher closed the connection, or SRT timed it out (no packet for the
    /// peer idle timeout).
    Gone(Option<super::ffi::SrtError>),
    /// A limit cut it.
    Cut(Cut),
    /// The stream stopped taking its media (the meeting ended).
    StreamClosed,
    /// The listener is shutting down.
    Shutdown,
}

/// An accepted publisher, ready to run.
pub(crate) struct Publisher {
    pub(crate) reader: Reader,
    pub(crate) sender: IngestSender,
    pub(crate) stream: String,
    pub(crate) peer: std::net::SocketAddr,
    pub(crate) stats: Arc<SrtStats>,
}

impl Publisher {
    /// Receives until the publisher leaves, a limit cuts it, the stream closes or
    /// `stop` says so; then logs how it ended. Dropping the sender at the end tells the
    /// stream its publisher is gone.
    pub(crate) async fn run(
        mut self,
        slot: &mut Slot,
        limits: &ListenerLimits,
        accepted_at: Instant,
        mut stop: watch::Receiver<bool>,
    ) {
        let mut clock = PhaseClock::new(accepted_at, limits);
        let ended = tokio::select! {
            ended = self.receive(slot, &mut clock) => ended,
            _ = stop.wait_for(|stop| *stop) => Ended::Shutdown,
        };
        self.stats.remove_link(&self.stream);
        let Self {
            reader,
            sender,
            stream,
            peer,
            stats,
        } = self;
        // Closing the connection first; the stream learns its publisher is gone after.
        reader.finish().await;
        drop(sender);
        let stream = &stream;
        match ended {
            Ended::Gone(None) => info!(%peer, %stream, "srt publisher left"),
            Ended::Gone(Some(e)) => info!(%peer, %stream, error = %e, "srt publisher lost"),
            Ended::Cut(cut) => {
                let count = stats.limits.cut(cut);
                let code = cut.code();
                warn!(%peer, %stream, code = code.code(), reason = code.label(), error = %cut, count, "srt connection cut");
            }
            Ended::StreamClosed => info!(%peer, %stream, "srt stream closed under the publisher"),
            Ended::Shutdown => debug!(%peer, %stream, "srt connection closed by shutdown"),
        }
    }

    async fn receive(&mut self, slot: &mut Slot, clock: &mut PhaseClock) -> Ended {
        let mut demuxer = Demuxer::new();
        // The demuxer's damage counts; the stream's input counts frames and bytes.
        let counters = InputCounters::default();
        let mut events = Vec::new();
        loop {
            let payload = tokio::select! {
                biased;
                received = self.reader.incoming.recv() => match received {
                    Some(Incoming::Payload(payload)) => payload,
                    Some(Incoming::Stats(reading)) => {
                        self.stats.set_link(&self.stream, reading);
                        continue;
                    }
                    Some(Incoming::Ended(Some(e))) => return Ended::Gone(Some(e)),
                    Some(Incoming::Ended(None)) | None => break,
                },
                () = sleep_until(clock.next_check().into()) => {
                    if let Err(cut) = clock.check(Instant::now()) {
                        return Ended::Cut(cut);
                    }
                    continue;
                }
            };
            let now = Instant::now();
            if !clock.is_publishing() && !payload.is_empty() {
                // The first media bytes: the connection is a publisher now.
                slot.published();
                clock.published(now);
            }
            clock.received(payload.len());
            if let Err(cut) = clock.check(now) {
                return Ended::Cut(cut);
            }
            self.stats.bytes.fetch_add(payload.len() as u64, Relaxed);
            demux_events(&mut demuxer, Some(&payload), &counters, &mut events);
            if !self.forward(&mut events).await {
                return Ended::StreamClosed;
            }
        }
        demux_events(&mut demuxer, None, &counters, &mut events);
        if !self.forward(&mut events).await {
            return Ended::StreamClosed;
        }
        Ended::Gone(None)
    }

    /// Sends (and empties) `events`; false when the stream is closed.
    async fn forward(&self, events: &mut Vec<IngestEvent>) -> bool {
        for event in events.drain(..) {
            let frame = matches!(event, IngestEvent::Frame(_));
            if self.sender.send(event).await.is_err() {
                return false;
            }
            if frame {
                self.stats.frames.fetch_add(1, Relaxed);
            }
        }
        true
    }
}
