//! The SRT listener: one UDP port for every meeting, served by the system's libsrt.
//! libsrt answers each caller's first handshake statelessly (a SYN cookie); the
//! listen callback ([`super::handshake`]) decides the second; an accepting thread
//! hands each connection to tokio, where its payload runs through the shared demuxer
//! path ([`super::session`]).
//!
//! Should the listening socket fail, the listener opens a new one on the same port
//! (its connected publishers go on: their sockets are theirs). That is counted
//! (`restarts`) and logged with 111031.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;
use tracing::{error, info, warn};

use super::access::{Refused, SrtListenerConfig};
use super::ffi::{self, Epoll, HookSlot, ListenHook, Opt, Socket, SocketState, SrtError};
use super::handshake::{Pending, Shared};
use super::reader::Reader;
use super::session::Publisher;
use super::stats::SrtStats;
use crate::publish::PublishAuthorizer;

/// How long the accepting thread waits for a connection before looking whether it
/// should stop.
const TICK: Duration = Duration::from_millis(100);

/// How often the accepting thread looks at the granted handshakes libsrt has not
/// finished (a wrong passphrase is refused by libsrt after the callback granted it).
const PENDING_TICK: Duration = Duration::from_millis(2);

/// How long after it was granted a handshake is looked at every [`PENDING_TICK`].
const FRESH: Duration = Duration::from_secs(1);

/// The pause before a failed listening socket is opened again.
const RESTART_PAUSE: Duration = Duration::from_millis(100);

/// Connections libsrt finishes before they are accepted.
const BACKLOG: i32 = 128;

/// A silent peer's connection is broken after this long (libsrt's default): a killed
/// publisher's place and meeting slot are freed, and a backup publisher that was
/// refused as busy can connect. A primary's silence is noticed sooner by the stream
/// itself, which switches to the backup input without waiting for it.
pub const PEER_IDLE_TIMEOUT: Duration = Duration::from_secs(5);

/// The SRT payload size: seven 188-byte TS packets.
const PAYLOAD_SIZE: i32 = 1316;

/// A bound SRT listener, ready to [`serve`](SrtServer::serve).
#[derive(Debug)]
pub struct SrtServer {
    socket: Socket,
    /// Where libsrt finds the handshake decisions; empty until [`SrtServer::serve`].
    hook: &'static HookSlot,
    local_addr: SocketAddr,
    config: SrtListenerConfig,
}

impl SrtServer {
    /// Binds the UDP port and listens (so the port is known and callers' first
    /// handshakes are answered; a caller that finishes its handshake before
    /// [`SrtServer::serve`] runs is refused, and retries).
    ///
    /// # Errors
    /// The configuration's error; libsrt missing (the error names the package to
    /// install); the system's.
    pub fn bind(config: SrtListenerConfig) -> std::io::Result<Self> {
        config
            .validate()
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        ffi::load().map_err(std::io::Error::other)?;
        // libsrt keeps a pointer to the slot: it lives as long as the process.
        let hook = HookSlot::leak();
        let socket = open(&config, config.bind, hook).map_err(io_error)?;
        let local_addr = socket.local_addr().map_err(io_error)?;
        Ok(Self {
            socket,
            hook,
            local_addr,
            config,
        })
    }

