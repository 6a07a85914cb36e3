//! Every file of a stream once the entry's checks have passed ([`serve`], called by
//! [`crate::routes::stream`]), of the stream's muxed rendition or of one rung of its
//! ladder. Live HLS is answered here: `/{stream}/index.m3u8` (master),
//! `/{stream}/mono.m3u8` (media playlist), `/{stream}/seg-{msn}.ts` (segments) and
//! `/{stream}/mpegts` (the relay); the archive, LL-HLS, fMP4 and DASH, and subtitle
//! files go to their modules ([`crate::routes::archive`], [`crate::routes::llhls`],
//! [`crate::routes::fmp4`], [`crate::routes::dash`], [`crate::routes::subtitles`]).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::extract::Request;
use axum::response::IntoResponse;

use crate::error::ApiError;
use crate::http::http_util::{self, Cache, M3U8, MPEG_TS};
use crate::http::request_context::Arrival;
use crate::routes::answer::Answer;
use crate::routes::relay;
use crate::state::AppState;
use crate::stream::rendition::MAIN;
use crate::url::{relay_query, StreamFile};

/// Serves every per-stream file: of the stream's muxed rendition (`/{stream}/{file}`)
/// or, with `rung`, of one rung of its ladder (`/{stream}/{rung}/{file}`: the live
/// playlists, segments, parts and relay, and the rung's archive; the master playlists
/// and MPDs are the stream's). The request is taken whole (not as extracted headers and
/// query) so the hot path copies nothing from it. Playlists, segments and MPDs are
/// answered at once; parts, fMP4 files, archives and captions wait ([`Answer`]).
pub fn serve(
    state: &AppState,
    stream: &str,
    rung: Option<&str>,
    file: &str,
    arrival: Arrival,
) -> Answer {
    let Some(channel) = state.channel(stream) else {
        return ApiError::StreamNotFound.into_response().into();
    };
    let Some(kind) = arrival.stream_file(file) else {
        return ApiError::NotFound.into_response().into();
    };
    let rendition = match rung {
        None => Arc::clone(channel.main()),
        Some(name) => match channel.rendition(name) {
            Some(r) if name != MAIN && kind.is_rendition_file() => Arc::clone(r),
            _ => return ApiError::NotFound.into_response().into(),
        },
    };
    let snapshot = rendition.snapshot();
    if snapshot.segments.is_empty() && !kind.is_archive() {
        return channel.no_media_error().into_response().into();
    }
    let response = match kind {
        StreamFile::Master => {
            channel
                .counters
                .playlists_served
                .fetch_add(1, Ordering::Relaxed);
            // A login (admitted by the gate before this) travels on to every variant.
            let login = login_query(state, &arrival.request);
            let master = channel.master_playlist();
            let with_backups = crate::redundancy::master::personalised(
                state.redundancy().map(|r| &**r),
                stream,
                &master,
                &arrival,
                login.as_deref(),
                ott::Protocol::Hls,
            );
            match with_backups {
                // Per viewer (its backups and passes): never cached by a proxy.
                Some(body) => http_util::manifest(M3U8, Cache::NoStore, body),
                None => http_util::manifest(M3U8, Cache::LivePlaylist, master.plain),
            }
        }
        StreamFile::Media => {
            channel
                .counters
                .playlists_served
                .fetch_add(1, Ordering::Relaxed);
            http_util::manifest(M3U8, Cache::LivePlaylist, snapshot.media_playlist.clone())
        }
        StreamFile::Segment(msn) => match snapshot.segment(msn) {
            Some(segment) => {
                channel
                    .counters
                    .segments_served
                    .fetch_add(1, Ordering::Relaxed);
                http_util::ranged(
                    arrival.request.headers(),
                    MPEG_TS,
                    Cache::Immutable,
                    segment.data.clone(),
                )
            }
            None => ApiError::SegmentGone.into_response(),
        },
        StreamFile::MpegTs => match relay_query(arrival.request.uri().query()) {
            Ok(q) => relay::serve(rendition, q.start, q.live),
            Err(_) => ApiError::BadRequest.into_response(),
        },
        StreamFile::Archive(archive) => {
            let clock = state.clock().clone();
            let scans = state.archive_scans().clone();
            return Answer::later(async move {
                crate::routes::archive::serve(
                    &channel,
                    &rendition,
                    archive,
                    arrival.request.headers(),
                    &clock,
                    &scans,
                )
                .await
            });
        }
        StreamFile::LowLatency(crate::url::LlFile::Master)
            if rung.is_none() && rendition.llhls().is_some() =>
        {
            let login = login_query(state, &arrival.request);
            let master = crate::routes::llhls::master_body(&channel);
            match crate::redundancy::master::personalised(
                state.redundancy().map(|r| &**r),
                stream,
                &master,
                &arrival,
                login.as_deref(),
                ott::Protocol::LlHls,
            ) {
                Some(body) => http_util::manifest(M3U8, Cache::NoStore, body),
                None => http_util::manifest(M3U8, Cache::LivePlaylist, master.plain),
            }
        }
        StreamFile::LowLatency(file) => {
            return Answer::later(async move {
                crate::routes::llhls::serve(
                    &channel,
                    &rendition,
                    file,
                    arrival.request.uri().query(),
                    arrival.request.headers(),
                )
                .await
            });
        }
        StreamFile::Fmp4(crate::url::Fmp4File::Mpd) if rung.is_none() => {
            channel
                .counters
                .playlists_served
                .fetch_add(1, Ordering::Relaxed);
            let login = login_query(state, &arrival.request);
            let mpd = channel.mpd();
            if mpd.plain.bytes.is_empty() {
                return channel.no_media_error().into_response().into();
            }
            match crate::redundancy::mpd::personalised(
                state.redundancy().map(|r| &**r),
                stream,
                &mpd,
                &arrival,
                login.as_deref(),
            ) {
                Some(body) => crate::routes::dash::mpd_response(Cache::NoStore, body),
                None => crate::routes::dash::mpd_response(Cache::LivePlaylist, mpd.plain),
            }
        }
        StreamFile::Fmp4(crate::url::Fmp4File::Master) if rung.is_none() => {
            let login = login_query(state, &arrival.request);
            crate::routes::fmp4::master(state, &channel, stream, &arrival, login.as_deref())
        }
        StreamFile::Fmp4(file) => {
            let scans = state.archive_scans().clone();
            return Answer::later(async move {
                let headers = arrival.request.headers();
                crate::routes::fmp4::serve(&channel, &rendition, file, headers, &scans).await
            });
        }
        StreamFile::Subtitles(file) => {
            let scans = state.archive_scans().clone();
            return Answer::later(async move {
                crate::routes::subtitles::serve(&channel, file, &scans).await
            });
        }
    };
    Answer::Now(response)
}

/// The login a viewer came with (admitted by the gate before this), as the query every
/// URI of its master playlist or MPD carries on (OTT-GRP-6).
fn login_query(state: &AppState, request: &Request) -> Option<String> {
    state
        .logins()
        .and(crate::access::logins::credentials(request.uri().query()))
        .map(|(login, token)| format!("login={login}&token={token}"))
}
