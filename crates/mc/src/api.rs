//! The MC's meeting API handlers. Every refusal is `{"code": N, "message": "..."}`:
//! meeting conditions with their table code, plain protocol errors with the HTTP
//! status as the code.

use std::collections::HashMap;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use meeting::{
    check_client, Action, ErrorCode, Meeting, MeetingId, MeetingSecrets, MeetingView, NewMeeting,
    CLIENT_VERSION_HEADER,
};
use serde::Deserialize;
use serde_json::{json, Value};

use super::state::McState;
use super::store::{random_secret, ChangeError};
use server::http::extract::{CodedPath, CodedQuery};
use server::routes::auth::{bearer, constant_time_eq, token_matches};
use server::state::AppState;

/// Largest request body accepted.
pub const MAX_BODY: usize = 64 * 1024;

/// A refusal of the meeting API, answered from the one code table.
#[derive(Debug)]
pub enum McApiError {
    /// A condition of the meeting codes.
    Meeting(ErrorCode),
    /// A field of the request is unusable: the field (`body` for the body itself) and
    /// why (logged, not sent).
    Invalid {
        /// The field at fault.
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// The body is larger than [`MAX_BODY`].
    TooLarge,
    /// No or wrong token.
    Unauthorized,
}

impl McApiError {
    fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        McApiError::Invalid {
            field,
            reason: reason.into(),
        }
    }
}

impl IntoResponse for McApiError {
    fn into_response(self) -> Response {
        use codes::{Code, RequestError};
        match self {
            McApiError::Meeting(code) => server::error::respond(Code::Meeting(code), None),
            McApiError::Invalid { field, reason } => {
                tracing::info!(field, reason = %reason, "meeting api request refused");
                server::error::respond(Code::Request(RequestError::InvalidField), Some(field))
            }
            McApiError::TooLarge => {
                server::error::respond(Code::Request(RequestError::TooLarge), None)
            }
            McApiError::Unauthorized => {
                server::error::respond(Code::Request(RequestError::Unauthorized), None)
            }
        }
    }
}

impl From<ChangeError> for McApiError {
    fn from(e: ChangeError) -> Self {
        match e {
            ChangeError::Meeting(e) => McApiError::Meeting(e.code()),
            ChangeError::Store(e) => {
                tracing::error!(error = %e, "meeting store not writable");
                McApiError::Meeting(ErrorCode::McUnavailable)
            }
        }
    }
}

/// True when the token is the admin token (or no admin token is configured).
fn is_admin(mc: &McState, given: Option<&str>) -> bool {
    token_matches(mc.inner.settings.admin_token.as_deref(), given)
}

pub(crate) fn parse_id(id: &str) -> Result<MeetingId, McApiError> {
    MeetingId::parse(id).map_err(|e| McApiError::invalid("id", e.to_string()))
}

async fn read_json<T: serde::de::DeserializeOwned>(body: Body) -> Result<T, McApiError> {
    let bytes = axum::body::to_bytes(body, MAX_BODY)
        .await
        .map_err(|_| McApiError::TooLarge)?;
    serde_json::from_slice(&bytes).map_err(|e| McApiError::invalid("body", e.to_string()))
}

fn version_check(mc: &McState, headers: &HeaderMap, in_session: bool) -> Result<(), McApiError> {
    let stated = headers
        .get(CLIENT_VERSION_HEADER)
        .map(|v| v.to_str().unwrap_or("invalid"));
    check_client(stated, mc.inner.settings.min_client_version, in_session)
        .map_err(McApiError::Meeting)
}

/// A meeting as nodes learn it: a live one says whether it waits for its publisher and
/// which rungs of its ladder the MC has now ([`super::media_now`]), so nodes pull only
/// what is there.
fn node_view(mc: &McState, node: &AppState, meeting: &Meeting, now_ms: i64) -> MeetingView {
    let mut view = view(mc, meeting, now_ms);
    if view.state == meeting::MeetingState::Live {
        let media = super::media_now::of(node, meeting.id.as_str(), &view.ladder);
        view.waiting = media.waiting;
        view.ladder = media.ladder;
    }
    view
}

