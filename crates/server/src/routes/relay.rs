//! The MPEG-TS relay: the stream's segments concatenated into one endless TS over a
//! long-lived HTTP response. Every segment starts with its timeline marker, so a
//! downstream brdyun node that pulls this adopts our boundaries, numbers and dates
//! (same timeline, OTT-GRP-4).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderValue};
use axum::response::Response;
use bytes::Bytes;
use tokio::sync::watch;

use crate::http_util::MPEG_TS;
use crate::rendition::Rendition;

/// How long the relay waits for a new segment before it ends the response.
const IDLE_LIMIT: Duration = Duration::from_secs(30);

struct Cursor {
    rendition: Arc<Rendition>,
    next: Option<u64>,
    start: Option<u64>,
    updates: watch::Receiver<Option<u64>>,
}

/// Starts a relay response of one rendition at `start` (or the oldest segment in the
/// window).
pub fn serve(rendition: Arc<Rendition>, start: Option<u64>) -> Response {
    let updates = rendition.subscribe();
    let cursor = Cursor {
        rendition,
        next: None,
        start,
        updates,
    };
    let stream = futures_util::stream::unfold(cursor, |mut cursor| async move {
        let data = cursor.next_segment().await?;
        Some((Ok::<Bytes, Infallible>(data), cursor))
    });
    let mut response = Response::new(Body::from_stream(stream));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(MPEG_TS));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

impl Cursor {
    async fn next_segment(&mut self) -> Option<Bytes> {
        loop {
            let snapshot = self.rendition.snapshot();
            if let (Some(oldest), Some(newest)) =
                (snapshot.segments.front(), snapshot.segments.back())
            {
                let wanted = match self.next {
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
                    self.next = Some(wanted + 1);
                    return Some(segment.data.clone());
                }
                self.next = Some(wanted);
            }
            match tokio::time::timeout(IDLE_LIMIT, self.updates.changed()).await {
                Ok(Ok(())) => continue,
                _ => return None,
            }
        }
    }
}
