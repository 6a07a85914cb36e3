//! LL-HLS routes: `/{stream}/ll-index.m3u8` (master), `/{stream}/ll.m3u8` (media
//! playlist with blocking reload and delta updates), `/{stream}/part-{msn}-{i}.m4s`
//! (parts; the preload-hinted one blocks until it exists), `/{stream}/llseg-{msn}.m4s`
//! (complete segments = their parts concatenated) and `/{stream}/ll-init-{seq}.mp4`.

use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use media::hls::{MasterPlaylist, Variant};

use crate::channel::Channel;
use crate::error::ApiError;
use crate::http_util::{self, Cache, M3U8};
use crate::llhls::{LlChannel, Position};
use crate::rendition::Rendition;
use crate::url::{Directives, LlFile};

/// Content type of fMP4 init segments, segments and parts.
pub const MP4: &str = "video/mp4";

/// What a blocked request is answered with when its part does not come in time.
fn timed_out() -> Response {
    crate::error::respond(
        codes::Code::Request(codes::RequestError::PartTimedOut),
        None,
    )
}

/// Waits until the playlist lists (`msn`, `part`); false after 3 target durations.
/// A waiting request holds only a watch receiver.
async fn wait_for(ll: &LlChannel, msn: u64, part: Option<usize>) -> bool {
    let mut updates = ll.subscribe();
    if updates.borrow().satisfies(msn, part) {
        return true;
    }
    let limit = Duration::from_millis(ll.settings().target_ms.saturating_mul(3).max(1000));
    // Counted while it waits, however the wait ends: answered, timed out, or dropped
    // because the viewer went away.
    let _blocked = Blocked::enter(&ll.counters.blocked);
    let waited = tokio::time::timeout(
        limit,
        updates.wait_for(|p: &Position| p.satisfies(msn, part)),
    )
    .await;
    matches!(waited, Ok(Ok(_)))
}

/// One blocked request in `brdyun_llhls_blocked_requests`, until dropped.
struct Blocked<'a>(&'a std::sync::atomic::AtomicU64);

impl<'a> Blocked<'a> {
    fn enter(gauge: &'a std::sync::atomic::AtomicU64) -> Self {
        gauge.fetch_add(1, Ordering::Relaxed);
        Blocked(gauge)
    }
}

impl Drop for Blocked<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
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

/// Serves one LL-HLS file of `channel`'s `rendition`.
pub async fn serve(
    channel: &Channel,
    rendition: &Rendition,
    file: LlFile,
    query: Option<&str>,
    headers: &HeaderMap,
) -> Response {
    let Some(ll) = rendition.llhls() else {
        return ApiError::NotFound.into_response();
    };
    match file {
        LlFile::Master => master(channel),
        LlFile::Playlist => {
            let directives = match Directives::parse(query) {
                Ok(d) => d,
                Err(_) => return ApiError::BadRequest.into_response(),
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
