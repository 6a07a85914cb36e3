//! The tower layer that admits or sheds every request of a node (after linkerd2-proxy's
//! `loadshed`): a shed request is answered at once with a prebuilt-shape 503 and its
//! body is never read; an admitted one is counted in flight until its response is
//! ready, and its latency feeds the adaptive concurrency limit.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use futures_util::future::{self, BoxFuture, Either, Ready};
use shed::{Advice, Bucket, DeviceType, RequestFacts, RouteKind};
use tokio::time::Instant;
use tower::{Layer, Service};

use super::shedder::{member_id, Decision, Shedder};
use crate::routes::shed_route_kind;

/// Names the device family explicitly (`DeviceType` names: `browser`, `apple`,
/// `android`, `smart_tv`, `media_tool`, `unknown`); wins over `User-Agent`.
pub const DEVICE_HEADER: HeaderName = HeaderName::from_static("x-brdyun-device");
/// Identifies the member (any opaque string, hashed with [`super::member_id`]).
pub const MEMBER_HEADER: HeaderName = HeaderName::from_static("x-brdyun-member");
/// `1` when the member has a running playback (players set it on every request).
pub const PLAYBACK_HEADER: HeaderName = HeaderName::from_static("x-brdyun-playback");

/// Everything classification needs, from the path and headers only: no allocation,
/// no body.
pub fn request_facts(path: &str, headers: &HeaderMap) -> RequestFacts {
    let route = shed_route_kind(path);
    let device = headers
        .get(&DEVICE_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(DeviceType::from_name)
        .unwrap_or_else(|| {
            headers
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .map_or(DeviceType::Unknown, DeviceType::from_user_agent)
        });
    let member = headers
        .get(&MEMBER_HEADER)
        .and_then(|v| member_id(v.as_bytes()));
    // A viewer fetching segments or refreshing a media playlist is watching.
    let in_playback = matches!(route, RouteKind::LiveSegment | RouteKind::LivePlaylist)
        || headers
            .get(&PLAYBACK_HEADER)
            .is_some_and(|v| v.as_bytes() == b"1");
    RequestFacts {
        route,
        device,
        member,
        in_playback,
    }
}

/// The back-pressure answer (SHED-3), the same for a real and an injected shed: 503,
/// `Retry-After`, JSON `{"maxRetries":N,"retryAfterSeconds":S}`, never cached, readable
/// cross-origin.
pub fn shed_response(advice: &Advice) -> Response {
    let json = advice.json();
    let mut response = Response::new(Body::from(bytes::Bytes::copy_from_slice(json.as_bytes())));
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    if let Ok(value) = HeaderValue::from_bytes(advice.retry_after().as_bytes()) {
        headers.insert(header::RETRY_AFTER, value);
    }
    response
}

/// Wraps a service with the node's shedder.
#[derive(Debug, Clone)]
pub struct ShedLayer {
    shedder: Arc<Shedder>,
}

impl ShedLayer {
    /// A layer deciding with this shedder.
    pub fn new(shedder: Arc<Shedder>) -> Self {
        Self { shedder }
    }
}

impl<S> Layer<S> for ShedLayer {
    type Service = ShedService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ShedService {
            inner,
            shedder: Arc::clone(&self.shedder),
        }
    }
}

/// The service [`ShedLayer`] produces.
#[derive(Debug, Clone)]
pub struct ShedService<S> {
    inner: S,
    shedder: Arc<Shedder>,
}

/// Counts one admitted request in flight until dropped (answered or cancelled).
struct InFlight {
    shedder: Arc<Shedder>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.shedder.leave();
    }
}

impl<S> Service<Request> for ShedService<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<
        Ready<Result<Response, Infallible>>,
        BoxFuture<'static, Result<Response, Infallible>>,
    >;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // The ready service answers this call; a fresh clone waits for the next one.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        if !self.shedder.enabled() {
            return Either::Right(Box::pin(inner.call(request)));
        }
        let facts = request_facts(request.uri().path(), request.headers());
        let bucket: Bucket = match self.shedder.decide(&facts) {
            Decision::Admit(classified) => classified.bucket,
            Decision::Shed {
                advice,
                injected_by,
                classified,
            } => {
                tracing::debug!(
                    route = facts.route.as_str(),
                    priority = classified.priority.get(),
                    rule = injected_by.map(|r| r.0),
                    "request shed"
                );
                return Either::Left(future::ready(Ok(shed_response(&advice))));
            }
        };
        let shedder = Arc::clone(&self.shedder);
        let in_flight_at_start = shedder.enter();
        let guard = InFlight {
            shedder: Arc::clone(&shedder),
        };
        let started = Instant::now();
        Either::Right(Box::pin(async move {
            let response = inner.call(request).await;
            shedder.complete(bucket, started.elapsed(), in_flight_at_start);
            drop(guard);
            response
        }))
    }
}
