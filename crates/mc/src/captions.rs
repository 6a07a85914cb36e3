//! `POST /api/meetings/{id}/captions` on the MC (the meeting's host or an admin): cues
//! from a live transcription service or a human captioner, put on the meeting's
//! timeline at the MC so every node writes the same subtitle files.
//!
//! ```json
//! {"language": "en", "name": "English",
//!  "cues": [{"text": "Good morning", "duration_ms": 2500, "offset_ms": 800},
//!           {"text": "Welcome", "duration_ms": 2000, "at_ms": 1764720000123}]}
//! ```
//!
//! A cue goes at the live edge when the MC takes it, moved back by `offset_ms` (the
//! captioner's own delay, 0–30,000), or at the moment whose PROGRAM-DATE-TIME is
//! `at_ms`. Each problem has its code (112xxx): the request is checked whole before any
//! cue is placed; cues are then placed in order and the first refusal answers (the cues
//! before it stay placed).

use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use codes::{CaptionError, Code};
use media::captions::text::{is_language_tag, normalize_text};
use media::captions::CaptionTrack;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::api::{authorize_host, parse_id, McApiError, MAX_BODY};
use crate::McState;
use server::state::AppState;
use server::stream::captions::inbox::{CueRefusal, CueRequest, CueTiming, StampedCue};

/// The most cues one request may hold.
pub const MAX_CUES_PER_REQUEST: usize = 20;
/// The shortest and longest a cue may show, ms.
pub const CUE_DURATION_MS: std::ops::RangeInclusive<u64> = 100..=60_000;
/// How long a cue shows when the request does not say, ms.
pub const DEFAULT_CUE_DURATION_MS: u64 = 3_000;
/// The furthest back a cue may be moved from the live edge, ms.
pub const MAX_OFFSET_MS: u64 = 30_000;
/// The longest a track's name may be, characters.
pub const MAX_NAME_CHARS: usize = 64;
/// How long the API waits for the stream's pipeline to place a cue: it takes cues at
/// every frame, so only a stream with no media makes it wait this long.
const PLACE_TIMEOUT: Duration = Duration::from_secs(2);

/// The request body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaptionRequest {
    language: String,
    #[serde(default)]
    name: Option<String>,
    cues: Vec<CueBody>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CueBody {
    text: String,
    #[serde(default)]
    duration_ms: Option<u64>,
    #[serde(default)]
    offset_ms: Option<u64>,
    #[serde(default)]
    at_ms: Option<i64>,
}

/// A refusal: the code and the field at fault.
#[derive(Debug)]
enum Refusal {
    Caption(CaptionError, String),
    Mc(McApiError),
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Refusal::Caption(code, field) => {
                tracing::info!(code = code.code(), field = %field, "caption refused");
                server::error::respond(Code::Caption(code), Some(&field))
            }
            Refusal::Mc(e) => e.into_response(),
        }
    }
}

/// The handler; see the module docs.
pub async fn post(
    mc: McState,
    node: AppState,
    id: String,
    headers: HeaderMap,
    body: Body,
) -> Response {
    match handle(&mc, &node, &id, &headers, body).await {
        Ok(body) => (StatusCode::CREATED, Json(body)).into_response(),
        Err(refusal) => refusal.into_response(),
    }
}

async fn handle(
    mc: &McState,
    node: &AppState,
    id: &str,
    headers: &HeaderMap,
    body: Body,
) -> Result<Value, Refusal> {
    let meeting = parse_id(id).map_err(Refusal::Mc)?;
    authorize_host(mc, headers, &meeting).map_err(Refusal::Mc)?;
    mc.meetings()
        .get(&meeting)
        .map_err(|e| Refusal::Mc(McApiError::Meeting(e.code())))?;
    let bytes = axum::body::to_bytes(body, MAX_BODY)
        .await
        .map_err(|_| Refusal::Mc(McApiError::TooLarge))?;
    if std::str::from_utf8(&bytes).is_err() {
        return Err(Refusal::Caption(CaptionError::BadText, "body".into()));
    }
    let request: CaptionRequest = serde_json::from_slice(&bytes).map_err(|e| {
        Refusal::Mc(McApiError::Invalid {
            field: "body",
            reason: e.to_string(),
        })
    })?;
    let (track, cues) = check(request)?;
    let Some(channel) = node
        .channel(id)
        .filter(|c| !c.snapshot().segments.is_empty())
    else {
        return Err(Refusal::Caption(CaptionError::NotLive, "id".into()));
    };
    let mut placed = Vec::with_capacity(cues.len());
    for (i, (text, timing, duration_ms)) in cues.into_iter().enumerate() {
        let field = || format!("cues[{i}]");
        let (reply, answer) = oneshot::channel();
        let request = CueRequest {
            track: track.clone(),
            text,
            timing,
            duration_ticks: duration_ms * 90,
            reply,
        };
        if channel.captions.submit(request).is_err() {
            channel
                .caption_counters
                .refused
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return Err(Refusal::Caption(CaptionError::Flood, field()));
        }
        let stamped = match tokio::time::timeout(PLACE_TIMEOUT, answer).await {
            Ok(Ok(Ok(stamped))) => stamped,
            Ok(Ok(Err(why))) => return Err(Refusal::Caption(code_of(why), field())),
            _ => return Err(Refusal::Caption(CaptionError::NotLive, "id".into())),
        };
        placed.push(cue_json(&stamped));
    }
    Ok(json!({
        "track": {"id": track.id, "language": track.language, "name": track.name},
        "cues": placed,
    }))
}

type CheckedCue = (String, CueTiming, u64);

