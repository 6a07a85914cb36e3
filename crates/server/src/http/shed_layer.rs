//! The tower layer that admits or sheds every request of a node (after linkerd2-proxy's
//! `loadshed`): a shed request is answered at once with a prebuilt-shape 503 and its
//! body is never read (the request is dropped); an admitted one is counted in flight until its response is
//! ready, its latency feeds the adaptive concurrency limit, and the layers inside find
//! how it was admitted in its context ([`crate::http::request_context::Admitted`]).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::Response;
use futures_util::future::Either;
use shed::{Advice, Bucket, DeviceType, RequestFacts, RouteKind};
use tokio::time::Instant;
use tower::{Layer, Service};

use crate::clock::Clock;
use crate::http::header_walk::first_values;
use crate::http::request_context::{Admitted, Connection, ContextService, RequestContext};
use crate::shed::Decision;
use crate::shed::Shedder;
use crate::url::{Route, Target};
use shed::member_id;

/// Names the device family explicitly (`DeviceType` names: `browser`, `apple`,
/// `android`, `smart_tv`, `media_tool`, `unknown`); wins over `User-Agent`.
pub const DEVICE_HEADER: HeaderName = HeaderName::from_static("x-brdyun-device");
/// Identifies the member (any opaque string, hashed with [`crate::shed::member_id`]).
pub const MEMBER_HEADER: HeaderName = HeaderName::from_static("x-brdyun-member");
/// `1` when the member has a running playback (players set it on every request).
pub const PLAYBACK_HEADER: HeaderName = HeaderName::from_static("x-brdyun-playback");

/// Everything classification needs, from the path and headers only: no allocation,
/// no body. A GET or HEAD; see [`facts_of`] for the other methods.
pub fn request_facts(path: &str, headers: &HeaderMap) -> RequestFacts {
    facts_of(&Target::of_path(path), true, headers)
}

/// The facts of a request whose route the edge has found; `read_only` for GET and HEAD.
pub fn facts_of(target: &Target, read_only: bool, headers: &HeaderMap) -> RequestFacts {
    let [device, user_agent, member, playback, authorization] = first_values(
        headers,
        [
            &DEVICE_HEADER,
            &header::USER_AGENT,
            &MEMBER_HEADER,
            &PLAYBACK_HEADER,
            &header::AUTHORIZATION,
        ],
    );
    let route = match target.shed_kind(read_only) {
        // A node pulls with its credential; the route checks it (a meeting's relay
        // refuses a wrong one), and without one the relay ranks below viewers.
        RouteKind::Relay if authorization.is_none() => RouteKind::AnonymousRelay,
        route => route,
    };
    let device = device
        .and_then(|v| v.to_str().ok())
        .and_then(DeviceType::from_name)
        .unwrap_or_else(|| {
            user_agent
                .and_then(|v| v.to_str().ok())
                .map_or(DeviceType::Unknown, DeviceType::from_user_agent)
        });
    let member = member.and_then(|v| member_id(v.as_bytes()));
    // A viewer fetching segments or refreshing a media playlist is watching.
    let in_playback = matches!(route, RouteKind::LiveSegment | RouteKind::LivePlaylist)
        || playback.is_some_and(|v| v.as_bytes() == b"1");
    RequestFacts {
        route,
        device,
        member,
        in_playback,
    }
}

/// The headers every back-pressure answer shares, built once: a refusal clones them
/// instead of parsing and inserting each.
fn shed_headers() -> &'static HeaderMap {
    static HEADERS: std::sync::OnceLock<HeaderMap> = std::sync::OnceLock::new();
    HEADERS.get_or_init(|| {
        let mut headers = HeaderMap::with_capacity(4);
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_ORIGIN,
            HeaderValue::from_static("*"),
        );
        headers
    })
}

/// The back-pressure answer (SHED-3), the same for a real and an injected shed: 503,
/// `Retry-After`, JSON `{"maxRetries":N,"retryAfterSeconds":S}`, never cached, readable
/// cross-origin. The fixed headers are prebuilt; only the two dials are rendered.
pub fn shed_response(advice: &Advice) -> Response {
    let json = advice.json();
    let mut response = Response::new(Body::from(bytes::Bytes::copy_from_slice(json.as_bytes())));
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    let headers = response.headers_mut();
    headers.clone_from(shed_headers());
    if let Ok(value) = HeaderValue::from_bytes(advice.retry_after().as_bytes()) {
        headers.insert(header::RETRY_AFTER, value);
    }
    response
}

/// Wraps a service with the node's shedder.
#[derive(Debug, Clone)]
pub struct ShedLayer {
    shedder: Arc<Shedder>,
    clock: Clock,
}

