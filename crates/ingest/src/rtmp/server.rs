//! The I/O edge of the RTMP server: accepts connections within the listener's caps,
//! runs the handshake and the [`Session`] state machine over a socket under the
//! connection's [`PhaseClock`], asks the authorizer, forwards frames.

use std::collections::hash_map::RandomState;
use std::future::Future;
use std::hash::BuildHasher;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use thiserror::Error;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::{sleep_until, timeout, timeout_at, Instant};
use tokio_rustls::TlsAcceptor;
use tracing::{debug, info, warn};

use super::handshake::{server_response, HandshakeError, HANDSHAKE_SIZE};
use super::session::{Session, SessionError, SessionEvent};
use super::{RtmpLimits, RtmpStats};
use crate::listener_limits::{Admission, Cut, PhaseClock, Slot};
use crate::publish::PublishAuthorizer;
use crate::{IngestEvent, IngestSender};

/// How long a rejected peer gets to read the error status before the socket closes.
const LINGER: Duration = Duration::from_secs(1);

/// Backoff after a failed accept (e.g. out of file descriptors).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Why a connection ended early.
#[derive(Debug, Error)]
enum ConnectionError {
    #[error(transparent)]
    Limit(#[from] Cut),
    #[error("handshake: {0}")]
    Handshake(#[from] HandshakeError),
    #[error("protocol: {0}")]
    Protocol(#[from] SessionError),
    #[error("socket: {0}")]
    Io(#[from] std::io::Error),
    #[error("tls handshake: {0}")]
    Tls(std::io::Error),
}

/// Accepts RTMP publishers until `shutdown` completes, then closes every connection
/// and returns once their tasks have ended. Counters go to a fresh [`RtmpStats`];
/// use [`serve_with_stats`] to read them.
pub async fn serve(
    listener: TcpListener,
    authorizer: Arc<dyn PublishAuthorizer>,
    limits: RtmpLimits,
    shutdown: impl Future<Output = ()>,
) {
    serve_with_stats(
        listener,
        authorizer,
        limits,
        Arc::new(RtmpStats::default()),
        shutdown,
    )
    .await;
}

/// [`serve`], counting into `stats` (shared with whoever exports metrics).
///
/// Each connection is admitted by the caps of [`RtmpLimits::listener`] (one over a cap
/// is closed at once, logged and counted with its code) and then held to the publish
/// deadline and, once publishing, to the byte windows.
pub async fn serve_with_stats(
    listener: TcpListener,
    authorizer: Arc<dyn PublishAuthorizer>,
    limits: RtmpLimits,
    stats: Arc<RtmpStats>,
    shutdown: impl Future<Output = ()>,
) {
    accept_loop(listener, None, authorizer, limits, stats, shutdown).await;
}

/// [`serve_with_stats`] over TLS (RTMPS): each accepted connection first completes a
/// TLS handshake with `acceptor` and then speaks RTMP inside it.
///
/// The handshake is the first part of the time to publish: one that never completes
/// is cut at the publish deadline (111022), one that fails is closed with 111025; both
/// are counted in [`RtmpStats::tls_handshake_failures`]. Certificates come from the
/// acceptor's configuration on each handshake, so a resolver that swaps them (a
/// reloaded certificate) serves the new one from the next connection on.
pub async fn serve_tls_with_stats(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    authorizer: Arc<dyn PublishAuthorizer>,
    limits: RtmpLimits,
    stats: Arc<RtmpStats>,
    shutdown: impl Future<Output = ()>,
) {
    accept_loop(
        listener,
        Some(acceptor),
        authorizer,
        limits,
        stats,
        shutdown,
    )
    .await;
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: Option<TlsAcceptor>,
    authorizer: Arc<dyn PublishAuthorizer>,
    limits: RtmpLimits,
    stats: Arc<RtmpStats>,
    shutdown: impl Future<Output = ()>,
) {
    let scheme = if acceptor.is_some() { "rtmps" } else { "rtmp" };
    let (stop_tx, stop_rx) = watch::channel(false);
    let admission = Admission::new(
        limits.listener.max_connections,
        limits.listener.max_pending_per_address,
    );
    let mut tasks = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            accepted = listener.accept() => {
                let (socket, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        warn!(error = %e, scheme, "rtmp accept failed");
                        tokio::time::sleep(ACCEPT_BACKOFF).await;
                        continue;
                    }
                };
                let accepted_at = Instant::now();
                let slot = match admission.admit(peer.ip()) {
                    Ok(slot) => slot,
                    Err(refusal) => {
                        stats.refused_connections.fetch_add(1, Relaxed);
                        let count = stats.limits.refused(refusal);
                        // The first refusal and then every power of two: a flood of
                        // connections does not become a flood of log lines.
                        if count.is_power_of_two() {
                            let code = refusal.code();
                            warn!(%peer, scheme, code = code.code(), reason = code.label(), count, "rtmp connection refused");
                        }
                        drop(socket);
                        continue;
                    }
                };
                stats.connections.fetch_add(1, Relaxed);
                let conn = Connection {
                    peer,
                    authorizer: Arc::clone(&authorizer),
                    limits: limits.clone(),
                    stats: Arc::clone(&stats),
                    tls: acceptor.clone(),
                };
                let mut stop = stop_rx.clone();
                tasks.spawn(async move {
                    let mut slot = slot;
                    conn.stats.active_connections.fetch_add(1, Relaxed);
                    tokio::select! {
                        () = conn.run(socket, &mut slot, accepted_at) => {}
                        _ = stop.wait_for(|stop| *stop) => debug!(peer = %conn.peer, "rtmp connection closed by shutdown"),
                    }
                    conn.stats.active_connections.fetch_sub(1, Relaxed);
                    drop(slot);
                });
            }
        }
    }
    // Ignoring the error is fine: no receiver left means every task has ended.
    let _ = stop_tx.send(true);
    while tasks.join_next().await.is_some() {}
    info!(scheme, "rtmp server stopped");
}

struct Connection {
    peer: SocketAddr,
    authorizer: Arc<dyn PublishAuthorizer>,
    limits: RtmpLimits,
    stats: Arc<RtmpStats>,
    tls: Option<TlsAcceptor>,
}

impl Connection {
    async fn run(&self, socket: TcpStream, slot: &mut Slot, accepted_at: Instant) {
        let peer = self.peer;
        let mut clock = PhaseClock::new(accepted_at.into_std(), &self.limits.listener);
        let result = match &self.tls {
            None => {
                let mut socket = socket;
                self.serve_socket(&mut socket, slot, &mut clock).await
            }
            Some(acceptor) => match self.tls_accept(acceptor, socket, &clock).await {
                Ok(mut socket) => self.serve_socket(&mut socket, slot, &mut clock).await,
                Err(e) => Err(e),
            },
        };
        match result {
            Ok(()) => debug!(%peer, "rtmp connection closed"),
            Err(ConnectionError::Limit(cut)) => {
                let count = self.stats.limits.cut(cut);
                let code = cut.code();
                if count.is_power_of_two() || clock.is_publishing() {
                    warn!(%peer, code = code.code(), reason = code.label(), error = %cut, count, "rtmp connection cut");
                }
            }
            Err(e @ ConnectionError::Io(_)) => {
                info!(%peer, error = %e, "rtmp connection dropped");
            }
            Err(ConnectionError::Tls(error)) => {
                let count = self.stats.tls_handshake_failures.load(Relaxed);
                let code = codes::InputFault::TlsHandshakeFailed;
                if count.is_power_of_two() {
                    warn!(%peer, code = code.code(), reason = code.label(), %error, count, "rtmps connection closed");
                }
            }
            Err(e) => {
                self.stats.protocol_errors.fetch_add(1, Relaxed);
                warn!(%peer, error = %e, "rtmp connection dropped");
            }
        }
    }

