//! fMP4 files of a stream (issue 7), live and from the DVR archive. Per stream:
//!
//! | file | answer |
//! |---|---|
//! | `fmp4.m3u8` | live fMP4 HLS media playlist (EXT-X-MAP; same MSNs, dates, durations as `mono.m3u8`) |
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

use crate::channel::Channel;
use crate::error::ApiError;
use crate::fmp4::{archive, Track};
use crate::http_util::{self, Cache, M3U8};
use crate::routes::archive::ArchiveRequest;
use crate::routes::dash;

/// Content type of fMP4 init and media segments.
pub const VIDEO_MP4: &str = "video/mp4";

/// An fMP4 file name, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fmp4File {
    /// `fmp4.m3u8`.
    Playlist,
    /// `index.mpd`.
    Mpd,
    /// `init-{d}[-v|-a].mp4`.
    Init {
        /// Discontinuity sequence.
        discontinuity_seq: u64,
        /// Which tracks.
        track: Track,
    },
    /// `seg-{msn}[-v|-a].m4s`.
    Segment {
        /// Media sequence number.
        msn: u64,
        /// Which tracks.
        track: Track,
    },
    /// `fmp4-{from}-{duration}.m3u8`.
    ArchivePlaylist {
        /// Start, Unix seconds.
        from_secs: i64,
        /// Length, seconds.
        duration_secs: u32,
    },
    /// `index-{from}-{duration}.mpd`.
    ArchiveMpd {
        /// Start, Unix seconds.
        from_secs: i64,
        /// Length, seconds.
        duration_secs: u32,
    },
    /// `dvr-init-{msn}[-v|-a].mp4`.
    ArchiveInit {
        /// An archived segment of the run.
        msn: u64,
        /// Which tracks.
        track: Track,
    },
    /// `dvr-{msn}[-v|-a].m4s`.
    ArchiveSegment {
        /// The archived segment.
        msn: u64,
        /// Which tracks.
        track: Track,
    },
    /// An archive name with a malformed number (400).
    Malformed,
}

