//! Every file of a stream, `/{stream}/{file}` and a ladder rung's
//! `/{stream}/{rung}/{file}`: the one entry point, which runs the node's checks in
//! order — the OTT door when the node is in a mesh domain (passes, backup refusals,
//! redirects), the login limits, the meeting gate when the node has an MC, after the
//! process's role when it has one ([`crate::role`]) — and then
//! serves the file ([`crate::routes::hls::serve`]).

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use meeting::CLIENT_VERSION_HEADER;

use crate::access::viewer_id::ViewerId;
use crate::error::ApiError;
use crate::http::extract::CodedPath;
use crate::http::request_context::Arrival;
use crate::role::StreamRule;
use crate::routes::answer::Answer;
use crate::routes::hls;
use crate::state::AppState;
use crate::url::stream_file::FileRole;

/// `response` (a relay) ending before the first chunk sent after `open` turns false:
/// an MC whose timeline changes must not hand the change to whoever follows it.
fn while_open(response: Response, open: impl Fn() -> bool + Send + 'static) -> Response {
    use futures_util::StreamExt;
    let (parts, body) = response.into_parts();
    let gated = body
        .into_data_stream()
        .take_while(move |_| std::future::ready(open()));
    Response::from_parts(parts, axum::body::Body::from_stream(gated))
}

/// Serves `file` of `stream` after the checks (see the module docs); without a mesh
/// domain, logins or an MC, exactly [`hls::serve`].
pub async fn stream_file(
    State(state): State<AppState>,
    CodedPath((stream, file)): CodedPath<(String, String)>,
    request: Request,
) -> Response {
    entry(&state, &stream, None, &file, Arrival::from_request(request))
        .resolve()
        .await
}

/// [`stream_file`] for a file of one rung of the stream's ladder.
pub async fn rendition_file(
    State(state): State<AppState>,
    CodedPath((stream, rung, file)): CodedPath<(String, String, String)>,
    request: Request,
) -> Response {
    entry(
        &state,
        &stream,
        Some(&rung),
        &file,
        Arrival::from_request(request),
    )
    .resolve()
    .await
}

/// [`stream_file`] and [`rendition_file`] for a request whose route the edge found
/// ([`crate::app::Dispatch`]): the path's two or three segments, percent-decoded as the
/// router's path parameters are (one that is not UTF-8 once decoded is refused with
/// 108003, as [`CodedPath`] refuses it).
pub fn direct(state: &AppState, arrival: Arrival) -> Answer {
    // The path is read from a copy of the URI (a reference count), so its segments are
    // borrowed, not copied, unless they need decoding.
    let uri = arrival.request.uri().clone();
    let mut segments = uri
        .path()
        .trim_start_matches('/')
        .split('/')
        .map(|segment| {
            if !segment.contains('%') {
                // Nothing to decode: the path is UTF-8 already.
                return Some(std::borrow::Cow::Borrowed(segment));
            }
            percent_encoding::percent_decode_str(segment)
                .decode_utf8()
                .ok()
        });
    let parts = (
        segments.next().flatten(),
        segments.next().flatten(),
        segments.next(),
        segments.next(),
    );
    match parts {
        (Some(stream), Some(file), None, None) => entry(state, &stream, None, &file, arrival),
        (Some(stream), Some(rung), Some(Some(file)), None) => {
            entry(state, &stream, Some(&rung), &file, arrival)
        }
        _ => {
            tracing::debug!(path = arrival.request.uri().path(), "path refused");
            ApiError::BadRequest.into_response().into()
        }
    }
}

