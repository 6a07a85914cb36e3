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

/// How often the MC sweeps its meetings' recordings for objects past their retention.
pub const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(600);

/// Removes, for every meeting the MC knows (closed ones too: no node registers their
/// archives any more), the recording objects past its retention — its own
/// `recording_depth_days`, else `default_keep_ms` (the MC's `[recordings] depth`), else
/// none; returns how many went.
pub async fn sweep(mc: &McState, default_keep_ms: Option<i64>, now_ms: i64) -> usize {
    let Some(bucket) = mc.inner.settings.recordings.as_ref() else {
        return 0;
    };
    let kept: Vec<(String, i64)> = mc
        .meetings()
        .iter()
        .filter_map(|m| {
            let keep = m
                .recording_depth_days
                .map(|days| i64::try_from(meeting::recording_depth_ms(days)).unwrap_or(i64::MAX))
                .or(default_keep_ms)?;
            Some((m.id.to_string(), keep))
        })
        .collect();
    let mut removed = 0;
    for (meeting, keep_ms) in kept {
        match recordings::expiry::expire_meeting(bucket, &meeting, keep_ms, now_ms).await {
            Ok(0) => {}
            Ok(n) => {
                tracing::info!(
                    meeting,
                    objects = n,
                    "recording objects past the meeting's retention removed"
                );
                removed += n;
            }
            Err(error) => {
                tracing::warn!(meeting, error = %recordings::stats::brief(&error.to_string()), "recordings retention sweep failed; tried again at the next");
            }
        }
    }
    removed
}

/// Sweeps every [`SWEEP_EVERY`] until `shutdown` turns true.
pub async fn keep_retention(
    mc: McState,
    default_keep_ms: Option<i64>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(SWEEP_EVERY) => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
        sweep(&mc, default_keep_ms, mc.clock().unix_ms()).await;
    }
}
