//! `/healthz` and `/readyz` of a node and an MC (`docs/operations.md`, "Health and
//! readiness"): no token, no body read, never shed (the shedding layer lets them
//! through), each answer cheap — a heartbeat check, a readiness verdict cached for
//! [`crate::health::READY_CACHE`].

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use codes::Code;

use crate::health::{heartbeat, ready, Facts, Readiness, StreamFacts};
use crate::redundancy::RedundancySettings;
use crate::state::AppState;

/// `GET /healthz`: 200 while every runtime of the process beats; 503 (115002, `field`
/// the silent runtime) when one has stopped. Answered by a serving thread, so a hung
/// serving path answers nothing at all.
pub async fn healthz() -> Response {
    match heartbeat::stalled() {
        None => no_store((StatusCode::OK, "ok\n").into_response()),
        Some((runtime, silent)) => {
            tracing::warn!(%runtime, silent_ms = silent.as_millis() as u64, "a runtime stopped beating: unhealthy");
            crate::error::respond(Code::Health(codes::Health::Unhealthy), Some(&runtime))
        }
    }
}

/// `GET /readyz`: 200 `{"ready":true,"idle":[…]}` when the process is ready for
/// viewers, else 503 with 115001 and its reasons (see [`ready::assess`]).
pub async fn readyz(State(state): State<AppState>) -> Response {
    let readiness = state.health().readiness(|| ready::assess(&facts(&state)));
    answer(&readiness)
}

/// The answer of a verdict.
fn answer(readiness: &Readiness) -> Response {
    let body = readiness.json().to_string();
    let mut response = if readiness.ready() {
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
    let mc = state.mc();
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
                meeting: mc.is_some() || gate.is_some_and(|g| g.is_managed(name)),
            }
        })
        .collect();
    // An MC of a group with media for a meeting it serves to no node cuts a timeline
    // of its own: its nodes cannot pull it.
    let off_timeline = match mc {
        Some(mc) => streams
            .iter()
            .filter(|s| {
                s.pushed_at_ms
                    .is_some_and(|at| now_ms.saturating_sub(at) < stale_after_ms)
            })
            .filter(|s| !mc.relay_open(&s.name, false))
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
        store_reachable: mc.and_then(crate::mc::McState::store_reachable),
        off_timeline,
    }
}
