//! A node's HTTP application, built from the one route table ([`crate::url::Route`]):
//! each row's handler is chosen here, its metrics label and shedding kind come from the
//! same row. Every route is documented in `docs/routes.md`.

pub mod admin;
pub mod answer;
pub mod archive;
pub mod archive_mp4;
pub mod auth;
pub mod backups;
pub mod blocking_chunks;
pub mod dash;
pub mod experiments;
pub mod fault_rules;
pub mod fmp4;
pub mod health;
pub mod hls;
pub mod llhls;
pub mod player;
pub mod recorded;
pub mod relay;
pub mod steering;
pub mod stream;
pub mod subtitles;
pub mod telemetry;
pub mod watch;

use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{delete, get, post, MethodRouter};
use axum::Router;

use crate::error::ApiError;
use crate::routes::experiments as experiments_api;
use crate::state::AppState;
use crate::url::Route;

/// The node's routes with its state and fallback, without the layers (an MC adds its
/// own routes before [`crate::app::node_app`]).
pub fn routes(state: AppState) -> Router {
    Route::NODE
        .into_iter()
        .fold(Router::new(), |router, route| {
            router.route(route.pattern(), handler(route))
        })
        .fallback(|| async { ApiError::NotFound })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .with_state(state)
}

/// The handler of a node route; an MC route has none here (the `mc` crate serves them).
fn handler(route: Route) -> MethodRouter<AppState> {
    match route {
        Route::Root => get(|| async { Redirect::temporary("/player") }),
        Route::Player => get(player::page),
        Route::PlayerScript => get(player::hls_js),
        Route::Metrics => get(metrics),
        Route::Healthz => get(health::healthz),
        Route::Readyz => get(health::readyz),
        Route::NodeStatus => get(admin::node),
        Route::UtcTiming => get(dash::time),
        Route::Streams => get(admin::streams),
        Route::StreamStatus => get(admin::stream),
        Route::StreamPause => post(backups::pause),
        Route::StreamResume => post(backups::resume),
        Route::OttReport => get(backups::report),
        Route::BackupsPage => get(backups::page),
        Route::Drain => get(backups::drain_state)
            .post(backups::drain)
            .delete(backups::undrain),
        Route::Steering => get(steering::manifest),
        Route::Watch => get(watch::entry),
        Route::FaultRules => get(fault_rules::list).post(fault_rules::add),
        Route::FaultRule => delete(fault_rules::remove),
        Route::Telemetry | Route::KpiBeacon => post(telemetry::beacon),
        Route::ExperimentsPage => get(experiments_api::page),
        Route::Experiments => get(experiments_api::status).post(experiments_api::upsert),
        Route::ExperimentsReport => get(experiments_api::report),
        Route::Experiment => delete(experiments_api::remove),
        Route::ExperimentStart => post(experiments_api::start),
        Route::StreamFile => get(stream::stream_file),
        Route::RenditionFile => get(stream::rendition_file),
        Route::McOpenApi
        | Route::McMeetings
        | Route::McMeeting
        | Route::McViewerLimit
        | Route::McCaptions
        | Route::McRecordings
        | Route::McViewerTokens
        | Route::McViewer
        | Route::McMeetingAction
        | Route::McNodeSync => MethodRouter::new(),
    }
}

async fn metrics(State(state): State<AppState>) -> Response {
    let mut response = state.metrics().render().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_the_paths_the_code_uses() {
        assert_eq!(Route::UtcTiming.pattern(), dash::UTC_TIMING_PATH);
        assert_eq!(
            Route::KpiBeacon.pattern(),
            crate::experiments::KPI_BEACON_PATH
        );
    }
}
