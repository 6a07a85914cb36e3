//! The deadlines of an HTTP connection (HTTP/1.1 and HTTP/2), kept by the connection
//! itself:
//!
//! - the **head deadline**, the slowloris and idle keep-alive guard: a connection must
//!   deliver a whole request head within [`crate::http::connection::HEADER_READ_TIMEOUT`] of
//!   being ready for one (accepted, or its last answer written with nothing else in
//!   flight), else it is closed; on HTTP/2, a connection with no request in flight for
//!   that long is idle and closed. No head deadline runs while a request is in flight
//!   (its answer being made, or its body being sent) or its answer is being written;
//! - the **send deadline**, the slow-reader guard: an answer whose writing is blocked
//!   (the client reads nothing) for [`crate::http::connection::SEND_TIMEOUT`] closes the
//!   connection, as nginx's `send_timeout` does. On HTTP/2 a client can also stop
//!   reading without blocking the socket, by granting no flow-control window: there,
//!   answers handed to hyper whose bodies hyper takes nothing of for the send timeout
//!   close the connection too ([`HeadDeadline::watch_answer_progress`]).
//!
//! hyper has a head guard built in (`header_read_timeout`), but it costs every request
//! a tokio sleep registered in the runtime's timer wheel and taken out again, and a
//! read of the socket more (hyper reads again at once after every answer to start the
//! next head's timer): about 1,400 of the 20,000 instructions a per-viewer playlist
//! answer costs (`bench/HISTORY.md`). Here a request costs two counter updates and a
//! clock read: the deadlines are written into memory the connection shares with one
//! [`HeadWatchdog`], a single tokio sleep per connection polled beside it, which wakes
//! no later than the deadline in force and ends the connection when it has passed. The
//! socket's writes are watched by [`WriteWatched`]: a clock read only when a write
//! blocks or resumes (a slow client).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::http::Response;
use hyper::body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// No deadline armed.
const UNARMED: u64 = u64::MAX;

/// The runtime's clock (tokio's, so paused time in tests moves it too).
fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// One connection's deadlines, shared by its service (which starts and ends
/// requests), its socket ([`WriteWatched`]) and its [`HeadWatchdog`]. All three are
/// polled by the connection's one task: the atomics are for `Send`, not for races.
#[derive(Debug)]
pub(crate) struct HeadDeadline {
    origin: Instant,
    timeout: Duration,
    send_timeout: Duration,
    /// When the next head is due, in nanoseconds from `origin`, or [`UNARMED`].
    head_due: AtomicU64,
    /// When a blocked write closes the connection, in nanoseconds from `origin`.
    send_due: AtomicU64,
    in_flight: AtomicU32,
    /// The socket's last write or flush did not complete (the client is not reading).
    writing: AtomicBool,
    /// HTTP/2: the progress of answers' bodies is watched.
    watch_progress: AtomicBool,
    /// Answers handed to hyper whose bodies are not done (counted when watched).
    answers_out: AtomicU32,
    /// When answers out with no body taken by hyper since close the connection.
    progress_due: AtomicU64,
}

impl HeadDeadline {
    /// A connection accepted now: its first head is due within `timeout`; a write
    /// blocked for `send_timeout` (not shorter than `timeout`) ends it.
    pub(crate) fn new(timeout: Duration, send_timeout: Duration) -> Arc<Self> {
        debug_assert!(
            send_timeout >= timeout,
            "the watchdog wakes at least every timeout"
        );
        Arc::new(Self {
            origin: now(),
            timeout,
            send_timeout,
            head_due: AtomicU64::new(nanos(timeout)),
            send_due: AtomicU64::new(UNARMED),
            in_flight: AtomicU32::new(0),
            writing: AtomicBool::new(false),
            watch_progress: AtomicBool::new(false),
            answers_out: AtomicU32::new(0),
            progress_due: AtomicU64::new(UNARMED),
        })
    }

