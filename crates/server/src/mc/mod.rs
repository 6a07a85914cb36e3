//! Meetings over HTTP.
//!
//! - On the MC (`brdyun mc`): the meeting API ([`router`], handlers in [`api`]),
//!   its OpenAPI document ([`openapi`]) and its store ([`store`]). The MC's router
//!   falls back to the ordinary node router, so `/{meeting}/mpegts` is the relay every
//!   node pulls a meeting from.
//! - On a node with an MC: the [`gate`] in front of every meeting's stream.

pub mod api;
pub mod gate;
pub mod openapi;
mod state;
pub mod store;

use axum::routing::{get, post, put, MethodRouter};
use axum::Router;

pub use state::{McSettings, McState};

use crate::state::AppState;
use crate::url::Route;

/// The MC's HTTP application: the meeting API (the MC rows of the route table), then the
/// node's routes (the meeting streams and their relays), all behind the node's shedding
/// layer and edge, so the meeting API is classified and shed like every other route.
pub fn router(mc: McState, node: AppState) -> Router {
    let api = Route::MC
        .into_iter()
        .fold(Router::new(), |router, route| {
            router.route(route.pattern(), handler(route))
        })
        .method_not_allowed_fallback(|| async { crate::error::ApiError::MethodNotAllowed })
        .with_state(mc);
    crate::routes::with_layers(api.merge(crate::routes::routes(node.clone())), &node)
}

/// The handler of an MC route; a node route has none here (see [`crate::routes`]).
fn handler(route: Route) -> MethodRouter<McState> {
    match route {
        Route::McOpenApi => get(openapi::document),
        Route::McMeetings => get(api::list).post(api::create),
        Route::McMeeting => get(api::get_one),
        Route::McViewerLimit => put(api::set_viewer_limit),
        Route::McMeetingAction => post(api::action),
        Route::McNodeSync => get(api::sync),
        _ => MethodRouter::new(),
    }
}

#[cfg(test)]
mod tests;