fn entry(
    state: &AppState,
    stream: &str,
    rung: Option<&str>,
    file: &str,
    arrival: Arrival,
) -> Answer {
    // The process's role first (on an MC: its nodes' token, its timeline).
    if let Some(role) = state.role() {
        let request = &arrival.request;
        match role.stream_rule(stream, rung, file, request.headers(), request.uri().query()) {
            StreamRule::Serve => {}
            StreamRule::Refuse(error) => return error.into_response().into(),
            StreamRule::ServeWhile(open) => {
                return checked(state, stream, rung, file, arrival, None)
                    .map(move |response| while_open(response, move || open()));
            }
        }
    }
    if let Some(redundancy) = state.redundancy() {
        let now = state.clock().unix_ms();
        if let crate::redundancy::door::Door::Answer(response) = crate::redundancy::door::check(
            state.stream_table(),
            redundancy,
            stream,
            rung,
            file,
            &arrival,
            now,
        ) {
            return response.into();
        }
    }
    // A private meeting: its viewer's token or session, before anything is served
    // (its relay is for nodes, and takes the node credential instead).
    let role = arrival.stream_file(file).map(|f| f.role());
    // Only a playlist or MPD is rewritten with the session: segments, parts and inits
    // (most of a private meeting's requests) go through without a copy of it.
    let rewritten = !matches!(
        role,
        Some(FileRole::LiveSegment | FileRole::ArchiveMedia | FileRole::Relay)
    );
    let now_s = state.clock().unix_ms() / 1000;
    let grant = match state.meeting_gate() {
        Some(gate) if gate.is_private(stream) && role != Some(FileRole::Relay) => {
            let asked = if rewritten {
                crate::access::private::Asked::Playlist
            } else {
                crate::access::private::Asked::Media
            };
            let address = arrival.connection().map(|c| c.peer.ip());
            match gate.authorize(stream, arrival.request.uri().query(), address, asked, now_s) {
                Ok(grant) => Some(grant),
                Err(Some(refusal)) => {
                    tracing::debug!(stream = %stream, code = refusal.code(), "private meeting refused");
                    gate.count_access_refusal(refusal);
                    return ApiError::Access(refusal).into_response().into();
                }
                Err(None) => {
                    // No session key from the MC yet: it has not answered.
                    let code = meeting::ErrorCode::McUnavailable;
                    gate.count_refusal(code);
                    return ApiError::Meeting(code).into_response().into();
                }
            }
        }
        _ => None,
    };
    let Some(grant) = grant else {
        return checked(state, stream, rung, file, arrival, None);
    };
    let session = match grant.issued {
        Some(issued) => Some(issued),
        None if rewritten => crate::access::private::query_param(
            arrival.request.uri().query(),
            ott::SESSION_QUERY_PARAM,
        )
        .map(str::to_owned),
        None => None,
    };
    match session {
        Some(session) if rewritten => {
            let (answer, marks) = crate::http::http_util::marking_uris(|| {
                checked(state, stream, rung, file, arrival, Some(grant.viewer))
            });
            in_session(answer, marks, session)
        }
        _ => {
            let answer = checked(state, stream, rung, file, arrival, Some(grant.viewer));
            // A private meeting's media is the viewer's alone: no shared cache keeps
            // it, and the viewer's own keeps it no longer than its session opens media.
            let max_age = (grant.media_until_unix_s - now_s).clamp(0, 86_400);
            answer.map(move |response| private_cache(response, max_age))
        }
    }
}

/// A private viewer's playlist or MPD answer (`marks`: where its URIs end, when made at
/// once) with `session` after every URI.
fn in_session(answer: Answer, marks: Option<media::manifest::UriEnds>, session: String) -> Answer {
    match answer {
        Answer::Now(response) => {
            Answer::later(async move { with_session(response, marks, &session).await })
        }
        Answer::Later(future) => Answer::later(async move {
            let (response, marks) = crate::http::http_util::marking_uris_later(future).await;
            with_session(response, marks, &session).await
        }),
    }
}

/// `response` with `Cache-Control: private, max-age=<max_age>` (a success only).
fn private_cache(mut response: Response, max_age: i64) -> Response {
    if response.status().is_success() {
        if let Ok(value) = axum::http::HeaderValue::from_str(&format!("private, max-age={max_age}"))
        {
            response
                .headers_mut()
                .insert(axum::http::header::CACHE_CONTROL, value);
        }
    }
    response
}

/// The logins, the meeting gate, then the file (`private_viewer`: a private meeting's
/// authorized viewer, counted as such).
fn checked(
    state: &AppState,
    stream: &str,
    rung: Option<&str>,
    file: &str,
    arrival: Arrival,
    private_viewer: Option<[u8; 8]>,
) -> Answer {
    // Who the request counts as: a private meeting's viewer by its session, anyone else
    // by the connection's address; never by a header it sent.
    let viewer = match private_viewer {
        Some(viewer) => ViewerId::Private(viewer),
        None => ViewerId::of_connection(arrival.connection()),
    };
    let role = arrival.stream_file(file).map(|f| f.role());
    let viewer_playlist = arrival
        .stream_file(file)
        .is_some_and(|f| f.is_viewer_playlist());
    if let Some(logins) = state.logins() {
        if let (true, Some((login, token))) = (
            viewer_playlist,
            crate::access::logins::credentials(arrival.request.uri().query()),
        ) {
            if let Err(refusal) = logins.admit(login, token, viewer) {
                tracing::debug!(stream = %stream, login, code = refusal.code(), "login refused");
                return ApiError::Ott(refusal).into_response().into();
            }
        }
    }
    let Some(gate) = state.meeting_gate() else {
        return serve_live(state, stream, rung, file, arrival, role);
    };
    let entry = state.stream(stream);
    if entry.is_some() && !gate.is_managed(stream) {
        // A stream of the node's own config, not a meeting.
        return serve_live(state, stream, rung, file, arrival, role);
    }
    let delivering = entry
        .as_ref()
        .is_some_and(|entry| !entry.channel.snapshot().segments.is_empty());
    if !delivering {
        let code = gate.not_here(stream);
        if code == meeting::ErrorCode::Closed && entry.is_none() {
            // A closed meeting's recording stays watchable from the recordings store.
            let asked = arrival.stream_file(file);
            let headers = arrival.request.headers();
            let closed = ApiError::Meeting(code);
            if let Some(answer) =
                crate::routes::recorded::serve(state, stream, rung, asked, headers, closed)
            {
                return answer;
            }
        }
        gate.count_refusal(code);
        return ApiError::Meeting(code).into_response().into();
    }
    if role == Some(FileRole::Relay) {
        // A meeting's relay feeds nodes, not viewers: it takes the node credential.
        let peer = arrival.connection().map(|c| c.peer.ip());
        if !gate.is_node(arrival.request.headers(), peer) {
            gate.count_access_refusal(codes::AccessRefusal::TokenMissing);
            return ApiError::Access(codes::AccessRefusal::TokenMissing)
                .into_response()
                .into();
        }
        return serve_live(state, stream, rung, file, arrival, role);
    }
    // Every door of the meeting's media checks the same rules: the lock, the viewer
    // limit and the client version apply to a segment or a catch-up playlist asked for
    // by someone who never loaded the live playlist, as to the playlist itself.
    let version = arrival
        .request
        .headers()
        .get(CLIENT_VERSION_HEADER)
        .and_then(|v| v.to_str().ok());
    if let Err(code) = gate.check_viewer(stream, viewer, version, true) {
        tracing::debug!(stream = %stream, code = code.code(), "viewer refused");
        gate.count_refusal(code);
        return ApiError::Meeting(code).into_response().into();
    }
    serve_live(state, stream, rung, file, arrival, role)
}

