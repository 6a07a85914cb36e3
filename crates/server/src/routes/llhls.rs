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
use media::manifest::Manifest;

use crate::error::ApiError;
use crate::http::http_util::{self, Cache, M3U8};
use crate::stream::llhls::{LlChannel, Position};
use crate::stream::package::Package;
use crate::stream::rendition::Rendition;
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
    channel: &Package,
    rendition: &Rendition,
    file: LlFile,
    query: Option<&str>,
    headers: &HeaderMap,
) -> Response {
    let Some(ll) = rendition.llhls() else {
        return ApiError::NotFound.into_response();
    };
    match file {
        LlFile::Master => {
            http_util::manifest(M3U8, Cache::LivePlaylist, master_body(channel).plain)
        }
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
            if snapshot.full.bytes.is_empty() {
                return channel.no_media_error().into_response();
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
            let body = if channel.is_package() {
                with_rendition_reports(body, channel, rendition)
            } else {
                body
            };
            http_util::manifest(M3U8, Cache::LivePlaylist, body)
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

/// Where an LL-HLS playlist ends, for a sibling's EXT-X-RENDITION-REPORT: its last
/// segment (the one being cut, once it has a part) and that segment's last part.
fn last_listed(position: Position) -> Option<(u64, Option<usize>)> {
    match position.pending {
        Some((msn, parts)) if parts > 0 => Some((msn, Some(parts - 1))),
        _ => position
            .last_complete
            .map(|(msn, parts)| (msn, parts.checked_sub(1))),
    }
}

/// `body` (one rendition's LL-HLS playlist of a package) with an EXT-X-RENDITION-REPORT
/// for every other rendition the LL-HLS master offers, as current as this answer, so a
/// player switching rungs asks the sibling for the right segment and part at once.
fn with_rendition_reports(body: Manifest, channel: &Package, rendition: &Rendition) -> Manifest {
    let from_rung = rendition.name() != crate::stream::rendition::MAIN;
    let mut reports = Vec::new();
    for sibling in channel.listed() {
        if std::ptr::eq(&**sibling, rendition)
            || !packaging::render::offered(sibling.name(), &sibling.snapshot())
        {
            continue;
        }
        let Some((last_msn, last_part)) = sibling
            .llhls()
            .and_then(|ll| last_listed(ll.snapshot().position))
        else {
            continue;
        };
        let uri = match (from_rung, sibling.name() == crate::stream::rendition::MAIN) {
            (false, _) => format!("{}/ll.m3u8", sibling.name()),
            (true, true) => "../ll.m3u8".to_owned(),
            (true, false) => format!("../{}/ll.m3u8", sibling.name()),
        };
        reports.push(media::hls::RenditionReport {
            uri,
            last_msn,
            last_part,
        });
    }
    if reports.is_empty() {
        return body;
    }
    body.extended(|text| reports.iter().try_for_each(|r| r.write_to(text)))
}

/// The LL-HLS master playlist: the one variant of a stream, or a package's ladder
/// (every offered rendition that has LL-HLS, at its `ll.m3u8`), which hls.js opens. A
/// switching player gets it with its backups as pathways
/// ([`crate::redundancy::master::personalised`]).
pub fn master_body(channel: &Package) -> packaging::render::Master {
    if channel.is_package() {
        let renditions: Vec<_> = channel
            .listed()
            .filter(|r| r.llhls().is_some())
            .map(|r| (r.name(), r.snapshot()))
            .collect();
        // Languages have no LL-HLS rendition: the LL-HLS master offers the floor alone.
        return packaging::render::package_master(&renditions, Vec::new(), "ll.m3u8");
    }
    let snapshot = channel.snapshot();
    let (peak, average) = snapshot.bandwidth;
    let tracks = &snapshot.tracks;
    let (subtitles, closed_captions) = packaging::captions::serve::master_media(&snapshot);
    let playlist = MasterPlaylist {
        audio: Vec::new(),
        independent_segments: true,
        subtitles,
        closed_captions,
        variants: vec![Variant {
            uri: "ll.m3u8".into(),
            bandwidth: peak.max(1),
            average_bandwidth: (average > 0).then_some(average),
            codecs: tracks.codecs.clone(),
            resolution: tracks.resolution,
            frame_rate_milli: tracks.frame_rate_milli,
        }],
    };
    packaging::render::Master::new(playlist)
}
