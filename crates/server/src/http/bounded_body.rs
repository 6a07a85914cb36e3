//! Every request body bounded, below the routes: in time (the whole body within
//! [`EdgeLimits::body_timeout`] of its head) and in bytes (at most
//! [`EdgeLimits::max_body_bytes`]), on every route of a node and of an MC, over
//! HTTP/1.1 and HTTP/2.
//!
//! A route reads its body as it always did (`to_bytes` with its own, smaller cap); the
//! body it reads is a [`BoundedBody`], which ends in an error once the deadline has
//! passed or the cap is crossed. Whatever the route then answers, [`BodyChecked`]
//! replaces it with the coded answer of the cut — 408 (108011) for a body that did not
//! arrive in time, 413 (108005) for one too large — and, on HTTP/1.1, closes the
//! connection (`Connection: close`; the rest of the body is never read). A body
//! declared larger than the cap (`Content-Length`) is refused before any route sees
//! it. A request without a body (every GET) is not touched: no timer, no allocation.
//! Each cut is counted ([`render_metrics`]: `brdyun_http_bodies_cut_total`).

use std::fmt::Write as _;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue, Version};
use axum::response::Response;
use bytes::Bytes;
use codes::{Code, RequestError};
use hyper::body::{Body as _, Frame, Incoming, SizeHint};
use tokio::time::{Instant, Sleep};

use crate::http::edge_limits::EdgeLimits;

/// Why a request body was cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BodyCut {
    /// The whole body did not arrive within the body deadline.
    #[error("the request body did not arrive within the body deadline")]
    TimedOut,
    /// The body is larger than any route takes.
    #[error("the request body is larger than any route takes")]
    TooLarge,
}

impl BodyCut {
    /// Every cut, in the order of [`CUTS`].
    const ALL: [BodyCut; 2] = [BodyCut::TimedOut, BodyCut::TooLarge];

    /// The code the client is answered with.
    pub fn code(self) -> Code {
        Code::Request(match self {
            BodyCut::TimedOut => RequestError::BodyTimedOut,
            BodyCut::TooLarge => RequestError::TooLarge,
        })
    }

    fn counter(self) -> &'static AtomicU64 {
        &CUTS[self as usize]
    }
}

/// Bodies cut in this process, per [`BodyCut`]: a process has one HTTP edge (a node's,
/// or an MC's), whose listeners all count here.
static CUTS: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

/// Writes the cut bodies as `brdyun_http_bodies_cut_total{code,reason}` (Prometheus
/// text), for the metrics of the connection caps
/// ([`crate::http::conn_limits::ConnectionLimits::register_metrics`]).
pub fn render_metrics(out: &mut String) {
    for cut in BodyCut::ALL {
        let code = cut.code();
        let _ = writeln!(
            out,
            "brdyun_http_bodies_cut_total{{code=\"{}\",reason=\"{}\"}} {}",
            code.code(),
            code.label(),
            cut.counter().load(Ordering::Relaxed)
        );
    }
}

/// Counts `cut` and logs it (debug: a flood must not flood the log).
fn count(cut: BodyCut, before_route: bool) {
    cut.counter().fetch_add(1, Ordering::Relaxed);
    tracing::debug!(code = cut.code().code(), before_route, "request body cut");
}

/// Whether a request's body was cut, or read to its end: written by its body, read by
/// its answer.
#[derive(Debug, Default)]
pub(crate) struct Verdict {
    state: AtomicU8,
    /// The body is declared at most [`DRAINABLE_BYTES`] long: answered before it was
    /// read, its connection is left to hyper, which reads what has already arrived of
    /// it and keeps the connection, or closes it (a refusal of a small beacon, such as
    /// the shedding layer's back-pressure answer, must keep its connection: the device
    /// contract is held per connection).
    drainable: bool,
}

/// The longest body a connection is kept for when its answer came before the body was
/// read (the beacons' own cap): hyper drains it if it is all there, else closes.
pub const DRAINABLE_BYTES: u64 = 4 * 1024;

const UNREAD: u8 = 0;
const TIMED_OUT: u8 = 1;
const TOO_LARGE: u8 = 2;
const ENDED: u8 = 3;

impl Verdict {
    fn cut(&self, cut: BodyCut) -> BodyCut {
        let value = match cut {
            BodyCut::TimedOut => TIMED_OUT,
            BodyCut::TooLarge => TOO_LARGE,
        };
        // The first cut stands.
        let _ = self
            .state
            .compare_exchange(UNREAD, value, Ordering::Relaxed, Ordering::Relaxed);
        self.get().unwrap_or(cut)
    }

    fn end(&self) {
        let _ = self
            .state
            .compare_exchange(UNREAD, ENDED, Ordering::Relaxed, Ordering::Relaxed);
    }

    fn ended(&self) -> bool {
        self.state.load(Ordering::Relaxed) == ENDED
    }

    fn get(&self) -> Option<BodyCut> {
        match self.state.load(Ordering::Relaxed) {
            TIMED_OUT => Some(BodyCut::TimedOut),
            TOO_LARGE => Some(BodyCut::TooLarge),
            _ => None,
        }
    }
}