/// Unsigned decimal of 1 to 20 digits, no sign.
fn msn(text: &str) -> Option<u64> {
    if text.is_empty() || text.len() > 20 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// `{number}{-v|-a|}` → number and track.
fn numbered(text: &str) -> Option<(u64, Track)> {
    let (digits, track) = if let Some(d) = text.strip_suffix("-v") {
        (d, Track::Video)
    } else if let Some(d) = text.strip_suffix("-a") {
        (d, Track::Audio)
    } else {
        (text, Track::Muxed)
    };
    Some((msn(digits)?, track))
}

/// A period name `{from}-{duration}` validated as the TS archive validates it.
fn period(rest: &str) -> Option<(i64, u32)> {
    match ArchiveRequest::parse(&format!("index-{rest}.m3u8")) {
        Some(ArchiveRequest::Period {
            from_secs,
            duration_secs,
        }) => Some((from_secs, duration_secs)),
        _ => None,
    }
}

impl Fmp4File {
    /// Parses a file name; `None` when it is not an fMP4 name at all.
    pub fn parse(file: &str) -> Option<Self> {
        match file {
            "fmp4.m3u8" => return Some(Self::Playlist),
            "index.mpd" => return Some(Self::Mpd),
            _ => {}
        }
        if let Some(rest) = file
            .strip_prefix("dvr-init-")
            .and_then(|r| r.strip_suffix(".mp4"))
        {
            return Some(numbered(rest).map_or(Self::Malformed, |(msn, track)| {
                Self::ArchiveInit { msn, track }
            }));
        }
        if let Some(rest) = file
            .strip_prefix("dvr-")
            .and_then(|r| r.strip_suffix(".m4s"))
        {
            return Some(numbered(rest).map_or(Self::Malformed, |(msn, track)| {
                Self::ArchiveSegment { msn, track }
            }));
        }
        if let Some(rest) = file
            .strip_prefix("fmp4-")
            .and_then(|r| r.strip_suffix(".m3u8"))
        {
            return Some(
                period(rest).map_or(Self::Malformed, |(from_secs, duration_secs)| {
                    Self::ArchivePlaylist {
                        from_secs,
                        duration_secs,
                    }
                }),
            );
        }
        if let Some(rest) = file
            .strip_prefix("index-")
            .and_then(|r| r.strip_suffix(".mpd"))
        {
            return Some(
                period(rest).map_or(Self::Malformed, |(from_secs, duration_secs)| {
                    Self::ArchiveMpd {
                        from_secs,
                        duration_secs,
                    }
                }),
            );
        }
        if let Some(rest) = file
            .strip_prefix("init-")
            .and_then(|r| r.strip_suffix(".mp4"))
        {
            let (discontinuity_seq, track) = numbered(rest)?;
            return Some(Self::Init {
                discontinuity_seq,
                track,
            });
        }
        if let Some(rest) = file
            .strip_prefix("seg-")
            .and_then(|r| r.strip_suffix(".m4s"))
        {
            let (msn, track) = numbered(rest)?;
            return Some(Self::Segment { msn, track });
        }
        None
    }

    /// A live manifest: where a new viewer arrives (the door checks it, OTT-PROT-2).
    pub fn is_live_manifest(self) -> bool {
        matches!(self, Self::Playlist | Self::Mpd)
    }

    /// Served from the archive (answered even before the live window has a segment).
    pub fn is_archive(self) -> bool {
        matches!(
            self,
            Self::ArchivePlaylist { .. }
                | Self::ArchiveMpd { .. }
                | Self::ArchiveInit { .. }
                | Self::ArchiveSegment { .. }
                | Self::Malformed
        )
    }

    /// The catch-up period `[from, to]` (Unix ms) of an archive manifest.
    pub fn archive_period(self) -> Option<(i64, i64)> {
        match self {
            Self::ArchivePlaylist {
                from_secs,
                duration_secs,
            }
            | Self::ArchiveMpd {
                from_secs,
                duration_secs,
            } => Some(crate::routes::archive::period_ms(from_secs, duration_secs)),
            _ => None,
        }
    }

    /// The protocol this file belongs to, for the OTT decisions: DASH for MPDs and
    /// per-track files, fMP4 HLS (counted with LL-HLS: same container) for the rest.
    pub fn protocol(self) -> ott::Protocol {
        match self {
            Self::Mpd | Self::ArchiveMpd { .. } => ott::Protocol::Dash,
            Self::Init { track, .. }
            | Self::Segment { track, .. }
            | Self::ArchiveInit { track, .. }
            | Self::ArchiveSegment { track, .. }
                if track != Track::Muxed =>
            {
                ott::Protocol::Dash
            }
            _ => ott::Protocol::LlHls,
        }
    }
}

fn media(headers: &HeaderMap, body: Option<Bytes>) -> Response {
    match body {
        Some(body) => http_util::ranged(headers, VIDEO_MP4, Cache::Immutable, body),
        None => ApiError::NotFound.into_response(),
    }
}

/// Answers an fMP4 request for `channel`'s stream.
pub async fn serve(channel: &Channel, file: Fmp4File, headers: &HeaderMap) -> Response {
    let counters = &channel.counters;
    if file.is_archive() {
        return serve_archive(channel, file, headers).await;
    }
    let window = channel.fmp4().window();
    if window.segments.is_empty() {
        return ApiError::NotStarted.into_response();
    }
    match file {
        Fmp4File::Playlist => {
            counters.playlists_served.fetch_add(1, Ordering::Relaxed);
            http_util::ok(M3U8, Cache::LivePlaylist, window.playlist.clone())
        }
        Fmp4File::Mpd => {
            counters.playlists_served.fetch_add(1, Ordering::Relaxed);
            dash::mpd_response(Cache::LivePlaylist, window.mpd.clone())
        }
        Fmp4File::Init {
            discontinuity_seq,
            track,
        } => media(
            headers,
            window.init(discontinuity_seq).and_then(|i| i.bytes(track)),
        ),
        Fmp4File::Segment { msn, track } => match window.segment(msn) {
            Some(segment) => {
                counters.segments_served.fetch_add(1, Ordering::Relaxed);
                media(headers, segment.bytes(track))
            }
            None => ApiError::SegmentGone.into_response(),
        },
        _ => ApiError::NotFound.into_response(),
    }
}

async fn serve_archive(channel: &Channel, file: Fmp4File, headers: &HeaderMap) -> Response {
    let Some(recorder) = channel.archive() else {
        return ApiError::NotFound.into_response();
    };
    let reader = recorder.reader().clone();
    let stream = channel.name().to_owned();
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
            let (from_ms, to_ms) = crate::routes::archive::period_ms(from_secs, duration_secs);
            let text = reader.with_index(|index| {
                let slice = index.query(from_ms, to_ms);
                (!slice.entries.is_empty()).then(|| archive::vod_playlist(slice))
            });
            match text {
                Some(text) => http_util::ok(M3U8, Cache::LivePlaylist, Bytes::from(text)),
                None => ApiError::NotFound.into_response(),
            }
        }
        Fmp4File::ArchiveMpd {
            from_secs,
            duration_secs,
        } => {
            let (from_ms, to_ms) = crate::routes::archive::period_ms(from_secs, duration_secs);
            let entries = reader.with_index(|i| i.query(from_ms, to_ms).entries.to_vec());
            if entries.is_empty() {
                return ApiError::NotFound.into_response();
            }
            let for_job = reader.clone();
            let body = blocking(Box::new(move || {
                archive::static_mpd(&for_job, &entries).map(|text| Some(Bytes::from(text)))
            }))
            .await;
            match body {
                Some(body) => dash::mpd_response(Cache::LivePlaylist, body),
                None => ApiError::NotFound.into_response(),
            }
        }
        Fmp4File::ArchiveInit { msn, track } => {
            let body = blocking(Box::new(move || archive::init(&reader, msn, track))).await;
            media(headers, body)
        }
        Fmp4File::ArchiveSegment { msn, track } => {
            let body = blocking(Box::new(move || archive::segment(&reader, msn, track))).await;
            media(headers, body)
        }
        _ => ApiError::NotFound.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::Fmp4File as F;
    use crate::fmp4::Track;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn any_name_parses_without_panic(name in "\\PC{0,40}") {
            let _ = F::parse(&name);
        }

        #[test]
        fn numbered_names_round_trip(n in any::<u64>(), track in 0..3u8) {
            let (suffix, track) = match track {
                0 => ("", Track::Muxed),
                1 => ("-v", Track::Video),
                _ => ("-a", Track::Audio),
            };
            prop_assert_eq!(F::parse(&format!("seg-{n}{suffix}.m4s")), Some(F::Segment { msn: n, track }));
            prop_assert_eq!(
                F::parse(&format!("init-{n}{suffix}.mp4")),
                Some(F::Init { discontinuity_seq: n, track })
            );
            prop_assert_eq!(F::parse(&format!("dvr-{n}{suffix}.m4s")), Some(F::ArchiveSegment { msn: n, track }));
            prop_assert_eq!(F::parse(&format!("dvr-init-{n}{suffix}.mp4")), Some(F::ArchiveInit { msn: n, track }));
        }
    }

    #[test]
    fn names() {
        assert_eq!(F::parse("fmp4.m3u8"), Some(F::Playlist));
        assert_eq!(F::parse("index.mpd"), Some(F::Mpd));
        assert_eq!(
            F::parse("init-3.mp4"),
            Some(F::Init {
                discontinuity_seq: 3,
                track: Track::Muxed
            })
        );
        assert_eq!(
            F::parse("seg-42-v.m4s"),
            Some(F::Segment {
                msn: 42,
                track: Track::Video
            })
        );
        assert_eq!(
            F::parse("seg-42-a.m4s"),
            Some(F::Segment {
                msn: 42,
                track: Track::Audio
            })
        );
        assert_eq!(
            F::parse("index-1700000000-3600.mpd"),
            Some(F::ArchiveMpd {
                from_secs: 1_700_000_000,
                duration_secs: 3600
            })
        );
        assert_eq!(
            F::parse("fmp4-1700000000-30.m3u8"),
            Some(F::ArchivePlaylist {
                from_secs: 1_700_000_000,
                duration_secs: 30
            })
        );
        assert_eq!(
            F::parse("dvr-init-7-a.mp4"),
            Some(F::ArchiveInit {
                msn: 7,
                track: Track::Audio
            })
        );
        assert_eq!(
            F::parse("dvr-7.m4s"),
            Some(F::ArchiveSegment {
                msn: 7,
                track: Track::Muxed
            })
        );
        for none in [
            "seg-.m4s",
            "seg-4-x.m4s",
            "init-v.mp4",
            "seg-1.ts",
            "index.m3u8",
        ] {
            assert_eq!(F::parse(none), None, "{none}");
        }
        for bad in [
            "index-5-0.mpd",
            "index-5-now.mpd",
            "fmp4--5-30.m3u8",
            "dvr-99999999999999999999.m4s",
            "dvr-init-x.mp4",
            "dvr-1-v-a.m4s",
        ] {
            assert_eq!(F::parse(bad), Some(F::Malformed), "{bad}");
        }
        assert_eq!(
            F::parse("index.mpd").map(F::protocol),
            Some(ott::Protocol::Dash)
        );
        assert_eq!(
            F::parse("fmp4.m3u8").map(F::protocol),
            Some(ott::Protocol::LlHls)
        );
    }
}
