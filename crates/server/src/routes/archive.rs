//! Catch-up from the DVR archive (OTT-ARCH-1/2). Per stream:
//!
//! | file | answer |
//! |---|---|
//! | `index-{from}-{duration}.m3u8` | VOD playlist of that period (EXT-X-ENDLIST, PDT on every segment) |
//! | `index-{from}-now.m3u8` | EVENT playlist from `from`, growing as recording goes on |
//! | `timeshift_rel-{seconds}.m3u8` | a sliding live window `seconds` behind now |
//! | `mono-…` of each of the three | always the rendition's media playlist |
//! | `archive-{from}-{duration}.ts` | the period as one MPEG-TS download, streamed from disk |
//! | `archive-{from}-{duration}.mp4` | the period as one fragmented MP4 file, packaged as it streams ([`crate::routes::archive_mp4`]) |
//! | `dvr-{msn}.ts` | one archived segment (the URIs inside the playlists above) |
//!
//! For a package (an ABR ladder) the three playlists without `mono-` are master
//! playlists ([`packaging::archive::master`]) listing each recorded rendition's `mono-`
//! playlist: the source's `mono-…` and each rung's `{rung}/mono-…`, whose segments are
//! the rung's own archive (`/{stream}/{rung}/dvr-{msn}.ts`).
//!
//! `from` is UTC Unix seconds, `duration` seconds (1 to 86,400; an EVENT playlist's
//! `from` at most 86,400 s ago). A period with nothing
//! archived is a 404; a malformed, negative or overflowing number is a 400. Files are
//! found through the index only (numeric ids under the stream's archive directory), so
//! no request names a path.

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use dvr::index::{Entry, Index};
use dvr::ArchiveReader;
use media::hls::PlaylistType;
use media::manifest::Manifest;

use crate::clock::Clock;
use crate::error::ApiError;
use crate::http::http_util::{self, Cache, M3U8, MPEG_TS};
use crate::stream::archive_scans::ArchiveScans;
use crate::stream::package::Package;
use crate::stream::rendition::Rendition;
use crate::url::{period_ms, ArchiveRequest, MAX_PERIOD_SECS};
use packaging::archive::master::RecordedRendition;
use packaging::languages::AudioLanguage;

/// Segments in a time-shift window when the live window is empty.
const DEFAULT_WINDOW_SEGMENTS: usize = 30;

/// The URI of an archived segment inside archive playlists (relative to them).
pub fn archive_segment_uri(entry: &Entry) -> String {
    format!("dvr-{}.ts", entry.msn)
}

/// Answers an archive request for one rendition of `channel`'s stream (its muxed
/// rendition, or a rung). A catch-up master that must probe a segment is an archive
/// scan: over the node's cap (`scans`) it is answered with the back-pressure 503.
pub async fn serve(
    channel: &Package,
    rendition: &Rendition,
    request: ArchiveRequest,
    headers: &HeaderMap,
    clock: &Clock,
    scans: &ArchiveScans,
) -> Response {
    let Some(recorder) = rendition.archive() else {
        // This rendition is not recorded on this node.
        return ApiError::NotFound.into_response();
    };
    let reader = recorder.reader();
    let Some(request) = whole_as_period(reader, request) else {
        return ApiError::NotFound.into_response();
    };
    if let Some(span) = master_span(channel, rendition, request, clock) {
        let listed = channel
            .listed()
            .filter_map(|r| {
                let reader = r.archive()?.reader().clone();
                Some((r.name().to_owned(), reader, timeshift_window(r)))
            })
            .collect();
        let languages = recorded_languages(channel);
        let sources = MasterSources {
            stream: channel.name().to_owned(),
            listed,
            languages,
        };
        return master(sources, span, request, scans).await;
    }
    let label = format!("{}/{}", channel.name(), rendition.name());
    let context = (headers, clock, scans);
    serve_reader(
        reader,
        request,
        context,
        timeshift_window(rendition),
        &label,
    )
    .await
}

/// A whole-recording name ([`ArchiveRequest::Recording`]) as the period it covers in
/// `reader` ([`whole_period`]); any other request as it is. `None`: nothing is
/// recorded.
pub fn whole_as_period(reader: &ArchiveReader, request: ArchiveRequest) -> Option<ArchiveRequest> {
    let ArchiveRequest::Recording(file) = request else {
        return Some(request);
    };
    let (from_secs, duration_secs) = whole_period(reader)?;
    Some(file.as_period(from_secs, duration_secs))
}

