//! What a request carries besides its head: the connection it came over
//! ([`Connection`]) and the target the edge found for its path ([`Target`]), as one
//! [`RequestContext`]. On the node's own path (connection → edge → shedding → a stream
//! file) the context travels beside the request ([`ContextService`], [`Arrival`]): an
//! extension map costs three allocations and a hash lookup per read, on every
//! playlist and segment. Anything else (the axum router's handlers, a service stacked
//! in a test) finds it in the request's extensions, as one extension.

use axum::http::{Extensions, Request};

use std::net::SocketAddr;
use std::sync::Arc;

use shed::{Bucket, RequestFacts};

use crate::shed::ConnectionGate;
use crate::url::{StreamFile, Target};

/// What a request knows of its connection, carried in its [`RequestContext`] (one
/// extension, so a request pays for one insertion, not one per fact).
#[derive(Debug, Clone)]
pub struct Connection {
    /// The peer's address (`X-Forwarded-For` is never read, OTT-ADDR-4).
    pub peer: SocketAddr,
    /// Whether the request arrived over TLS, for the OTT address rules (an HTTPS
    /// viewer gets only HTTPS backups, OTT-ADDR-3).
    pub secure: bool,
    /// The connection's hold under the device contract (SHED-3), which the shedding
    /// layer arms when it refuses a request; `None` for a request made in-process.
    pub gate: Option<Arc<ConnectionGate>>,
}

impl Connection {
    /// The connection of `request`, if it came over one.
    pub fn of<B>(request: &Request<B>) -> Option<&Connection> {
        RequestContext::of(request.extensions()).and_then(|context| context.connection.as_ref())
    }
}

/// The request's connection and target, each when known.
#[derive(Debug, Clone, Default)]
pub struct RequestContext {
    /// The connection, for a request that came over one (not one made in-process).
    pub connection: Option<Connection>,
    /// The route and file the edge found (`None` before the edge, or without it).
    pub target: Option<Target>,
    /// How the shedding layer admitted the request, for the layers inside it (the
    /// experiments' KPIs); `None` before it, or for a request it let through unranked.
    pub admitted: Option<Admitted>,
}

/// A request the shedding layer admitted: the facts it decided on and their bucket.
#[derive(Debug, Clone, Copy)]
pub struct Admitted {
    /// Route kind, device, member and playback, as the layer gathered them.
    pub facts: RequestFacts,
    /// The bucket it was classified in.
    pub bucket: Bucket,
}

impl RequestContext {
    /// The context of a request's extensions, if it has one.
    pub fn of(extensions: &Extensions) -> Option<&Self> {
        extensions.get::<Self>()
    }

    /// The target the edge found for this request, if any.
    pub fn target(extensions: &Extensions) -> Option<&Target> {
        Self::of(extensions).and_then(|context| context.target.as_ref())
    }

    /// The context of `request`, made empty if it had none, to be filled in.
    pub fn of_mut<B>(request: &mut Request<B>) -> &mut Self {
        request.extensions_mut().get_or_insert_default::<Self>()
    }

    /// The context of `request` taken out of its extensions (empty if it had none),
    /// to travel beside it.
    pub fn take<B>(request: &mut Request<B>) -> Self {
        request
            .extensions_mut()
            .remove::<Self>()
            .unwrap_or_default()
    }

    /// `request` with this context as its extension: for a service that reads it there.
    pub fn into_extensions<B>(self, mut request: Request<B>) -> Request<B> {
        request.extensions_mut().insert(self);
        request
    }
}

/// A request as it reaches a stream file's entry ([`crate::routes::stream`]), with its
/// context beside it rather than in its extensions.
#[derive(Debug)]
pub struct Arrival {
    /// The request, head and body.
    pub request: Request<axum::body::Body>,
    /// Its connection and the target the edge found.
    pub context: RequestContext,
}

impl Arrival {
    /// `request` with the context its extensions carry (from the router, or a test).
    pub fn from_request(mut request: Request<axum::body::Body>) -> Self {
        let context = RequestContext::take(&mut request);
        Self { request, context }
    }

    /// The connection the request came over, if any.
    pub fn connection(&self) -> Option<&Connection> {
        self.context.connection.as_ref()
    }

    /// The stream file a handler serves: the one the edge found, else `file` parsed (a
    /// handler called without the edge, as in unit tests).
    pub fn stream_file(&self, file: &str) -> Option<StreamFile> {
        Target::stream_file(self.context.target.as_ref(), file)
    }
}

/// A service that can be handed a request's context beside the request, not in its
/// extension map: what serving calls ([`crate::http::http_app::HttpApp`]). The node's own
/// layers pass it on; any other service gets it as an extension
/// ([`RequestContext::into_extensions`]).
pub trait ContextService<B = axum::body::Body>: tower::Service<Request<B>> {
    /// Answers `request`, whose context is `context`.
    fn call_with(&mut self, request: Request<B>, context: RequestContext) -> Self::Future;
}

impl ContextService for axum::Router {
    fn call_with(
        &mut self,
        request: Request<axum::body::Body>,
        context: RequestContext,
    ) -> Self::Future {
        tower::Service::call(self, context.into_extensions(request))
    }
}

impl<F, B> ContextService<B> for tower::util::ServiceFn<F>
where
    tower::util::ServiceFn<F>: tower::Service<Request<B>>,
{
    fn call_with(&mut self, request: Request<B>, context: RequestContext) -> Self::Future {
        tower::Service::call(self, context.into_extensions(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Puts a master playlist's target and a loopback connection in `request`'s
    /// extensions; answers the target.
    fn fill<B>(request: &mut Request<B>, secure: bool) -> Target {
        let target = Target::of_path("/meeting/index.m3u8");
        RequestContext::of_mut(request).target = Some(target);
        RequestContext::of_mut(request).connection = Some(Connection {
            peer: std::net::SocketAddr::from(([127, 0, 0, 1], 9)),
            secure,
            gate: None,
        });
        target
    }

    #[test]
    fn one_extension_holds_the_connection_and_the_target() {
        let mut request = Request::new(());
        assert!(RequestContext::target(request.extensions()).is_none());
        let target = fill(&mut request, true);
        assert_eq!(RequestContext::target(request.extensions()), Some(&target));
        assert!(Connection::of(&request).is_some_and(|c| c.secure));
        assert_eq!(request.extensions().len(), 1);
    }

    #[test]
    fn an_arrival_takes_the_context_out_of_the_extensions() {
        let mut request = Request::new(axum::body::Body::empty());
        *request.uri_mut() = "/meeting/seg-7.ts".parse().expect("a path");
        let arrival = Arrival::from_request(request);
        assert!(arrival.connection().is_none());
        // Without the edge's target, the file is read from the name.
        assert_eq!(
            arrival.stream_file("seg-7.ts"),
            Some(StreamFile::Segment(7))
        );
        let mut request = arrival.request;
        let target = fill(&mut request, false);
        let arrival = Arrival::from_request(request);
        assert!(arrival.request.extensions().is_empty());
        assert_eq!(arrival.context.target, Some(target));
        assert_eq!(arrival.stream_file("index.m3u8"), Some(StreamFile::Master));
        assert!(arrival.connection().is_some());
        let request = arrival.context.into_extensions(arrival.request);
        assert!(Connection::of(&request).is_some());
    }
}
