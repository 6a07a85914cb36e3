//! The Backups screen (OTT-OPS-1) and its API: `GET /backups` (the page, embedded),
//! `GET /api/ott` (its data), the test failure of OTT-OPS-2,
//! `POST /api/streams/{name}/pause` and `/resume` (the stream's input on this node),
//! and the node's drain, `GET`/`POST`/`DELETE /api/drain`.
//!
//! Like every `/api` call, these need the admin token when the node has one; the page
//! asks for it once and keeps it in the browser's session storage.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::error::ApiError;
use crate::http::extract::CodedPath;
use crate::routes::auth::Admin;
use crate::state::AppState;

static BACKUPS_HTML: &str = include_str!("../../assets/backups.html");

/// `GET /backups`: the page.
pub async fn page() -> Response {
    crate::http::http_util::page(BACKUPS_HTML)
}

/// `GET /api/ott`: groups, members, nodes, the view key, alerts and counters, the
/// meetings that wait for their publisher, and the recordings store's state.
pub async fn report(State(state): State<AppState>, _admin: Admin) -> Response {
    let node = state.node().name.clone();
    let mut body = match state.redundancy() {
        Some(redundancy) => redundancy.report_json(&node, state.clock().unix_ms()),
        None => json!({ "node": node, "mesh": "off", "groups": [], "nodes": [] }),
    };
    let paused: Vec<String> = state
        .streams()
        .iter()
        .filter(|s| s.channel.input_paused())
        .map(|s| s.channel.name().to_owned())
        .collect();
    body["paused_streams"] = json!(paused);
    let waiting = state
        .meeting_gate()
        .map(|gate| gate.waiting_meetings())
        .unwrap_or_default();
    body["waiting_meetings"] = json!(waiting);
    body["drain"] = drain_json(&state);
    body["recordings"] = json!(state.recordings().map(|uploader| uploader.status()));
    Json(body).into_response()
}

fn drain_json(state: &AppState) -> serde_json::Value {
    match state.redundancy() {
        Some(redundancy) => redundancy.drain.json(state.clock().unix_ms()),
        None => json!({ "state": "serving", "since_ms": null, "quiet_ms": null }),
    }
}

/// `GET /api/drain`: whether the node is serving, draining or drained.
pub async fn drain_state(State(state): State<AppState>, _admin: Admin) -> Response {
    Json(drain_json(&state)).into_response()
}

/// `POST /api/drain`: drains the node (its viewers move to other nodes; see
/// [`crate::redundancy::drain`]). Without the mesh there is nowhere to send them:
/// 404 (`not_found`).
pub async fn drain(State(state): State<AppState>, _admin: Admin) -> Response {
    let Some(redundancy) = state.redundancy() else {
        return ApiError::NotFound.into_response();
    };
    redundancy.drain.start(state.clock().unix_ms());
    Json(drain_json(&state)).into_response()
}

/// `DELETE /api/drain`: the node takes viewers again.
pub async fn undrain(State(state): State<AppState>, _admin: Admin) -> Response {
    if let Some(redundancy) = state.redundancy() {
        redundancy.drain.stop();
    }
    Json(drain_json(&state)).into_response()
}

fn set_paused(state: &AppState, name: &str, paused: bool) -> Response {
    let Some(channel) = state.channel(name) else {
        return ApiError::StreamNotFound.into_response();
    };
    channel.set_input_paused(paused);
    tracing::warn!(stream = %name, paused, "input pause set by the operator");
    Json(json!({ "stream": name, "paused": paused })).into_response()
}

/// `POST /api/streams/{name}/pause`: drops the stream's input on this node until
/// resumed; its viewers move to backups and new viewers are redirected (OTT-OPS-2).
pub async fn pause(
    State(state): State<AppState>,
    _admin: Admin,
    CodedPath(name): CodedPath<String>,
) -> Response {
    set_paused(&state, &name, true)
}

/// `POST /api/streams/{name}/resume`: takes the input back.
pub async fn resume(
    State(state): State<AppState>,
    _admin: Admin,
    CodedPath(name): CodedPath<String>,
) -> Response {
    set_paused(&state, &name, false)
}