/// The whole recording of `reader` as a catch-up period `(from, duration)`, seconds: its
/// last [`MAX_PERIOD_SECS`] at most. `None`: nothing is recorded.
pub fn whole_period(reader: &ArchiveReader) -> Option<(i64, u32)> {
    let (first_ms, end_ms) =
        reader.with_index(|i| Some((i.first()?.start_ms, i.last()?.end_ms())))?;
    let from_ms = first_ms.max(end_ms.saturating_sub(i64::from(MAX_PERIOD_SECS) * 1000));
    let from_secs = from_ms.div_euclid(1000);
    let duration = end_ms
        .saturating_sub(from_secs.saturating_mul(1000))
        .saturating_add(999)
        .div_euclid(1000);
    let duration_secs = u32::try_from(duration.clamp(1, i64::from(MAX_PERIOD_SECS))).ok()?;
    Some((from_secs, duration_secs))
}

/// Answers every archive request but a master from one rendition's archive `reader`
/// (with the request's headers, the node's clock and its archive-scan cap; `window`:
/// how many segments a time-shift window lists; `label`: the stream and rendition, for
/// the log).
pub async fn serve_reader(
    reader: &ArchiveReader,
    request: ArchiveRequest,
    (headers, clock, scans): (&HeaderMap, &Clock, &ArchiveScans),
    window: usize,
    label: &str,
) -> Response {
    match request {
        ArchiveRequest::Malformed | ArchiveRequest::Recording(_) => {
            ApiError::BadRequest.into_response()
        }
        ArchiveRequest::Period {
            from_secs,
            duration_secs,
            ..
        } => {
            let (from_ms, to_ms) = period_ms(from_secs, duration_secs);
            playlist(reader, |index| {
                let slice = index.query(from_ms, to_ms);
                (!slice.entries.is_empty()).then(|| {
                    dvr::playlist::render(slice, PlaylistType::Vod, 1, true, archive_segment_uri)
                })
            })
        }
        ArchiveRequest::FromNow { from_secs, .. } => {
            if too_old(from_secs, clock) {
                return ApiError::BadRequest.into_response();
            }
            playlist(reader, |index| {
                let slice = index.query(from_secs * 1000, i64::MAX);
                (!slice.entries.is_empty()).then(|| {
                    dvr::playlist::render(slice, PlaylistType::Event, 1, false, archive_segment_uri)
                })
            })
        }
        ArchiveRequest::Timeshift { behind_secs, .. } => {
            let edge_ms = timeshift_edge_ms(behind_secs, clock);
            playlist(reader, |index| timeshift(index, edge_ms, window))
        }
        ArchiveRequest::Download {
            from_secs,
            duration_secs,
        } => match period_entries(reader, from_secs, duration_secs) {
            Some(entries) => download(reader, entries, from_secs, duration_secs),
            None => ApiError::NotFound.into_response(),
        },
        ArchiveRequest::Mp4Download {
            from_secs,
            duration_secs,
            progressive,
        } => match period_entries(reader, from_secs, duration_secs) {
            Some(entries) if progressive => {
                let period = (from_secs, duration_secs);
                crate::routes::archive_mp4::progressive(reader, entries, period, scans).await
            }
            Some(entries) => {
                crate::routes::archive_mp4::download(reader, entries, from_secs, duration_secs)
                    .await
            }
            None => ApiError::NotFound.into_response(),
        },
        ArchiveRequest::Segment(msn) => {
            let Some(entry) = reader.with_index(|i| i.by_msn(msn).copied()) else {
                return ApiError::NotFound.into_response();
            };
            let reader = reader.clone();
            match tokio::task::spawn_blocking(move || reader.read(&entry)).await {
                Ok(Ok(data)) => {
                    http_util::ranged(headers, MPEG_TS, Cache::Immutable, Bytes::from(data))
                }
                Ok(Err(error)) => {
                    tracing::warn!(archive = label, msn, %error, "archived segment unreadable");
                    ApiError::NotFound.into_response()
                }
                Err(_) => ApiError::NotFound.into_response(),
            }
        }
    }
}

/// The archived segments of a period, oldest first; `None` when there is none.
fn period_entries(
    reader: &ArchiveReader,
    from_secs: i64,
    duration_secs: u32,
) -> Option<Vec<Entry>> {
    let (from_ms, to_ms) = period_ms(from_secs, duration_secs);
    let entries = reader.with_index(|i| i.query(from_ms, to_ms).entries.to_vec());
    (!entries.is_empty()).then_some(entries)
}

/// An EVENT playlist lists everything since `from`: it is kept to a day, like a
/// period, so no request renders a week-long playlist.
fn too_old(from_secs: i64, clock: &Clock) -> bool {
    from_secs.saturating_mul(1000) < clock.unix_ms() - i64::from(MAX_PERIOD_SECS) * 1000
}

