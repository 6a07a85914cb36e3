//! Catch-up from the DVR archive (issue 3; OTT-ARCH-1/2). Per stream:
//!
//! | file | answer |
//! |---|---|
//! | `index-{from}-{duration}.m3u8` | VOD playlist of that period (EXT-X-ENDLIST, PDT on every segment) |
//! | `index-{from}-now.m3u8` | EVENT playlist from `from`, growing as recording goes on |
//! | `timeshift_rel-{seconds}.m3u8` | a sliding live window `seconds` behind now |
//! | `archive-{from}-{duration}.ts` | the period as one MPEG-TS download, streamed from disk |
//! | `dvr-{msn}.ts` | one archived segment (the URIs inside the playlists above) |
//!
//! `from` is UTC Unix seconds, `duration` seconds (1 to 86,400; an EVENT playlist's
//! `from` at most 86,400 s ago). A period with nothing
//! archived is a 404; a malformed, negative or overflowing number is a 400. Files are
//! found through the index only (numeric ids under the stream's archive directory), so
//! no request names a path.

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use dvr::index::{Entry, Index};
use media::hls::PlaylistType;

use crate::channel::Channel;
use crate::clock::Clock;
use crate::error::ApiError;
use crate::http_util::{self, Cache, M3U8, MPEG_TS};
use crate::recorder::Recorder;
use crate::url::{period_ms, ArchiveRequest, MAX_PERIOD_SECS};

/// Segments in a time-shift window when the live window is empty.
const DEFAULT_WINDOW_SEGMENTS: usize = 30;

/// The URI of an archived segment inside archive playlists (relative to them).
pub fn archive_segment_uri(entry: &Entry) -> String {
    format!("dvr-{}.ts", entry.msn)
}

/// Answers an archive request for `channel`'s stream.
pub async fn serve(
    channel: &Channel,
    request: ArchiveRequest,
    headers: &HeaderMap,
    clock: &Clock,
) -> Response {
    let Some(recorder) = channel.archive() else {
        // This stream is not recorded on this node.
        return ApiError::NotFound.into_response();
    };
    let reader = recorder.reader();
    match request {
        ArchiveRequest::Malformed => ApiError::BadRequest.into_response(),
        ArchiveRequest::Period {
            from_secs,
            duration_secs,
        } => {
            let (from_ms, to_ms) = period_ms(from_secs, duration_secs);
            playlist(recorder, |index| {
                let slice = index.query(from_ms, to_ms);
                (!slice.entries.is_empty()).then(|| {
                    dvr::playlist::render(slice, PlaylistType::Vod, 1, true, archive_segment_uri)
                })
            })
        }
        ArchiveRequest::FromNow { from_secs } => {
            // An EVENT playlist lists everything since `from`: keep it to a day, like a
            // period, so no request renders a week-long playlist.
            if from_secs * 1000 < clock.unix_ms() - i64::from(MAX_PERIOD_SECS) * 1000 {
                return ApiError::BadRequest.into_response();
            }
            playlist(recorder, |index| {
                let slice = index.query(from_secs * 1000, i64::MAX);
                (!slice.entries.is_empty()).then(|| {
                    dvr::playlist::render(slice, PlaylistType::Event, 1, false, archive_segment_uri)
                })
            })
        }
        ArchiveRequest::Timeshift { behind_secs } => {
            let edge_ms = clock
                .unix_ms()
                .saturating_sub(i64::from(behind_secs) * 1000);
            let window = match channel.snapshot().segments.len() {
                0 => DEFAULT_WINDOW_SEGMENTS,
                n => n,
            };
            playlist(recorder, |index| timeshift(index, edge_ms, window))
        }
        ArchiveRequest::Download {
            from_secs,
            duration_secs,
        } => {
            let (from_ms, to_ms) = period_ms(from_secs, duration_secs);
            let entries = reader.with_index(|i| i.query(from_ms, to_ms).entries.to_vec());
            if entries.is_empty() {
                return ApiError::NotFound.into_response();
            }
            download(recorder, entries, from_secs, duration_secs)
        }
        ArchiveRequest::Segment(msn) => {
            let Some(entry) = reader.with_index(|i| i.by_msn(msn).copied()) else {
                return ApiError::NotFound.into_response();
            };
            let reader = reader.clone();
            match tokio::task::spawn_blocking(move || reader.read(&entry)).await {
                Ok(Ok(data)) => {
                    http_util::ranged(headers, MPEG_TS, Cache::Immutable, Bytes::from(data))
                }
                Ok(Err(error)) => {
                    tracing::warn!(stream = %channel.name(), msn, %error, "archived segment unreadable");
                    ApiError::NotFound.into_response()
                }
                Err(_) => ApiError::NotFound.into_response(),
            }
        }
    }
}

/// The sliding window of `window` segments whose live edge is `edge_ms`.
fn timeshift(index: &Index, edge_ms: i64, window: usize) -> Option<String> {
    let before = index.query(i64::MIN, edge_ms);
    let n = before.entries.len();
    if n == 0 {
        return None;
    }
    let first = before.first_ordinal + n.saturating_sub(window) as u64;
    let slice = index.from_ordinal(first, window);
    Some(dvr::playlist::render(
        slice,
        PlaylistType::Live,
        1,
        false,
        archive_segment_uri,
    ))
}

fn playlist(recorder: &Recorder, render: impl FnOnce(&Index) -> Option<String>) -> Response {
    match recorder.reader().with_index(render) {
        Some(text) => http_util::ok(M3U8, Cache::LivePlaylist, Bytes::from(text)),
        None => ApiError::NotFound.into_response(),
    }
}

/// Streams the segments one at a time from disk: memory stays at one segment whatever
/// the period's length. The length is known from the index and sent up front.
fn download(
    recorder: &Recorder,
    entries: Vec<Entry>,
    from_secs: i64,
    duration_secs: u32,
) -> Response {
    let total: u64 = entries.iter().map(|e| u64::from(e.size)).sum();
    let reader = recorder.reader().clone();
    let chunks = futures_util::stream::unfold(
        (reader, entries.into_iter()),
        |(reader, mut rest)| async move {
            let entry = rest.next()?;
            let for_read = reader.clone();
            let chunk = match tokio::task::spawn_blocking(move || for_read.read(&entry)).await {
                Ok(Ok(data)) => Ok(Bytes::from(data)),
                Ok(Err(error)) => Err(error),
                Err(join) => Err(std::io::Error::other(join)),
            };
            Some((chunk, (reader, rest)))
        },
    );
    let mut response = Response::new(Body::from_stream(chunks));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(MPEG_TS));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(total));
    if let Ok(value) = HeaderValue::from_str(&format!(
        "attachment; filename=\"archive-{from_secs}-{duration_secs}.ts\""
    )) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    response
}
