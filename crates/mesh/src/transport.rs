//! The sealed gossip transport: chitchat's [`Transport`] over UDP, every datagram
//! sealed with ChaCha20-Poly1305 under the domain's gossip key.
//!
//! Datagram = 12-byte random nonce ‖ seal(chitchat envelope) ‖ 16-byte tag. A
//! datagram that does not open (another domain, tampered, truncated, garbage) is
//! dropped and counted, never parsed: a node without the domain secret can neither
//! join nor read the state. Replayed datagrams do open, and are harmless to
//! scuttlebutt: state versions and heartbeats only move forward, so an old message
//! changes nothing.
//!
//! Size: chitchat sizes its messages to fit a 65,507-byte UDP payload and does not
//! let a transport lower that budget; the seal adds [`SEAL_OVERHEAD`] bytes. A
//! message between 65,480 and 65,507 bytes therefore cannot be sent: it is dropped
//! and counted as `oversized` (warned at most every 10 s). Chitchat compresses its
//! deltas and each node's state here is a few kilobytes, so a domain reaches that
//! only with thousands of members.
//!
//! [`Links`] lets tests cut the link between two gossip addresses on real sockets.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use async_trait::async_trait;
use chitchat::transport::{RecvOutcome, SendOutcome, Socket, Transport};
use chitchat::ChitchatEnvelope;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::codec::{self, Decoder, Encoder};
use crate::crypto::{GossipCipher, SEAL_OVERHEAD};

/// The largest UDP payload over IPv4.
const MAX_UDP_PAYLOAD: usize = 65_507;
/// Opened envelopes waiting for chitchat; beyond this they are dropped like UDP.
const INBOX: usize = 256;
/// The shortest gap between two warnings about rejected or oversized datagrams.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// Links cut between gossip addresses, shared by the nodes of a test.
///
/// A cut link drops datagrams both ways, on real sockets, as a partition would.
#[derive(Debug, Clone, Default)]
pub struct Links {
    cut: Arc<Mutex<HashSet<(SocketAddr, SocketAddr)>>>,
}

impl Links {
    /// Cuts the link between `a` and `b`, both ways.
    pub fn cut(&self, a: SocketAddr, b: SocketAddr) {
        let mut cut = self.cut.lock().unwrap_or_else(|e| e.into_inner());
        cut.insert((a, b));
        cut.insert((b, a));
    }

    /// Restores the link between `a` and `b`.
    pub fn heal(&self, a: SocketAddr, b: SocketAddr) {
        let mut cut = self.cut.lock().unwrap_or_else(|e| e.into_inner());
        cut.remove(&(a, b));
        cut.remove(&(b, a));
    }

    /// Restores every link.
    pub fn heal_all(&self) {
        self.cut.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    fn is_cut(&self, from: SocketAddr, to: SocketAddr) -> bool {
        self.cut
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&(from, to))
    }
}

/// Counters of the sealed transport, for metrics and tests.
#[derive(Debug, Default)]
pub struct TransportStats {
    sent: AtomicU64,
    sent_bytes: AtomicU64,
    received: AtomicU64,
    received_bytes: AtomicU64,
    rejected: AtomicU64,
    undecodable: AtomicU64,
    oversized: AtomicU64,
    cut: AtomicU64,
}

/// A reading of [`TransportStats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TransportCounters {
    /// Datagrams sealed and sent.
    pub sent: u64,
    /// Bytes of those datagrams (UDP payload).
    pub sent_bytes: u64,
    /// Datagrams opened and handed to chitchat.
    pub received: u64,
    /// Bytes of those datagrams (UDP payload).
    pub received_bytes: u64,
    /// Datagrams that did not open: another domain's, tampered, truncated, garbage.
    pub rejected: u64,
    /// Datagrams that opened but were not a chitchat message (a peer of another
    /// version, or a bug).
    pub undecodable: u64,
    /// Messages too large for one sealed datagram, not sent.
    pub oversized: u64,
    /// Datagrams dropped because a test cut the link.
    pub cut: u64,
}

