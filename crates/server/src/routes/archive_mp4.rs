//! `archive-{from}-{duration}.mp4`: a recorded period as one fragmented MP4 file, for
//! editors, learning platforms and video sites that take a file rather than a playlist.
//!
//! The file is the muxed init segment of the period's first run (its `ftyp` and `moov`),
//! then one fragment (`moof` + `mdat`) per archived segment of that run, each packaged
//! from the archived MPEG-TS as it is sent — the bytes of `dvr-{msn}.m4s`, their decode
//! times moved so the file's timeline starts at zero — so memory
//! stays at one segment whatever the period's length, and the period may come from the
//! disk or the bucket alike. One file has one `moov`: a period with a discontinuity (a
//! new source, other codec parameters) or a gap is exported up to it, and the length is
//! not known up front (chunked).
//!
//! `archive-{from}-{duration}-progressive.mp4` is the same run as a progressive file,
//! its index (`moov`) ahead of the media, for editors and players that take no
//! fragmented file ([`packaging::archive::progressive`]): planned by reading the run
//! once, then sent segment by segment with its length known.

use axum::body::Body;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use dvr::index::Entry;
use dvr::ArchiveReader;
use media::fmp4::{first_decode_time, rebase_decode_times, Track};
use packaging::archive::fmp4::{init, runs, segment};
use packaging::archive::progressive;

use crate::stream::archive_scans::ArchiveScans;

use crate::error::ApiError;

/// The longest period a progressive MP4 covers, seconds (4 hours: its plan reads every
/// segment before the first byte, holding an archive-scan permit). Longer periods are
/// fragmented files, or progressive ones in pieces.
pub const MAX_PROGRESSIVE_SECS: u32 = 4 * 3600;

/// The MIME type of an MP4 file.
const VIDEO_MP4: &str = "video/mp4";

/// Answers the export of `entries` (a period's, oldest first, at least one).
pub async fn download(
    reader: &ArchiveReader,
    entries: Vec<Entry>,
    from_secs: i64,
    duration_secs: u32,
) -> Response {
    let Some(first_run) = runs(&entries).into_iter().next() else {
        return ApiError::NotFound.into_response();
    };
    let msns: Vec<u64> = entries[first_run].iter().map(|e| e.msn).collect();
    let for_init = reader.clone();
    let first = msns[0];
    let head = match tokio::task::spawn_blocking(move || init(&for_init, first, Track::Muxed)).await
    {
        Ok(Ok(Some(head))) => head,
        Ok(Ok(None)) => return ApiError::NotFound.into_response(),
        Ok(Err(error)) => {
            tracing::warn!(msn = first, %error, "archived period cannot be exported as MP4");
            return ApiError::NotFound.into_response();
        }
        Err(_) => return ApiError::NotFound.into_response(),
    };
    // The file's timeline starts at zero: every fragment's decode times move by the
    // first fragment's earliest one.
    let reader = reader.clone();
    let base = std::sync::Arc::new(std::sync::OnceLock::new());
    let fragments = super::blocking_chunks::blocking_chunks(msns, move |msn: u64| {
        match segment(&reader, msn, Track::Muxed, None) {
            Ok(Some(fragment)) => {
                let mut bytes = without_segment_type(fragment).to_vec();
                let base = *base.get_or_init(|| first_decode_time(&bytes).unwrap_or(0));
                rebase_decode_times(&mut bytes, base);
                Ok(Bytes::from(bytes))
            }
            Ok(None) => Err(std::io::Error::other(format!(
                "segment {msn} left the archive"
            ))),
            Err(error) => Err(std::io::Error::other(error.to_string())),
        }
    });
    let head = futures_util::stream::once(async move { Ok::<Bytes, std::io::Error>(head) });
    let body = Body::from_stream(futures_util::StreamExt::chain(head, fragments));
    attachment(body, &format!("archive-{from_secs}-{duration_secs}.mp4"))
}

