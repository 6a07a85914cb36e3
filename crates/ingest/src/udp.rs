//! MPEG-TS over UDP, unicast or IPv4 multicast, raw or RTP-wrapped.
//!
//! The receive loop never waits for the demuxer: datagrams go through a bounded queue,
//! and when it is full the datagram is dropped and counted, so a flood costs at most
//! `queue_datagrams` buffered datagrams of memory.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use bytes::Bytes;
use media::ts::SYNC_BYTE;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::UdpSocket;
use tokio::sync::{mpsc, watch};

pub use crate::input_errors::UdpError;
use crate::status::{demux_into, stopped, InputCounters, InputEvent};

/// The largest UDP payload; every datagram fits in a buffer of this size.
const MAX_DATAGRAM: usize = 65_536;

/// The size of an RTP fixed header (RFC 3550).
const RTP_HEADER: usize = 12;

/// Configuration of one UDP input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpConfig {
    /// The local address to bind (`0.0.0.0:PORT` or the group address for multicast).
    pub bind: SocketAddr,
    /// An IPv4 multicast group to join.
    pub multicast: Option<Ipv4Addr>,
    /// The local interface address to join the group on (any interface when `None`).
    pub interface: Option<Ipv4Addr>,
    /// The socket receive buffer asked of the kernel, in bytes.
    pub recv_buffer: usize,
    /// How many datagrams may wait for the demuxer before new ones are dropped.
    pub queue_datagrams: usize,
}

impl UdpConfig {
    /// A configuration with a 4 MiB receive buffer and a 512-datagram queue.
    pub fn new(bind: SocketAddr) -> Self {
        UdpConfig {
            bind,
            multicast: None,
            interface: None,
            recv_buffer: 4 << 20,
            queue_datagrams: 512,
        }
    }
}

/// A bound UDP input, ready to [`run`](UdpInput::run).
#[derive(Debug)]
pub struct UdpInput {
    socket: UdpSocket,
    queue_datagrams: usize,
}

impl UdpInput {
    /// Creates the socket: `SO_REUSEADDR`, a large receive buffer, bind, and the
    /// multicast join when configured. Must be called inside a tokio runtime.
    ///
    /// # Errors
    /// [`UdpError`] naming the step that failed.
    pub fn bind(config: &UdpConfig) -> Result<UdpInput, UdpError> {
        let domain = Domain::for_address(config.bind);
        let socket =
            Socket::new(domain, Type::DGRAM, Some(Protocol::UDP)).map_err(UdpError::Socket)?;
        socket.set_reuse_address(true).map_err(UdpError::Socket)?;
        if let Err(e) = socket.set_recv_buffer_size(config.recv_buffer) {
            tracing::warn!(error = %e, size = config.recv_buffer, "cannot enlarge udp receive buffer");
        }
        socket
            .bind(&config.bind.into())
            .map_err(|source| UdpError::Bind {
                addr: config.bind,
                source,
            })?;
        if let Some(group) = config.multicast {
            if !config.bind.is_ipv4() {
                return Err(UdpError::NotIpv4(group));
            }
            let interface = config.interface.unwrap_or(Ipv4Addr::UNSPECIFIED);
            socket
                .join_multicast_v4(&group, &interface)
                .map_err(|source| UdpError::Join {
                    group,
                    interface,
                    source,
                })?;
        }
        socket.set_nonblocking(true).map_err(UdpError::Socket)?;
        let socket = UdpSocket::from_std(socket.into()).map_err(UdpError::Socket)?;
        Ok(UdpInput {
            socket,
            queue_datagrams: config.queue_datagrams.max(1),
        })
    }

    /// The bound address (to learn the port after binding port 0).
    ///
    /// # Errors
    /// The system error, if the socket cannot say.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// Receives until `shutdown` (or until `events` is closed): strips RTP headers,
    /// queues datagrams (dropping and counting when the queue is full) and demuxes them.
    pub async fn run(
        self,
        counters: Arc<InputCounters>,
        events: mpsc::Sender<InputEvent>,
        mut shutdown: watch::Receiver<bool>,
    ) {
        InputCounters::add(&counters.connects, 1);
        if events.send(InputEvent::Connected).await.is_err() {
            return;
        }
        let (queue_tx, queue_rx) = mpsc::channel::<Bytes>(self.queue_datagrams);
        let receive = receive(&self.socket, queue_tx, &counters);
        let demux = demux(queue_rx, &counters, &events);
        tokio::select! {
            _ = stopped(&mut shutdown) => {}
            _ = receive => {}
            _ = demux => {}
        }
    }
}

async fn receive(socket: &UdpSocket, queue: mpsc::Sender<Bytes>, counters: &InputCounters) {
    let mut buf = vec![0u8; MAX_DATAGRAM];
    loop {
        let len = match socket.recv(&mut buf).await {
            Ok(len) => len,
            Err(e) => {
                // ICMP errors and the like: the socket stays usable.
                tracing::debug!(error = %e, "udp receive error");
                InputCounters::add(&counters.errors, 1);
                continue;
            }
        };
        let payload = strip_rtp(buf.get(..len).unwrap_or_default());
        if payload.is_empty() {
            continue;
        }
        InputCounters::add(&counters.bytes, payload.len() as u64);
        match queue.try_send(Bytes::copy_from_slice(payload)) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => InputCounters::add(&counters.dropped, 1),
            Err(mpsc::error::TrySendError::Closed(_)) => return,
        }
    }
}

async fn demux(
    mut queue: mpsc::Receiver<Bytes>,
    counters: &InputCounters,
    events: &mpsc::Sender<InputEvent>,
) {
    let mut demuxer = media::ts::demux::Demuxer::new();
    while let Some(datagram) = queue.recv().await {
        if demux_into(&mut demuxer, Some(&datagram), counters, events)
            .await
            .is_none()
        {
            return;
        }
    }
}

/// The MPEG-TS payload of a datagram: the datagram itself when it starts with a sync
/// byte, the RTP payload when it is an RTP packet (version 2, with CSRCs, extension
/// and padding accounted for) whose payload starts with a sync byte, else the datagram
/// unchanged (the demuxer resynchronises on garbage).
pub fn strip_rtp(datagram: &[u8]) -> &[u8] {
    let Some(&first) = datagram.first() else {
        return datagram;
    };
    if first == SYNC_BYTE || datagram.len() < RTP_HEADER || first >> 6 != 2 {
        return datagram;
    }
    let mut header = RTP_HEADER + usize::from(first & 0x0f) * 4;
    if first & 0x10 != 0 {
        let Some(&[high, low]) = datagram.get(header + 2..header + 4) else {
            return datagram;
        };
        header += 4 + usize::from(u16::from_be_bytes([high, low])) * 4;
    }
    let mut end = datagram.len();
    if first & 0x20 != 0 {
        let padding = usize::from(datagram.last().copied().unwrap_or(0));
        end = end.saturating_sub(padding);
    }
    match datagram.get(header..end) {
        Some(payload) if payload.first() == Some(&SYNC_BYTE) => payload,
        _ => datagram,
    }
}