/// [`hls::serve`], but a live manifest (a master, a media playlist, an MPD) of a stream
/// whose segments arrive in a burst — a node that has just (re)joined replays its
/// origin's window — waits the burst out (at most [`CATCH_UP_WAIT`]), so no player reads
/// a manifest that ends a window behind live ([`crate::stream::package::Package::catching_up`]).
fn serve_live(
    state: &AppState,
    stream: &str,
    rung: Option<&str>,
    file: &str,
    arrival: Arrival,
    role: Option<FileRole>,
) -> Answer {
    let catching_up = |state: &AppState, stream: &str| {
        state
            .channel(stream)
            .is_some_and(|c| c.catching_up(crate::clock::unix_ms()))
    };
    // An LL-HLS request with delivery directives (`_HLS_msn`, `_HLS_part`) is answered
    // by its own rules: a blocking reload waits for its segment already.
    let blocking = arrival
        .request
        .uri()
        .query()
        .is_some_and(|q| q.contains("_HLS_"));
    let live_manifest =
        !blocking && matches!(role, Some(FileRole::PlaybackStart | FileRole::LivePlaylist));
    if !live_manifest || !catching_up(state, stream) {
        return hls::serve(state, stream, rung, file, arrival);
    }
    let (state, stream) = (state.clone(), stream.to_owned());
    let (rung, file) = (rung.map(str::to_owned), file.to_owned());
    Answer::later(async move {
        // Bounded by a count of short sleeps: the burst is judged on the wall clock the
        // segments were stamped with.
        for _ in 0..CATCH_UP_WAIT.as_millis() / CATCH_UP_STEP.as_millis() {
            if !catching_up(&state, &stream) {
                break;
            }
            tokio::time::sleep(CATCH_UP_STEP).await;
        }
        hls::serve(&state, &stream, rung.as_deref(), &file, arrival)
            .resolve()
            .await
    })
}

/// The longest a live manifest waits for a burst of segments to end.
const CATCH_UP_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
/// How often a waiting manifest looks again.
const CATCH_UP_STEP: std::time::Duration = std::time::Duration::from_millis(50);

/// A private meeting's answer: a playlist or MPD (`marks`: where its URIs end) gets the
/// session after every URI and is never cached by a proxy; anything else goes out as it
/// is.
async fn with_session(
    response: Response,
    marks: Option<media::manifest::UriEnds>,
    session: &str,
) -> Response {
    use axum::http::header;
    let Some(uri_ends) = marks else {
        let manifest = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| {
                t.starts_with(crate::http::http_util::M3U8) || t.starts_with("application/dash+xml")
            });
        if manifest && response.status().is_success() {
            // Made outside the marking scope: its URIs would go out without the session.
            tracing::error!("a private viewer's manifest came without its URI marks");
            return ApiError::NotFound.into_response();
        }
        return response;
    };
    if !response.status().is_success() {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    // Manifests are answered from memory: reading them back cannot fail, and does not
    // copy.
    let bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => bytes,
        Err(error) => {
            tracing::error!(%error, "a private meeting's playlist could not be read back");
            return ApiError::NotFound.into_response();
        }
    };
    let manifest = media::manifest::Manifest { bytes, uri_ends };
    let answer = crate::access::session_uris::answer(&manifest, session);
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("private, no-store"),
    );
    Response::from_parts(parts, axum::body::Body::from(answer))
}
