//! `/healthz` and `/readyz` of a node and an MC (`docs/operations.md`, "Health and
//! readiness"): no token needed, no body read, never shed up to a bound (the shedding
//! layer lets them through, [`crate::health::budget`]), each answer cheap — a
//! heartbeat verdict read from atomics, a readiness verdict and its body cached for
//! [`crate::health::READY_CACHE`]. Meetings are named only to a caller with a token.

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use codes::Code;

use crate::credentials::{bearer, is_configured_token};
use crate::health::{heartbeat, ready, Facts, StreamFacts, Verdict};
use crate::redundancy::RedundancySettings;
use crate::state::AppState;

/// `GET /healthz`: 200 while every runtime of the process beats or progresses; 503
/// (115002, `field` the hung runtime) when one has stopped. Answered by a serving
/// thread, so a hung serving path answers nothing at all.
pub async fn healthz() -> Response {
    match heartbeat::stalled() {
        None => no_store((StatusCode::OK, "ok\n").into_response()),
        // Logged by `stalled` once per change, not here per probe.
        Some((runtime, _)) => {
            crate::error::respond(Code::Health(codes::Health::Unhealthy), Some(&runtime))
        }
    }
}

/// `GET /readyz`: 200 `{"ready":true,"idle":N}` when the process is ready for
/// viewers, else 503 with 115001 and its reasons (see [`ready::assess`]). With the
/// admin token (on an MC, the admin or the node token) the idle meetings are listed
/// (`idle_meetings`) and a reason names its meeting.
pub async fn readyz(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let verdict = state.health().readiness(|| ready::assess(&facts(&state)));
    answer(&verdict, may_see_meetings(&state, &headers))
}

/// Whether the request carries a token that may list meetings: the node's admin token,
/// or the MC's admin or node token — a configured one, matched in constant time.
fn may_see_meetings(state: &AppState, headers: &HeaderMap) -> bool {
    let Some(given) = bearer(headers) else {
        return false;
    };
    match state.role() {
        Some(role) => role.may_see_meetings(given),
        None => is_configured_token(state.admin_token(), given),
    }
}

/// The answer of a verdict: its cached body, with meetings named when `names`.
fn answer(verdict: &Verdict, names: bool) -> Response {
    let body = if names {
        verdict.named.clone()
    } else {
        verdict.open.clone()
    };
    let mut response = if verdict.readiness.ready() {
        (StatusCode::OK, body).into_response()
    } else {
        let mut response = (StatusCode::SERVICE_UNAVAILABLE, body).into_response();
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        response
    };
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    no_store(response)
}

fn no_store(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// What the process knows of itself now.
fn facts(state: &AppState) -> Facts {
    let redundancy = state.redundancy();
    let gate = state.meeting_gate();
    let role = state.role();
    let now_ms = state.clock().unix_ms();
    let stale_after_ms = redundancy.map_or_else(
        || RedundancySettings::default().stale_after_ms,
        |r| r.settings().stale_after_ms,
    );
    let streams: Vec<StreamFacts> = state
        .streams()
        .iter()
        .map(|entry| {
            let channel = &entry.channel;
            let name = channel.name();
            StreamFacts {
                name: name.to_owned(),
                pushed_at_ms: channel.pushed_at_ms(),
                paused: channel.input_paused(),
                meeting: role.is_some() || gate.is_some_and(|g| g.is_managed(name)),
            }
        })
        .collect();
    // An MC of a group with media for a meeting it serves to no node cuts a timeline
    // of its own: its nodes cannot pull it.
    let off_timeline = match role {
        Some(role) => streams
            .iter()
            .filter(|s| {
                s.pushed_at_ms
                    .is_some_and(|at| now_ms.saturating_sub(at) < stale_after_ms)
            })
            .filter(|s| role.off_timeline(&s.name))
            .map(|s| s.name.clone())
            .collect(),
        None => Vec::new(),
    };
    Facts {
        shutting_down: state.health().shutting_down(),
        draining: redundancy.is_some_and(|r| r.drain.is_draining()),
        mesh_joined: redundancy.map(|r| r.view().is_some()),
        streams,
        stale_after_ms,
        now_ms,
        store_reachable: role.and_then(|r| r.store_reachable()),
        off_timeline,
    }
}
