//! LL-HLS routes: `/{stream}/ll-index.m3u8` (master), `/{stream}/ll.m3u8` (media
//! playlist with blocking reload and delta updates), `/{stream}/part-{msn}-{i}.m4s`
//! (parts; the preload-hinted one blocks until it exists), `/{stream}/llseg-{msn}.m4s`
//! (complete segments = their parts concatenated) and `/{stream}/ll-init-{seq}.mp4`.

use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use media::hls::{MasterPlaylist, Variant};

use crate::channel::Channel;
use crate::error::ApiError;
use crate::http_util::{self, Cache, M3U8};
use crate::llhls::{LlChannel, Position};

/// Content type of fMP4 init segments, segments and parts.
pub const MP4: &str = "video/mp4";

/// The LL-HLS files of a stream, parsed from the last path segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LlFile {
    /// `ll-index.m3u8`: a master playlist naming `ll.m3u8`.
    Master,
    /// `ll.m3u8`: the LL-HLS media playlist.
    Playlist,
    /// `part-{msn}-{index}.m4s`.
    Part(u64, usize),
    /// `llseg-{msn}.m4s`.
    Segment(u64),
    /// `ll-init-{discontinuity seq}.mp4`.
    Init(u64),
}

fn number<T: std::str::FromStr>(digits: &str) -> Option<T> {
    if digits.is_empty() || digits.len() > 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

impl LlFile {
    /// Parses a file name; `None` for anything else.
    pub fn parse(file: &str) -> Option<Self> {
        match file {
            "ll-index.m3u8" => return Some(Self::Master),
            "ll.m3u8" => return Some(Self::Playlist),
            _ => {}
        }
        if let Some(rest) = file
            .strip_prefix("part-")
            .and_then(|r| r.strip_suffix(".m4s"))
        {
            let (msn, index) = rest.split_once('-')?;
            return Some(Self::Part(number(msn)?, number(index)?));
        }
        if let Some(msn) = file
            .strip_prefix("llseg-")
            .and_then(|r| r.strip_suffix(".m4s"))
        {
            return number(msn).map(Self::Segment);
        }
        let seq = file.strip_prefix("ll-init-")?.strip_suffix(".mp4")?;
        number(seq).map(Self::Init)
    }
}

/// The blocking-reload and delta-update directives of a playlist request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Directives {
    /// `_HLS_msn`.
    pub msn: Option<u64>,
    /// `_HLS_part` (only with `_HLS_msn`).
    pub part: Option<usize>,
    /// `_HLS_skip=YES` or `v2`.
    pub skip: bool,
}

impl Directives {
    /// Parses the query; unknown parameters are ignored.
    ///
    /// # Errors
    /// [`ApiError::BadRequest`] for a malformed number, or `_HLS_part` without
    /// `_HLS_msn` (the draft makes that a 400).
    pub fn parse(query: Option<&str>) -> Result<Self, ApiError> {
        let mut d = Self::default();
        for pair in query.unwrap_or("").split('&') {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "_HLS_msn" => d.msn = Some(number(value).ok_or(ApiError::BadRequest)?),
                "_HLS_part" => d.part = Some(number(value).ok_or(ApiError::BadRequest)?),
                "_HLS_skip" => d.skip = value == "YES" || value == "v2",
                _ => {}
            }
        }
        if d.part.is_some() && d.msn.is_none() {
            return Err(ApiError::BadRequest);
        }
        Ok(d)
    }
}

