//! The MC's side of private meetings: the keys viewer tokens are verified with (the
//! meeting platform's, from the config, and the MC's own minting key), the API a
//! platform asks for a token with, and the host's removal of a viewer. Nodes learn the
//! keys and each meeting's removed viewers with every sync and verify locally.

use std::io::{Read, Write};
use std::path::Path;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use codes::{AccessRefusal, Code};
use meeting::meeting::MAX_VIEWER_ID_LEN;
use meeting::MeetingState;
use ring::signature::Ed25519KeyPair;
use serde::Deserialize;
use serde_json::json;

use super::api::{authorize_host, parse_id, McApiError, MAX_BODY};
use super::state::McState;
use crate::extract::CodedPath;

/// The file in the MC's data directory that holds its minting key's seed (0600).
pub const MINTING_KEY_FILE: &str = "viewer_signing_key";
/// The longest lifetime of a token the MC mints: a week.
pub const MAX_TOKEN_TTL_S: u32 = 7 * 24 * 3600;
/// The lifetime of a minted token when the request names none: 4 hours.
pub const DEFAULT_TOKEN_TTL_S: u32 = 4 * 3600;

/// The MC's own Ed25519 key for the tokens it mints on request.
pub struct Minter {
    kid: String,
    pair: Ed25519KeyPair,
}

impl std::fmt::Debug for Minter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Minter")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl Minter {
    /// The MC's minting key: read from `data_dir/viewer_signing_key`, or created there
    /// (32 random bytes, owner-only) on the first start.
    ///
    /// # Errors
    /// The file cannot be read or written, or holds no key.
    pub fn load_or_create(data_dir: &Path) -> std::io::Result<Self> {
        let path = data_dir.join(MINTING_KEY_FILE);
        let mut seed = [0u8; 32];
        match std::fs::File::open(&path) {
            Ok(mut file) => file.read_exact(&mut seed)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::File::open("/dev/urandom")?.read_exact(&mut seed)?;
                let mut options = std::fs::OpenOptions::new();
                options.write(true).create_new(true);
                #[cfg(unix)]
                {
                    use std::os::unix::fs::OpenOptionsExt;
                    options.mode(0o600);
                }
                let mut file = options.open(&path)?;
                file.write_all(&seed)?;
                file.sync_all()?;
            }
            Err(e) => return Err(e),
        }
        let pair = Ed25519KeyPair::from_seed_unchecked(&seed)
            .map_err(|_| std::io::Error::other(format!("{} holds no key", path.display())))?;
        let public = ott::ViewerKey::of_pair("", &pair).public_base64url();
        Ok(Self {
            kid: format!("mc-{}", &public[..8]),
            pair,
        })
    }

    /// The public half, as nodes verify with it.
    pub fn public_key(&self) -> ott::ViewerKey {
        ott::ViewerKey::of_pair(&self.kid, &self.pair)
    }
}

/// Every key viewer tokens are accepted under: the platform's, then the MC's own.
pub fn key_set(mc: &McState) -> ott::ViewerKeySet {
    let settings = &mc.inner.settings;
    let mut keys = settings.viewer_keys.clone();
    if let Some(minter) = &settings.minter {
        keys.push(minter.public_key());
    }
    ott::ViewerKeySet::new(keys)
}

/// The keys as the sync answer carries them: `[{"kid": …, "public": …}]`.
pub fn keys_json(mc: &McState) -> serde_json::Value {
    let keys: Vec<serde_json::Value> = key_set(mc)
        .keys()
        .iter()
        .map(|k| json!({"kid": k.kid, "public": k.public_base64url()}))
        .collect();
    serde_json::Value::Array(keys)
}

fn refused(field: &'static str, reason: &str) -> Response {
    tracing::info!(field, reason, "viewer request refused");
    crate::error::respond(Code::Access(AccessRefusal::BadRequest), Some(field))
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
    let token = ott::mint_viewer_token(&claims, &minter.kid, &minter.pair);
    tracing::info!(meeting = %id, "viewer token minted");
    (
        StatusCode::CREATED,
        Json(json!({"token": token, "expires": expires, "kid": minter.kid})),
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
    match mc.change(|meetings| meetings.remove_viewer(&id, &viewer).cloned()) {
        Ok(meeting) => {
            tracing::info!(meeting = %id, "viewer removed");
            Json(json!({"id": meeting.id, "removed_viewers": meeting.removed_viewers}))
                .into_response()
        }
        Err(e) => McApiError::from(e).into_response(),
    }
}
