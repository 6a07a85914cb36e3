//! The outermost layer of every node's HTTP stack: finds the request's route in the
//! route table once ([`Target`], put in the request's [`RequestContext`] for the layers
//! and handlers below), answers CORS preflights, adds the CORS headers browser players
//! need to every answer of a player's route, refuses what the operator routes' door
//! refuses ([`crate::http::admin_door`]: no CORS grant there, another origin or a non-JSON
//! body refused), and counts every answer by route kind and status class. A plain
//! tower layer with an unboxed future, so the hot path (playlists, segments) pays a
//! few header inserts and one atomic add.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use tower::{Layer, Service};

use crate::http::admin_door;
use crate::http::request_context::{ContextService, RequestContext};
use crate::metrics::{Metrics, RouteKind};
use crate::url::Target;

/// Request headers a browser player may send cross-origin; the `X-Brdyun-*` ones state
/// its device, member, playback and client version to the shedding layer.
const ALLOW_HEADERS: &str = "Range, Content-Type, Authorization, X-Brdyun-Device, X-Brdyun-Member, X-Brdyun-Playback, X-Brdyun-Session, X-Brdyun-Client-Version";

/// Wraps a service with CORS and request counting.
#[derive(Clone)]
pub struct EdgeLayer {
    metrics: Arc<Metrics>,
}

impl EdgeLayer {
    /// Counts into `metrics`.
    pub fn new(metrics: Arc<Metrics>) -> Self {
        Self { metrics }
    }
}

impl<S> Layer<S> for EdgeLayer {
    type Service = Edge<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Edge {
            inner,
            metrics: Arc::clone(&self.metrics),
        }
    }
}

/// The service [`EdgeLayer`] builds.
#[derive(Clone)]
pub struct Edge<S> {
    inner: S,
    metrics: Arc<Metrics>,
}

impl<S, B> Service<Request<B>> for Edge<S>
where
    B: hyper::body::Body,
    S: Service<Request<B>, Response = Response<Body>, Error = Infallible>,
    S::Future: Unpin,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = EdgeFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        // The path is parsed here, once: the layers and handlers below read the target.
        let target = Target::of_path(request.uri().path());
        RequestContext::of_mut(&mut request).target = Some(target);
        self.answer(request, target, |inner, request| inner.call(request))
    }
}

impl<S, B> ContextService<B> for Edge<S>
where
    B: hyper::body::Body,
    S: ContextService<B, Response = Response<Body>, Error = Infallible>,
    S::Future: Unpin,
{
    fn call_with(&mut self, request: Request<B>, mut context: RequestContext) -> Self::Future {
        let target = Target::of_path(request.uri().path());
        context.target = Some(target);
        self.answer(request, target, |inner, request| {
            inner.call_with(request, context)
        })
    }
}

impl<S> Edge<S> {
    /// A preflight's answer, the operator door's refusal, or `call`'s on the inner
    /// service, finished and counted under `target`'s kind.
    fn answer<B: hyper::body::Body, F>(
        &mut self,
        request: Request<B>,
        target: Target,
        call: impl FnOnce(&mut S, Request<B>) -> F,
    ) -> EdgeFuture<F> {
        let kind = target.metrics_kind();
        let operator = admin_door::is_operator(target.route);
        if request.method() == Method::OPTIONS {
            return EdgeFuture::Ready(Some(finish(&self.metrics, kind, operator, preflight())));
        }
        if operator {
            let has_body = !request.body().is_end_stream()
                || request
                    .headers()
                    .get(header::CONTENT_LENGTH)
                    .is_some_and(|v| v.as_bytes() != b"0");
            let refused =
                admin_door::refusal(request.method(), request.uri(), request.headers(), has_body);
            if let Some(code) = refused {
                tracing::info!(code = code.code(), path = %crate::http::access_log::escaped(request.uri().path()), "operator api call refused at the door");
                let response = crate::error::respond(code, None);
                return EdgeFuture::Ready(Some(finish(&self.metrics, kind, true, response)));
            }
        }
        EdgeFuture::Inner {
            future: call(&mut self.inner, request),
            kind,
            operator,
            metrics: Arc::clone(&self.metrics),
        }
    }
}

/// What [`Edge`] returns: a ready answer (a preflight, a refusal at the operator door),
/// or the inner answer to be finished.
pub enum EdgeFuture<F> {
    /// The ready answer, taken on the first poll.
    Ready(Option<Response<Body>>),
    /// The inner service's answer, finished when ready.
    Inner {
        /// The inner future.
        future: F,
        /// The route kind, for counting.
        kind: RouteKind,
        /// An operator route: answered without a CORS grant.
        operator: bool,
        /// Where to count.
        metrics: Arc<Metrics>,
    },
}

impl<F> Future for EdgeFuture<F>
where
    F: Future<Output = Result<Response<Body>, Infallible>> + Unpin,
{
    type Output = Result<Response<Body>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            EdgeFuture::Ready(response) => Poll::Ready(Ok(response
                .take()
                .unwrap_or_else(|| StatusCode::NO_CONTENT.into_response_body()))),
            EdgeFuture::Inner {
                future,
                kind,
                operator,
                metrics,
            } => {
                let response = ready!(Pin::new(future).poll(cx))?;
                Poll::Ready(Ok(finish(metrics, *kind, *operator, response)))
            }
        }
    }
}

/// The answer to a CORS preflight.
fn preflight() -> Response<Body> {
    let mut response = StatusCode::NO_CONTENT.into_response_body();
    let headers = response.headers_mut();
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, HEAD, POST, OPTIONS"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(ALLOW_HEADERS),
    );
    headers.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("86400"),
    );
    response
}

/// Adds the CORS headers (a player's route only: an operator route grants no other
/// origin anything, its preflight included) and counts the answer.
fn finish(
    metrics: &Metrics,
    kind: RouteKind,
    operator: bool,
    mut response: Response<Body>,
) -> Response<Body> {
    let status = response.status();
    if operator {
        let headers = response.headers_mut();
        // Whatever a layer below set (the shedding layer's answer grants every origin).
        for name in [
            header::ACCESS_CONTROL_ALLOW_ORIGIN,
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            header::ACCESS_CONTROL_ALLOW_METHODS,
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            header::ACCESS_CONTROL_MAX_AGE,
        ] {
            headers.remove(name);
        }
    } else {
        add_cors(response.headers_mut(), status);
    }
    metrics.count_request(kind, status.as_u16());
    response
}

/// Any origin may read a player route's answer. A page's script reads an answer's safelisted
/// headers (`Content-Length`, `Content-Type`, `Cache-Control` …) without being told;
/// the two others it needs are named for it where they come: `Content-Range` (206,
/// 416) and `Retry-After` (the device contract's 429 and 503, SHED-3). A playlist or
/// segment answered whole carries neither, and goes without the list.
fn add_cors(headers: &mut HeaderMap, status: StatusCode) {
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    if exposes_headers(status) {
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("Content-Length, Content-Range, Retry-After"),
        );
    }
}

/// Whether an answer of `status` may carry `Content-Range` or `Retry-After`: a partial
/// answer, or any refusal or failure.
fn exposes_headers(status: StatusCode) -> bool {
    status == StatusCode::PARTIAL_CONTENT || status.is_client_error() || status.is_server_error()
}

/// An empty response with a status, without going through `IntoResponse`'s boxing.
trait IntoResponseBody {
    fn into_response_body(self) -> Response<Body>;
}

impl IntoResponseBody for StatusCode {
    fn into_response_body(self) -> Response<Body> {
        let mut response = Response::new(Body::empty());
        *response.status_mut() = self;
        response
    }
}
