//! The request-head deadline of an HTTP/1.1 connection, the slowloris and idle
//! keep-alive guard: a connection must deliver a whole request head within
//! [`crate::connection::HEADER_READ_TIMEOUT`] of being ready for one (accepted, or its
//! last answer handed to hyper with nothing else in flight), else it is closed. While a
//! request is in flight (its answer being made or its body sent) no deadline runs.
//!
//! hyper has this guard built in (`header_read_timeout`), but it costs every request a
//! tokio sleep registered in the runtime's timer wheel and taken out again, and a read
//! of the socket more (hyper reads again at once after every answer to start the next
//! head's timer): about 1,400 of the 20,000 instructions a per-viewer playlist answer
//! costs (`docs/measured.md`). Here a request costs two counter updates and a clock
//! read: the deadline is written into memory the connection shares with one
//! [`HeadWatchdog`], a single tokio sleep per connection polled beside it, which wakes
//! no later than the armed deadline and ends the connection when it has passed.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::http::Response;
use hyper::body::{Body, Frame, SizeHint};

/// No deadline armed (a request is in flight).
const UNARMED: u64 = u64::MAX;

/// The runtime's clock (tokio's, so paused time in tests moves it too).
fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// One connection's head deadline, shared by its service (which starts and ends
/// requests) and its [`HeadWatchdog`].
#[derive(Debug)]
pub(crate) struct HeadDeadline {
    origin: Instant,
    timeout: Duration,
    /// The deadline, in nanoseconds from `origin`, or [`UNARMED`].
    armed: AtomicU64,
    in_flight: AtomicU32,
}

impl HeadDeadline {
    /// A connection accepted now: its first head is due within `timeout`.
    pub(crate) fn new(timeout: Duration) -> Arc<Self> {
        let origin = now();
        Arc::new(Self {
            origin,
            timeout,
            armed: AtomicU64::new(nanos(timeout)),
            in_flight: AtomicU32::new(0),
        })
    }

    /// A request head is in: no deadline until its answer is handed over.
    pub(crate) fn request_started(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        self.armed.store(UNARMED, Ordering::Relaxed);
    }

    /// A request's answer is handed to hyper whole (or dropped): with nothing else in
    /// flight, the next head is due within the timeout from now.
    pub(crate) fn answer_done(&self) {
        if self.in_flight.fetch_sub(1, Ordering::Relaxed) == 1 {
            let due = now().saturating_duration_since(self.origin) + self.timeout;
            self.armed.store(nanos(due), Ordering::Relaxed);
        }
    }

    /// When the connection is closed unless a head comes first.
    fn deadline(&self) -> Option<Instant> {
        if self.in_flight.load(Ordering::Relaxed) > 0 {
            return None;
        }
        match self.armed.load(Ordering::Relaxed) {
            UNARMED => None,
            at => Some(self.origin + Duration::from_nanos(at)),
        }
    }

    /// The watchdog to poll beside the connection.
    pub(crate) fn watchdog(self: &Arc<Self>) -> HeadWatchdog {
        HeadWatchdog {
            deadline: Arc::clone(self),
        }
    }
}

fn nanos(since_origin: Duration) -> u64 {
    u64::try_from(since_origin.as_nanos()).unwrap_or(UNARMED - 1)
}

/// One tokio sleep per connection, in place of one per request.
#[derive(Debug)]
pub(crate) struct HeadWatchdog {
    deadline: Arc<HeadDeadline>,
}

impl HeadWatchdog {
    /// Ends when the connection's head deadline has passed (the caller then closes
    /// the connection); never while a request is in flight. It wakes at the armed
    /// deadline, or a timeout from now when none is armed: a deadline armed while it
    /// sleeps is never earlier than its wake-up, so it is never missed.
    pub(crate) async fn run(self) {
        let timeout = self.deadline.timeout;
        let sleep = tokio::time::sleep(timeout);
        tokio::pin!(sleep);
        loop {
            sleep.as_mut().await;
            let woke = now();
            let next = match self.deadline.deadline() {
                Some(deadline) if deadline <= woke => return,
                Some(deadline) => deadline,
                None => woke + timeout,
            };
            sleep.as_mut().reset(next.into());
        }
    }
}

/// One request in flight on a connection: dropped when hyper is done with its answer
/// (the body written whole, or dropped with the connection, or the answer never made).
#[derive(Debug)]
pub(crate) struct InFlight(Option<Arc<HeadDeadline>>);

impl InFlight {
    /// Counts a request whose head is in (none counted without a deadline: HTTP/2).
    pub(crate) fn start(deadline: Option<&Arc<HeadDeadline>>) -> Self {
        Self(deadline.map(|deadline| {
            deadline.request_started();
            Arc::clone(deadline)
        }))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(deadline) = &self.0 {
            deadline.answer_done();
        }
    }
}