impl ShedLayer {
    /// A layer deciding with this shedder; the experiments' records of what it refused
    /// are dated by the node's `clock`.
    pub fn new(shedder: Arc<Shedder>, clock: Clock) -> Self {
        Self { shedder, clock }
    }
}

impl<S> Layer<S> for ShedLayer {
    type Service = ShedService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ShedService {
            inner,
            shedder: Arc::clone(&self.shedder),
            clock: self.clock.clone(),
        }
    }
}

/// The service [`ShedLayer`] produces.
#[derive(Debug, Clone)]
pub struct ShedService<S> {
    inner: S,
    shedder: Arc<Shedder>,
    clock: Clock,
}

/// Counts one admitted request in flight until dropped (answered or cancelled).
struct InFlight {
    shedder: Arc<Shedder>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.shedder.metrics().leave();
    }
}

/// The response future of [`ShedService`]: the ready 503 of a shed request, or the
/// routes' future of an admitted one with its in-flight guard. A plain enum, so the
/// admit path adds no allocation to what the routes do.
pub struct ShedFuture<F> {
    state: FutureState<F>,
}

enum FutureState<F> {
    Shed(Option<Response>),
    /// The refusal of a request that broke the device contract, answered when the
    /// connection's pause ends: HTTP/1.1 answers in order, so the requests a device
    /// pipelined behind it wait too, instead of each being refused at once.
    Held {
        until: Pin<Box<tokio::time::Sleep>>,
        response: Option<Response>,
    },
    Admitted {
        inner: F,
        admission: Admission,
    },
}

impl<F> Future for ShedFuture<F>
where
    F: Future<Output = Result<Response, Infallible>> + Unpin,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        match &mut this.state {
            FutureState::Shed(response) => match response.take() {
                Some(response) => Poll::Ready(Ok(response)),
                // Polled again after completion: the response was already handed out.
                None => Poll::Pending,
            },
            FutureState::Held { until, response } => {
                ready!(until.as_mut().poll(cx));
                match response.take() {
                    Some(response) => Poll::Ready(Ok(response)),
                    None => Poll::Pending,
                }
            }
            FutureState::Admitted { inner, admission } => {
                let response = ready!(Pin::new(inner).poll(cx));
                let Admission {
                    guard,
                    bucket,
                    started,
                    in_flight_at_start,
                } = admission;
                guard
                    .shedder
                    .complete(*bucket, started.elapsed(), *in_flight_at_start);
                // Leave the in-flight count now, not when the future is dropped.
                this.state = FutureState::Shed(None);
                Poll::Ready(response)
            }
        }
    }
}

/// Tells the access log how the current request was ranked (a thread-local write).
fn note_rank(priority: u8, shed: bool) {
    crate::http::request_id::note_rank(crate::http::request_id::Rank { priority, shed });
}

/// The routes' future must be `Unpin` (axum's route futures are); box a service whose
/// future is not (e.g. with `Box::pin` in a `service_fn`).
impl<S> Service<Request> for ShedService<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone,
    S::Future: Unpin,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<S::Future, ShedFuture<S::Future>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        // The inner service polled ready for this call answers it (its future owns
        // what it needs: no clone of the service per request).
        let target = RequestContext::target(request.extensions()).copied();
        if !self.shedder.enabled()
            || never_shed(target.as_ref(), &request, Connection::of(&request))
        {
            return Either::Left(self.inner.call(request));
        }
        match self.admit(&request, target, Connection::of(&request)) {
            Verdict::Admit(admission, admitted) => {
                RequestContext::of_mut(&mut request).admitted = Some(admitted);
                Either::Right(admission.answer(self.inner.call(request)))
            }
            // The request is dropped here, its body unread.
            Verdict::Shed(shed) => Either::Right(shed),
        }
    }
}

impl<S> ContextService for ShedService<S>
where
    S: ContextService<Response = Response, Error = Infallible> + Clone,
    S::Future: Unpin,
{
    fn call_with(&mut self, request: Request, mut context: RequestContext) -> Self::Future {
        if !self.shedder.enabled()
            || never_shed(
                context.target.as_ref(),
                &request,
                context.connection.as_ref(),
            )
        {
            return Either::Left(self.inner.call_with(request, context));
        }
        match self.admit(&request, context.target, context.connection.as_ref()) {
            Verdict::Admit(admission, admitted) => {
                context.admitted = Some(admitted);
                Either::Right(admission.answer(self.inner.call_with(request, context)))
            }
            Verdict::Shed(shed) => Either::Right(shed),
        }
    }
}

