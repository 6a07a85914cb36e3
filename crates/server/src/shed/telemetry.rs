//! `POST /telemetry`: the sink for player beacons and logs. It reads and discards the
//! body (bounded by the router's body limit) and answers `204`. It exists so beacons
//! have a NON_CRITICAL route the shedding layer refuses first under overload (SHED-1);
//! storing and aggregating beacons is a later issue's work.

use axum::body::Bytes;
use axum::http::StatusCode;

/// Accepts one beacon.
pub async fn beacon(body: Bytes) -> StatusCode {
    tracing::trace!(bytes = body.len(), "telemetry beacon");
    StatusCode::NO_CONTENT
}
