//! The node's HTTP application as one tower service: the edge ([`crate::http::edge`]), then
//! the shedding layer ([`crate::http::shed_layer`]), then the experiments' KPI layer
//! ([`crate::http::kpi_layer`]), then [`Dispatch`], which calls the
//! stream-file entry ([`crate::routes::stream`]) directly for a `GET` of
//! `/{stream}/{file}` or `/{stream}/{rung}/{file}` — the playlists and segments that
//! make nearly all of a node's requests — and hands everything else to the axum router.
//! A request from a connection comes with its context beside it
//! ([`crate::http::request_context::ContextService`]), and a stream file's entry gets it so
//! ([`Arrival`]); the router's handlers find it in the request's extensions.
//!
//! The edge has already found the request's route in the route table ([`crate::url::Target`]), so a
//! stream file does not pay for a second routing, the router's path parameters, its
//! extractors and its per-route service clones; the layers wrap the whole application
//! once instead of every route. The answer is the router's for the same request: the
//! same entry, the same checks, the same coded refusals.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use axum::Router;
use tower::{Layer as _, Service};

use crate::http::edge::{Edge, EdgeLayer};
use crate::http::kpi_layer::{KpiLayer, KpiService};
use crate::http::request_context::{Arrival, ContextService, RequestContext};
use crate::http::shed_layer::{ShedLayer, ShedService};
use crate::routes::answer::{Answer, Waiting};
use crate::state::AppState;
use crate::url::Route;

/// Builds the node's HTTP application: its routes behind the shedding layer and the edge.
pub fn router(state: AppState) -> NodeApp {
    node_app(crate::routes::routes(state.clone()), &state)
}

/// A node's (or an MC's) whole HTTP application: routes behind the shedding layer and
/// the edge. Built by [`router`] and by the `mc` crate's router.
pub type NodeApp = Edge<ShedService<KpiService<Dispatch>>>;

/// Puts `router` (with the node's `state`) behind the shedding layer and the edge. The
/// shedding layer is inside the edge, so a shed answer is counted as a 5xx, and a CORS
/// preflight is answered before shedding (it costs nothing).
pub fn node_app(router: Router, state: &AppState) -> NodeApp {
    let dispatch = Dispatch {
        router,
        state: state.clone(),
    };
    let kpis = KpiLayer::new(Arc::clone(state.shedder()), state.clock().clone()).layer(dispatch);
    EdgeLayer::new(Arc::clone(state.metrics()))
        .layer(ShedLayer::new(Arc::clone(state.shedder()), state.clock().clone()).layer(kpis))
}

/// The innermost service: a stream file's `GET` straight to its entry, anything else
/// to the router.
#[derive(Clone)]
pub struct Dispatch {
    router: Router,
    state: AppState,
}

impl Service<Request> for Dispatch {
    type Response = Response;
    type Error = Infallible;
    type Future = DispatchFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let context = RequestContext::take(&mut request);
        self.call_with(request, context)
    }
}

impl ContextService for Dispatch {
    fn call_with(&mut self, request: Request, context: RequestContext) -> Self::Future {
        let route = context.target.and_then(|target| target.route);
        let stream_file = matches!(route, Some(Route::StreamFile | Route::RenditionFile));
        if stream_file && request.method() == Method::GET {
            let arrival = Arrival { request, context };
            return match crate::routes::stream::direct(&self.state, arrival) {
                Answer::Now(response) => DispatchFuture::Made(Some(response)),
                Answer::Later(waiting) => DispatchFuture::Waiting(waiting),
            };
        }
        // The router's handlers read the context from the request's extensions.
        DispatchFuture::Routed(self.router.call(context.into_extensions(request)))
    }
}

/// What [`Dispatch`] returns: a stream file's answer made at once (taken on the first
/// poll), one that waits, or the router's.
pub enum DispatchFuture {
    /// A stream file's answer, made.
    Made(Option<Response>),
    /// A stream file's answer that waits.
    Waiting(Waiting),
    /// The router's answer.
    Routed(axum::routing::future::RouteFuture<Infallible>),
}

impl Future for DispatchFuture {
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            // Polled again after its answer (no server does): an error, not a panic.
            DispatchFuture::Made(response) => Poll::Ready(Ok(response
                .take()
                .unwrap_or_else(|| axum::http::StatusCode::INTERNAL_SERVER_ERROR.into_response()))),
            DispatchFuture::Waiting(waiting) => waiting.as_mut().poll(cx).map(Ok),
            DispatchFuture::Routed(routed) => Pin::new(routed).poll(cx),
        }
    }
}
