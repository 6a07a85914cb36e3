//! The MC role (`brdyun mc`): the meeting API ([`router`], handlers in [`api`]), its
//! OpenAPI document ([`openapi`]), its stores ([`store`], [`etcd_store`]), the viewer
//! token minter ([`minter`], [`viewers`]), the nodes' sync and viewer reports
//! ([`report`]), the group's timeline ownership ([`timeline`], [`ownership`]) and the
//! caption API ([`captions`]), the meetings' recordings on object storage
//! ([`recordings`]).
//!
//! The MC serves its meetings' relays through an ordinary node ([`server`]): its
//! router falls back to the node's routes, so `/{meeting}/mpegts` is the relay every
//! node pulls a meeting from, and its rules for those files (its nodes' token, its
//! timeline) and its part of readiness reach the node as a [`server::role::Role`]
//! (its `role` module). A node's side of meetings (its gate, private meetings' sessions) is
//! [`server::access`].

pub mod api;
pub mod captions;
pub mod etcd_store;
pub mod media_now;
pub mod minter;
pub mod openapi;
pub mod ownership;
pub mod recordings;
pub mod report;
mod role;
pub mod session_key_store;
mod state;
pub mod store;
pub mod timeline;
pub mod viewers;

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::{get, post, put, MethodRouter};
use axum::Router;

use server::http::extract::CodedPath;

pub use etcd_store::EtcdSettings;
pub use state::{McSettings, McState};

use server::state::AppState;
use server::url::Route;

/// The MC's HTTP application: the meeting API (the MC rows of the route table), then the
/// node's routes (the meeting streams and their relays), all behind the node's shedding
/// layer and edge, so the meeting API is classified and shed like every other route.
pub fn router(mc: McState, node: AppState) -> server::app::NodeApp {
    node.set_role(std::sync::Arc::new(role::McRole(mc.clone())));
    let api = Route::MC
        .into_iter()
        .fold(Router::new(), |router, route| {
            router.route(route.pattern(), handler(route, &node))
        })
        .method_not_allowed_fallback(|| async { server::error::ApiError::MethodNotAllowed })
        .with_state(mc);
    server::app::node_app(api.merge(server::routes::routes(node.clone())), &node)
}

/// The handler of an MC route; a node route has none here (see [`server::routes`]).
/// The caption API also needs the node's streams (`node`): cues go to the meeting's
/// pipeline on this MC; so does the nodes' sync, which tells what media each meeting
/// has here ([`media_now`]).
fn handler(route: Route, node: &AppState) -> MethodRouter<McState> {
    match route {
        Route::McCaptions => {
            let node = node.clone();
            post(
                move |State(mc): State<McState>,
                      CodedPath(id): CodedPath<String>,
                      headers: HeaderMap,
                      body: Body| {
                    let node = node.clone();
                    async move { crate::captions::post(mc, node, id, headers, body).await }
                },
            )
        }
        Route::McOpenApi => get(openapi::document),
        Route::McMeetings => get(api::list).post(api::create),
        Route::McMeeting => get(api::get_one),
        Route::McViewerLimit => put(api::set_viewer_limit),
        Route::McRecordings => get(recordings::list),
        Route::McViewerTokens => post(viewers::mint),
        Route::McViewer => axum::routing::delete(viewers::remove),
        Route::McMeetingAction => post(api::action),
        Route::McNodeSync => {
            let node = node.clone();
            get(
                move |State(mc): State<McState>,
                      headers: HeaderMap,
                      query: server::http::extract::CodedQuery<
                    std::collections::HashMap<String, String>,
                >| {
                    let node = node.clone();
                    async move { api::sync(mc, node, headers, query).await }
                },
            )
        }
        _ => MethodRouter::new(),
    }
}

#[cfg(test)]
mod door_tests;
#[cfg(test)]
mod tests;