/// The request checked whole: its track and its cues, or the first problem.
fn check(request: CaptionRequest) -> Result<(CaptionTrack, Vec<CheckedCue>), Refusal> {
    let bad = |code, field: &str| Refusal::Caption(code, field.to_owned());
    if !is_language_tag(&request.language) {
        return Err(bad(CaptionError::BadLanguage, "language"));
    }
    let name = request.name.unwrap_or_else(|| request.language.clone());
    let name = name.trim().to_owned();
    if name.is_empty()
        || name.chars().count() > MAX_NAME_CHARS
        || name.chars().any(char::is_control)
    {
        return Err(bad(CaptionError::BadLanguage, "name"));
    }
    if request.cues.is_empty() || request.cues.len() > MAX_CUES_PER_REQUEST {
        return Err(bad(CaptionError::BadBatch, "cues"));
    }
    let track = CaptionTrack {
        id: request.language.to_ascii_lowercase(),
        language: request.language,
        name,
    };
    let mut cues = Vec::with_capacity(request.cues.len());
    for (i, cue) in request.cues.into_iter().enumerate() {
        let text = normalize_text(&cue.text)
            .map_err(|_| bad(CaptionError::BadText, &format!("cues[{i}].text")))?;
        let duration_ms = cue.duration_ms.unwrap_or(DEFAULT_CUE_DURATION_MS);
        if !CUE_DURATION_MS.contains(&duration_ms) {
            return Err(bad(
                CaptionError::BadTiming,
                &format!("cues[{i}].duration_ms"),
            ));
        }
        let timing = match (cue.offset_ms, cue.at_ms) {
            (Some(_), Some(_)) => {
                return Err(bad(CaptionError::BadTiming, &format!("cues[{i}].at_ms")));
            }
            (_, Some(unix_ms)) if unix_ms > 0 => CueTiming::At { unix_ms },
            (_, Some(_)) => return Err(bad(CaptionError::BadTiming, &format!("cues[{i}].at_ms"))),
            (Some(offset), None) if offset > MAX_OFFSET_MS => {
                return Err(bad(
                    CaptionError::BadTiming,
                    &format!("cues[{i}].offset_ms"),
                ));
            }
            (offset, None) => CueTiming::Now {
                offset_ticks: offset.unwrap_or(0) * 90,
            },
        };
        cues.push((text, timing, duration_ms));
    }
    Ok((track, cues))
}

fn code_of(why: CueRefusal) -> CaptionError {
    match why {
        CueRefusal::Past => CaptionError::Past,
        CueRefusal::Future => CaptionError::Future,
        CueRefusal::TooManyTracks => CaptionError::TooManyTracks,
        CueRefusal::Full => CaptionError::Flood,
        CueRefusal::NotOrigin => CaptionError::NotLive,
    }
}

fn cue_json(cue: &StampedCue) -> Value {
    let mut date = String::new();
    let _ = media::hls::format_rfc3339_ms(&mut date, cue.start_unix_ms);
    json!({
        "start_pts": cue.start_ts & media::PTS_MASK,
        "start_ms": cue.start_unix_ms,
        "end_ms": cue.end_unix_ms,
        "start": date,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(json: Value) -> Result<(CaptionTrack, Vec<CheckedCue>), (u32, String)> {
        let request: CaptionRequest = serde_json::from_value(json).expect("parses");
        check(request).map_err(|r| match r {
            Refusal::Caption(code, field) => (code.code(), field),
            Refusal::Mc(_) => (0, String::new()),
        })
    }

    #[test]
    fn every_problem_has_its_code_and_field() {
        let ok =
            request(json!({"language": "pt-BR", "cues": [{"text": " Olá ", "offset_ms": 500}]}))
                .expect("valid");
        assert_eq!(ok.0.id, "pt-br");
        assert_eq!(ok.0.name, "pt-BR");
        assert_eq!(
            ok.1[0],
            (
                "Olá".into(),
                CueTiming::Now {
                    offset_ticks: 45_000
                },
                3000
            )
        );
        let cases = [
            (
                json!({"language": "english", "cues": [{"text": "a"}]}),
                112_002,
                "language",
            ),
            (
                json!({"language": "en", "name": " ", "cues": [{"text": "a"}]}),
                112_002,
                "name",
            ),
            (json!({"language": "en", "cues": []}), 112_009, "cues"),
            (
                json!({"language": "en", "cues": [{"text": "a"}, {"text": "\n"}]}),
                112_001,
                "cues[1].text",
            ),
            (
                json!({"language": "en", "cues": [{"text": "x".repeat(301)}]}),
                112_001,
                "cues[0].text",
            ),
            (
                json!({"language": "en", "cues": [{"text": "a", "duration_ms": 60_001}]}),
                112_003,
                "cues[0].duration_ms",
            ),
            (
                json!({"language": "en", "cues": [{"text": "a", "offset_ms": 30_001}]}),
                112_003,
                "cues[0].offset_ms",
            ),
            (
                json!({"language": "en", "cues": [{"text": "a", "offset_ms": 1, "at_ms": 5}]}),
                112_003,
                "cues[0].at_ms",
            ),
            (
                json!({"language": "en", "cues": [{"text": "a", "at_ms": -5}]}),
                112_003,
                "cues[0].at_ms",
            ),
        ];
        for (body, code, field) in cases {
            assert_eq!(
                request(body.clone()),
                Err((code, field.to_owned())),
                "{body}"
            );
        }
        let many: Vec<Value> = (0..21).map(|_| json!({"text": "a"})).collect();
        assert_eq!(
            request(json!({"language": "en", "cues": many})),
            Err((112_009, "cues".into()))
        );
    }
}