/// A response body that keeps its request in flight until hyper drops it. No box:
/// hyper is generic over the body type.
#[derive(Debug)]
pub(crate) struct WatchedBody<B> {
    body: B,
    _in_flight: InFlight,
}

impl<B: Body + Unpin> Body for WatchedBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

pin_project_lite::pin_project! {
    /// The answer to one request: its body comes out watched, the request still in
    /// flight until hyper is done with it.
    pub(crate) struct Answering<F> {
        #[pin]
        future: F,
        in_flight: Option<InFlight>,
    }
}

impl<F> Answering<F> {
    /// The answer `future` makes to the request `in_flight` counts.
    pub(crate) fn new(future: F, in_flight: InFlight) -> Self {
        Self {
            future,
            in_flight: Some(in_flight),
        }
    }
}

impl<F, B, E> Future for Answering<F>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Response<WatchedBody<B>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let answer = std::task::ready!(this.future.poll(cx));
        let in_flight = this.in_flight.take().unwrap_or(InFlight(None));
        Poll::Ready(answer.map(|response| {
            response.map(|body| WatchedBody {
                body,
                _in_flight: in_flight,
            })
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMEOUT: Duration = Duration::from_secs(10);

    /// Runs the watchdog of `deadline` as a task; its handle ends when it fires.
    fn watch(deadline: &Arc<HeadDeadline>) -> tokio::task::JoinHandle<tokio::time::Instant> {
        let watchdog = deadline.watchdog();
        tokio::spawn(async move {
            watchdog.run().await;
            tokio::time::Instant::now()
        })
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_that_sends_no_head_is_due_a_timeout_after_accept() {
        let start = tokio::time::Instant::now();
        let deadline = HeadDeadline::new(TIMEOUT);
        let fired = watch(&deadline).await.expect("watchdog");
        assert_eq!(fired - start, TIMEOUT);
    }

    #[tokio::test(start_paused = true)]
    async fn no_deadline_runs_while_a_request_is_in_flight_and_one_starts_at_its_answer() {
        let start = tokio::time::Instant::now();
        let deadline = HeadDeadline::new(TIMEOUT);
        let watching = watch(&deadline);
        tokio::time::sleep(Duration::from_secs(4)).await;
        let in_flight = InFlight::start(Some(&deadline));
        // An answer made for three timeouts (a long wait, a slow download).
        tokio::time::sleep(TIMEOUT * 3).await;
        assert!(!watching.is_finished(), "cut while a request was in flight");
        let answered = tokio::time::Instant::now();
        drop(in_flight);
        let fired = watching.await.expect("watchdog");
        assert_eq!(fired - answered, TIMEOUT);
        assert!(fired - start > TIMEOUT * 3);
    }

    #[tokio::test(start_paused = true)]
    async fn a_keep_alive_client_asking_within_the_timeout_stays_and_is_closed_when_it_stops() {
        let deadline = HeadDeadline::new(TIMEOUT);
        let watching = watch(&deadline);
        let mut answered = tokio::time::Instant::now();
        for _ in 0..10 {
            tokio::time::sleep(TIMEOUT - Duration::from_millis(1)).await;
            drop(InFlight::start(Some(&deadline)));
            answered = tokio::time::Instant::now();
        }
        assert!(!watching.is_finished(), "closed while heads kept coming");
        let fired = watching.await.expect("watchdog");
        assert_eq!(fired - answered, TIMEOUT);
    }

    #[tokio::test(start_paused = true)]
    async fn pipelined_requests_keep_the_deadline_off_until_the_last_answer() {
        let deadline = HeadDeadline::new(TIMEOUT);
        let first = InFlight::start(Some(&deadline));
        let second = InFlight::start(Some(&deadline));
        drop(first);
        assert_eq!(deadline.deadline(), None, "one answer still to come");
        drop(second);
        let due = deadline.deadline().expect("armed at the last answer");
        assert_eq!(due, now() + TIMEOUT);
    }

    #[tokio::test(start_paused = true)]
    async fn the_answer_keeps_its_request_in_flight_until_its_body_is_dropped() {
        let deadline = HeadDeadline::new(TIMEOUT);
        let answer =
            async { Ok::<_, std::convert::Infallible>(Response::new(axum::body::Body::from("x"))) };
        let response = Answering::new(answer, InFlight::start(Some(&deadline)))
            .await
            .expect("answer");
        assert_eq!(deadline.deadline(), None, "the body is still to be written");
        drop(response);
        assert!(deadline.deadline().is_some());

        // An answer never made (its connection gone) is done when dropped.
        let never =
            std::future::pending::<Result<Response<axum::body::Body>, std::convert::Infallible>>();
        let answering = Answering::new(never, InFlight::start(Some(&deadline)));
        assert_eq!(deadline.deadline(), None);
        drop(answering);
        assert!(deadline.deadline().is_some());
    }

    #[test]
    fn without_a_deadline_nothing_is_counted() {
        let in_flight = InFlight::start(None);
        assert!(in_flight.0.is_none());
    }
}