    /// The bound address (to learn the port after binding port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Accepts publishers until `shutdown` completes, then closes every connection
    /// and returns once they have ended.
    pub async fn serve(
        self,
        authorizer: Arc<dyn PublishAuthorizer>,
        stats: Arc<SrtStats>,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        let shared = match Shared::new(authorizer, stats, self.config.clone()) {
            Ok(shared) => Arc::new(shared),
            Err(e) => {
                error!(addr = %self.local_addr, error = %e, "srt listener cannot start");
                return;
            }
        };
        let hook = self.hook;
        hook.set(Some(Arc::clone(&shared) as Arc<dyn ListenHook>));
        let (stop_tx, stop_rx) = watch::channel(false);
        let stopping = Arc::new(AtomicBool::new(false));
        let (accepted_tx, mut accepted_rx) = mpsc::channel::<(Socket, Pending)>(64);
        let mut tasks = JoinSet::new();
        let mut socket = Some(self.socket);
        tokio::pin!(shutdown);
        'restart: loop {
            let listener = match socket.take() {
                Some(listener) => Ok(listener),
                None => open(&self.config, self.local_addr, hook),
            };
            let ended = match listener.and_then(|l| Acceptor::start(l, &shared)) {
                Ok(acceptor) => acceptor.run(Arc::clone(&stopping), accepted_tx.clone()),
                Err(e) => {
                    error!(addr = %self.local_addr, error = %e, "srt listener cannot start");
                    tokio::select! {
                        () = &mut shutdown => break 'restart,
                        () = tokio::time::sleep(RESTART_PAUSE) => continue 'restart,
                    }
                }
            };
            let Ok(mut ended) = ended else {
                error!("srt listener thread cannot start");
                break 'restart;
            };
            info!(addr = %self.local_addr, "srt listener started");
            loop {
                tokio::select! {
                    () = &mut shutdown => break 'restart,
                    Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                    Some((socket, pending)) = accepted_rx.recv() => {
                        let shared = Arc::clone(&shared);
                        let stop = stop_rx.clone();
                        tasks.spawn(async move { publish(&shared, socket, pending, stop).await });
                    }
                    failure = &mut ended => {
                        let count = shared.stats.restarts.fetch_add(1, Relaxed) + 1;
                        let code = codes::InputFault::ListenerRestarted;
                        let error = failure.map_or_else(|_| "ended".to_owned(), |e| e.to_string());
                        warn!(addr = %self.local_addr, code = code.code(), reason = code.label(), count, %error, "srt listening socket failed; opening it again");
                        tokio::time::sleep(RESTART_PAUSE).await;
                        continue 'restart;
                    }
                }
            }
        }
        stopping.store(true, Relaxed);
        hook.set(None);
        // Ignoring the error is fine: no receiver left means every task has ended.
        let _ = stop_tx.send(true);
        while tasks.join_next().await.is_some() {}
        info!("srt listener stopped");
    }
}

fn io_error(e: SrtError) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

/// A listening socket: its options (accepted sockets inherit them), bind, listen.
fn open(
    config: &SrtListenerConfig,
    addr: SocketAddr,
    hook: &'static HookSlot,
) -> Result<Socket, SrtError> {
    let socket = Socket::new()?;
    let latency_ms = i32::try_from(config.latency.as_millis()).unwrap_or(i32::MAX);
    socket.set_int(Opt::Latency, latency_ms)?;
    let idle_ms = i32::try_from(PEER_IDLE_TIMEOUT.as_millis()).unwrap_or(i32::MAX);
    socket.set_int(Opt::PeerIdleTimeout, idle_ms)?;
    socket.set_int(Opt::PayloadSize, PAYLOAD_SIZE)?;
    socket.set_bool(Opt::RcvSyn, false)?;
    if addr.is_ipv6() {
        // Both families on `[::]`, as the other listeners.
        socket.set_int(Opt::Ipv6Only, 0)?;
    }
    socket.bind(addr)?;
    socket.listen(BACKLOG, hook)?;
    Ok(socket)
}

/// The listening socket and its accepting thread.
struct Acceptor {
    socket: Socket,
    epoll: Epoll,
    shared: Arc<Shared>,
}

impl Acceptor {
    fn start(socket: Socket, shared: &Arc<Shared>) -> Result<Self, SrtError> {
        let epoll = Epoll::new()?;
        epoll.add(&socket)?;
        epoll.add_system(&shared.wake)?;
        Ok(Self {
            socket,
            epoll,
            shared: Arc::clone(shared),
        })
    }

    /// Runs the thread; the receiver completes with the listening socket's error
    /// (or when the thread ends after `stopping`, when no one waits any more).
    fn run(
        self,
        stopping: Arc<AtomicBool>,
        accepted: mpsc::Sender<(Socket, Pending)>,
    ) -> std::io::Result<oneshot::Receiver<SrtError>> {
        let (failed_tx, failed) = oneshot::channel();
        std::thread::Builder::new()
            .name("srt-accept".into())
            .spawn(move || {
                if let Err(e) = self.accept_until(&stopping, &accepted) {
                    let _ = failed_tx.send(e);
                }
            })?;
        Ok(failed)
    }

