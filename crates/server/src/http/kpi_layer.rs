//! The experiments' KPI layer (EXP-1), a tower layer of its own just inside the
//! shedding layer ([`super::shed_layer`]): for each request that layer admitted (the facts
//! it decided on travel in the request's context, [`Admitted`]), it asks the node's
//! experiments whether the member is observed by a running run (lock-free, `None` at
//! once while none runs) and, when it is, tells them the request was admitted (a
//! beacon-less player's starts and stalls) and, for a CRITICAL request, whether its
//! answer failed. Refusals never reach it: the shedding layer tells the experiments of
//! the CRITICAL ones itself, and the experiments' shed slices are part of its decision.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use axum::extract::Request;
use axum::response::Response;
use futures_util::future::Either;
use shed::Bucket;
use tower::{Layer, Service};

use crate::clock::Clock;
use crate::experiments::Observed;
use crate::http::request_context::{Admitted, ContextService, RequestContext};
use crate::shed::Shedder;

/// Wraps the routes with the KPI observation of the node's experiments.
#[derive(Debug, Clone)]
pub struct KpiLayer {
    shedder: Arc<Shedder>,
    clock: Clock,
}

impl KpiLayer {
    /// A layer reporting to `shedder`'s experiments, dated by the node's `clock`.
    pub fn new(shedder: Arc<Shedder>, clock: Clock) -> Self {
        Self { shedder, clock }
    }
}

impl<S> Layer<S> for KpiLayer {
    type Service = KpiService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        KpiService {
            inner,
            shedder: Arc::clone(&self.shedder),
            clock: self.clock.clone(),
        }
    }
}

/// The service [`KpiLayer`] produces.
#[derive(Debug, Clone)]
pub struct KpiService<S> {
    inner: S,
    shedder: Arc<Shedder>,
    clock: Clock,
}

/// The routes' future of an observed CRITICAL request: its answer is a KPI event.
pub struct ObservedFuture<F> {
    inner: F,
    observed: Option<Observed>,
    shedder: Arc<Shedder>,
    clock: Clock,
}

impl<F> Future for ObservedFuture<F>
where
    F: Future<Output = Result<Response, Infallible>> + Unpin,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let response = ready!(Pin::new(&mut this.inner).poll(cx));
        if let (Some(o), Ok(r)) = (this.observed.take(), &response) {
            this.shedder.experiments().critical_answered(
                o,
                r.status().is_server_error(),
                this.clock.unix_ms_u64(),
            );
        }
        Poll::Ready(response)
    }
}

impl<S> KpiService<S> {
    /// Tells the experiments of an admitted request (`admitted`, its `path` and
    /// `request`'s headers); the observation to report the answer of, for a CRITICAL
    /// request of an observed member.
    fn observe(&self, admitted: &Admitted, request: &Request) -> Option<Observed> {
        let experiments = self.shedder.experiments();
        let o = experiments.observe(&admitted.facts, request.headers())?;
        experiments.request_admitted(
            o,
            admitted.facts.route,
            request.uri().path(),
            self.clock.unix_ms_u64(),
        );
        (admitted.bucket == Bucket::Critical).then_some(o)
    }

    fn answer<F>(&self, inner: F, observed: Option<Observed>) -> Either<F, ObservedFuture<F>> {
        match observed {
            None => Either::Left(inner),
            Some(o) => Either::Right(ObservedFuture {
                inner,
                observed: Some(o),
                shedder: Arc::clone(&self.shedder),
                clock: self.clock.clone(),
            }),
        }
    }
}

/// The routes' future must be `Unpin` (axum's route futures are).
impl<S> Service<Request> for KpiService<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
    S::Future: Unpin,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<S::Future, ObservedFuture<S::Future>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let admitted = RequestContext::of(request.extensions()).and_then(|c| c.admitted);
        let observed = admitted.and_then(|a| self.observe(&a, &request));
        let inner = self.inner.call(request);
        self.answer(inner, observed)
    }
}

impl<S> ContextService for KpiService<S>
where
    S: ContextService<Response = Response, Error = Infallible>,
    S::Future: Unpin,
{
    fn call_with(&mut self, request: Request, context: RequestContext) -> Self::Future {
        let observed = context.admitted.and_then(|a| self.observe(&a, &request));
        let inner = self.inner.call_with(request, context);
        self.answer(inner, observed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;
    use shed::{DeviceType, RequestFacts, RouteKind};
    use tower::{service_fn, ServiceExt};

    fn shedder() -> Arc<Shedder> {
        Arc::new(Shedder::new(&crate::shed::ShedSettings::default()).expect("defaults"))
    }

    fn admitted(bucket: Bucket) -> Admitted {
        Admitted {
            facts: RequestFacts {
                route: RouteKind::LiveSegment,
                device: DeviceType::Browser,
                member: shed::member_id(b"member-1"),
                in_playback: true,
            },
            bucket,
        }
    }

    /// Without a running experiment every request passes straight through, with or
    /// without an admission in its context, and the routes' answer is unchanged.
    #[tokio::test]
    async fn requests_pass_through_while_no_experiment_runs() {
        let routes = service_fn(|_: Request| {
            Box::pin(async {
                let mut response = Response::new(axum::body::Body::empty());
                *response.status_mut() = StatusCode::IM_A_TEAPOT;
                Ok::<_, Infallible>(response)
            })
        });
        let mut service = KpiLayer::new(shedder(), Clock::system()).layer(routes);
        for admission in [None, Some(admitted(Bucket::Critical))] {
            let context = RequestContext {
                admitted: admission,
                ..RequestContext::default()
            };
            let request = Request::new(axum::body::Body::empty());
            let future = service
                .ready()
                .await
                .expect("ready")
                .call_with(request, context);
            assert!(matches!(future, Either::Left(_)), "not observed");
            let response = future.await.expect("answer");
            assert_eq!(response.status(), StatusCode::IM_A_TEAPOT);
        }
    }
}
