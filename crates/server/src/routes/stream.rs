//! Every file of a stream, `/{stream}/{file}` and a ladder rung's
//! `/{stream}/{rung}/{file}`: the one entry point, which runs the node's checks in
//! order — the OTT door when the node is in a mesh domain (passes, backup refusals,
//! redirects), the login limits, the meeting gate when the node has an MC — and then
//! serves the file ([`crate::routes::hls::serve`]).

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use meeting::CLIENT_VERSION_HEADER;

use crate::error::ApiError;
use crate::extract::CodedPath;
use crate::mc::gate::VIEWER_HEADER;
use crate::routes::hls;
use crate::state::AppState;
use crate::url::Target;

fn viewer_key(headers: &HeaderMap, peer: Option<SocketAddr>) -> String {
    let named = headers
        .get(VIEWER_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128);
    match (named, peer) {
        (Some(name), _) => format!("m:{name}"),
        (None, Some(peer)) => format!("ip:{}", peer.ip()),
        (None, None) => "anonymous".to_owned(),
    }
}

/// Serves `file` of `stream` after the checks (see the module docs); without a mesh
/// domain, logins or an MC, exactly [`hls::serve`].
pub async fn stream_file(
    State(state): State<AppState>,
    CodedPath((stream, file)): CodedPath<(String, String)>,
    request: Request,
) -> Response {
    entry(state, stream, None, file, request).await
}

/// [`stream_file`] for a file of one rung of the stream's ladder.
pub async fn rendition_file(
    State(state): State<AppState>,
    CodedPath((stream, rung, file)): CodedPath<(String, String, String)>,
    request: Request,
) -> Response {
    entry(state, stream, Some(rung), file, request).await
}

async fn entry(
    state: AppState,
    stream: String,
    rung: Option<String>,
    file: String,
    request: Request,
) -> Response {
    let rung = rung.as_deref();
    if let Some(redundancy) = state.redundancy() {
        let now = state.clock().unix_ms();
        if let crate::redundancy::door::Door::Answer(response) =
            crate::redundancy::door::check(&state, redundancy, &stream, rung, &file, &request, now)
        {
            return response;
        }
    }
    let viewer_playlist =
        Target::stream_file(request.extensions(), &file).is_some_and(|f| f.is_viewer_playlist());
    if let Some(logins) = state.logins() {
        let playlist = viewer_playlist;
        if let (true, Some((login, token))) =
            (playlist, crate::logins::credentials(request.uri().query()))
        {
            let session = crate::redundancy::door::Viewer::of(&request).key;
            if let Err(refusal) = logins.admit(login, token, &session) {
                tracing::debug!(stream = %stream, login, code = refusal.code(), "login refused");
                return ApiError::Ott(refusal).into_response();
            }
        }
    }
    let Some(gate) = state.meeting_gate() else {
        return hls::serve(state, &stream, rung, &file, request).await;
    };
    let entry = state.stream(&stream);
    if entry.is_some() && !gate.is_managed(&stream) {
        // A stream of the node's own config, not a meeting.
        return hls::serve(state, &stream, rung, &file, request).await;
    }
    let delivering = entry.is_some_and(|entry| !entry.channel.snapshot().segments.is_empty());
    if !delivering {
        let code = gate.not_here(&stream);
        gate.count_refusal(code);
        return ApiError::Meeting(code).into_response();
    }
    if viewer_playlist {
        let peer = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0);
        let headers = request.headers();
        let viewer = viewer_key(headers, peer);
        let version = headers
            .get(CLIENT_VERSION_HEADER)
            .and_then(|v| v.to_str().ok());
        if let Err(code) = gate.check_viewer(&stream, &viewer, version, true) {
            tracing::debug!(stream = %stream, code = code.code(), "viewer refused");
            gate.count_refusal(code);
            return ApiError::Meeting(code).into_response();
        }
    }
    hls::serve(state, &stream, rung, &file, request).await
}
