//! The priority lane (SHED-1, SHED-2): a serving thread of its own for connections whose
//! first request is CRITICAL, placed above the node's other serving threads in the OS
//! scheduler.
//!
//! Admission alone cannot keep a viewer's latency under overload: every connection of a
//! serving thread shares one run queue, so an admitted segment waits behind every
//! other ready connection — refusals and admitted low-priority answers alike — and a
//! large answer is written over many turns of that queue. The lane takes a plain-HTTP
//! connection as soon as its first request head has arrived (peeked, not read), ranks
//! it with the node's classifier, and serves CRITICAL ones on the lane's threads (one
//! per core by default, connections dealt in turn), each with its own current-thread
//! runtime, at nice −10 or under `SCHED_FIFO` ([`LanePriority`]). Everything else stays
//! where it was accepted. The shedding layer
//! still decides every request on the lane, so a connection that opens with a CRITICAL
//! request gains a place in the queue, not a pass.
//!
//! TLS connections are not laned (the request is unreadable before the handshake).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use shed::Bucket;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

use crate::connection::{close_gracefully, serve_accepted};
use crate::http_app::HttpApp;
use crate::shed::layer::facts_of;
use crate::shed::{LanePriority, Shedder};
use crate::url::Target;

/// Longest wait for a connection's first request head before it is served where it
/// was accepted.
const FIRST_REQUEST_WAIT: Duration = Duration::from_millis(500);

/// A connection on its way to the lane: the socket, the client's address, and its place
/// under the node's connection caps (held while the lane serves it).
type Handed = (
    std::net::TcpStream,
    SocketAddr,
    Option<crate::conn_limits::ConnectionPermit>,
);

/// The node's priority lane: hand it connections with [`PriorityLane::wants`] and
/// [`PriorityLane::hand_over`].
#[derive(Debug)]
pub struct PriorityLane {
    shedder: Arc<Shedder>,
    /// One sender per lane thread; connections are dealt to them in turn.
    senders: Vec<mpsc::UnboundedSender<Handed>>,
    next: AtomicUsize,
}

impl PriorityLane {
    /// Starts the lane's threads (`[shedding] lane_threads`) when `[shedding]
    /// priority_lane` asks for a lane; they serve `app` until `shutdown` turns true.
    /// `None` when the lane is off.
    ///
    /// # Errors
    /// A thread or its runtime could not be created.
    pub fn start<A: HttpApp>(
        app: A,
        shedder: Arc<Shedder>,
        shutdown: watch::Receiver<bool>,
    ) -> std::io::Result<Option<Arc<PriorityLane>>> {
        let priority = shedder.priority_lane();
        if priority == LanePriority::Off {
            return Ok(None);
        }
        let threads = shedder.lane_threads();
        let mut senders = Vec::with_capacity(threads);
        for index in 0..threads {
            let (sender, receiver) = mpsc::unbounded_channel();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let (app, shutdown) = (app.clone(), shutdown.clone());
            std::thread::Builder::new()
                .name(format!("http-lane-{index}"))
                .spawn(move || {
                    if let Err(error) = raise_current_thread(priority) {
                        // Only the first thread says so: they all fail alike.
                        if index == 0 {
                            tracing::warn!(?priority, %error, "priority lane runs at normal priority (needs CAP_SYS_NICE)");
                        }
                    }
                    runtime.block_on(serve_lane(app, receiver, shutdown));
                    runtime.shutdown_timeout(Duration::from_secs(1));
                })?;
            senders.push(sender);
        }
        Ok(Some(Arc::new(PriorityLane {
            shedder,
            senders,
            next: AtomicUsize::new(0),
        })))
    }