/// What a blocked request is answered with when its part does not come in time.
fn timed_out() -> Response {
    let body = r#"{"code":503,"message":"the requested part did not appear in time"}"#;
    let mut response = (StatusCode::SERVICE_UNAVAILABLE, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// Waits until the playlist lists (`msn`, `part`); false after 3 target durations.
/// A waiting request holds only a watch receiver.
async fn wait_for(ll: &LlChannel, msn: u64, part: Option<usize>) -> bool {
    let mut updates = ll.subscribe();
    if updates.borrow().satisfies(msn, part) {
        return true;
    }
    let limit = Duration::from_millis(ll.settings().target_ms.saturating_mul(3).max(1000));
    ll.counters.blocked.fetch_add(1, Ordering::Relaxed);
    let waited = tokio::time::timeout(
        limit,
        updates.wait_for(|p: &Position| p.satisfies(msn, part)),
    )
    .await;
    ll.counters.blocked.fetch_sub(1, Ordering::Relaxed);
    matches!(waited, Ok(Ok(_)))
}

/// A request more than two segments past the last complete one: the draft lets the
/// server answer 400 at once.
fn too_far(ll: &LlChannel, msn: u64) -> bool {
    let last = ll.snapshot().position.last_complete.map(|(m, _)| m);
    match last {
        Some(last) => msn > last.saturating_add(2),
        None => ll
            .snapshot()
            .position
            .pending
            .is_some_and(|(p, _)| msn > p.saturating_add(2)),
    }
}

/// Serves one LL-HLS file of `channel`.
pub async fn serve(
    channel: &Channel,
    file: LlFile,
    query: Option<&str>,
    headers: &HeaderMap,
) -> Response {
    let Some(ll) = channel.llhls() else {
        return ApiError::NotFound.into_response();
    };
    match file {
        LlFile::Master => master(channel),
        LlFile::Playlist => {
            let directives = match Directives::parse(query) {
                Ok(d) => d,
                Err(e) => return e.into_response(),
            };
            if let Some(msn) = directives.msn {
                if too_far(ll, msn) {
                    return ApiError::BadRequest.into_response();
                }
                if !wait_for(ll, msn, directives.part).await {
                    return timed_out();
                }
            }
            let snapshot = ll.snapshot();
            if snapshot.full.is_empty() {
                return ApiError::NotStarted.into_response();
            }
            channel
                .counters
                .playlists_served
                .fetch_add(1, Ordering::Relaxed);
            let body = if directives.skip {
                snapshot.delta.clone()
            } else {
                snapshot.full.clone()
            };
            http_util::ok(M3U8, Cache::LivePlaylist, body)
        }
        LlFile::Part(msn, index) => {
            if let Some(bytes) = ll.snapshot().part(msn, index) {
                return media_file(headers, bytes);
            }
            // The preload-hinted part (or one soon after it): wait for it.
            if too_far(ll, msn) || !wait_for(ll, msn, Some(index)).await {
                return ApiError::NotFound.into_response();
            }
            match ll.snapshot().part(msn, index) {
                Some(bytes) => media_file(headers, bytes),
                None => ApiError::NotFound.into_response(),
            }
        }
        LlFile::Segment(msn) => match ll.snapshot().segment(msn) {
            Some(segment) => media_file(headers, segment.bytes.clone()),
            None => ApiError::SegmentGone.into_response(),
        },
        LlFile::Init(seq) => match ll.snapshot().init(seq) {
            Some(bytes) => http_util::ranged(headers, MP4, Cache::Immutable, bytes),
            None => ApiError::NotFound.into_response(),
        },
    }
}

fn media_file(headers: &HeaderMap, bytes: Bytes) -> Response {
    http_util::ranged(headers, MP4, Cache::Immutable, bytes)
}

/// A master playlist with the one LL-HLS variant (what hls.js opens).
fn master(channel: &Channel) -> Response {
    let snapshot = channel.snapshot();
    let (peak, average) = snapshot.bandwidth;
    let tracks = &snapshot.tracks;
    let playlist = MasterPlaylist {
        independent_segments: true,
        variants: vec![Variant {
            uri: "ll.m3u8".into(),
            bandwidth: peak.max(1),
            average_bandwidth: (average > 0).then_some(average),
            codecs: tracks.codecs.clone(),
            resolution: tracks.resolution,
            frame_rate_milli: tracks.frame_rate_milli,
        }],
    };
    http_util::ok(M3U8, Cache::LivePlaylist, Bytes::from(playlist.render()))
}

#[cfg(test)]
mod tests {
    use super::{Directives, LlFile};

    #[test]
    fn file_names() {
        assert_eq!(LlFile::parse("ll.m3u8"), Some(LlFile::Playlist));
        assert_eq!(LlFile::parse("ll-index.m3u8"), Some(LlFile::Master));
        assert_eq!(LlFile::parse("part-12-3.m4s"), Some(LlFile::Part(12, 3)));
        assert_eq!(LlFile::parse("llseg-12.m4s"), Some(LlFile::Segment(12)));
        assert_eq!(LlFile::parse("ll-init-2.mp4"), Some(LlFile::Init(2)));
        for bad in [
            "part-12.m4s",
            "part--1.m4s",
            "part-1-+2.m4s",
            "llseg-.m4s",
            "llseg-99999999999999999999.m4s",
            "ll-init-x.mp4",
            "ll.m3u",
        ] {
            assert_eq!(LlFile::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn directives() {
        assert_eq!(Directives::parse(None), Ok(Directives::default()));
        assert_eq!(
            Directives::parse(Some("_HLS_msn=5&_HLS_part=2&_HLS_skip=YES&x=1")),
            Ok(Directives {
                msn: Some(5),
                part: Some(2),
                skip: true
            })
        );
        assert!(Directives::parse(Some("_HLS_skip=v2")).is_ok_and(|d| d.skip));
        assert!(Directives::parse(Some("_HLS_skip=NO")).is_ok_and(|d| !d.skip));
        assert!(Directives::parse(Some("_HLS_part=1")).is_err());
        assert!(Directives::parse(Some("_HLS_msn=-1")).is_err());
        assert!(Directives::parse(Some("_HLS_msn=1&_HLS_part=x")).is_err());
    }
}
