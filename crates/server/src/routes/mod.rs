//! The one router table of a node. Every route is documented in the README.

pub mod admin;
pub mod archive;
pub mod backups;
pub mod dash;
pub mod fmp4;
pub mod hls;
pub mod llhls;
pub mod player;
pub mod relay;

use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{delete, get, post};
use axum::Router;

use crate::error::ApiError;
use crate::experiments::api as experiments_api;
use crate::metrics::RouteKind;
use crate::shed::{fault_api, telemetry, ShedLayer};
use crate::state::AppState;

/// Builds the node's HTTP application.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(|| async { Redirect::temporary("/player") }))
        .route("/player", get(player::page))
        .route("/player/hls.min.js", get(player::hls_js))
        .route("/metrics", get(metrics))
        .route("/api/node", get(admin::node))
        .route(dash::UTC_TIMING_PATH, get(dash::time))
        .route("/api/streams", get(admin::streams))
        .route("/api/streams/{name}", get(admin::stream))
        .route("/api/streams/{name}/pause", post(backups::pause))
        .route("/api/streams/{name}/resume", post(backups::resume))
        .route("/api/ott", get(backups::report))
        .route("/backups", get(backups::page))
        .route(
            "/api/fault-rules",
            get(fault_api::list).post(fault_api::add),
        )
        .route("/api/fault-rules/{id}", delete(fault_api::remove))
        .route("/telemetry", post(telemetry::beacon))
        .route(crate::experiments::KPI_BEACON_PATH, post(telemetry::beacon))
        .route("/experiments", get(experiments_api::page))
        .route(
            "/api/experiments",
            get(experiments_api::status).post(experiments_api::upsert),
        )
        .route("/api/experiments/report", get(experiments_api::report))
        .route("/api/experiments/{id}", delete(experiments_api::remove))
        .route("/api/experiments/{id}/start", post(experiments_api::start))
        .route("/{stream}/{file}", get(crate::mc::gate::stream_file))
        .fallback(|| async { ApiError::NotFound })
        // Inside the CORS/counting layer: a shed answer is counted as a 5xx, and a CORS
        // preflight is answered before shedding (it costs nothing).
        .layer(ShedLayer::new(std::sync::Arc::clone(state.shedder())))
        .layer(crate::edge::EdgeLayer::new(std::sync::Arc::clone(
            state.metrics(),
        )))
        .with_state(state)
}

async fn metrics(State(state): State<AppState>) -> Response {
    let mut response = state.metrics().render().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}

/// The route kind of a path, for metrics.
pub fn route_kind(path: &str) -> RouteKind {
    if path.ends_with(".m3u8") || path.ends_with(".mpd") {
        RouteKind::Playlist
    } else if path.ends_with(".ts") || path.ends_with(".m4s") || path.ends_with(".mp4") {
        RouteKind::Segment
    } else if path.ends_with("/mpegts") {
        RouteKind::Relay
    } else if path.starts_with("/player") || path == "/backups" || path == "/experiments" {
        RouteKind::Player
    } else if path.starts_with("/api/") {
        RouteKind::Api
    } else if path == "/metrics" {
        RouteKind::Metrics
    } else {
        RouteKind::Other
    }
}

/// The shedding route kind of a path (SHED-1), refining [`route_kind`]: the master
/// playlist starts a playback, a media playlist or segment belongs to a running one.
pub fn shed_route_kind(path: &str) -> shed::RouteKind {
    use shed::RouteKind as Shed;
    match route_kind(path) {
        RouteKind::Playlist if path.ends_with("/index.m3u8") || path.ends_with("/index.mpd") => {
            Shed::PlaybackStart
        }
        RouteKind::Playlist => Shed::LivePlaylist,
        RouteKind::Segment => Shed::LiveSegment,
        RouteKind::Relay => Shed::Relay,
        RouteKind::Api | RouteKind::Metrics => Shed::Admin,
        // Opening the player page (and its script) is how a browser viewer starts a
        // playback; the operator screens (Backups, Experiments) rank as admin.
        RouteKind::Player if path.starts_with("/player") => Shed::PlaybackStart,
        RouteKind::Player => Shed::Admin,
        RouteKind::Other if path == "/telemetry" || path.starts_with("/telemetry/") => {
            Shed::Telemetry
        }
        RouteKind::Other => Shed::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::shed_route_kind;
    use shed::RouteKind as Shed;

    #[test]
    fn pages_rank_as_starting_a_playback_or_as_admin() {
        assert_eq!(shed_route_kind("/player"), Shed::PlaybackStart);
        assert_eq!(shed_route_kind("/player/hls.min.js"), Shed::PlaybackStart);
        assert_eq!(shed_route_kind("/backups"), Shed::Admin);
        assert_eq!(shed_route_kind("/s/index.m3u8"), Shed::PlaybackStart);
        assert_eq!(shed_route_kind("/s/mono.m3u8"), Shed::LivePlaylist);
        assert_eq!(shed_route_kind("/telemetry"), Shed::Telemetry);
        assert_eq!(shed_route_kind("/favicon.ico"), Shed::Other);
    }
}
