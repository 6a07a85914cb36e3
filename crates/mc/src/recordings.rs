//! `GET /api/meetings/{id}/recordings` (host or admin): what the recordings store holds
//! of a meeting — each recorded rendition, its objects and bytes, its periods — and the
//! catch-up URLs of each period and of the whole recording, playable from any node with
//! the store, after the meeting closed too (docs/recordings.md). An MC without `[recordings]` answers with no store.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::api::{authorize_host, parse_id, McApiError};
use super::state::McState;
use server::http::extract::CodedPath;

/// The catch-up file names of a period on a node, under `/{meeting}/`.
fn urls(meeting: &str, period: &recordings::listing::Period) -> Value {
    let from = period.from_ms.div_euclid(1000);
    let to = (period.to_ms + 999).div_euclid(1000);
    let duration = (to - from).clamp(1, 86_400);
    json!({
        "hls": format!("/{meeting}/index-{from}-{duration}.m3u8"),
        "dash": format!("/{meeting}/index-{from}-{duration}.mpd"),
        "mp4": format!("/{meeting}/archive-{from}-{duration}.mp4"),
        "mp4_progressive": format!("/{meeting}/archive-{from}-{duration}-progressive.mp4"),
        "ts": format!("/{meeting}/archive-{from}-{duration}.ts"),
    })
}

/// The whole recording's file names on a node, under `/{meeting}/`.
fn whole(meeting: &str) -> Value {
    json!({
        "hls": format!("/{meeting}/recording.m3u8"),
        "dash": format!("/{meeting}/recording.mpd"),
        "mp4": format!("/{meeting}/recording.mp4"),
        "mp4_progressive": format!("/{meeting}/recording-progressive.mp4"),
        "ts": format!("/{meeting}/recording.ts"),
    })
}

/// Answers the listing.
pub async fn list(
    State(mc): State<McState>,
    CodedPath(id): CodedPath<String>,
    headers: HeaderMap,
) -> Response {
    let id = match parse_id(&id).and_then(|id| authorize_host(&mc, &headers, &id).map(|()| id)) {
        Ok(id) => id,
        Err(e) => return e.into_response(),
    };
    if let Err(e) = mc.meetings().get(&id) {
        return McApiError::Meeting(e.code()).into_response();
    }
    let meeting = id.as_str();
    let Some(bucket) = mc.inner.settings.recordings.as_ref() else {
        return Json(
            json!({ "meeting": meeting, "store": null, "renditions": [], "recording": null }),
        )
        .into_response();
    };
    match recordings::listing::meeting_recordings(bucket, meeting).await {
        Ok(renditions) => {
            let renditions: Vec<Value> = renditions
                .iter()
                .map(|r| {
                    let periods: Vec<Value> = r
                        .periods
                        .iter()
                        .map(|p| {
                            let mut period = json!(p);
                            period["urls"] = urls(meeting, p);
                            period
                        })
                        .collect();
                    json!({
                        "rendition": r.rendition,
                        "prefix": r.prefix,
                        "objects": r.objects,
                        "bytes": r.bytes,
                        "where": "store",
                        "periods": periods,
                    })
                })
                .collect();
            let recording = if renditions.is_empty() {
                Value::Null
            } else {
                whole(meeting)
            };
            Json(json!({
                "meeting": meeting,
                "store": bucket.description,
                "renditions": renditions,
                "recording": recording,
            }))
            .into_response()
        }
        Err(error) => {
            tracing::warn!(meeting, error = %recordings::stats::brief(&error.to_string()), "recordings store unreadable");
            McApiError::Meeting(meeting::ErrorCode::McUnavailable).into_response()
        }
    }
}