    /// Watches answers' bodies (HTTP/2, whose flow control can stall an answer without
    /// blocking the socket): while answers are out, one of them must have a frame taken
    /// by hyper within the send timeout of the last, or the connection is closed.
    pub(crate) fn watch_answer_progress(&self) {
        self.watch_progress.store(true, Ordering::Relaxed);
    }

    fn watching_progress(&self) -> bool {
        self.watch_progress.load(Ordering::Relaxed)
    }

    /// An answer is handed to hyper (watched connections only).
    fn answer_out(&self) {
        self.answers_out.fetch_add(1, Ordering::Relaxed);
        self.progressed();
    }

    /// Hyper took a frame of an answer's body (or is handed an answer).
    fn progressed(&self) {
        self.progress_due
            .store(self.due_in(self.send_timeout), Ordering::Relaxed);
    }

    /// An answer counted by [`HeadDeadline::answer_out`] is done.
    fn answer_in(&self) {
        self.answers_out.fetch_sub(1, Ordering::Relaxed);
    }

    /// The connection is ready for its first head now (after a TLS handshake).
    pub(crate) fn restart(&self) {
        self.head_due
            .store(self.due_in(self.timeout), Ordering::Relaxed);
    }

    /// A request head is in: no head deadline until its answer is written.
    pub(crate) fn request_started(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        self.head_due.store(UNARMED, Ordering::Relaxed);
    }

