//! Small HTTP helpers shared by the routes: content types, cache policy, byte ranges.

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use media::manifest::{Manifest, UriEnds};

/// Content type of HLS playlists (RFC 8216bis §4).
pub const M3U8: &str = "application/vnd.apple.mpegurl";
/// Content type of MPEG-TS segments and relays.
pub const MPEG_TS: &str = "video/mp2t";

/// How long a client may cache a response.
#[derive(Debug, Clone, Copy)]
pub enum Cache {
    /// Live playlists change every segment: one second at most.
    LivePlaylist,
    /// A segment never changes once published.
    Immutable,
    /// Never cache (status, errors, streams).
    None,
    /// Made for one viewer (a master playlist with its backups and passes): no shared
    /// cache may keep it.
    NoStore,
}

impl Cache {
    fn header(self) -> HeaderValue {
        // Constants: checked once, when the node is built, not on every answer.
        const LIVE_PLAYLIST: HeaderValue = HeaderValue::from_static("public, max-age=1");
        const IMMUTABLE: HeaderValue = HeaderValue::from_static("public, max-age=86400, immutable");
        const NONE: HeaderValue = HeaderValue::from_static("no-cache");
        const NO_STORE: HeaderValue = HeaderValue::from_static("private, no-store");
        match self {
            Cache::LivePlaylist => LIVE_PLAYLIST,
            Cache::Immutable => IMMUTABLE,
            Cache::None => NONE,
            Cache::NoStore => NO_STORE,
        }
    }
}

/// The `Content-Type` value of `content_type`: the playlists' and segments' from
/// constants, checked when the node is built; any other checked now.
fn content_type_value(content_type: &'static str) -> HeaderValue {
    const M3U8_VALUE: HeaderValue = HeaderValue::from_static(M3U8);
    const MPEG_TS_VALUE: HeaderValue = HeaderValue::from_static(MPEG_TS);
    match content_type {
        M3U8 => M3U8_VALUE,
        MPEG_TS => MPEG_TS_VALUE,
        other => HeaderValue::from_static(other),
    }
}

/// Content type of the embedded web pages.
pub const HTML: &str = "text/html; charset=utf-8";

/// One of the embedded pages (player, Backups, Experiments): HTML, revalidated on
/// every load so a new build's page is picked up at once.
pub fn page(html: &'static str) -> Response {
    ok(HTML, Cache::None, Bytes::from_static(html.as_bytes()))
}

/// A full `200` response with the given body.
pub fn ok(content_type: &'static str, cache: Cache, body: Bytes) -> Response {
    let mut response = Response::new(Body::from(body));
    set_common(response.headers_mut(), content_type, cache);
    response
}

tokio::task_local! {
    /// Where the URIs of the manifest answered in a [`marking_uris`] scope end.
    static MARKS: std::cell::RefCell<Option<UriEnds>>;
}

/// Runs `answer` (what makes a response) and returns, with what it returned, where the
/// URIs end of the playlist or MPD it answered (`None`: it answered none): a private
/// meeting's answer is then the same text with the viewer's session after each URI
/// (see `access::session_uris`). Everyone else's answer is made outside such a scope
/// and carries nothing more.
pub fn marking_uris<T>(answer: impl FnOnce() -> T) -> (T, Option<UriEnds>) {
    MARKS.sync_scope(std::cell::RefCell::new(None), || {
        let made = answer();
        (made, MARKS.with(|marks| marks.borrow_mut().take()))
    })
}

/// [`marking_uris`] for an answer made when `future` completes.
pub async fn marking_uris_later<F: std::future::Future>(future: F) -> (F::Output, Option<UriEnds>) {
    MARKS
        .scope(std::cell::RefCell::new(None), async move {
            let made = future.await;
            (made, MARKS.with(|marks| marks.borrow_mut().take()))
        })
        .await
}

