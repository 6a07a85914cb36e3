//! The MC's API of private meetings: a token for a viewer (signed with the MC's key,
//! [`crate::minter`]) and the host's removal of a viewer. Nodes learn the keys
//! tokens verify with ([`crate::api::key_set`]) and each meeting's removed viewers
//! with every sync, and verify locally.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use codes::{AccessRefusal, Code};
use meeting::meeting::MAX_VIEWER_ID_LEN;
use meeting::MeetingState;
use serde::Deserialize;
use serde_json::json;

use super::api::{authorize_host, parse_id, McApiError, MAX_BODY};
use super::state::McState;
use server::http::extract::CodedPath;

/// The longest lifetime of a token the MC mints: a week.
pub const MAX_TOKEN_TTL_S: u32 = 7 * 24 * 3600;
/// The lifetime of a minted token when the request names none: 4 hours.
pub const DEFAULT_TOKEN_TTL_S: u32 = 4 * 3600;

fn refused(field: &'static str, reason: &str) -> Response {
    tracing::info!(field, reason, "viewer request refused");
    server::error::respond(Code::Access(AccessRefusal::BadRequest), Some(field))
}

fn valid_viewer(viewer: &str) -> bool {
    !viewer.is_empty() && viewer.len() <= MAX_VIEWER_ID_LEN && !viewer.chars().any(char::is_control)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MintRequest {
    viewer: String,
    #[serde(default)]
    ttl_seconds: Option<u32>,
    #[serde(default)]
    max_sessions: Option<u32>,
}

/// `POST /api/meetings/{id}/viewer-tokens` (host or admin): `{"viewer": ID,
/// "ttl_seconds": N, "max_sessions": N}` → 201 `{"token", "expires", "kid"}`, a token
/// signed with the MC's key that every node verifies.
pub async fn mint(
    State(mc): State<McState>,
    CodedPath(id): CodedPath<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let id = match parse_id(&id).and_then(|id| authorize_host(&mc, &headers, &id).map(|()| id)) {
        Ok(id) => id,
        Err(e) => return e.into_response(),
    };
    let Some(minter) = mc.inner.settings.minter.as_ref() else {
        return McApiError::Meeting(meeting::ErrorCode::McUnavailable).into_response();
    };
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY).await else {
        return McApiError::TooLarge.into_response();
    };
    let request: MintRequest = match serde_json::from_slice(&bytes) {
        Ok(r) => r,
        Err(e) => return refused("body", &e.to_string()),
    };
    if !valid_viewer(&request.viewer) {
        return refused("viewer", "1 to 128 bytes, no control character");
    }
    let ttl = request.ttl_seconds.unwrap_or(DEFAULT_TOKEN_TTL_S);
    if !(60..=MAX_TOKEN_TTL_S).contains(&ttl) {
        return refused("ttl_seconds", "60 s to a week");
    }
    if request.max_sessions == Some(0) {
        return refused("max_sessions", "at least 1");
    }
    match mc.meetings().get(&id) {
        Ok(m) if m.state == MeetingState::Closed => {
            return McApiError::Meeting(meeting::ErrorCode::Closed).into_response()
        }
        Ok(_) => {}
        Err(e) => return McApiError::Meeting(e.code()).into_response(),
    }
    let expires = mc.clock().unix_ms() / 1000 + i64::from(ttl);
    let claims = ott::ViewerClaims {
        meeting: id.to_string(),
        viewer: request.viewer,
        expires_unix_s: expires,
        max_sessions: request.max_sessions,
    };
    let token = minter.mint(&claims);
    tracing::info!(meeting = %id, "viewer token minted");
    (
        StatusCode::CREATED,
        Json(json!({"token": token, "expires": expires, "kid": minter.kid()})),
    )
        .into_response()
}

/// `DELETE /api/meetings/{id}/viewers/{viewer}` (host or admin): removes the viewer;
/// every node refuses its session from its next sync on. 200 with the removed list.
pub async fn remove(
    State(mc): State<McState>,
    CodedPath((id, viewer)): CodedPath<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let id = match parse_id(&id).and_then(|id| authorize_host(&mc, &headers, &id).map(|()| id)) {
        Ok(id) => id,
        Err(e) => return e.into_response(),
    };
    if !valid_viewer(&viewer) {
        return refused("viewer", "1 to 128 bytes, no control character");
    }
    match mc
        .change(&id, |meetings| {
            meetings.remove_viewer(&id, &viewer).cloned()
        })
        .await
    {
        Ok(meeting) => {
            tracing::info!(meeting = %id, "viewer removed");
            Json(json!({"id": meeting.id, "removed_viewers": meeting.removed_viewers}))
                .into_response()
        }
        Err(e) => McApiError::from(e).into_response(),
    }
}
