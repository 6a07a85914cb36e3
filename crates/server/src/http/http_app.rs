//! What the serving loops ([`crate::http::serve`], [`crate::http::lane`], [`crate::http::connection`])
//! accept as an application: a bound of its own, so serving does not depend on the
//! node's routes (the node's [`crate::app::NodeApp`] depends on much that depends on
//! serving's types).

use std::convert::Infallible;

use axum::extract::Request;
use axum::response::Response;
use tower::Service;

use crate::http::request_context::ContextService;

/// What the serving loops ([`crate::http::serve`], [`crate::http::lane`]) can serve: any cloneable
/// tower service answering axum requests without error that takes a request's context
/// beside it ([`ContextService`]) — a node's [`crate::app::NodeApp`], or a bare
/// [`axum::Router`] (the HTTP floor benchmark).
pub trait HttpApp:
    Service<Request, Response = Response, Error = Infallible, Future: Send + 'static>
    + ContextService
    + Clone
    + Send
    + Sync
    + 'static
{
}

impl<T> HttpApp for T where
    T: Service<Request, Response = Response, Error = Infallible, Future: Send + 'static>
        + ContextService
        + Clone
        + Send
        + Sync
        + 'static
{
}