/// The live edge of a time-shift window `behind_secs` behind now, Unix ms.
fn timeshift_edge_ms(behind_secs: u32, clock: &Clock) -> i64 {
    clock
        .unix_ms()
        .saturating_sub(i64::from(behind_secs) * 1000)
}

/// How many segments a time-shift window lists: as many as the live window.
pub fn timeshift_window(rendition: &Rendition) -> usize {
    match rendition.snapshot().segments.len() {
        0 => DEFAULT_WINDOW_SEGMENTS,
        n => n,
    }
}

/// What a catch-up master covers: a period `[from, to)` or a time-shift window.
#[derive(Debug, Clone, Copy)]
pub enum MasterSpan {
    /// The period `[from, to)`, Unix ms.
    Period(i64, i64),
    /// The time-shift window whose live edge is `edge_ms`.
    Timeshift {
        /// The window's live edge, Unix ms.
        edge_ms: i64,
    },
}

/// The span of a catch-up master playlist, when `request` asks for one: a playlist
/// name without `mono-`, of a package's stream, at the stream (not under a rung).
fn master_span(
    channel: &Package,
    rendition: &Rendition,
    request: ArchiveRequest,
    clock: &Clock,
) -> Option<MasterSpan> {
    if rendition.name() != crate::stream::rendition::MAIN {
        return None;
    }
    // A one-rendition stream answers a master only to list its languages, or its
    // captions (a period's).
    if !channel.is_package() && channel.languages().is_none() {
        let captioned = !packaging::captions::serve::tracks(&channel.snapshot()).is_empty();
        return match request {
            ArchiveRequest::Period {
                from_secs,
                duration_secs,
                mono: false,
            } if captioned => {
                let (from, to) = period_ms(from_secs, duration_secs);
                Some(MasterSpan::Period(from, to))
            }
            _ => None,
        };
    }
    package_master_span(request, clock)
}

/// The span of the catch-up master a package's stream answers `request` with: a
/// playlist name without `mono-`.
pub fn package_master_span(request: ArchiveRequest, clock: &Clock) -> Option<MasterSpan> {
    match request {
        ArchiveRequest::Period {
            from_secs,
            duration_secs,
            mono: false,
        } => {
            let (from, to) = period_ms(from_secs, duration_secs);
            Some(MasterSpan::Period(from, to))
        }
        ArchiveRequest::FromNow {
            from_secs,
            mono: false,
        } if !too_old(from_secs, clock) => {
            Some(MasterSpan::Period(from_secs.saturating_mul(1000), i64::MAX))
        }
        ArchiveRequest::Timeshift {
            behind_secs,
            mono: false,
        } => Some(MasterSpan::Timeshift {
            edge_ms: timeshift_edge_ms(behind_secs, clock),
        }),
        _ => None,
    }
}

/// The `mono-` name of a master's request: what each variant's URI ends in.
fn mono_name(request: ArchiveRequest) -> String {
    match request {
        ArchiveRequest::Period {
            from_secs,
            duration_secs,
            ..
        } => format!("mono-{from_secs}-{duration_secs}.m3u8"),
        ArchiveRequest::FromNow { from_secs, .. } => format!("mono-{from_secs}-now.m3u8"),
        ArchiveRequest::Timeshift { behind_secs, .. } => {
            format!("mono-timeshift_rel-{behind_secs}.m3u8")
        }
        _ => String::new(),
    }
}

/// A stream's recorded audio languages, as a catch-up master lists them: the floor
/// (muxed in every variant) and each other language's archive and time-shift window.
pub struct RecordedLanguages {
    /// The floor's language.
    pub floor: AudioLanguage,
    /// Every other language with its archive and time-shift window.
    pub others: Vec<(AudioLanguage, ArchiveReader, usize)>,
}

/// What a catch-up master is made of: the stream's name, its recorded renditions
/// (`listed`: each one's name, archive and time-shift window, the source first) and
/// its languages, when it has several.
pub struct MasterSources {
    /// The stream.
    pub stream: String,
    /// The renditions offered as variants.
    pub listed: Vec<(String, ArchiveReader, usize)>,
    /// The audio languages beside the floor; `None` for one audio.
    pub languages: Option<RecordedLanguages>,
}

/// The recorded languages of `channel` (those with an archive on this node); `None`
/// when the stream has one audio.
fn recorded_languages(channel: &Package) -> Option<RecordedLanguages> {
    let (floor, others) = channel.languages()?;
    let others = others
        .into_iter()
        .filter_map(|(language, rendition)| {
            let reader = rendition.archive()?.reader().clone();
            Some((language.clone(), reader, timeshift_window(rendition)))
        })
        .collect();
    Some(RecordedLanguages {
        floor: floor.clone(),
        others,
    })
}

