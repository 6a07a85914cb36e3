//! fMP4 files of a stream, live and from the DVR archive. Per stream:
//!
//! | file | answer |
//! |---|---|
//! | `fmp4-index.m3u8` | live fMP4 HLS master playlist: a package's ladder (each rendition's `fmp4.m3u8`), or the one variant; with backups, pathways and steering for a switching player in an OTT group ([`master`]) |
//! | `fmp4.m3u8` | live fMP4 HLS media playlist (EXT-X-MAP; same MSNs, dates, durations as `mono.m3u8`) |
//! | `fmp4-v.m3u8`, `fmp4-a.m3u8` | the same over the video's files alone, the audio's alone (the variants and the floor of a master with audio languages) |
//! | `index.mpd` | live DASH MPD (dynamic), see [`crate::routes::dash`] |
//! | `init-{d}.mp4`, `init-{d}-v.mp4`, `init-{d}-a.mp4` | init segment of discontinuity sequence `d`: muxed, video, audio |
//! | `seg-{msn}.m4s`, `seg-{msn}-v.m4s`, `seg-{msn}-a.m4s` | fMP4 segment: muxed (HLS), video or audio (DASH) |
//! | `fmp4-{from}-{duration}.m3u8` | DVR: VOD fMP4 HLS playlist of a period |
//! | `index-{from}-{duration}.mpd` | DVR: static MPD of a period |
//! | `dvr-init-{msn}[-v\|-a].mp4`, `dvr-{msn}[-v\|-a].m4s` | DVR: init of the run of `msn`, archived segment `msn`, in fMP4 |
//!
//! `from` and `duration` follow the TS archive routes (Unix seconds; 1 to 86,400 s).

use std::sync::atomic::Ordering;

use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use dvr::ArchiveReader;

use crate::error::ApiError;
use crate::http::http_util::{self, Cache, M3U8};
use crate::routes::dash;
use crate::stream::package::Package;
use crate::stream::rendition::Rendition;
use crate::url::{period_ms, Fmp4File};
use packaging::archive::fmp4 as archive;

/// Content type of fMP4 init and media segments.
pub const VIDEO_MP4: &str = "video/mp4";

fn media(headers: &HeaderMap, body: Option<Bytes>) -> Response {
    match body {
        Some(body) => http_util::ranged(headers, VIDEO_MP4, Cache::Immutable, body),
        None => ApiError::NotFound.into_response(),
    }
}

/// Answers an fMP4 request for `channel`'s stream: live files from `rendition`'s
/// window, archive files from `rendition`'s archive (the master is [`master`]). The static catch-up MPD reads a
/// segment per run: an archive scan under the node's cap (`scans`).
pub async fn serve(
    channel: &Package,
    rendition: &Rendition,
    file: Fmp4File,
    headers: &HeaderMap,
    scans: &crate::stream::archive_scans::ArchiveScans,
) -> Response {
    let counters = &channel.counters;
    if file.is_archive() {
        return serve_archive(channel, rendition, file, headers, scans).await;
    }
    let window = rendition.snapshot();
    if window.fmp4_segments().next().is_none() {
        return channel.no_media_error().into_response();
    }
    match file {
        Fmp4File::Playlist(track) => {
            counters.playlists_served.fetch_add(1, Ordering::Relaxed);
            http_util::manifest(
                M3U8,
                Cache::LivePlaylist,
                packaging::fmp4::playlist::of_track(&window, track),
            )
        }
        Fmp4File::Mpd => {
            counters.playlists_served.fetch_add(1, Ordering::Relaxed);
            dash::mpd_response(Cache::LivePlaylist, channel.mpd().plain)
        }
        Fmp4File::Init {
            discontinuity_seq,
            track,
        } => media(
            headers,
            window
                .fmp4_init(discontinuity_seq)
                .and_then(|i| i.bytes(track)),
        ),
        Fmp4File::Segment { msn, track } => match window.segment(msn) {
            Some(segment) => {
                counters.segments_served.fetch_add(1, Ordering::Relaxed);
                media(headers, segment.fmp4_bytes(track))
            }
            None => ApiError::SegmentGone.into_response(),
        },
        _ => ApiError::NotFound.into_response(),
    }
}

/// The live fMP4 HLS master (`fmp4-index.m3u8`) for this viewer: protected like the TS
/// and LL-HLS masters (OTT-PROT-1) — backup variants at up to two other nodes of the
/// stream's OTT group with their passes, a pathway per node and content steering — for
/// a player that switches; a login's query on every variant (OTT-GRP-6). Backups must
/// package fMP4 (the protocol counted with LL-HLS: same container).
pub fn master(
    state: &crate::state::AppState,
    channel: &Package,
    stream: &str,
    arrival: &crate::http::request_context::Arrival,
    login: Option<&str>,
) -> Response {
    if channel.main().snapshot().fmp4_segments().next().is_none() {
        return channel.no_media_error().into_response();
    }
    channel
        .counters
        .playlists_served
        .fetch_add(1, Ordering::Relaxed);
    let master = channel.fmp4_master();
    match crate::redundancy::master::personalised(
        state.redundancy().map(|r| &**r),
        stream,
        &master,
        arrival,
        login,
        ott::Protocol::LlHls,
    ) {
        // Per viewer (its backups and passes): never cached by a proxy.
        Some(body) => http_util::manifest(M3U8, Cache::NoStore, body),
        None => http_util::manifest(M3U8, Cache::LivePlaylist, master.plain),
    }
}