    /// Whether this connection belongs on the lane: its first request head arrives
    /// within 500 ms and ranks CRITICAL. Reads nothing from the socket (peeks).
    pub async fn wants(&self, stream: &TcpStream) -> bool {
        let deadline = tokio::time::Instant::now() + FIRST_REQUEST_WAIT;
        let mut buf = [0u8; 2048];
        loop {
            let peeked = tokio::time::timeout_at(deadline, stream.peek(&mut buf)).await;
            let n = match peeked {
                Ok(Ok(n)) if n > 0 => n,
                _ => return false,
            };
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut request = httparse::Request::new(&mut headers);
            match request.parse(&buf[..n]) {
                Ok(httparse::Status::Complete(_)) => return self.is_critical(&request),
                // More of the head is on its way; a peek would return the same bytes at
                // once, so wait a little before looking again.
                Ok(httparse::Status::Partial) if n < buf.len() => {
                    if tokio::time::Instant::now() >= deadline {
                        return false;
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                _ => return false,
            }
        }
    }

    fn is_critical(&self, request: &httparse::Request<'_, '_>) -> bool {
        let path = request.path.unwrap_or("/");
        let path = path.split_once('?').map_or(path, |(p, _)| p);
        let mut headers = HeaderMap::new();
        for header in request.headers.iter() {
            let Ok(name) = HeaderName::from_bytes(header.name.as_bytes()) else {
                continue;
            };
            if let Ok(value) = HeaderValue::from_bytes(header.value) {
                headers.append(name, value);
            }
        }
        let read_only = matches!(request.method, Some("GET" | "HEAD"));
        let facts = facts_of(&Target::of_path(path), read_only, &headers);
        self.shedder.classify(&facts).bucket == Bucket::Critical
    }

    /// Moves an accepted connection (nothing read yet) to the next lane thread. It is
    /// counted before it is sent, so the count never lags an answer the lane gave.
    pub fn hand_over(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
        permit: Option<crate::conn_limits::ConnectionPermit>,
    ) {
        let turn = self.next.fetch_add(1, Ordering::Relaxed) % self.senders.len();
        match stream.into_std() {
            Ok(stream) => {
                self.shedder.count_laned();
                if self.senders[turn].send((stream, peer, permit)).is_err() {
                    tracing::debug!(%peer, "the lane has stopped; connection dropped");
                }
            }
            Err(error) => tracing::debug!(%peer, %error, "connection lost on its way to the lane"),
        }
    }

    /// Connections handed to the lane so far (`brdyun_shed_lane_connections_total`).
    pub fn handed(&self) -> u64 {
        self.shedder.laned_connections()
    }
}

/// The lane's loop: serves each connection handed over until shutdown, then lets
/// them finish for a short grace period.
async fn serve_lane<A: HttpApp>(
    app: A,
    mut receiver: mpsc::UnboundedReceiver<Handed>,
    mut shutdown: watch::Receiver<bool>,
) {
    let (closing_tx, closing_rx) = watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let handed = tokio::select! {
            _ = shutdown.wait_for(|stop| *stop) => break,
            handed = receiver.recv() => handed,
        };
        let Some((stream, peer, permit)) = handed else {
            break;
        };
        let Ok(stream) = TcpStream::from_std(stream) else {
            continue;
        };
        let (app, closing) = (app.clone(), closing_rx.clone());
        connections.spawn(async move {
            // Held while the connection is served here.
            let _permit = permit;
            serve_accepted(stream, peer, app, None, closing).await;
        });
        while connections.try_join_next().is_some() {}
    }
    close_gracefully(&closing_tx, connections).await;
}

/// Places the calling thread above the node's others, as `priority` says.
#[allow(unsafe_code)]
fn raise_current_thread(priority: LanePriority) -> std::io::Result<()> {
    let status = match priority {
        LanePriority::Off => return Ok(()),
        // SAFETY: setpriority only reads its integer arguments; on Linux, PRIO_PROCESS
        // with who = 0 applies to the calling thread.
        LanePriority::Nice => unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, -10) },
        LanePriority::Realtime => {
            let param = libc::sched_param { sched_priority: 1 };
            // SAFETY: `param` is a valid sched_param that outlives the call; pid 0 is
            // the calling thread.
            unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) }
        }
    };
    if status == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