/// What `read` makes of the archived segments of `reader` a catch-up master's `span`
/// covers.
fn in_span<T>(
    reader: &ArchiveReader,
    span: MasterSpan,
    window: usize,
    read: impl FnOnce(&[Entry]) -> T,
) -> T {
    reader.with_index(|index| match span {
        MasterSpan::Period(from, to) => read(index.query(from, to).entries),
        MasterSpan::Timeshift { edge_ms } => match timeshift_slice(index, edge_ms, window) {
            Some(slice) => read(slice.entries),
            None => read(&[]),
        },
    })
}

/// The catch-up master of a stream's recorded renditions and languages: every one
/// recorded in the span. Their probes come from the cache; one that must read a segment
/// takes an archive-scan permit for its job, or is refused when none is free.
pub async fn master(
    sources: MasterSources,
    span: MasterSpan,
    request: ArchiveRequest,
    scans: &ArchiveScans,
) -> Response {
    let MasterSources {
        stream,
        listed,
        languages,
    } = sources;
    let mono = mono_name(request);
    let mut recorded = Vec::new();
    for (name, reader, window) in listed {
        let entries = in_span(&reader, span, window, <[Entry]>::to_vec);
        let rung = name != crate::stream::rendition::MAIN;
        let uri = if rung {
            format!("{name}/{mono}")
        } else {
            mono.clone()
        };
        recorded.push(RecordedRendition {
            uri,
            reader: std::sync::Arc::new(reader),
            entries,
            rung,
        });
    }
    let audio = languages.map_or_else(Vec::new, |languages| {
        let offered = languages.others.iter().map(|(language, reader, window)| {
            (
                language,
                !in_span(reader, span, *window, <[Entry]>::is_empty),
            )
        });
        packaging::languages::offered_audio_group(&languages.floor, offered, &mono)
    });
    let period = match request {
        ArchiveRequest::Period {
            from_secs,
            duration_secs,
            ..
        } => Some(format!("{from_secs}-{duration_secs}")),
        _ => None,
    };
    let permit = if packaging::archive::master::needs_probe(&recorded) {
        match scans.try_start() {
            Some(permit) => Some(permit),
            None => return crate::stream::archive_scans::busy_response(),
        }
    } else {
        None
    };
    let job = move || {
        let _permit = permit;
        let subtitles = match (&period, recorded.iter().find(|r| !r.rung)) {
            (Some(period), Some(source)) => packaging::archive::master::subtitles(source, period),
            _ => Vec::new(),
        };
        packaging::archive::master::render(&stream, &recorded, subtitles, audio)
    };
    match tokio::task::spawn_blocking(job).await {
        Ok(Some(master)) => http_util::manifest(M3U8, Cache::LivePlaylist, master),
        _ => ApiError::NotFound.into_response(),
    }
}

/// The last `window` archived segments whose live edge is `edge_ms`; `None` when
/// nothing was archived before it.
fn timeshift_slice(index: &Index, edge_ms: i64, window: usize) -> Option<dvr::index::Slice<'_>> {
    let before = index.query(i64::MIN, edge_ms);
    let n = before.entries.len();
    if n == 0 {
        return None;
    }
    let first = before.first_ordinal + n.saturating_sub(window) as u64;
    Some(index.from_ordinal(first, window))
}

/// The sliding window of `window` segments whose live edge is `edge_ms`.
fn timeshift(index: &Index, edge_ms: i64, window: usize) -> Option<Manifest> {
    let slice = timeshift_slice(index, edge_ms, window)?;
    Some(dvr::playlist::render(
        slice,
        PlaylistType::Live,
        1,
        false,
        archive_segment_uri,
    ))
}

fn playlist(reader: &ArchiveReader, render: impl FnOnce(&Index) -> Option<Manifest>) -> Response {
    match reader.with_index(render) {
        Some(playlist) => http_util::manifest(M3U8, Cache::LivePlaylist, playlist),
        None => ApiError::NotFound.into_response(),
    }
}

/// Streams the segments one at a time from disk: memory stays at one segment whatever
/// the period's length. The length is known from the index and sent up front.
fn download(
    reader: &ArchiveReader,
    entries: Vec<Entry>,
    from_secs: i64,
    duration_secs: u32,
) -> Response {
    let total: u64 = entries.iter().map(|e| u64::from(e.size)).sum();
    let reader = reader.clone();
    let chunks = super::blocking_chunks::blocking_chunks(entries, move |entry: Entry| {
        reader.read(&entry).map(Bytes::from)
    });
    let mut response = Response::new(Body::from_stream(chunks));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(MPEG_TS));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(total));
    if let Ok(value) = HeaderValue::from_str(&format!(
        "attachment; filename=\"archive-{from_secs}-{duration_secs}.ts\""
    )) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    response
}