/// Whether `request` (its route `target` as the edge found it, else found from its
/// path) is one no load, fault rule or experiment sheds ([`Route::never_shed`]): it is
/// neither classified nor counted in flight. The exemption is bounded
/// ([`crate::health::budget`]): beyond it a probe is classified as a status read
/// (DEGRADED) and counted like any request, except the watchdog's own (its
/// connection's exact peer).
fn never_shed(target: Option<&Target>, request: &Request, connection: Option<&Connection>) -> bool {
    let route = match target {
        Some(target) => target.route,
        None => Target::of_path(request.uri().path()).route,
    };
    if !route.is_some_and(Route::never_shed) {
        return false;
    }
    connection.is_some_and(|c| crate::http::conn_limits::ProbePeer::is(c.peer))
        || crate::health::budget::take()
}

/// What [`ShedService`] decides for a request.
enum Verdict<F> {
    /// Admitted: the inner service answers it, told how it was admitted.
    Admit(Admission, Admitted),
    /// Shed: this is its answer.
    Shed(ShedFuture<F>),
}

/// What an admitted request is timed and counted by until its answer is ready.
struct Admission {
    guard: InFlight,
    bucket: Bucket,
    started: Instant,
    in_flight_at_start: u32,
}

impl Admission {
    /// The future of the answer `inner` makes, counted under this admission.
    fn answer<F>(self, inner: F) -> ShedFuture<F> {
        ShedFuture {
            state: FutureState::Admitted {
                inner,
                admission: self,
            },
        }
    }
}

impl<S> ShedService<S> {
    /// Admits `request` (over `connection`; its route `target` as the edge found it,
    /// else found from its path) or sheds it: a shed request's answer is the returned
    /// future, and the request is dropped unread.
    fn admit<F>(
        &self,
        request: &Request,
        target: Option<Target>,
        connection: Option<&Connection>,
    ) -> Verdict<F> {
        let target = target.unwrap_or_else(|| Target::of_path(request.uri().path()));
        let read_only = matches!(*request.method(), Method::GET | Method::HEAD);
        let mut facts = facts_of(&target, read_only, request.headers());
        if target.route.is_some_and(Route::never_shed) {
            // A probe beyond the exemption's bound (`never_shed`): a status read,
            // DEGRADED, which load, fault rules and experiments shed.
            facts.route = RouteKind::Status;
        }
        // KPI beacons are measured, never shed for an experiment (only by overload).
        let experiments_apply = target.route != Some(Route::KpiBeacon);
        let bucket = match self.shedder.decide_with(&facts, experiments_apply) {
            Decision::Admit(classified) => {
                note_rank(classified.priority.get(), false);
                classified.bucket
            }
            Decision::Shed {
                advice,
                injected_by,
                experiment,
                classified,
                partial,
            } => {
                note_rank(classified.priority.get(), true);
                tracing::debug!(
                    route = facts.route.as_str(),
                    priority = classified.priority.get(),
                    rule = injected_by.map(|r| r.0),
                    experiment,
                    "request shed"
                );
                // Overload refusals hold the connection to the device contract; an
                // injected one (fault rule, experiment) must not change what it tests.
                let mut held_until = None;
                if injected_by.is_none() && !experiment {
                    if let Some(gate) = connection.and_then(|c| c.gate.as_ref()) {
                        let max_pause = self.shedder.pause_for(partial);
                        if gate.refused(facts.route, classified.bucket, advice, max_pause) {
                            self.shedder.pauses().count_pause();
                            held_until = gate.paused_until();
                        }
                    }
                }
                // A refused CRITICAL request of an observed member is a failure of its
                // KPIs (the admitted ones are told by [`super::kpi_layer`]).
                if classified.bucket == Bucket::Critical {
                    let experiments = self.shedder.experiments();
                    if let Some(o) = experiments.observe(&facts, request.headers()) {
                        let now = self.clock.unix_ms_u64();
                        experiments.critical_answered(o, true, now);
                    }
                }
                let response = Some(shed_response(&advice));
                let state = match held_until {
                    Some(until) => FutureState::Held {
                        until: Box::pin(tokio::time::sleep_until(until)),
                        response,
                    },
                    None => FutureState::Shed(response),
                };
                return Verdict::Shed(ShedFuture { state });
            }
        };
        let in_flight_at_start = self.shedder.metrics().enter();
        let admitted = Admitted { facts, bucket };
        Verdict::Admit(
            Admission {
                guard: InFlight {
                    shedder: Arc::clone(&self.shedder),
                },
                bucket,
                // Before the call: an answer made in the call (a playlist from memory) is
                // timed with the work that made it.
                started: Instant::now(),
                in_flight_at_start,
            },
            admitted,
        )
    }
}