    /// The TLS handshake of an RTMPS connection, within the publish deadline.
    async fn tls_accept(
        &self,
        acceptor: &TlsAcceptor,
        socket: TcpStream,
        clock: &PhaseClock,
    ) -> Result<tokio_rustls::server::TlsStream<TcpStream>, ConnectionError> {
        match timeout_at(
            Instant::from_std(clock.next_check()),
            acceptor.accept(socket),
        )
        .await
        {
            Ok(Ok(stream)) => {
                self.stats.tls_handshakes.fetch_add(1, Relaxed);
                Ok(stream)
            }
            Ok(Err(e)) => {
                self.stats.tls_handshake_failures.fetch_add(1, Relaxed);
                Err(ConnectionError::Tls(e))
            }
            Err(_) => {
                self.stats.tls_handshake_failures.fetch_add(1, Relaxed);
                Err(Cut::PublishDeadline(self.limits.listener.publish_deadline).into())
            }
        }
    }

    async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
        &self,
        socket: &mut S,
    ) -> Result<(), ConnectionError> {
        let mut c0c1 = vec![0u8; 1 + HANDSHAKE_SIZE];
        socket.read_exact(&mut c0c1).await?;
        self.stats.bytes.fetch_add(c0c1.len() as u64, Relaxed);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u32);
        let hasher = RandomState::new();
        let mut counter = 0u64;
        let reply = server_response(&c0c1, now, || {
            counter += 1;
            hasher.hash_one(counter)
        })?;
        socket.write_all(&reply).await?;
        socket.flush().await?;
        let mut c2 = vec![0u8; HANDSHAKE_SIZE];
        socket.read_exact(&mut c2).await?;
        self.stats.bytes.fetch_add(c2.len() as u64, Relaxed);
        Ok(())
    }

    /// Writes the session's replies within the send timeout and, before a publish, within
    /// the publish deadline too (a peer that does not read cannot outstay it).
    async fn write_output<S: AsyncWrite + Unpin>(
        &self,
        socket: &mut S,
        session: &mut Session,
        clock: &PhaseClock,
    ) -> Result<(), ConnectionError> {
        let out = session.take_output();
        if out.is_empty() {
            return Ok(());
        }
        let limits = &self.limits.listener;
        let send_by = Instant::now() + limits.send_timeout;
        let until = if clock.is_publishing() {
            send_by
        } else {
            send_by.min(Instant::from_std(clock.next_check()))
        };
        let write = async {
            socket.write_all(&out).await?;
            // TLS keeps what the socket did not take: push it out now.
            socket.flush().await
        };
        match timeout_at(until, write).await {
            Ok(written) => Ok(written?),
            Err(_) if until < send_by => Err(Cut::PublishDeadline(limits.publish_deadline).into()),
            Err(_) => Err(Cut::SendTimeout(limits.send_timeout).into()),
        }
    }

    async fn serve_socket<S: AsyncRead + AsyncWrite + Unpin>(
        &self,
        socket: &mut S,
        slot: &mut Slot,
        clock: &mut PhaseClock,
    ) -> Result<(), ConnectionError> {
        // The handshake is the first part of the time to publish.
        match timeout_at(
            Instant::from_std(clock.next_check()),
            self.handshake(socket),
        )
        .await
        {
            Ok(done) => done?,
            Err(_) => {
                return Err(Cut::PublishDeadline(self.limits.listener.publish_deadline).into())
            }
        }
        let mut session = Session::new(self.peer, self.limits.max_message_size);
        let mut sender: Option<IngestSender> = None;
        // The stream published on this connection, for the log lines ("-" before).
        let mut stream = String::from("-");
        let mut media_errors = 0u64;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // Bytes first: a check only judges what was read. The clock is also applied
            // after every read, so a peer that never stops sending meets it too.
            let n = tokio::select! {
                biased;
                read = socket.read(&mut buf) => read?,
                () = sleep_until(Instant::from_std(clock.next_check())) => {
                    clock.check(std::time::Instant::now())?;
                    continue;
                }
            };
            if n == 0 {
                return Ok(());
            }
            self.stats.bytes.fetch_add(n as u64, Relaxed);
            clock.received(n);
            clock.check(std::time::Instant::now())?;
            session.feed(&buf[..n]);
            while let Some(event) = session.poll_event()? {
                match event {
                    SessionEvent::Publish(request) => {
                        match self.authorizer.authorize(&request) {
                            Ok(tx) => {
                                self.stats.publishes.fetch_add(1, Relaxed);
                                info!(peer = %self.peer, app = %request.app, stream = %request.stream, "rtmp publish started");
                                session.accept_publish();
                                slot.published();
                                clock.published(std::time::Instant::now());
                                sender = Some(tx);
                                stream = request.stream.clone();
                            }
                            Err(rejection) => {
                                self.stats.rejected(&rejection);
                                let code = rejection.code();
                                warn!(peer = %self.peer, app = %request.app, stream = %request.stream, code = code.code(), reason = code.label(), "rtmp publish rejected: {rejection}");
                                session.reject_publish(&rejection);
                            }
                        }
                        self.write_output(socket, &mut session, clock).await?;
                    }
                    SessionEvent::Frame(frame) => {
                        let Some(tx) = &sender else { continue };
                        if tx.send(IngestEvent::Frame(frame)).await.is_err() {
                            info!(peer = %self.peer, %stream, "rtmp stream closed under the publisher");
                            return Ok(());
                        }
                        self.stats.frames.fetch_add(1, Relaxed);
                    }
                    SessionEvent::Unpublish => {
                        info!(peer = %self.peer, %stream, "rtmp publish stopped");
                        sender = None;
                        clock.unpublished(std::time::Instant::now());
                    }
                    SessionEvent::Unsupported(codec) => {
                        warn!(peer = %self.peer, %stream, codec = ?codec, "rtmp codec unsupported, its tags are dropped");
                    }
                    SessionEvent::MediaError(e) => {
                        self.stats.protocol_errors.fetch_add(1, Relaxed);
                        media_errors += 1;
                        if media_errors.is_power_of_two() {
                            warn!(peer = %self.peer, %stream, error = %e, count = media_errors, "rtmp media tag dropped");
                        }
                    }
                }
            }
            self.write_output(socket, &mut session, clock).await?;
            if session.is_closed() {
                linger(socket).await;
                return Ok(());
            }
        }
    }
}

/// Half-closes and drains briefly, so the peer reads our last replies instead of a reset.
async fn linger<S: AsyncRead + AsyncWrite + Unpin>(socket: &mut S) {
    if socket.shutdown().await.is_err() {
        return;
    }
    let mut buf = [0u8; 4096];
    let _ = timeout(LINGER, async {
        while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
    })
    .await;
}
