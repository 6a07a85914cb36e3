//! What every request of a node or an MC gets on its way through a connection
//! ([`crate::http::connection_service`]), around everything else that answers it: its id
//! ([`crate::http::request_id`]), current on the thread while it is answered so its log lines
//! carry it, returned in `X-Request-Id` on every answer (served, refused, shed, cut at
//! the edge); and its access log line ([`crate::http::access_log`]) when that is on.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use axum::http::Request;

use crate::http::access_log::{AccessBody, Record};
use crate::http::request_id::{self, RequestId, RequestScope};

/// The scope and the access record of `request`, which came from `peer`.
pub(crate) fn start<B>(
    request: &Request<B>,
    peer: Option<SocketAddr>,
) -> (RequestScope, Option<Box<Record>>) {
    let id = RequestId::of_request(request.headers());
    (RequestScope::of(id), Record::start(request, peer, id))
}

pin_project_lite::pin_project! {
    /// An answer's future with its request's scope entered on every poll; the answer
    /// gets the `X-Request-Id` header and an [`AccessBody`].
    pub(crate) struct Logged<F> {
        #[pin]
        inner: F,
        scope: RequestScope,
        record: Option<Box<Record>>,
    }
}

impl<F> Logged<F> {
    /// `inner`, answering the request of `scope` (and `record`).
    pub(crate) fn new(inner: F, scope: RequestScope, record: Option<Box<Record>>) -> Self {
        Self {
            inner,
            scope,
            record,
        }
    }
}

impl<F, B> Future for Logged<F>
where
    F: Future<Output = Result<hyper::Response<B>, Infallible>>,
    B: hyper::body::Body,
{
    type Output = Result<hyper::Response<AccessBody<B>>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let inner = this.inner;
        let mut response = match ready!(request_id::within(this.scope, || inner.poll(cx))) {
            Ok(response) => response,
            Err(never) => match never {},
        };
        if let Some(id) = this.scope.id {
            response
                .headers_mut()
                .insert(request_id::HEADER, id.header_value());
        }
        let record = this.record.take().map(|mut record| {
            record.answered(response.status().as_u16(), this.scope.rank);
            record
        });
        Poll::Ready(Ok(response.map(|body| AccessBody::new(body, record))))
    }
}