/// Answers a playlist or MPD: its bytes (and, in a [`marking_uris`] scope, where its
/// URIs end, for the scope's caller).
pub fn manifest(content_type: &'static str, cache: Cache, manifest: Manifest) -> Response {
    let Manifest { bytes, uri_ends } = manifest;
    // Outside a scope (every public answer) this is one failed thread-local look-up.
    let _ = MARKS.try_with(|marks| *marks.borrow_mut() = Some(uri_ends));
    ok(content_type, cache, bytes)
}

/// Answers `body` honouring a single `Range: bytes=…` request (206 / 416), else 200.
pub fn ranged(
    request_headers: &HeaderMap,
    content_type: &'static str,
    cache: Cache,
    body: Bytes,
) -> Response {
    let total = body.len() as u64;
    let range = request_headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok());
    let Some(range) = range else {
        let mut response = ok(content_type, cache, body);
        response
            .headers_mut()
            .insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
        return response;
    };
    match parse_range(range, total) {
        Some((start, end)) => {
            // Both bounds are within `total`, which came from `body.len()`.
            let part = body.slice(start as usize..=end as usize);
            let mut response = Response::new(Body::from(part));
            *response.status_mut() = StatusCode::PARTIAL_CONTENT;
            let headers = response.headers_mut();
            set_common(headers, content_type, cache);
            headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
            if let Ok(value) = HeaderValue::from_str(&format!("bytes {start}-{end}/{total}")) {
                headers.insert(header::CONTENT_RANGE, value);
            }
            response
        }
        None => {
            let mut response = Response::new(Body::empty());
            *response.status_mut() = StatusCode::RANGE_NOT_SATISFIABLE;
            if let Ok(value) = HeaderValue::from_str(&format!("bytes */{total}")) {
                response.headers_mut().insert(header::CONTENT_RANGE, value);
            }
            response
        }
    }
}

fn set_common(headers: &mut HeaderMap, content_type: &'static str, cache: Cache) {
    headers.insert(header::CONTENT_TYPE, content_type_value(content_type));
    headers.insert(header::CACHE_CONTROL, cache.header());
}

/// Parses one `bytes=a-b`, `bytes=a-` or `bytes=-n` range against a body of `total`
/// bytes; returns inclusive bounds, or `None` when it cannot be satisfied.
/// Multiple ranges are not supported and are answered as unsatisfiable.
pub fn parse_range(value: &str, total: u64) -> Option<(u64, u64)> {
    let spec = value.trim().strip_prefix("bytes=")?;
    if spec.contains(',') || total == 0 {
        return None;
    }
    let (first, last) = spec.split_once('-')?;
    let (first, last) = (first.trim(), last.trim());
    if first.is_empty() {
        let suffix: u64 = last.parse().ok()?;
        if suffix == 0 {
            return None;
        }
        return Some((total.saturating_sub(suffix), total - 1));
    }
    let start: u64 = first.parse().ok()?;
    let end = if last.is_empty() {
        total - 1
    } else {
        last.parse::<u64>().ok()?.min(total - 1)
    };
    (start <= end && start < total).then_some((start, end))
}

#[cfg(test)]
mod tests {
    use super::parse_range;

    #[test]
    fn ranges() {
        assert_eq!(parse_range("bytes=0-99", 1000), Some((0, 99)));
        assert_eq!(parse_range("bytes=900-", 1000), Some((900, 999)));
        assert_eq!(parse_range("bytes=-100", 1000), Some((900, 999)));
        assert_eq!(parse_range("bytes=-5000", 1000), Some((0, 999)));
        assert_eq!(parse_range("bytes=500-99999", 1000), Some((500, 999)));
        assert_eq!(parse_range("bytes=1000-", 1000), None);
        assert_eq!(parse_range("bytes=5-4", 1000), None);
        assert_eq!(parse_range("bytes=0-1,5-6", 1000), None);
        assert_eq!(parse_range("items=0-1", 1000), None);
        assert_eq!(parse_range("bytes=-0", 1000), None);
        assert_eq!(parse_range("bytes=x-1", 1000), None);
        assert_eq!(parse_range("bytes=18446744073709551615-", 1000), None);
    }
}
