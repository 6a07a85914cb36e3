//! Subtitles of a stream (see `docs/captions.md`), all views of the segments' caption
//! blocks:
//!
//! | file | answer |
//! |---|---|
//! | `sub-{track}.m3u8` | the track's live WebVTT playlist: the media playlist's segments |
//! | `sub-{track}-{msn}.vtt` | the track's WebVTT for live segment `msn` (empty when no one spoke) |
//! | `sub-{track}-init.mp4`, `sub-{track}-{msn}.m4s` | the same as WebVTT in fMP4 (`wvtt`), for the MPD's text adaptation sets |
//! | `sub-{track}-{from}-{duration}.m3u8` | the track's catch-up playlist of a period |
//! | `dvr-sub-{track}-{msn}.vtt` | the track's WebVTT for archived segment `msn` |
//! | `captions-[{track}-]{from}-{duration}.vtt` | a period's transcript as one WebVTT file (the first track by default) |
//!
//! A transcript reads the caption block of every archived segment of its period, so it
//! covers at most [`MAX_TRANSCRIPT_SECS`] (a longer one is 400 112010) and is an archive
//! scan: over the node's cap it is answered with the back-pressure 503 (109002). The
//! transcript of a closed period is kept ([`TranscriptCache`]) and served again without
//! a scan.

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use dvr::index::Entry;
use dvr::store::ArchiveReader;
use media::captions::webvtt::{segment_vtt, transcript_cues, transcript_vtt, CONTENT_TYPE};
use media::captions::CaptionBlock;
use media::hls::PlaylistType;

use crate::error::ApiError;
use crate::http::http_util::{self, Cache, M3U8};
use crate::stream::archive_scans::ArchiveScans;
use crate::stream::package::Package;
use crate::url::period_ms;
use crate::url::subtitles::{SubtitleFile, TrackName};
use packaging::captions::serve::segment_file;
use packaging::segment::captions::{TranscriptCache, TranscriptKey};

/// How much of an archived segment is read first for its caption block: the marker
/// and a block of a few dozen cues. A longer block is read whole.
const HEAD_BYTES: usize = 188 * 24;

/// The content type of the fMP4 text files.
const MP4: &str = "application/mp4";

/// The longest period a transcript covers, seconds: 4 hours, longer than nearly every
/// meeting, 7,200 segments of 2 s (one small read each) where 24 hours were 43,200. A
/// longer recording is fetched in 4-hour pieces; catch-up playlists, which read only
/// the index, still cover a day.
pub const MAX_TRANSCRIPT_SECS: u32 = 4 * 3600;

/// Answers a subtitle file of `channel`'s stream; a transcript takes one of the node's
/// archive-scan permits (`scans`).
pub async fn serve(channel: &Package, file: SubtitleFile, scans: &ArchiveScans) -> Response {
    let snapshot = channel.snapshot();
    match file {
        SubtitleFile::Malformed => ApiError::BadRequest.into_response(),
        SubtitleFile::Playlist(track) => match snapshot.subtitle(track.as_str()) {
            Some(sub) => http_util::manifest(M3U8, Cache::LivePlaylist, sub.playlist.clone()),
            None => ApiError::NotFound.into_response(),
        },
        SubtitleFile::Segment(track, msn) => {
            if snapshot.subtitle(track.as_str()).is_none() {
                return ApiError::NotFound.into_response();
            }
            match snapshot.segment(msn) {
                Some(segment) => vtt(Cache::Immutable, segment_file(segment, track.as_str())),
                None => ApiError::SegmentGone.into_response(),
            }
        }
        SubtitleFile::Fmp4Init(track) => {
            if snapshot.subtitle(track.as_str()).is_none() {
                return ApiError::NotFound.into_response();
            }
            let mut init = Vec::with_capacity(512);
            media::fmp4::wvtt::write_wvtt_init(&mut init);
            http_util::ok(MP4, Cache::Immutable, Bytes::from(init))
        }
        SubtitleFile::Fmp4Segment(track, msn) => {
            if snapshot.subtitle(track.as_str()).is_none() {
                return ApiError::NotFound.into_response();
            }
            match snapshot.segment(msn) {
                Some(segment) => http_util::ok(
                    MP4,
                    Cache::Immutable,
                    packaging::captions::serve::segment_fmp4(segment, track.as_str()),
                ),
                None => ApiError::SegmentGone.into_response(),
            }
        }
        SubtitleFile::ArchivePlaylist { .. }
        | SubtitleFile::ArchiveSegment(..)
        | SubtitleFile::Transcript { .. } => match archive(channel) {
            Some(reader) => serve_archived(reader, file, scans).await,
            None => ApiError::NotFound.into_response(),
        },
    }
}