async fn serve_archive(
    channel: &Package,
    rendition: &Rendition,
    file: Fmp4File,
    headers: &HeaderMap,
    scans: &crate::stream::archive_scans::ArchiveScans,
) -> Response {
    let Some(recorder) = rendition.archive() else {
        return ApiError::NotFound.into_response();
    };
    // A package's recorded rungs are Representations of the same periods, its recorded
    // languages adaptation sets of them.
    let tracks = || archive::ArchivedTracks {
        rungs: channel
            .listed()
            .filter(|r| r.name() != crate::stream::rendition::MAIN)
            .filter_map(|r| {
                r.archive().map(|recorder| archive::ArchivedRung {
                    name: r.name().to_owned(),
                    reader: std::sync::Arc::new(recorder.reader().clone()),
                })
            })
            .collect(),
        languages: channel
            .languages()
            .map(|(floor, others)| archive::ArchivedLanguages {
                floor: floor.clone(),
                others: others
                    .into_iter()
                    .enumerate()
                    .filter_map(|(order, (language, rendition))| {
                        rendition
                            .archive()
                            .map(|recorder| archive::ArchivedLanguage {
                                language: language.clone(),
                                order,
                                reader: std::sync::Arc::new(recorder.reader().clone()),
                            })
                    })
                    .collect(),
            }),
    };
    let archived = Archived {
        stream: channel.name(),
        reader: recorder.reader().clone(),
        part_ticks: rendition.fmp4_part_ticks(),
    };
    serve_archived(archived, tracks, file, headers, scans).await
}

/// One rendition's archive, as the fMP4 catch-up files read it.
#[derive(Debug)]
pub struct Archived<'a> {
    /// The stream's name (for the log).
    pub stream: &'a str,
    /// The rendition's archive.
    pub reader: ArchiveReader,
    /// The part grid its archived fMP4 segments are cut at (the live one's), if any.
    pub part_ticks: Option<u64>,
}

/// Answers an fMP4 catch-up file from `archived`; `tracks` are the other recorded
/// renditions of the stream (rungs and languages), listed in a static MPD. The MPD reads a segment per run:
/// an archive scan under the node's cap (`scans`).
pub async fn serve_archived(
    archived: Archived<'_>,
    tracks: impl FnOnce() -> archive::ArchivedTracks,
    file: Fmp4File,
    headers: &HeaderMap,
    scans: &crate::stream::archive_scans::ArchiveScans,
) -> Response {
    let Archived {
        stream,
        reader,
        part_ticks,
    } = archived;
    let name = stream;
    let stream = stream.to_owned();
    let file = match file {
        // The whole recording's MPD is the period's it covers.
        Fmp4File::RecordingMpd => match crate::routes::archive::whole_period(&reader) {
            Some((from_secs, duration_secs)) => Fmp4File::ArchiveMpd {
                from_secs,
                duration_secs,
            },
            None => return ApiError::NotFound.into_response(),
        },
        file => file,
    };
    let blocking = |job: Box<
        dyn FnOnce() -> Result<Option<Bytes>, archive::ArchiveFmp4Error> + Send,
    >| async move {
        match tokio::task::spawn_blocking(job).await {
            Ok(Ok(body)) => body,
            Ok(Err(error)) => {
                tracing::warn!(%stream, %error, "fmp4 from the archive failed");
                None
            }
            Err(_) => None,
        }
    };
    match file {
        Fmp4File::Malformed => ApiError::BadRequest.into_response(),
        Fmp4File::ArchivePlaylist {
            from_secs,
            duration_secs,
        } => {
            let (from_ms, to_ms) = period_ms(from_secs, duration_secs);
            let playlist = reader.with_index(|index| {
                let slice = index.query(from_ms, to_ms);
                (!slice.entries.is_empty()).then(|| archive::vod_playlist(slice))
            });
            match playlist {
                Some(playlist) => http_util::manifest(M3U8, Cache::LivePlaylist, playlist),
                None => ApiError::NotFound.into_response(),
            }
        }
        Fmp4File::ArchiveMpd {
            from_secs,
            duration_secs,
        } => {
            let (from_ms, to_ms) = period_ms(from_secs, duration_secs);
            let entries = reader.with_index(|i| i.query(from_ms, to_ms).entries.to_vec());
            if entries.is_empty() {
                return ApiError::NotFound.into_response();
            }
            let Some(permit) = scans.try_start() else {
                return crate::stream::archive_scans::busy_response();
            };
            let for_job = reader.clone();
            let tracks = tracks();
            let job = move || {
                let _permit = permit;
                archive::static_mpd(&for_job, &entries, &tracks)
            };
            match tokio::task::spawn_blocking(job).await {
                Ok(Ok(mpd)) => dash::mpd_response(Cache::LivePlaylist, mpd),
                Ok(Err(error)) => {
                    tracing::warn!(stream = %name, %error, "fmp4 from the archive failed");
                    ApiError::NotFound.into_response()
                }
                Err(_) => ApiError::NotFound.into_response(),
            }
        }
        Fmp4File::ArchiveInit { msn, track } => {
            let body = blocking(Box::new(move || archive::init(&reader, msn, track))).await;
            media(headers, body)
        }
        Fmp4File::ArchiveSegment { msn, track } => {
            let body = blocking(Box::new(move || {
                archive::segment(&reader, msn, track, part_ticks)
            }))
            .await;
            media(headers, body)
        }
        _ => ApiError::NotFound.into_response(),
    }
}
