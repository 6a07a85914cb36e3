//! A closed meeting's recording, on any node with the recordings store: when a meeting
//! has closed its stream leaves every node, and its catch-up files — periods, the whole
//! recording (`recording.m3u8`, `recording.mp4`, …), segments, downloads, fMP4 and DASH
//! files, subtitles — are answered from the bucket alone ([`recordings::recorded`]), by
//! the same code that answers them from a live archive.
//!
//! Only a meeting the MC says is closed comes here (the stream gate decides; a private
//! meeting's viewer token or session is checked before, as for its live files), so a
//! stranger's made-up names never list the bucket. Live-only files (the live
//! playlists, segments, relay) keep the meeting's 103003.

use std::sync::Arc;

use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use dvr::ArchiveReader;
use packaging::archive::fmp4::{ArchivedLanguage, ArchivedLanguages, ArchivedRung, ArchivedTracks};
use packaging::languages::AudioLanguage;
use recordings::listing::SOURCE;
use recordings::recorded::{OpenError, Recorded};

use crate::clock::Clock;
use crate::error::ApiError;
use crate::routes::answer::Answer;
use crate::routes::archive::{self, package_master_span, RecordedLanguages};
use crate::state::AppState;
use crate::stream::archive_scans::ArchiveScans;
use crate::stream::rendition::MAIN;
use crate::url::StreamFile;

/// Segments a time-shift window of a recording lists (it has no live window to match).
const WINDOW_SEGMENTS: usize = 30;

/// What a request for a file of a closed meeting's recording needs, taken from it.
#[derive(Debug)]
struct Asked {
    stream: String,
    /// The meeting's languages as the MC names them, the floor first.
    languages: Vec<AudioLanguage>,
    rung: Option<String>,
    file: StreamFile,
    headers: HeaderMap,
}

/// Answers `file` of closed meeting `stream` (its rung `rung`) from the recordings
/// store; `None` when the node has no store or the file is not a catch-up file (the
/// caller answers the meeting's code). `closed`: the answer when the store holds
/// nothing of the meeting.
pub fn serve(
    state: &AppState,
    stream: &str,
    rung: Option<&str>,
    file: Option<StreamFile>,
    headers: &HeaderMap,
    closed: ApiError,
) -> Option<Answer> {
    let uploader = Arc::clone(state.recordings()?);
    let file = file.filter(is_catch_up)?;
    if is_malformed(&file) {
        return Some(ApiError::BadRequest.into_response().into());
    }
    let languages = state
        .meeting_gate()
        .map(|gate| crate::stream::languages::audio_languages(&gate.languages(stream)))
        .unwrap_or_default();
    let asked = Asked {
        stream: stream.to_owned(),
        languages,
        rung: rung.map(str::to_owned),
        file,
        headers: headers.clone(),
    };
    let (clock, scans) = (state.clock().clone(), state.archive_scans().clone());
    Some(Answer::later(async move {
        match uploader.recorded(&asked.stream).await {
            Ok(recorded) if !recorded.renditions.is_empty() => {
                answer(&recorded, asked, &clock, &scans).await
            }
            Ok(_) => closed.into_response(),
            Err(OpenError::Busy) => crate::stream::archive_scans::busy_response(),
            Err(error) => {
                tracing::warn!(stream = %asked.stream, %error, "recording unreadable from the store");
                crate::stream::archive_scans::busy_response()
            }
        }
    }))
}

/// A file a recording has: every catch-up name (TS, fMP4, DASH, subtitles), no live one.
fn is_catch_up(file: &StreamFile) -> bool {
    match file {
        StreamFile::Archive(_) => true,
        StreamFile::Fmp4(file) => file.is_archive(),
        StreamFile::Subtitles(file) => file.is_archive(),
        _ => false,
    }
}

/// A catch-up name with a malformed number: refused before the bucket is read.
fn is_malformed(file: &StreamFile) -> bool {
    matches!(
        file,
        StreamFile::Archive(crate::url::ArchiveRequest::Malformed)
            | StreamFile::Fmp4(crate::url::Fmp4File::Malformed)
            | StreamFile::Subtitles(crate::url::SubtitleFile::Malformed)
    )
}