/// Answers a subtitle file of an archive (`reader`: the archive of the rendition the
/// captions travel in): a period's playlist, an archived segment's WebVTT, a
/// transcript; anything else is not archived (404).
pub async fn serve_archived(
    reader: ArchiveReader,
    file: SubtitleFile,
    scans: &ArchiveScans,
) -> Response {
    match file {
        SubtitleFile::ArchivePlaylist {
            track,
            from_secs,
            duration_secs,
        } => {
            let (from_ms, to_ms) = period_ms(from_secs, duration_secs);
            let playlist = reader.with_index(|index| {
                let slice = index.query(from_ms, to_ms);
                (!slice.entries.is_empty()).then(|| {
                    dvr::playlist::render(slice, PlaylistType::Vod, 1, true, |e: &Entry| {
                        format!("dvr-sub-{}-{}.vtt", track.as_str(), e.msn)
                    })
                })
            });
            match playlist {
                Some(playlist) => http_util::manifest(M3U8, Cache::LivePlaylist, playlist),
                None => ApiError::NotFound.into_response(),
            }
        }
        SubtitleFile::ArchiveSegment(track, msn) => {
            let Some(entry) = reader.with_index(|i| i.by_msn(msn).copied()) else {
                return ApiError::NotFound.into_response();
            };
            let job = move || archived_file(&reader, &entry, track);
            match tokio::task::spawn_blocking(job).await {
                Ok(Some(file)) => vtt(Cache::Immutable, file),
                _ => ApiError::NotFound.into_response(),
            }
        }
        SubtitleFile::Transcript {
            track,
            from_secs,
            duration_secs,
        } => {
            if duration_secs > MAX_TRANSCRIPT_SECS {
                return crate::error::respond(
                    codes::CaptionError::TranscriptTooLong.into(),
                    Some("duration"),
                );
            }
            transcript(reader, track, (from_secs, duration_secs), scans).await
        }
        _ => ApiError::NotFound.into_response(),
    }
}

/// The archive of the stream's muxed rendition (where its captions travel).
fn archive(channel: &Package) -> Option<ArchiveReader> {
    Some(channel.main().archive()?.reader().clone())
}

/// The caption block of an archived segment, read from its head; `None` when it has
/// none or it cannot be read.
fn archived_block(reader: &ArchiveReader, entry: &Entry) -> Option<(CaptionBlock, u64)> {
    let mut head = reader.read_head(entry, HEAD_BYTES).ok()?;
    let block = match media::ts::captions::segment_block(&head) {
        Err(media::captions::block::BlockError::Truncated) => {
            head = reader.read(entry).ok()?;
            media::ts::captions::segment_block(&head)
        }
        other => other,
    };
    let start = media::fmp4::marker_of(&head)?.start_ts;
    Some((block.ok().flatten()?, start))
}

/// The WebVTT of `track` for an archived segment (empty when it has no cue of it).
fn archived_file(reader: &ArchiveReader, entry: &Entry, track: TrackName) -> Option<Bytes> {
    let text = match archived_block(reader, entry) {
        Some((block, start)) => segment_vtt(Some(&block), track.as_str(), start),
        None => {
            let head = reader.read_head(entry, 188).ok()?;
            segment_vtt(
                None,
                track.as_str(),
                media::fmp4::marker_of(&head)?.start_ts,
            )
        }
    };
    Some(Bytes::from(text))
}