    /// A request's answer is handed to hyper whole (or dropped): with nothing else in
    /// flight, the next head is due within the timeout from now (from the end of the
    /// writing, if the socket is still being written).
    pub(crate) fn answer_done(&self) {
        if self.in_flight.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.head_due
                .store(self.due_in(self.timeout), Ordering::Relaxed);
        }
    }

    /// A write or flush on the socket returned; `blocked` when it could not complete.
    fn write_polled(&self, blocked: bool) {
        let was_blocked = self.writing.load(Ordering::Relaxed);
        if blocked == was_blocked {
            return;
        }
        self.writing.store(blocked, Ordering::Relaxed);
        if blocked {
            self.send_due
                .store(self.due_in(self.send_timeout), Ordering::Relaxed);
        } else if self.in_flight.load(Ordering::Relaxed) == 0 {
            // The last answer is out now: the next head is due from here.
            self.head_due
                .store(self.due_in(self.timeout), Ordering::Relaxed);
        }
    }

    fn due_in(&self, timeout: Duration) -> u64 {
        nanos(now().saturating_duration_since(self.origin) + timeout)
    }

    /// When the connection is closed unless it makes progress first.
    fn deadline(&self) -> Option<Instant> {
        let due = if self.writing.load(Ordering::Relaxed) {
            self.send_due.load(Ordering::Relaxed)
        } else if self.in_flight.load(Ordering::Relaxed) > 0 {
            if self.answers_out.load(Ordering::Relaxed) > 0 {
                self.progress_due.load(Ordering::Relaxed)
            } else {
                UNARMED
            }
        } else {
            self.head_due.load(Ordering::Relaxed)
        };
        (due != UNARMED).then(|| self.origin + Duration::from_nanos(due))
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

/// A connection's socket whose writes tell its [`HeadDeadline`] when they block and
/// when they resume.
#[derive(Debug)]
pub(crate) struct WriteWatched<S> {
    inner: S,
    deadline: Arc<HeadDeadline>,
}

impl<S> WriteWatched<S> {
    /// Watches the writes on `inner` for `deadline`.
    pub(crate) fn new(inner: S, deadline: Arc<HeadDeadline>) -> Self {
        Self { inner, deadline }
    }

    fn watched<T>(&self, polled: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        self.deadline.write_polled(polled.is_pending());
        polled
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteWatched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteWatched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watched(polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watched(polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_flush(cx);
        self.watched(polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// One tokio sleep per connection, in place of one per request.
#[derive(Debug)]
pub(crate) struct HeadWatchdog {
    deadline: Arc<HeadDeadline>,
}

impl HeadWatchdog {
    /// Ends when the connection's deadline in force has passed (the caller then
    /// closes the connection). It wakes at that deadline or a timeout from now,
    /// whichever is first: a deadline armed while it sleeps is at least a timeout
    /// from when it is set, so never earlier than the wake-up, and none is missed.
    pub(crate) async fn run(self) {
        let timeout = self.deadline.timeout;
        let sleep = tokio::time::sleep(timeout);
        tokio::pin!(sleep);
        loop {
            sleep.as_mut().await;
            let woke = now();
            // Never longer than a timeout at once: a head deadline armed while it
            // sleeps (at least a timeout from then) is then never missed, even when
            // it replaces a later send deadline.
            let next = match self.deadline.deadline() {
                Some(deadline) if deadline <= woke => return,
                Some(deadline) => deadline.min(woke + timeout),
                None => woke + timeout,
            };
            sleep.as_mut().reset(next.into());
        }
    }
}

/// One request in flight on a connection: dropped when hyper is done with its answer
/// (the body written whole, or dropped with the connection, or the answer never made).
#[derive(Debug)]
pub(crate) struct InFlight {
    deadline: Option<Arc<HeadDeadline>>,
    /// Its answer is counted out ([`HeadDeadline::answer_out`]).
    out: bool,
}

impl InFlight {
    /// Counts a request whose head is in (none counted without a deadline).
    pub(crate) fn start(deadline: Option<&Arc<HeadDeadline>>) -> Self {
        Self {
            deadline: deadline.map(|deadline| {
                deadline.request_started();
                Arc::clone(deadline)
            }),
            out: false,
        }
    }

    /// Its answer is handed to hyper: on a watched connection its body's progress
    /// counts from now.
    fn handed(&mut self) {
        if let Some(deadline) = self.deadline.as_ref().filter(|d| d.watching_progress()) {
            deadline.answer_out();
            self.out = true;
        }
    }

    /// Hyper took a frame of its answer's body.
    fn progressed(&self) {
        if self.out {
            if let Some(deadline) = &self.deadline {
                deadline.progressed();
            }
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(deadline) = &self.deadline {
            if self.out {
                deadline.answer_in();
            }
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
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if polled.is_ready() {
            self._in_flight.progressed();
        }
        polled
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
        let mut in_flight = this.in_flight.take().unwrap_or(InFlight {
            deadline: None,
            out: false,
        });
        in_flight.handed();
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
    const SEND_TIMEOUT: Duration = Duration::from_secs(60);

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
        let deadline = HeadDeadline::new(TIMEOUT, SEND_TIMEOUT);
        let fired = watch(&deadline).await.expect("watchdog");
        assert_eq!(fired - start, TIMEOUT);
    }

    #[tokio::test(start_paused = true)]
    async fn no_deadline_runs_while_a_request_is_in_flight_and_one_starts_at_its_answer() {
        let start = tokio::time::Instant::now();
        let deadline = HeadDeadline::new(TIMEOUT, SEND_TIMEOUT);
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
        let deadline = HeadDeadline::new(TIMEOUT, SEND_TIMEOUT);
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
        let deadline = HeadDeadline::new(TIMEOUT, SEND_TIMEOUT);
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
        let deadline = HeadDeadline::new(TIMEOUT, SEND_TIMEOUT);
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

    /// An answer handed to hyper whole but written slowly (the client reads, its
    /// socket full again and again) is not cut; the next head is due a timeout after
    /// the last write completed.
    #[tokio::test(start_paused = true)]
    async fn an_answer_written_slowly_is_not_cut_and_the_head_is_due_after_the_writing() {
        let deadline = HeadDeadline::new(TIMEOUT, SEND_TIMEOUT);
        let watching = watch(&deadline);
        drop(InFlight::start(Some(&deadline)));
        for _ in 0..40 {
            deadline.write_polled(true);
            tokio::time::sleep(Duration::from_secs(1)).await;
            deadline.write_polled(false);
        }
        assert!(
            !watching.is_finished(),
            "cut while the answer was being written"
        );
        let written = tokio::time::Instant::now();
        let fired = watching.await.expect("watchdog");
        assert_eq!(fired - written, TIMEOUT);
    }

    /// A client that stops reading (every write blocked) is closed a send timeout
    /// after its writing blocked, in flight or not.
    #[tokio::test(start_paused = true)]
    async fn a_client_that_stops_reading_is_closed_after_the_send_timeout() {
        let deadline = HeadDeadline::new(TIMEOUT, SEND_TIMEOUT);
        let watching = watch(&deadline);
        let in_flight = InFlight::start(Some(&deadline));
        tokio::time::sleep(Duration::from_secs(3)).await;
        let blocked = tokio::time::Instant::now();
        deadline.write_polled(true);
        let fired = watching.await.expect("watchdog");
        assert_eq!(fired - blocked, SEND_TIMEOUT);
        drop(in_flight);
    }

    #[tokio::test(start_paused = true)]
    async fn a_restart_gives_the_first_head_a_whole_timeout() {
        let deadline = HeadDeadline::new(TIMEOUT, SEND_TIMEOUT);
        let watching = watch(&deadline);
        tokio::time::sleep(Duration::from_secs(4)).await;
        let ready = tokio::time::Instant::now();
        deadline.restart();
        let fired = watching.await.expect("watchdog");
        assert_eq!(fired - ready, TIMEOUT);
    }

    #[test]
    fn without_a_deadline_nothing_is_counted() {
        let in_flight = InFlight::start(None);
        assert!(in_flight.deadline.is_none());
    }

    /// HTTP/2: an answer handed whose body hyper takes nothing of (no flow-control
    /// window) closes the connection a send timeout later; one whose frames keep being
    /// taken does not, nor does an answer still being made (a blocking reload).
    #[tokio::test(start_paused = true)]
    async fn a_watched_answer_whose_body_is_never_taken_is_closed_after_the_send_timeout() {
        let deadline = HeadDeadline::new(TIMEOUT, SEND_TIMEOUT);
        deadline.watch_answer_progress();
        let watching = watch(&deadline);
        // An answer being made for three send timeouts is not judged.
        let making = InFlight::start(Some(&deadline));
        tokio::time::sleep(SEND_TIMEOUT * 3).await;
        assert!(
            !watching.is_finished(),
            "cut while an answer was being made"
        );
        // Handed, and its frames taken every 10 s: not cut.
        let mut taken = making;
        taken.handed();
        for _ in 0..20 {
            tokio::time::sleep(Duration::from_secs(10)).await;
            taken.progressed();
        }
        assert!(
            !watching.is_finished(),
            "cut while its body was being taken"
        );
        // Then nothing is taken: closed a send timeout after the last frame.
        let last = tokio::time::Instant::now();
        let fired = watching.await.expect("watchdog");
        assert_eq!(fired - last, SEND_TIMEOUT);
        drop(taken);
    }

    #[tokio::test(start_paused = true)]
    async fn an_unwatched_answer_is_never_judged_by_its_progress() {
        let deadline = HeadDeadline::new(TIMEOUT, SEND_TIMEOUT);
        let watching = watch(&deadline);
        let mut in_flight = InFlight::start(Some(&deadline));
        in_flight.handed();
        tokio::time::sleep(SEND_TIMEOUT * 3).await;
        assert!(!watching.is_finished(), "HTTP/1.1 judges the socket only");
        assert_eq!(deadline.answers_out.load(Ordering::Relaxed), 0);
        drop(in_flight);
        assert!(deadline.deadline().is_some());
    }
}