/// `request` with its body bounded by `limits`, and the verdict its answer checks
/// (`None`: no body, nothing to bound).
///
/// # Errors
/// The body is declared (`Content-Length`) larger than `limits.max_body_bytes`.
pub(crate) fn bound(
    request: hyper::Request<Incoming>,
    limits: &EdgeLimits,
) -> Result<(Request, Option<Arc<Verdict>>), BodyCut> {
    // A request that carries no body (every GET) gets the empty body, which is not
    // boxed: one allocation and its free less per request.
    if request.body().is_end_stream() {
        return Ok((request.map(|_| Body::empty()), None));
    }
    let declared = request.body().size_hint().lower();
    if usize::try_from(declared).map_or(true, |bytes| bytes > limits.max_body_bytes) {
        return Err(BodyCut::TooLarge);
    }
    let verdict = Arc::new(Verdict {
        state: AtomicU8::new(UNREAD),
        drainable: request
            .body()
            .size_hint()
            .exact()
            .is_some_and(|bytes| bytes <= DRAINABLE_BYTES),
    });
    let due = Instant::now() + limits.body_timeout;
    let request = request.map(|inner| {
        Body::new(BoundedBody {
            inner,
            due,
            timer: None,
            remaining: limits.max_body_bytes,
            verdict: Arc::clone(&verdict),
        })
    });
    Ok((request, Some(verdict)))
}

pin_project_lite::pin_project! {
    /// A request body that ends in a [`BodyCut`] error once its deadline has passed or
    /// it has brought more than its cap. Its timer is made only when the body makes a
    /// route wait (a body that is all there when read never arms one).
    pub(crate) struct BoundedBody {
        #[pin]
        inner: Incoming,
        due: Instant,
        timer: Option<Pin<Box<Sleep>>>,
        remaining: usize,
        verdict: Arc<Verdict>,
    }
}

impl hyper::body::Body for BoundedBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let mut this = self.project();
        let cut = |cut: BodyCut| Poll::Ready(Some(Err(this.verdict.cut(cut).into())));
        if let Some(already) = this.verdict.get() {
            return cut(already);
        }
        match this.inner.as_mut().poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if this.timer.as_ref().is_some_and(|t| t.is_elapsed()) {
                    return cut(BodyCut::TimedOut);
                }
                if let Some(data) = frame.data_ref() {
                    if data.len() > *this.remaining {
                        return cut(BodyCut::TooLarge);
                    }
                    *this.remaining -= data.len();
                }
                if this.inner.is_end_stream() {
                    this.verdict.end();
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(error))) => Poll::Ready(Some(Err(error.into()))),
            Poll::Ready(None) => {
                this.verdict.end();
                Poll::Ready(None)
            }
            Poll::Pending => {
                let due = *this.due;
                let timer = this
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
                match timer.as_mut().poll(cx) {
                    Poll::Ready(()) => cut(BodyCut::TimedOut),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The coded answer to a cut body; on HTTP/1.x it closes the connection, whose unread
/// rest of the body is never read.
pub fn refusal(cut: BodyCut, version: Version) -> Response {
    closing(crate::error::respond(cut.code(), None), version)
}

/// `response` closing its HTTP/1.x connection after it (HTTP/2 resets the stream's
/// unread body by itself).
fn closing(mut response: Response, version: Version) -> Response {
    if version < Version::HTTP_2 {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

pin_project_lite::pin_project! {
    /// A route's answer to a request whose body is bounded: the route's own answer,
    /// unless the body was cut, then the cut's [`refusal`]. An answer given before the
    /// body was read to its end (a route refusing it by its declared size) closes an
    /// HTTP/1.x connection, whose rest of the body is never read — unless the body is
    /// declared at most [`DRAINABLE_BYTES`] long (see [`Verdict`]).
    pub(crate) struct BodyChecked<F> {
        #[pin]
        answer: Option<F>,
        verdict: Option<Arc<Verdict>>,
        refused: Option<BodyCut>,
        version: Version,
    }
}

impl<F> BodyChecked<F> {
    /// `answer`, checked against `verdict` (none: the request had no body).
    pub(crate) fn new(answer: F, verdict: Option<Arc<Verdict>>, version: Version) -> Self {
        Self {
            answer: Some(answer),
            verdict,
            refused: None,
            version,
        }
    }

    /// The refusal of a request cut before any route saw it.
    pub(crate) fn refused(cut: BodyCut, version: Version) -> Self {
        Self {
            answer: None,
            verdict: None,
            refused: Some(cut),
            version,
        }
    }
}

impl<F, E> Future for BodyChecked<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let answered = match this.answer.as_pin_mut() {
            Some(answer) => std::task::ready!(answer.poll(cx)),
            None => {
                let cut = this.refused.unwrap_or(BodyCut::TooLarge);
                count(cut, true);
                return Poll::Ready(Ok(refusal(cut, *this.version)));
            }
        };
        let Some(verdict) = this.verdict.as_ref() else {
            return Poll::Ready(answered);
        };
        match verdict.get() {
            Some(cut) => {
                count(cut, false);
                Poll::Ready(Ok(refusal(cut, *this.version)))
            }
            None if verdict.ended() || verdict.drainable => Poll::Ready(answered),
            None => Poll::Ready(answered.map(|response| closing(response, *this.version))),
        }
    }
}
