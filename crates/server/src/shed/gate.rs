//! The connection side of the device contract (SHED-3): every HTTP connection carries
//! a [`ConnectionGate`] (each request reaches it through its connection's
//! [`crate::http::connection::Connection`]), and its socket is read through a
//! [`GatedStream`]. When the shedding layer refuses a request that breaks the
//! contract (see [`shed::ContractTracker`]), the gate is paused: the refusal is
//! answered, and the stream reads again, only when the pause ends, so the device's
//! next requests wait in its own socket, costing the node nothing, instead of each
//! costing a read, a parse and a 503. Requests that arrived in the same read as a
//! refused one (pipelined before the device saw the answer) are refused, never
//! counted as breaches.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use shed::{Advice, Bucket, ContractTracker, RouteKind};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// One connection's record of what it was told and whether it is paused. Shared by
/// the connection's stream and its requests (`Arc`, in each request's context).
#[derive(Debug)]
pub struct ConnectionGate {
    origin: Instant,
    tracker: Mutex<ContractTracker>,
    /// End of the current pause, in ns since `origin`; 0 when never paused.
    paused_until_nanos: AtomicU64,
    /// Reads from the socket that returned bytes, counted by [`GatedStream`].
    reads: AtomicU64,
    /// `reads` when the last refusal was decided.
    reads_at_refusal: AtomicU64,
}

impl Default for ConnectionGate {
    fn default() -> Self {
        ConnectionGate::new()
    }
}

impl ConnectionGate {
    /// A gate for a connection accepted now.
    pub fn new() -> ConnectionGate {
        ConnectionGate {
            origin: Instant::now(),
            tracker: Mutex::new(ContractTracker::new()),
            paused_until_nanos: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            reads_at_refusal: AtomicU64::new(u64::MAX),
        }
    }

    /// Records a refusal of this connection's request (by overload, not by a fault
    /// rule or an experiment); pauses the connection when the request broke the
    /// contract. Returns whether it did.
    ///
    /// A request that came in the same socket read as the previous refusal's was sent
    /// before the device could see that refusal (HTTP/1.1 pipelining): it is refused,
    /// but it is not a breach.
    pub fn refused(
        &self,
        route: RouteKind,
        bucket: Bucket,
        advice: Advice,
        max_pause: Duration,
    ) -> bool {
        let now = self.origin.elapsed();
        let reads = self.reads.load(Ordering::Relaxed);
        let sent_before_the_answer = self.reads_at_refusal.swap(reads, Ordering::Relaxed) == reads;
        let pause = self
            .tracker
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .refused(route, bucket, advice, now, max_pause);
        let Some(until) = pause.filter(|_| !sent_before_the_answer) else {
            return false;
        };
        let nanos = u64::try_from(until.as_nanos()).unwrap_or(u64::MAX);
        self.paused_until_nanos.fetch_max(nanos, Ordering::Relaxed);
        true
    }

    /// When the current pause ends, if the connection is paused now.
    pub fn paused_until(&self) -> Option<Instant> {
        let nanos = self.paused_until_nanos.load(Ordering::Relaxed);
        if nanos == 0 {
            return None;
        }
        let until = self.origin + Duration::from_nanos(nanos);
        (until > Instant::now()).then_some(until)
    }
}

/// A socket read through its connection's gate: reads wait while the gate is paused;
/// writes (answers already decided) go through.
#[derive(Debug)]
pub struct GatedStream<S> {
    inner: S,
    gate: Arc<ConnectionGate>,
    /// The timer of the current pause; made on the first pause, then reused.
    sleep: Option<Pin<Box<Sleep>>>,
}

impl<S> GatedStream<S> {
    /// Wraps a connection's socket.
    pub fn new(inner: S, gate: Arc<ConnectionGate>) -> GatedStream<S> {
        GatedStream {
            inner,
            gate,
            sleep: None,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for GatedStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if let Some(until) = self.gate.paused_until() {
            let sleep = match &mut self.sleep {
                Some(sleep) => {
                    if sleep.deadline() != until {
                        sleep.as_mut().reset(until);
                    }
                    sleep
                }
                slot @ None => slot.insert(Box::pin(tokio::time::sleep_until(until))),
            };
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.gate.reads.fetch_add(1, Ordering::Relaxed);
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for GatedStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn advice(seconds: u32) -> Advice {
        Advice {
            max_retries: 0,
            retry_after_seconds: seconds,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_breach_stops_reading_until_the_pause_ends() {
        let (client, server) = tokio::io::duplex(1024);
        let gate = Arc::new(ConnectionGate::new());
        let mut server = GatedStream::new(server, Arc::clone(&gate));
        let mut client = client;
        let pause = Duration::from_millis(800);
        assert!(!gate.refused(RouteKind::Telemetry, Bucket::NonCritical, advice(30), pause));
        assert!(
            gate.paused_until().is_none(),
            "a first refusal keeps reading"
        );
        // The device sends its retry after the answer: a read of its own.
        client.write_all(b"again").await.expect("write");
        let mut retry = [0u8; 5];
        server.read_exact(&mut retry).await.expect("read");
        assert!(gate.refused(RouteKind::Telemetry, Bucket::NonCritical, advice(30), pause));
        let until = gate.paused_until().expect("paused");
        client.write_all(b"next").await.expect("write");
        let mut got = [0u8; 4];
        let started = Instant::now();
        server
            .read_exact(&mut got)
            .await
            .expect("read after the pause");
        assert_eq!(&got, b"next");
        assert!(Instant::now() >= until);
        assert!(started.elapsed() >= pause - Duration::from_millis(1));
        assert!(started.elapsed() < pause + Duration::from_millis(50));
        // Writes are never held.
        server.write_all(b"answer").await.expect("write");
    }

    #[tokio::test(start_paused = true)]
    async fn requests_pipelined_before_the_answer_are_not_breaches() {
        let (mut client, server) = tokio::io::duplex(1024);
        let gate = Arc::new(ConnectionGate::new());
        let mut server = GatedStream::new(server, Arc::clone(&gate));
        let pause = Duration::from_millis(800);
        let refuse = || gate.refused(RouteKind::Telemetry, Bucket::NonCritical, advice(30), pause);
        // Three requests in one read: all refused, none a breach.
        client.write_all(b"abc").await.expect("write");
        let mut batch = [0u8; 3];
        server.read_exact(&mut batch).await.expect("read");
        for _ in 0..3 {
            assert!(!refuse());
        }
        assert!(gate.paused_until().is_none());
        // The next batch, sent after the answers, breaks the contract.
        client.write_all(b"d").await.expect("write");
        server.read_exact(&mut batch[..1]).await.expect("read");
        assert!(refuse());
        assert!(gate.paused_until().is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn a_critical_breach_never_pauses() {
        let gate = ConnectionGate::new();
        for _ in 0..5 {
            assert!(!gate.refused(
                RouteKind::LivePlaylist,
                Bucket::Critical,
                advice(10),
                Duration::from_secs(1)
            ));
        }
        assert!(gate.paused_until().is_none());
    }
}