/// A block's cues moved from the segment's timestamps onto its dates (90 kHz ticks
/// since the Unix epoch), so the cues of segments on different timelines (across a
/// discontinuity) line up in one transcript.
fn on_dates(mut block: CaptionBlock, segment_start_ts: u64, start_ms: i64) -> CaptionBlock {
    let base = u64::try_from(start_ms).unwrap_or(0).saturating_mul(90);
    for cue in &mut block.cues {
        cue.start_ts = base + cue.start_ts.saturating_sub(segment_start_ts);
        cue.end_ts = base + cue.end_ts.saturating_sub(segment_start_ts);
    }
    block
}

/// A period's transcript: every cue of the track in the archived segments of the
/// period, joined where segments cut them, clipped to the period, times from its start.
/// The reading job holds an archive-scan permit; without a free one the answer is the
/// back-pressure 503.
async fn transcript(
    reader: ArchiveReader,
    track: Option<TrackName>,
    (from_secs, duration_secs): (i64, u32),
    scans: &ArchiveScans,
) -> Response {
    let (from_ms, to_ms) = period_ms(from_secs, duration_secs);
    let (entries, closed) = reader.with_index(|i| {
        let closed = i.last().is_some_and(|last| last.end_ms() >= to_ms);
        (i.query(from_ms, to_ms).entries.to_vec(), closed)
    });
    let (Some(first), Some(last)) = (entries.first(), entries.last()) else {
        return ApiError::NotFound.into_response();
    };
    // A closed period's transcript never changes: kept, and served again without a scan.
    let key = closed.then(|| TranscriptKey {
        archive: reader.dir().to_owned(),
        track: track.map(|t| t.as_str().to_owned()),
        period: (from_ms, to_ms),
        msns: (first.msn, last.msn),
    });
    if let Some(text) = key.as_ref().and_then(|k| TranscriptCache::shared().get(k)) {
        return transcript_response(text, from_secs, duration_secs);
    }
    let Some(permit) = scans.try_start() else {
        return crate::stream::archive_scans::busy_response();
    };
    let job = move || {
        let _permit = permit;
        let blocks: Vec<CaptionBlock> = entries
            .iter()
            .filter_map(|entry| {
                let (block, start) = archived_block(&reader, entry)?;
                Some(on_dates(block, start, entry.start_ms))
            })
            .collect();
        let id = match track {
            Some(t) => t.as_str().to_owned(),
            None => blocks.first()?.tracks.first()?.id.clone(),
        };
        blocks.iter().find(|b| b.track(&id).is_some())?;
        let ticks = |ms: i64| u64::try_from(ms).unwrap_or(0).saturating_mul(90);
        let cues = transcript_cues(&blocks, &id, ticks(from_ms), ticks(to_ms));
        Some(Bytes::from(transcript_vtt(&cues, ticks(from_ms))))
    };
    match tokio::task::spawn_blocking(job).await {
        Ok(Some(text)) => {
            if let Some(key) = key {
                TranscriptCache::shared().put(key, text.clone());
            }
            transcript_response(text, from_secs, duration_secs)
        }
        _ => ApiError::NotFound.into_response(),
    }
}

/// A transcript as a WebVTT download named after its period.
fn transcript_response(text: Bytes, from_secs: i64, duration_secs: u32) -> Response {
    let mut response = vtt(Cache::LivePlaylist, text);
    let name = format!("attachment; filename=\"captions-{from_secs}-{duration_secs}.vtt\"");
    if let Ok(value) = HeaderValue::from_str(&name) {
        response
            .headers_mut()
            .insert(header::CONTENT_DISPOSITION, value);
    }
    response
}

fn vtt(cache: Cache, body: Bytes) -> Response {
    http_util::ok(CONTENT_TYPE, cache, body)
}
