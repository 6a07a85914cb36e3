//! Live HLS: `/{stream}/index.m3u8` (master), `/{stream}/mono.m3u8` (media playlist),
//! `/{stream}/seg-{msn}.ts` (segments) and `/{stream}/mpegts` (the relay).

use std::sync::atomic::Ordering;

use axum::extract::{Path, Request, State};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::http_util::{self, Cache, M3U8, MPEG_TS};
use crate::routes::relay;
use crate::state::AppState;

/// The files a stream serves, parsed from the last path segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamFile {
    /// `index.m3u8`: the master playlist.
    Master,
    /// `mono.m3u8`: the live media playlist.
    Media,
    /// `seg-{msn}.ts`: one segment.
    Segment(u64),
    /// `mpegts`: the continuous MPEG-TS relay.
    MpegTs,
    /// A catch-up file from the DVR archive (`index-{from}-{duration}.m3u8`, …).
    Archive(crate::routes::archive::ArchiveRequest),
    /// An fMP4 HLS or DASH file, live or from the archive (`index.mpd`, `seg-{msn}.m4s`, …).
    Fmp4(crate::routes::fmp4::Fmp4File),
    /// An LL-HLS file (`ll.m3u8`, `part-{msn}-{i}.m4s`, …).
    LowLatency(crate::routes::llhls::LlFile),
}

impl StreamFile {
    /// A live playlist or manifest a viewer opens and reloads (HLS, fMP4 HLS, DASH,
    /// LL-HLS): where viewers are admitted and counted.
    pub fn is_viewer_playlist(&self) -> bool {
        use crate::routes::llhls::LlFile;
        match self {
            Self::Master | Self::Media => true,
            Self::Fmp4(file) => file.is_live_manifest(),
            Self::LowLatency(file) => matches!(file, LlFile::Master | LlFile::Playlist),
            _ => false,
        }
    }

    /// Parses a file name; `None` for anything this node does not serve.
    pub fn parse(file: &str) -> Option<Self> {
        match file {
            "index.m3u8" => Some(Self::Master),
            "mono.m3u8" => Some(Self::Media),
            "mpegts" => Some(Self::MpegTs),
            _ => {
                if let Some(fmp4) = crate::routes::fmp4::Fmp4File::parse(file) {
                    return Some(Self::Fmp4(fmp4));
                }
                if let Some(archive) = crate::routes::archive::ArchiveRequest::parse(file) {
                    return Some(Self::Archive(archive));
                }
                if let Some(ll) = crate::routes::llhls::LlFile::parse(file) {
                    return Some(Self::LowLatency(ll));
                }
                let digits = file.strip_prefix("seg-")?.strip_suffix(".ts")?;
                if digits.is_empty()
                    || digits.len() > 20
                    || !digits.bytes().all(|b| b.is_ascii_digit())
                {
                    return None;
                }
                digits.parse().ok().map(Self::Segment)
            }
        }
    }
}

/// The segment URI used inside media playlists (relative to the playlist).
pub fn segment_uri(msn: u64) -> String {
    format!("seg-{msn}.ts")
}

/// The relay's `msn=N` query parameter: where to start (clamped into the window);
/// without it, the oldest segment, so a pulling node gets the whole window at once.
pub fn relay_start(query: Option<&str>) -> Result<Option<u64>, ApiError> {
    let Some(query) = query else { return Ok(None) };
    for pair in query.split('&') {
        if let Some(value) = pair.strip_prefix("msn=") {
            return value.parse().map(Some).map_err(|_| ApiError::BadRequest);
        }
    }
    Ok(None)
}

/// Serves every per-stream file. The request is taken whole (not as extracted headers
/// and query) so the hot path copies nothing from it.
pub async fn stream_file(
    State(state): State<AppState>,
    Path((stream, file)): Path<(String, String)>,
    request: Request,
) -> Response {
    let Some(channel) = state.channel(&stream) else {
        return ApiError::StreamNotFound.into_response();
    };
    let Some(kind) = StreamFile::parse(&file) else {
        return ApiError::NotFound.into_response();
    };
    let snapshot = channel.snapshot();
    let from_archive = match kind {
        StreamFile::Archive(_) => true,
        StreamFile::Fmp4(file) => file.is_archive(),
        _ => false,
    };
    if snapshot.segments.is_empty() && !from_archive {
        return ApiError::NotStarted.into_response();
    }
    match kind {
        StreamFile::Master => {
            channel
                .counters
                .playlists_served
                .fetch_add(1, Ordering::Relaxed);
            // A login (admitted by the gate before this) travels on to every variant.
            let login = state
                .logins()
                .and(crate::logins::credentials(request.uri().query()))
                .map(|(login, token)| format!("login={login}&token={token}"));
            let with_backups = crate::redundancy::master::personalised(
                state.redundancy().map(|r| &**r),
                &stream,
                &snapshot,
                &request,
                login.as_deref(),
            );
            match with_backups {
                // Per viewer (its backups and passes): never cached by a proxy.
                Some(body) => http_util::ok(M3U8, Cache::NoStore, body),
                None => http_util::ok(M3U8, Cache::LivePlaylist, snapshot.master_playlist.clone()),
            }
        }
        StreamFile::Media => {
            channel
                .counters
                .playlists_served
                .fetch_add(1, Ordering::Relaxed);
            http_util::ok(M3U8, Cache::LivePlaylist, snapshot.media_playlist.clone())
        }
        StreamFile::Segment(msn) => match snapshot.segment(msn) {
            Some(segment) => {
                channel
                    .counters
                    .segments_served
                    .fetch_add(1, Ordering::Relaxed);
                http_util::ranged(
                    request.headers(),
                    MPEG_TS,
                    Cache::Immutable,
                    segment.data.clone(),
                )
            }
            None => ApiError::SegmentGone.into_response(),
        },
        StreamFile::MpegTs => match relay_start(request.uri().query()) {
            Ok(start) => relay::serve(channel, start),
            Err(error) => error.into_response(),
        },
        StreamFile::Archive(archive) => {
            crate::routes::archive::serve(&channel, archive, request.headers()).await
        }
        StreamFile::LowLatency(file) => {
            crate::routes::llhls::serve(&channel, file, request.uri().query(), request.headers())
                .await
        }
        StreamFile::Fmp4(file) => {
            crate::routes::fmp4::serve(&channel, file, request.headers()).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::StreamFile;

    #[test]
    fn relay_query() {
        use super::relay_start;
        assert_eq!(relay_start(None), Ok(None));
        assert_eq!(relay_start(Some("a=1&msn=42")), Ok(Some(42)));
        assert_eq!(relay_start(Some("x=1")), Ok(None));
        assert!(relay_start(Some("msn=-1")).is_err());
        assert!(relay_start(Some("msn=99999999999999999999999")).is_err());
    }

    #[test]
    fn file_names() {
        assert_eq!(StreamFile::parse("index.m3u8"), Some(StreamFile::Master));
        assert_eq!(StreamFile::parse("mono.m3u8"), Some(StreamFile::Media));
        assert_eq!(StreamFile::parse("mpegts"), Some(StreamFile::MpegTs));
        assert_eq!(
            StreamFile::parse("seg-42.ts"),
            Some(StreamFile::Segment(42))
        );
        assert_eq!(StreamFile::parse("seg-.ts"), None);
        assert_eq!(StreamFile::parse("seg-+4.ts"), None);
        assert_eq!(StreamFile::parse("seg-99999999999999999999.ts"), None);
        assert_eq!(StreamFile::parse("../etc/passwd"), None);
    }
}