impl TransportStats {
    /// The current counts.
    pub fn counters(&self) -> TransportCounters {
        TransportCounters {
            sent: self.sent.load(Ordering::Relaxed),
            sent_bytes: self.sent_bytes.load(Ordering::Relaxed),
            received: self.received.load(Ordering::Relaxed),
            received_bytes: self.received_bytes.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
            undecodable: self.undecodable.load(Ordering::Relaxed),
            oversized: self.oversized.load(Ordering::Relaxed),
            cut: self.cut.load(Ordering::Relaxed),
        }
    }
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Chitchat's transport over a pre-bound UDP socket, sealed under the domain key.
pub struct SealedTransport {
    cipher: Arc<GossipCipher>,
    socket: Mutex<Option<std::net::UdpSocket>>,
    links: Links,
    stats: Arc<TransportStats>,
}

impl SealedTransport {
    /// A transport that will use `socket` (bound already, so the caller knows its
    /// address before chitchat starts) or, once that is taken, bind anew.
    pub fn new(
        cipher: GossipCipher,
        socket: Option<std::net::UdpSocket>,
        links: Links,
        stats: Arc<TransportStats>,
    ) -> Self {
        Self {
            cipher: Arc::new(cipher),
            socket: Mutex::new(socket),
            links,
            stats,
        }
    }
}

#[async_trait]
impl Transport for SealedTransport {
    async fn open(&self, listen_addr: SocketAddr) -> anyhow::Result<Box<dyn Socket>> {
        let prebound = self.socket.lock().unwrap_or_else(|e| e.into_inner()).take();
        let std_socket = match prebound {
            Some(s) => s,
            None => std::net::UdpSocket::bind(listen_addr)
                .with_context(|| format!("binding gossip socket {listen_addr}"))?,
        };
        std_socket.set_nonblocking(true)?;
        let wire = Arc::new(tokio::net::UdpSocket::from_std(std_socket)?);
        let local = wire.local_addr()?;
        let (encoder, decoder) = codec::open_pair().await?;
        let (tx, rx) = mpsc::channel(INBOX);
        let ingress = tokio::spawn(
            Ingress {
                wire: wire.clone(),
                local,
                decoder,
                cipher: self.cipher.clone(),
                links: self.links.clone(),
                stats: self.stats.clone(),
                inbox: tx,
            }
            .run(),
        );
        Ok(Box::new(SealedSocket {
            wire,
            local,
            encoder,
            cipher: self.cipher.clone(),
            links: self.links.clone(),
            stats: self.stats.clone(),
            inbox: rx,
            ingress,
            last_oversize_warn: None,
        }))
    }
}

struct SealedSocket {
    wire: Arc<tokio::net::UdpSocket>,
    local: SocketAddr,
    encoder: Encoder,
    cipher: Arc<GossipCipher>,
    links: Links,
    stats: Arc<TransportStats>,
    inbox: mpsc::Receiver<RecvOutcome>,
    ingress: JoinHandle<()>,
    last_oversize_warn: Option<Instant>,
}

impl Drop for SealedSocket {
    fn drop(&mut self) {
        self.ingress.abort();
    }
}

#[async_trait]
impl Socket for SealedSocket {
    fn local_addr(&self) -> anyhow::Result<SocketAddr> {
        Ok(self.local)
    }

