//! The SRT listener: one UDP port for every meeting. At each handshake it admits the
//! caller within the listener's caps, reads its streamid, checks its encryption and
//! asks the [`PublishAuthorizer`] (the RTMP listener's, so the same key and busy rules
//! hold); a refusal goes back as an SRT reject reason and is logged and counted with
//! its code. An accepted caller's payload runs through the shared demuxer path
//! ([`super::session`]).
//!
//! srt-tokio's listener task panics on a few malformed handshakes (its parser and
//! handshake code have `unimplemented!` arms); the process survives it, and this
//! listener starts a new one on the same socket at once (its publishers lose their
//! connection and reconnect). That is counted (`restarts`) and logged with 111031.

use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use srt_tokio::{ConnectionRequest, SrtListener};
use tokio::net::UdpSocket;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::{debug, info, warn};

use super::access::{Refused, SrtListenerConfig};
use super::session::Publisher;
use super::stats::SrtStats;
use super::streamid;
use crate::listener_limits::{Admission, Cut, Slot};
use crate::publish::{PublishAuthorizer, PublishRequest};

/// The pause before a listener that died is started again.
const RESTART_PAUSE: Duration = Duration::from_millis(100);

/// The receive buffer asked of the kernel for the shared socket.
const RECV_BUFFER: usize = 8 << 20;

/// A bound SRT listener, ready to [`serve`](SrtServer::serve).
#[derive(Debug)]
pub struct SrtServer {
    socket: std::net::UdpSocket,
    local_addr: SocketAddr,
    config: SrtListenerConfig,
}

impl SrtServer {
    /// Binds the UDP socket (so the port is known, and kept across restarts).
    ///
    /// # Errors
    /// The configuration's error, or the system's.
    pub fn bind(config: SrtListenerConfig) -> std::io::Result<Self> {
        config
            .validate()
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        let domain = socket2::Domain::for_address(config.bind);
        let socket = socket2::Socket::new(domain, socket2::Type::DGRAM, None)?;
        if let Err(e) = socket.set_recv_buffer_size(RECV_BUFFER) {
            warn!(error = %e, "cannot enlarge the srt receive buffer");
        }
        socket.bind(&config.bind.into())?;
        socket.set_nonblocking(true)?;
        let socket: std::net::UdpSocket = socket.into();
        // Datagrams srt-tokio would stop on never reach it (see `filter`).
        super::filter::attach(&socket)?;
        let local_addr = socket.local_addr()?;
        Ok(Self {
            socket,
            local_addr,
            config,
        })
    }

    /// The bound address (to learn the port after binding port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Accepts publishers until `shutdown` completes, then closes every connection
    /// and returns once their tasks have ended.
    pub async fn serve(
        self,
        authorizer: Arc<dyn PublishAuthorizer>,
        stats: Arc<SrtStats>,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        let (stop_tx, stop_rx) = watch::channel(false);
        let admission = Admission::new(
            self.config.limits.max_connections,
            self.config.limits.max_pending_per_address,
        );
        let shared = Arc::new(Shared {
            authorizer,
            stats,
            config: self.config.clone(),
            admission,
        });
        let mut tasks = JoinSet::new();
        tokio::pin!(shutdown);
        'restart: loop {
            let (mut listener, mut incoming) = match self.start(&shared.config).await {
                Ok(started) => started,
                Err(e) => {
                    warn!(error = %e, "srt listener cannot start");
                    tokio::select! {
                        () = &mut shutdown => break 'restart,
                        () = tokio::time::sleep(RESTART_PAUSE) => continue 'restart,
                    }
                }
            };
            info!(addr = %self.local_addr, "srt listener started");
            let requests = incoming.incoming();
            loop {
                tokio::select! {
                    () = &mut shutdown => {
                        listener.close().await;
                        break 'restart;
                    }
                    Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                    request = requests.next() => {
                        let Some(request) = request else {
                            let count = shared.stats.restarts.fetch_add(1, Relaxed) + 1;
                            let code = codes::InputFault::ListenerRestarted;
                            warn!(addr = %self.local_addr, code = code.code(), reason = code.label(), count, "srt listener task ended; starting it again");
                            tokio::time::sleep(RESTART_PAUSE).await;
                            continue 'restart;
                        };
                        let shared = Arc::clone(&shared);
                        let stop = stop_rx.clone();
                        tasks.spawn(async move { shared.handshake(request, stop).await });
                    }
                }
            }
        }
        // Ignoring the error is fine: no receiver left means every task has ended.
        let _ = stop_tx.send(true);
        while tasks.join_next().await.is_some() {}
        info!("srt listener stopped");
    }

    async fn start(
        &self,
        config: &SrtListenerConfig,
    ) -> std::io::Result<(SrtListener, srt_tokio::SrtIncoming)> {
        let socket = UdpSocket::from_std(self.socket.try_clone()?)?;
        SrtListener::builder()
            .latency(config.latency)
            .socket(socket)
            .bind(self.local_addr)
            .await
    }
}

