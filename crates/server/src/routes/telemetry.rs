//! `POST /telemetry` and `POST /telemetry/kpi`: the sink for player beacons (EXP-1).
//! NON_CRITICAL routes, so the shedding layer refuses them first under overload
//! (SHED-1); `/telemetry/kpi` is never shed for an experiment (see
//! [`crate::experiments::KPI_BEACON_PATH`]).
//!
//! The body (at most [`MAX_BEACON_BYTES`]) is one beacon in the format of
//! [`crate::experiments::beacon`]. A valid beacon is answered `204`; when its member is
//! in a group of a running experiment with its device type in scope, it becomes a KPI
//! event of its session, everyone else's is dropped at once. Other JSON objects (logs,
//! heartbeats) are accepted and not counted. A body that is too large is `413`
//! (106002), one that is not a JSON object or a KPI event with a bad field `400`
//! (106001) naming the field.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::experiments::beacon::{Beacon, MAX_BEACON_BYTES};
use crate::http::shed_layer::{request_facts, MEMBER_HEADER};
use crate::routes::experiments::ExperimentsApiError;
use crate::state::AppState;
use shed::member_id;

/// Accepts one beacon.
pub async fn beacon(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BEACON_BYTES).await else {
        return ExperimentsApiError::TooLarge.into_response();
    };
    let beacon = match Beacon::parse(&bytes) {
        Ok(Some(b)) => b,
        Ok(None) => return StatusCode::NO_CONTENT.into_response(),
        Err(e) => {
            let field = match e {
                crate::experiments::beacon::BeaconError::Field(field) => Some(field),
                crate::experiments::beacon::BeaconError::Malformed => None,
            };
            return ExperimentsApiError::BadBeacon(field).into_response();
        }
    };
    let experiments = state.shedder().experiments();
    let facts = request_facts("/telemetry", &headers);
    let member = match &beacon.member {
        Some(name) => member_id(name.as_bytes()),
        None => headers
            .get(&MEMBER_HEADER)
            .and_then(|v| member_id(v.as_bytes())),
    };
    let device = beacon.device.unwrap_or(facts.device);
    if let Some(member) = member {
        let counted = experiments.beacon(
            &beacon.session,
            member,
            device,
            beacon.observation,
            state.clock().unix_ms_u64(),
        );
        tracing::trace!(counted, device = device.as_str(), "telemetry beacon");
    }
    StatusCode::NO_CONTENT.into_response()
}