    async fn send(
        &mut self,
        to: SocketAddr,
        envelope: ChitchatEnvelope,
    ) -> anyhow::Result<SendOutcome> {
        let plain = match self.encoder.encode(envelope).await {
            Ok(p) => p,
            Err(e) => {
                // Dropped like a lost datagram; gossip repeats next round.
                tracing::warn!(error = %e, "gossip encoder failed, replacing it");
                self.encoder = Encoder::open().await?;
                return Ok(SendOutcome { num_bytes_sent: 0 });
            }
        };
        let num_bytes_sent = plain.len();
        if plain.len() + SEAL_OVERHEAD > MAX_UDP_PAYLOAD {
            bump(&self.stats.oversized);
            if self
                .last_oversize_warn
                .is_none_or(|t| t.elapsed() >= WARN_EVERY)
            {
                self.last_oversize_warn = Some(Instant::now());
                tracing::warn!(
                    bytes = plain.len(),
                    peer = %to,
                    "gossip message too large for a sealed datagram, not sent"
                );
            }
            return Ok(SendOutcome { num_bytes_sent });
        }
        if self.links.is_cut(self.local, to) {
            bump(&self.stats.cut);
            return Ok(SendOutcome { num_bytes_sent });
        }
        let sealed = self.cipher.seal(&plain)?;
        match self.wire.send_to(&sealed, to).await {
            Ok(n) => {
                bump(&self.stats.sent);
                self.stats.sent_bytes.fetch_add(n as u64, Ordering::Relaxed);
            }
            // A peer that is gone, or a transient network error: UDP semantics,
            // gossip retries next round. Only a broken socket would matter, and the
            // receive side reports that.
            Err(e) => tracing::debug!(peer = %to, error = %e, "gossip send failed"),
        }
        Ok(SendOutcome { num_bytes_sent })
    }

    async fn recv(&mut self) -> anyhow::Result<RecvOutcome> {
        self.inbox
            .recv()
            .await
            .context("gossip receive task stopped")
    }
}

/// Receives, opens and decodes datagrams, off chitchat's loop (which cancels `recv`
/// every gossip tick, so the loopback decode must not run inside it).
struct Ingress {
    wire: Arc<tokio::net::UdpSocket>,
    local: SocketAddr,
    decoder: Decoder,
    cipher: Arc<GossipCipher>,
    links: Links,
    stats: Arc<TransportStats>,
    inbox: mpsc::Sender<RecvOutcome>,
}

impl Ingress {
    async fn run(mut self) {
        let mut buf = vec![0u8; MAX_UDP_PAYLOAD];
        let mut last_warn: Option<Instant> = None;
        let mut rejected_since_warn = 0u64;
        loop {
            let (n, from) = match self.wire.recv_from(&mut buf).await {
                Ok(r) => r,
                Err(e) if is_transient(&e) => continue,
                Err(e) => {
                    tracing::error!(error = %e, "gossip socket failed, leaving the mesh");
                    return;
                }
            };
            if self.links.is_cut(from, self.local) {
                bump(&self.stats.cut);
                continue;
            }
            let Some(plain) = self.cipher.open(&mut buf[..n]) else {
                bump(&self.stats.rejected);
                rejected_since_warn += 1;
                tracing::debug!(from = %from, bytes = n, "gossip datagram rejected");
                if last_warn.is_none_or(|t| t.elapsed() >= WARN_EVERY) {
                    last_warn = Some(Instant::now());
                    tracing::warn!(
                        from = %from,
                        rejected = rejected_since_warn,
                        "gossip datagrams that do not open with the domain key were dropped"
                    );
                    rejected_since_warn = 0;
                }
                continue;
            };
            match self.decoder.decode(plain).await {
                Ok(Some(envelope)) => {
                    bump(&self.stats.received);
                    self.stats
                        .received_bytes
                        .fetch_add(n as u64, Ordering::Relaxed);
                    let outcome = RecvOutcome {
                        from_addr: from,
                        envelope,
                        num_bytes_received: n,
                    };
                    if self.inbox.try_send(outcome).is_err() && self.inbox.is_closed() {
                        return;
                    }
                }
                Ok(None) => {
                    bump(&self.stats.undecodable);
                    tracing::debug!(from = %from, "authenticated gossip datagram is not a chitchat message");
                }
                Err(e) => {
                    tracing::warn!(error = %e, "gossip decoder failed, replacing it");
                    match self.decoder.reopen().await {
                        Ok(d) => self.decoder = d,
                        Err(e) => {
                            tracing::error!(error = %e, "gossip decoder cannot be replaced, leaving the mesh");
                            return;
                        }
                    }
                }
            }
        }
    }
}

fn is_transient(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::OutOfMemory
            | std::io::ErrorKind::Interrupted
            | std::io::ErrorKind::WouldBlock
    )
}
