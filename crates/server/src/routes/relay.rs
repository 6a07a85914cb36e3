//! The MPEG-TS relay: one endless TS over a long-lived HTTP response, which a
//! downstream brdyun node pulls and whose timeline markers it adopts (same boundaries,
//! numbers, dates and bytes; OTT-GRP-4).
//!
//! It starts with the window's whole segments concatenated (each starts with its
//! marker). Asked with `live=1`, once it has sent the newest whole segment it joins the
//! rendition's live log ([`crate::stream::live_relay`]) where the next segment opens, and from
//! then on sends each frame as the segmenter places it, so the node cuts the same
//! LL-HLS parts at the same moment. A reader too slow for the log
//! goes back to whole segments and joins again.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderValue};
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use media::ts::restamp::CcRestamp;
use tokio::sync::watch;

use crate::http::http_util::MPEG_TS;
use crate::stream::live_relay::Since;
use crate::stream::rendition::Rendition;

/// How long the relay waits for a new segment (or frame) before it ends the response.
const IDLE_LIMIT: Duration = Duration::from_secs(30);

/// A null packet (PID 0x1FFF, ignored by every demuxer). A demuxer hands a packet on
/// only once the byte after it shows the next sync byte (so a packet cut short is never
/// delivered spliced); the live relay follows a segment's end with one, so the node gets
/// the segment's last packet at once, not with the next segment. (The whole-segment
/// relay leaves it out: its nodes, main stream and rungs alike, write each segment when
/// the next one arrives, in step with each other.)
const NULL_PACKET: [u8; media::ts::PACKET_SIZE] = {
    let mut p = [0xff_u8; media::ts::PACKET_SIZE];
    p[0] = media::ts::SYNC_BYTE;
    p[1] = 0x1f;
    p[2] = 0xff;
    p[3] = 0x10;
    p
};

/// Where a relay response stands.
enum Phase {
    /// Sending whole segments; `next` is the next MSN to send.
    Whole { next: Option<u64> },
    /// Following the live log from `seq`; segments up to `sent` went whole.
    Live { seq: u64, sent: u64 },
}

struct Cursor {
    rendition: Arc<Rendition>,
    /// Counters continuous across whole segments and the log's chunks it skips in.
    restamp: CcRestamp,
    start: Option<u64>,
    live: bool,
    phase: Phase,
    segments: watch::Receiver<Option<u64>>,
    log: watch::Receiver<u64>,
}

/// Starts a relay response of one rendition at `start` (or the oldest segment in the
/// window); with `live`, it goes on with frames as they are placed.
pub fn serve(rendition: Arc<Rendition>, start: Option<u64>, live: bool) -> Response {
    let segments = rendition.subscribe();
    // Only a live relay keeps the log (a whole-segment one never waits on it).
    let log = if live {
        rendition.live_log().subscribe()
    } else {
        watch::channel(0).1
    };
    let cursor = Cursor {
        rendition,
        restamp: CcRestamp::new(),
        start,
        live,
        phase: Phase::Whole { next: None },
        segments,
        log,
    };
    let stream = futures_util::stream::unfold(cursor, |mut cursor| async move {
        let data = cursor.next_bytes().await?;
        let data = cursor.restamp.apply(data);
        Some((Ok::<Bytes, Infallible>(data), cursor))
    });
    let mut response = Response::new(Body::from_stream(stream));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(MPEG_TS));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

impl Cursor {
    async fn next_bytes(&mut self) -> Option<Bytes> {
        loop {
            match self.phase {
                Phase::Whole { next } => {
                    if let Some(data) = self.whole(next) {
                        return Some(data);
                    }
                    if matches!(self.phase, Phase::Live { .. }) {
                        continue;
                    }
                }
                Phase::Live { seq, sent } => match self.rendition.live_log().since(seq) {
                    Since::Lagged => {
                        self.phase = Phase::Whole {
                            next: Some(sent + 1),
                        };
                        continue;
                    }
                    Since::Chunks(chunks) if !chunks.is_empty() => {
                        let mut out = BytesMut::new();
                        let mut last = seq;
                        let mut closed = false;
                        for c in chunks {
                            last = c.seq;
                            // What belongs to a segment that went whole is in it already.
                            if c.msn > sent {
                                out.extend_from_slice(&c.bytes);
                                closed = c.closes;
                            }
                        }
                        if closed {
                            out.extend_from_slice(&NULL_PACKET);
                        }
                        self.phase = Phase::Live {
                            seq: last + 1,
                            sent,
                        };
                        if !out.is_empty() {
                            return Some(out.freeze());
                        }
                        continue;
                    }
                    Since::Chunks(_) => {}
                },
            }
            let waited = match self.phase {
                Phase::Whole { .. } if self.live => tokio::time::timeout(IDLE_LIMIT, async {
                    tokio::select! {
                        r = self.segments.changed() => r.is_ok(),
                        r = self.log.changed() => r.is_ok(),
                    }
                })
                .await
                .unwrap_or(false),
                Phase::Whole { .. } => {
                    matches!(
                        tokio::time::timeout(IDLE_LIMIT, self.segments.changed()).await,
                        Ok(Ok(()))
                    )
                }
                Phase::Live { .. } => {
                    matches!(
                        tokio::time::timeout(IDLE_LIMIT, self.log.changed()).await,
                        Ok(Ok(()))
                    )
                }
            };
            if !waited {
                return None;
            }
        }
    }

    /// The next whole segment, if there is one; at the window's edge, with `live`, joins
    /// the live log where the next segment opens.
    fn whole(&mut self, next: Option<u64>) -> Option<Bytes> {
        let snapshot = self.rendition.snapshot();
        let (oldest, newest) = (snapshot.segments.front()?, snapshot.segments.back()?);
        let wanted = match next {
            Some(next) if next < oldest.msn || next > newest.msn + 1 => {
                // Fell behind the window (slow reader) or the window restarted.
                oldest.msn
            }
            Some(next) => next,
            None => self
                .start
                .map_or(oldest.msn, |s| s.clamp(oldest.msn, newest.msn)),
        };
        if let Some(segment) = snapshot.segment(wanted) {
            self.phase = Phase::Whole {
                next: Some(wanted + 1),
            };
            if !self.live {
                return Some(segment.data.clone());
            }
            let mut out = BytesMut::with_capacity(segment.data.len() + NULL_PACKET.len());
            out.extend_from_slice(&segment.data);
            out.extend_from_slice(&NULL_PACKET);
            return Some(out.freeze());
        }
        self.phase = Phase::Whole { next: Some(wanted) };
        if self.live {
            if let Some(seq) = self.rendition.live_log().opening(wanted) {
                self.phase = Phase::Live {
                    seq,
                    sent: wanted.saturating_sub(1),
                };
            }
        }
        None
    }
}