    fn accept_until(
        &self,
        stopping: &AtomicBool,
        accepted: &mpsc::Sender<(Socket, Pending)>,
    ) -> Result<(), SrtError> {
        while !stopping.load(Relaxed) && !accepted.is_closed() {
            let tick = if self.shared.has_fresh(Instant::now(), FRESH) {
                PENDING_TICK
            } else {
                TICK
            };
            self.epoll.wait(tick)?;
            self.shared.drain_wake();
            self.shared.flush_log();
            loop {
                let socket = match self.socket.accept() {
                    Ok(Some(socket)) => socket,
                    Ok(None) => break,
                    // libsrt's 1005 also means a queued connection closed before it
                    // was accepted: only a listening socket that is no longer live
                    // has failed. Back to the wait (a bounded retry).
                    Err(e) if listener_live(ffi::state(self.socket.id())) => {
                        info!(error = %e, "srt connection ended before it was accepted");
                        break;
                    }
                    Err(e) => return Err(e),
                };
                match self.shared.take(socket.id()) {
                    Some(pending) => {
                        if accepted.blocking_send((socket, pending)).is_err() {
                            return Ok(());
                        }
                    }
                    // Its handshake outlived the publish deadline: already cut.
                    None => drop(socket),
                }
            }
            self.shared.sweep(Instant::now());
        }
        self.shared.flush_log();
        Ok(())
    }
}

/// Whether a listening socket in `state` still listens, so that a failed accept
/// concerned one queued connection rather than the listener.
fn listener_live(state: SocketState) -> bool {
    state == SocketState::Live
}

/// Runs one accepted publisher to its end.
async fn publish(shared: &Shared, socket: Socket, pending: Pending, stop: watch::Receiver<bool>) {
    let Pending {
        mut slot,
        sender,
        id,
        peer,
        accepted_at,
        encrypted,
    } = pending;
    if let (true, Some(wanted)) = (encrypted, shared.config.key_length) {
        // libsrt takes the caller's key length: a required one is checked here.
        let used = socket.get_int(Opt::KeyLength).unwrap_or(0);
        if used != i32::from(wanted) {
            shared.count(Refused::Passphrase, peer, &id.stream);
            return;
        }
    }
    let reader = match Reader::spawn(socket, "srt-publisher") {
        Ok(reader) => reader,
        Err(e) => {
            warn!(%peer, stream = %id.stream, error = %e, "srt publisher cannot be read");
            return;
        }
    };
    shared.stats.connections.fetch_add(1, Relaxed);
    shared.stats.active_connections.fetch_add(1, Relaxed);
    info!(%peer, stream = %id.stream, user = id.user.as_deref().unwrap_or("-"), encrypted, "srt publish started");
    let publisher = Publisher {
        reader,
        sender,
        stream: id.stream,
        peer,
        stats: Arc::clone(&shared.stats),
    };
    publisher
        .run(&mut slot, &shared.config.limits, accepted_at, stop)
        .await;
    shared.stats.active_connections.fetch_sub(1, Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_accept_restarts_the_listener_only_when_it_no_longer_listens() {
        assert!(listener_live(SocketState::Live));
        assert!(!listener_live(SocketState::Ended));
        assert!(!listener_live(SocketState::Unknown));
    }

    /// A live listening socket reads as live, a closed one as not: what decides
    /// whether an accept error restarts the listener.
    #[test]
    fn a_listening_socket_reads_live_until_it_is_closed() {
        ffi::load().expect("libsrt 1.5 (apt install libsrt1.5-openssl)");
        let config = SrtListenerConfig::new("127.0.0.1:0".parse().unwrap());
        let hook = HookSlot::leak();
        let socket = open(&config, config.bind, hook).expect("listen");
        let id = socket.id();
        assert!(listener_live(ffi::state(id)));
        drop(socket);
        assert!(!listener_live(ffi::state(id)));
    }
}