/// The key each interpreter of the meeting publishes their language with, by code.
fn interpreter_keys(meeting: &Meeting) -> Value {
    meeting
        .languages
        .iter()
        .filter(|l| l.interpreter)
        .filter_map(|l| {
            let code = l.language()?.as_str().to_owned();
            let key = meeting::languages::interpreter_key(&meeting.stream_key, &code);
            Some((code, Value::String(key)))
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// A meeting with its secrets, for its host and admins.
fn full(meeting: &Meeting) -> Value {
    json!({
        "id": meeting.id,
        "title": meeting.title,
        "state": meeting.state,
        "locked": meeting.locked,
        "viewer_limit": meeting.viewer_limit,
        "stream_key": meeting.stream_key,
        "host_token": meeting.host_token,
        "private": meeting.private,
        "removed_viewers": meeting.removed_viewers,
        "recording_depth_days": meeting.recording_depth_days,
        "languages": meeting.languages,
        "interpreter_keys": interpreter_keys(meeting),
        "created_ms": meeting.created_ms,
        "started_ms": meeting.started_ms,
        "closed_ms": meeting.closed_ms,
    })
}

fn view(mc: &McState, meeting: &Meeting, now_ms: i64) -> MeetingView {
    let viewers = mc.viewers().total(&meeting.id, now_ms);
    let mut view = MeetingView::of(meeting, viewers);
    view.ladder = mc.ladder_of(meeting.id.as_str());
    view
}

/// `POST /api/meetings` (admin): creates a meeting; 201 with its stream key and host
/// token, 102004 when the id exists, 102011 for an old client.
pub async fn create(State(mc): State<McState>, headers: HeaderMap, body: Body) -> Response {
    match create_inner(&mc, &headers, body).await {
        Ok(meeting) => (StatusCode::CREATED, Json(full(&meeting))).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn create_inner(
    mc: &McState,
    headers: &HeaderMap,
    body: Body,
) -> Result<Meeting, McApiError> {
    if !is_admin(mc, bearer(headers)) {
        return Err(McApiError::Unauthorized);
    }
    version_check(mc, headers, false)?;
    let request: NewMeeting = read_json(body).await?;
    let id = parse_id(&request.id)?;
    if request
        .recording_depth_days
        .is_some_and(|d| !(1..=meeting::MAX_RECORDING_DEPTH_DAYS).contains(&d))
    {
        return Err(McApiError::invalid(
            "recording_depth_days",
            format!("1 to {} days", meeting::MAX_RECORDING_DEPTH_DAYS),
        ));
    }
    if let Err(problem) = meeting::languages::check(&request.languages) {
        return Err(McApiError::invalid("languages", problem.to_string()));
    }
    let secrets = MeetingSecrets {
        stream_key: random_secret(),
        host_token: random_secret(),
    };
    let now = mc.clock().unix_ms();
    let meeting = mc
        .change(&id, |meetings| {
            meetings
                .create(id.clone(), &request, secrets.clone(), now)
                .cloned()
        })
        .await?;
    tracing::info!(meeting = %meeting.id, "meeting created");
    Ok(meeting)
}

/// `GET /api/meetings` (admin or node token): every meeting's public view.
pub async fn list(State(mc): State<McState>, headers: HeaderMap) -> Response {
    let token = bearer(&headers);
    if !is_admin(&mc, token) && !is_node(&mc, token) {
        return McApiError::Unauthorized.into_response();
    }
    let now = mc.clock().unix_ms();
    let meetings: Vec<MeetingView> = mc.meetings().iter().map(|m| view(&mc, m, now)).collect();
    Json(json!({ "meetings": meetings })).into_response()
}

/// `GET /api/meetings/{id}`: the public view for anyone; with the host's or an admin's
/// token, the whole meeting with its secrets.
pub async fn get_one(
    State(mc): State<McState>,
    CodedPath(id): CodedPath<String>,
    headers: HeaderMap,
) -> Response {
    let id = match parse_id(&id) {
        Ok(id) => id,
        Err(e) => return e.into_response(),
    };
    let meetings = mc.meetings();
    let meeting = match meetings.get(&id) {
        Ok(m) => m,
        Err(e) => return McApiError::Meeting(e.code()).into_response(),
    };
    let token = bearer(&headers);
    let owner = token
        .is_some_and(|t| constant_time_eq(t.as_bytes(), meeting.host_token.as_bytes()))
        || (token.is_some() && is_admin(&mc, token));
    if owner {
        Json(full(meeting)).into_response()
    } else {
        Json(view(&mc, meeting, mc.clock().unix_ms())).into_response()
    }
}

pub(crate) fn authorize_host(
    mc: &McState,
    headers: &HeaderMap,
    id: &MeetingId,
) -> Result<(), McApiError> {
    let token = bearer(headers);
    if is_admin(mc, token) {
        return Ok(());
    }
    let meetings = mc.meetings();
    // A token that is neither admin nor this meeting's host is refused the same way
    // for a meeting that exists and one that does not: tokens do not probe ids.
    match meetings.get(id) {
        Ok(m) if token.is_some_and(|t| constant_time_eq(t.as_bytes(), m.host_token.as_bytes())) => {
            Ok(())
        }
        _ => Err(McApiError::Unauthorized),
    }
}

async fn change_meeting(
    mc: &McState,
    headers: &HeaderMap,
    id: &str,
    action: Action,
) -> Result<Meeting, McApiError> {
    let id = parse_id(id)?;
    authorize_host(mc, headers, &id)?;
    version_check(mc, headers, true)?;
    let now = mc.clock().unix_ms();
    let meeting = mc
        .change(&id, |meetings| meetings.apply(&id, action, now).cloned())
        .await?;
    tracing::info!(meeting = %meeting.id, ?action, "meeting changed");
    Ok(meeting)
}

/// `POST /api/meetings/{id}/{start|lock|unlock|close}` (host or admin).
pub async fn action(
    State(mc): State<McState>,
    CodedPath((id, action)): CodedPath<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let action = match action.as_str() {
        "start" => Action::Start,
        "lock" => Action::Lock,
        "unlock" => Action::Unlock,
        "close" => Action::Close,
        _ => return server::error::ApiError::NotFound.into_response(),
    };
    match change_meeting(&mc, &headers, &id, action).await {
        Ok(meeting) => Json(full(&meeting)).into_response(),
        Err(e) => e.into_response(),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ViewerLimit {
    viewer_limit: Option<u32>,
}

/// `PUT /api/meetings/{id}/viewer-limit` (host or admin): `{"viewer_limit": N}` or
/// `{"viewer_limit": null}` for no limit.
pub async fn set_viewer_limit(
    State(mc): State<McState>,
    CodedPath(id): CodedPath<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    // Authorize before reading the body: an unauthenticated caller costs no parsing.
    let checked = parse_id(&id).and_then(|parsed| authorize_host(&mc, &headers, &parsed));
    if let Err(e) = checked {
        return e.into_response();
    }
    let limit: ViewerLimit = match read_json(body).await {
        Ok(limit) => limit,
        Err(e) => return e.into_response(),
    };
    match change_meeting(
        &mc,
        &headers,
        &id,
        Action::SetViewerLimit(limit.viewer_limit),
    )
    .await
    {
        Ok(meeting) => Json(full(&meeting)).into_response(),
        Err(e) => e.into_response(),
    }
}

/// Whether a request for a meeting's file on the MC may be answered: the MC's
/// streams (its relays above all) are for its nodes, public meetings' as private
/// ones' — only with the node token or the admin token, the rule of the nodes' sync
/// (an MC without a node token, on loopback by `trust_loopback`, serves this machine's
/// callers, as it answers their syncs). Viewers watch from nodes, where every meeting
/// rule applies.
pub fn may_read_stream(mc: &McState, headers: &HeaderMap) -> bool {
    let token = bearer(headers);
    is_node(mc, token) || (token.is_some() && is_admin(mc, token))
}

fn is_node(mc: &McState, given: Option<&str>) -> bool {
    token_matches(mc.inner.settings.node_token.as_deref(), given)
}

/// `GET /api/nodes/sync?node=N&viewers=id:count,…` (node token as bearer, never in the
/// URL): records the node's viewer counts, bounded by [`super::report`] (a refused
/// report is 108007 naming `node` or `viewers`), and answers with every meeting's view (viewers
/// summed across nodes; the media the MC's own `streams` have) and the minimum client
/// version.
pub async fn sync(
    mc: McState,
    streams: AppState,
    headers: HeaderMap,
    CodedQuery(query): CodedQuery<HashMap<String, String>>,
) -> Response {
    let token = bearer(&headers);
    let allowed = is_node(&mc, token) || (token.is_some() && is_admin(&mc, token));
    if !allowed {
        return McApiError::Unauthorized.into_response();
    }
    let node = query.get("node").map_or("", String::as_str);
    let viewers = query.get("viewers").map_or("", String::as_str);
    let report = match super::report::parse(node, viewers, &mc.meetings()) {
        Ok(report) => report,
        Err(refused) => return McApiError::invalid(refused.field, refused.reason).into_response(),
    };
    let now = mc.clock().unix_ms();
    if !mc.report_viewers(&report.node, report.counts, now) {
        tracing::warn!(node = %report.node, "viewer report ignored: too many nodes");
    }
    let meetings: Vec<MeetingView> = mc
        .meetings()
        .iter()
        .map(|m| node_view(&mc, &streams, m, now))
        .collect();
    Json(json!({
        "now_ms": now,
        "min_client_version": mc.inner.settings.min_client_version.map(|v| v.to_string()),
        "meetings": meetings,
        "viewer_keys": keys_json(&mc),
        "session_keys": mc.session_keys(),
    }))
    .into_response()
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