/// Answers the progressive export of `entries` (a period's, oldest first, at least one):
/// `ftyp`, the `moov` indexing every sample, then one `mdat` streamed segment by
/// segment, with its length up front. Planning reads the whole run once before the
/// first byte goes out: an archive scan, under the node's cap (`scans`), refused with
/// the back-pressure 503 when none is free.
pub async fn progressive(
    reader: &ArchiveReader,
    entries: Vec<Entry>,
    (from_secs, duration_secs): (i64, u32),
    scans: &ArchiveScans,
) -> Response {
    let Some(first_run) = runs(&entries).into_iter().next() else {
        return ApiError::NotFound.into_response();
    };
    if duration_secs > MAX_PROGRESSIVE_SECS {
        return crate::error::respond(codes::RequestError::InvalidField.into(), Some("duration"));
    }
    let msns: Vec<u64> = entries[first_run].iter().map(|e| e.msn).collect();
    let Some(permit) = scans.try_start() else {
        return crate::stream::archive_scans::busy_response();
    };
    // Planning stops when the answer is no longer awaited (its client left).
    let waiting = std::sync::Arc::new(());
    let watched = std::sync::Arc::downgrade(&waiting);
    let for_plan = reader.clone();
    let job = move || {
        let _permit = permit;
        progressive::plan(&for_plan, &msns, &|| watched.strong_count() > 0)
    };
    let planned = tokio::task::spawn_blocking(job).await;
    drop(waiting);
    let plan = match planned {
        Ok(Ok(plan)) => std::sync::Arc::new(plan),
        Ok(Err(error)) => {
            tracing::warn!(%error, "archived period cannot be exported as a progressive MP4");
            return ApiError::NotFound.into_response();
        }
        Err(_) => return ApiError::NotFound.into_response(),
    };
    let head = futures_util::stream::once({
        let head = plan.head.clone();
        async move { Ok::<Bytes, std::io::Error>(head) }
    });
    let msns: Vec<u64> = plan.segments.iter().map(|&(msn, _)| msn).collect();
    let (reader, for_chunks) = (reader.clone(), std::sync::Arc::clone(&plan));
    let chunks = super::blocking_chunks::blocking_chunks(msns, move |msn: u64| {
        progressive::chunk(&reader, &for_chunks, msn)
            .map_err(|error| std::io::Error::other(error.to_string()))
    });
    let body = Body::from_stream(futures_util::StreamExt::chain(head, chunks));
    let mut response = attachment(
        body,
        &format!("archive-{from_secs}-{duration_secs}-progressive.mp4"),
    );
    response
        .headers_mut()
        .insert(header::CONTENT_LENGTH, HeaderValue::from(plan.total_len));
    response
}

/// An MP4 download named `name`, its bytes streamed from `body`.
fn attachment(body: Body, name: &str) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(VIDEO_MP4));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    response
}

/// A segment file without its leading `styp` box: inside one file the fragments follow
/// the `moov` directly.
fn without_segment_type(fragment: Bytes) -> Bytes {
    let is_styp = fragment.get(4..8) == Some(b"styp");
    let size = fragment
        .get(..4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize);
    match size {
        Some(size) if is_styp && size >= 8 && size <= fragment.len() => fragment.slice(size..),
        _ => fragment,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_segment_type_box_is_dropped_and_nothing_else() {
        let mut file = vec![0, 0, 0, 16];
        file.extend_from_slice(b"stypmsdh");
        file.extend_from_slice(&[0, 0, 0, 0]);
        file.extend_from_slice(&[0, 0, 0, 8]);
        file.extend_from_slice(b"moof");
        assert_eq!(
            &without_segment_type(Bytes::from(file.clone()))[4..8],
            b"moof"
        );
        let moof_only = Bytes::copy_from_slice(&file[16..]);
        assert_eq!(without_segment_type(moof_only.clone()), moof_only);
    }
}