async fn answer(
    recorded: &Recorded,
    asked: Asked,
    clock: &Clock,
    scans: &ArchiveScans,
) -> Response {
    let rendition = asked.rung.as_deref().unwrap_or(SOURCE);
    let Some(reader) = recorded.rendition(rendition) else {
        return ApiError::NotFound.into_response();
    };
    let label = format!("{}/{rendition}", asked.stream);
    match asked.file {
        StreamFile::Archive(request) => {
            let Some(request) = archive::whole_as_period(reader, request) else {
                return ApiError::NotFound.into_response();
            };
            let span = asked
                .rung
                .is_none()
                .then(|| package_master_span(request, clock))
                .flatten();
            match span {
                Some(span) => {
                    let sources = archive::MasterSources {
                        stream: asked.stream.clone(),
                        listed: listed(recorded),
                        languages: languages(recorded, &asked.languages),
                    };
                    archive::master(sources, span, request, scans).await
                }
                None => {
                    let context = (&asked.headers, clock, scans);
                    archive::serve_reader(reader, request, context, WINDOW_SEGMENTS, &label).await
                }
            }
        }
        StreamFile::Fmp4(file) => {
            let archived = crate::routes::fmp4::Archived {
                stream: &asked.stream,
                reader: reader.clone(),
                part_ticks: None,
            };
            let tracks = || tracks(recorded, &asked.languages);
            crate::routes::fmp4::serve_archived(archived, tracks, file, &asked.headers, scans).await
        }
        StreamFile::Subtitles(file) => {
            crate::routes::subtitles::serve_archived(reader.clone(), file, scans).await
        }
        _ => ApiError::NotFound.into_response(),
    }
}

/// Every recorded rendition as a catch-up master lists it: the source under the
/// stream's own name, then the rungs.
fn listed(recorded: &Recorded) -> Vec<(String, ArchiveReader, usize)> {
    recorded
        .renditions
        .iter()
        .filter(|r| !r.is_language())
        .map(|r| {
            let name = if r.rendition == SOURCE {
                MAIN.to_owned()
            } else {
                r.rendition.clone()
            };
            (name, r.reader.clone(), WINDOW_SEGMENTS)
        })
        .collect()
}

/// The recorded languages named by the MC's `named` (the floor first): each one the
/// bucket holds, as a catch-up master lists them; `None` for one audio.
fn languages(recorded: &Recorded, named: &[AudioLanguage]) -> Option<RecordedLanguages> {
    let (floor, others) = named.split_first()?;
    let others: Vec<_> = others
        .iter()
        .filter_map(|language| {
            let reader = recorded.rendition(&language.rendition_name())?;
            Some((language.clone(), reader.clone(), WINDOW_SEGMENTS))
        })
        .collect();
    Some(RecordedLanguages {
        floor: floor.clone(),
        others,
    })
}

/// The recorded rungs and the recorded languages named by the MC's `named`, what a
/// static MPD lists beside the source.
fn tracks(recorded: &Recorded, named: &[AudioLanguage]) -> ArchivedTracks {
    let rungs = recorded
        .renditions
        .iter()
        .filter(|r| r.rendition != SOURCE && !r.is_language())
        .map(|r| ArchivedRung {
            name: r.rendition.clone(),
            reader: Arc::new(r.reader.clone()),
        })
        .collect();
    let languages = languages(recorded, named).map(|l| ArchivedLanguages {
        floor: l.floor,
        others: l
            .others
            .into_iter()
            .map(|(language, reader, _)| ArchivedLanguage {
                order: named
                    .iter()
                    .skip(1)
                    .position(|n| *n == language)
                    .unwrap_or_default(),
                language,
                reader: Arc::new(reader),
            })
            .collect(),
    });
    ArchivedTracks { rungs, languages }
}