struct Shared {
    authorizer: Arc<dyn PublishAuthorizer>,
    stats: Arc<SrtStats>,
    config: SrtListenerConfig,
    admission: Arc<Admission>,
}

impl Shared {
    /// Answers one handshake and, once accepted, runs the publisher to its end.
    async fn handshake(&self, request: ConnectionRequest, stop: watch::Receiver<bool>) {
        let accepted_at = Instant::now();
        let peer = request.remote();
        let raw_id = request.stream_id().map(|id| id.as_str().to_owned());
        let mut slot = match self.admission.admit(peer.ip()) {
            Ok(slot) => slot,
            Err(refusal) => return self.refuse(request, Refused::Limit(refusal), "-").await,
        };
        let Some(id) = raw_id.as_deref().and_then(|raw| streamid::parse(raw).ok()) else {
            let shown = streamid::redacted(raw_id.as_deref().unwrap_or_default());
            return self.refuse(request, Refused::StreamId, &shown).await;
        };
        let key_settings = match self.config.key_settings(&id.stream, request.key_size()) {
            Ok(settings) => settings,
            Err(refused) => return self.refuse(request, refused, &id.stream).await,
        };
        let publish = PublishRequest {
            app: id.app.clone().unwrap_or_default(),
            stream: id.stream.clone(),
            key: id.key.clone(),
            peer,
        };
        let sender = match self.authorizer.authorize(&publish) {
            Ok(sender) => sender,
            Err(rejection) => {
                return self
                    .refuse(request, Refused::from(&rejection), &id.stream)
                    .await
            }
        };
        let encrypted = key_settings.is_some();
        // srt-tokio may never finish an accepted handshake (a conclusion without its
        // HSREQ is left unanswered): the publish deadline bounds it, so the address's
        // place and the meeting's publish slot are not held for ever.
        let deadline = accepted_at + self.config.limits.publish_deadline;
        let accepted = match tokio::time::timeout_at(deadline.into(), request.accept(key_settings))
            .await
        {
            Ok(accepted) => accepted,
            Err(_) => {
                let cut = Cut::PublishDeadline(self.config.limits.publish_deadline);
                let count = self.stats.limits.cut(cut);
                let code = cut.code();
                warn!(%peer, stream = %id.stream, code = code.code(), reason = code.label(), error = %cut, count, "srt handshake not finished; cut");
                return;
            }
        };
        let socket = match accepted {
            Ok(socket) => socket,
            Err(e) => {
                // With encryption, srt-protocol refuses a passphrase that does not
                // unwrap the caller's key (BadSecret) after our accept.
                if encrypted {
                    self.count(
                        Refused::Passphrase(srt_protocol::packet::CoreRejectReason::BadSecret),
                        peer,
                        &id.stream,
                    );
                } else {
                    info!(%peer, stream = %id.stream, error = %e, "srt handshake failed after accept");
                }
                return;
            }
        };
        self.stats.connections.fetch_add(1, Relaxed);
        self.stats.active_connections.fetch_add(1, Relaxed);
        info!(%peer, stream = %id.stream, user = id.user.as_deref().unwrap_or("-"), encrypted, "srt publish started");
        let publisher = Publisher {
            socket,
            sender,
            stream: id.stream,
            peer,
            stats: Arc::clone(&self.stats),
        };
        publisher
            .run(&mut slot, &self.config.limits, accepted_at, stop)
            .await;
        self.stats.active_connections.fetch_sub(1, Relaxed);
        drop::<Slot>(slot);
    }

    async fn refuse(&self, request: ConnectionRequest, refused: Refused, stream: &str) {
        let peer = request.remote();
        self.count(refused, peer, stream);
        if let Err(e) = request.reject(refused.reason()).await {
            debug!(%peer, error = %e, "srt reject not sent");
        }
    }

    /// Counts and logs a refusal: the first of its code and then every power of two
    /// for the caps (a flood is not a flood of log lines), every one for the others.
    fn count(&self, refused: Refused, peer: SocketAddr, stream: &str) {
        let code = refused.code();
        let count = self.stats.refused(code);
        if !matches!(refused, Refused::Limit(_)) || count.is_power_of_two() {
            warn!(%peer, %stream, code = code.code(), reason = code.label(), count, "srt publisher refused");
        }
    }
}
