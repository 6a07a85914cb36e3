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
//! per core by default; unpinned, connections are dealt in turn), each with its own
//! current-thread runtime, at nice −10 or under `SCHED_FIFO` ([`LanePriority`]). With one lane thread
//! per CPU (the default) each is pinned to its CPU and a connection goes to the lane
//! thread of the CPU its packets arrive on, within a fair share
//! ([`crate::http::cpu_placement`]). Everything else stays where it was accepted. The
//! shedding layer still decides every request on the lane, so a connection that opens
//! with a CRITICAL request gains a place in the queue, not a pass.
//!
//! TLS connections are not laned (the request is unreadable before the handshake).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use shed::Bucket;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

use crate::http::connection::{close_gracefully, serve_accepted};
use crate::http::cpu_placement::{current_cpu, pin_current_thread, serving_runtime, CpuPlacement};
use crate::http::http_app::HttpApp;
use crate::http::shed_layer::facts_of;
use crate::shed::{LanePriority, Shedder};
use crate::url::Target;

/// Longest wait for a connection's first request head before it is served where it
/// was accepted.
const FIRST_REQUEST_WAIT: Duration = Duration::from_millis(500);

/// Connections a placed lane thread may hold beyond half as many again as the
/// least-loaded one before the lane counts as out of balance.
const UNBALANCED_SLACK: usize = 8;

/// How long a placed lane may stay out of balance before new connections go to the
/// least-loaded thread instead of their own CPU's.
const UNBALANCED_GRACE: Duration = Duration::from_secs(1);

/// A connection on its way to the lane: the socket, the client's address, and its place
/// under the node's connection caps (held while the lane serves it).
type Handed = (
    std::net::TcpStream,
    SocketAddr,
    Option<crate::http::conn_limits::ConnectionPermit>,
);

/// The node's priority lane: hand it connections with [`PriorityLane::wants`] and
/// [`PriorityLane::hand_over`].
#[derive(Debug)]
pub struct PriorityLane {
    shedder: Arc<Shedder>,
    /// One sender per lane thread; connections are dealt to them in turn, or by CPU.
    senders: Vec<mpsc::UnboundedSender<Handed>>,
    next: AtomicUsize,
    /// Connections each lane thread holds now.
    live: Arc<[AtomicUsize]>,
    /// Per lane thread: since when (ms after `started`, 0: not) it has held more than
    /// its share.
    unbalanced_since: Vec<AtomicU64>,
    started: std::time::Instant,
    /// Lane thread `i` runs on `placement.cpu(i)` (`[shedding] lane_pinned`).
    placement: Option<CpuPlacement>,
}

impl PriorityLane {
    /// Starts the lane's threads (`[shedding] lane_threads`) when `[shedding]
    /// priority_lane` asks for a lane; they serve `app` until `shutdown` turns true.
    /// `None` when the lane is off. Where its threads are pinned, if anywhere, is its
    /// [`PriorityLane::cpu_placement`].
    ///
    /// # Errors
    /// A thread or its runtime could not be created.
    pub fn start<A: HttpApp>(
        app: A,
        shedder: Arc<Shedder>,
        shutdown: watch::Receiver<bool>,
    ) -> std::io::Result<Option<Arc<PriorityLane>>> {
        let priority = shedder.lane().priority_lane();
        if priority == LanePriority::Off {
            return Ok(None);
        }
        let placement = Self::placement(&shedder);
        let threads = placement
            .as_ref()
            .map_or_else(|| shedder.lane().lane_threads(), CpuPlacement::len);
        let live: Arc<[AtomicUsize]> = (0..threads).map(|_| AtomicUsize::new(0)).collect();
        let mut senders = Vec::with_capacity(threads);
        for index in 0..threads {
            let cpu = placement.as_ref().map(|p| p.cpu(index));
            let live = Arc::clone(&live);
            let (sender, receiver) = mpsc::unbounded_channel();
            let runtime = serving_runtime(placement.as_ref())?;
            let (app, shutdown) = (app.clone(), shutdown.clone());
            std::thread::Builder::new()
                .name(format!("http-lane-{index}"))
                .spawn(move || {
                    if let Some(Err(error)) = cpu.map(pin_current_thread) {
                        // Only the first thread says so: they all fail alike.
                        if index == 0 {
                            tracing::warn!(%error, "priority lane threads are not pinned");
                        }
                    }
                    if let Err(error) = raise_current_thread(priority) {
                        // Only the first thread says so: they all fail alike.
                        if index == 0 {
                            tracing::warn!(?priority, %error, "priority lane runs at normal priority (needs CAP_SYS_NICE)");
                        }
                    }
                    // The thread's heartbeat: `/healthz` fails if the lane hangs.
                    let mut stop = shutdown.clone();
                    runtime.spawn(crate::health::heartbeat::beat(
                        format!("http-lane-{index}"),
                        async move {
                            let _ = stop.wait_for(|stop| *stop).await;
                        },
                    ));
                    runtime.block_on(serve_lane(app, receiver, shutdown, (live, index)));
                    runtime.shutdown_timeout(Duration::from_secs(1));
                })?;
            senders.push(sender);
        }
        Ok(Some(Arc::new(PriorityLane {
            shedder,
            senders,
            next: AtomicUsize::new(0),
            live,
            unbalanced_since: (0..threads).map(|_| AtomicU64::new(0)).collect(),
            started: std::time::Instant::now(),
            placement,
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
        self.shedder.policy().classify(&facts).bucket == Bucket::Critical
    }

    /// Moves an accepted connection (nothing read yet) to a lane thread: the one on
    /// the caller's CPU (a placed serving thread's: where the connection's packets
    /// arrive) when the lane is pinned and that thread holds no more than its share,
    /// else the next in turn. It is counted before it is sent, so the count never lags
    /// an answer the lane gave.
    pub fn hand_over(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
        permit: Option<crate::http::conn_limits::ConnectionPermit>,
    ) {
        // The accepting thread is pinned to the CPU the connection's SYN came in on.
        let home = self
            .placement
            .as_ref()
            .and_then(|placement| placement.index_of(current_cpu()?));
        let turn = match home {
            Some(home) => self.within_share(home),
            None => self.next.fetch_add(1, Ordering::Relaxed) % self.senders.len(),
        };
        match stream.into_std() {
            Ok(stream) => {
                self.shedder.lane().count_laned();
                self.live[turn].fetch_add(1, Ordering::Relaxed);
                if self.senders[turn].send((stream, peer, permit)).is_err() {
                    self.live[turn].fetch_sub(1, Ordering::Relaxed);
                    tracing::debug!(%peer, "the lane has stopped; connection dropped");
                }
            }
            Err(error) => tracing::debug!(%peer, %error, "connection lost on its way to the lane"),
        }
    }

    /// The CPUs of the lane's threads, one each, when `[shedding] lane_pinned` holds,
    /// the lane runs at nice −10 (`"nice"`: a real-time lane pinned beside a serving
    /// thread could hold that CPU's new connections back), and there is one lane thread
    /// per CPU of the process's affinity mask with no CPU quota below it (the default
    /// on a whole machine or cpuset); otherwise `None` and they float.
    fn placement(shedder: &Shedder) -> Option<CpuPlacement> {
        let threads = shedder.lane().lane_threads();
        let parallelism =
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        if !shedder.lane().lane_pinned()
            || shedder.lane().priority_lane() != LanePriority::Nice
            || threads != parallelism
        {
            return None;
        }
        match CpuPlacement::allowed() {
            // A quota below the mask leaves fewer threads than CPUs: pinning them to
            // the first CPUs would crowd every such node onto the same ones.
            Ok(allowed) if allowed.len() == threads => Some(allowed),
            Ok(_) => None,
            Err(error) => {
                tracing::warn!(%error, "priority lane threads are not pinned: the CPU affinity mask could not be read");
                None
            }
        }
    }

    /// `home` unless it has held more than its share — half as many again as the
    /// least-loaded thread, plus eight — for a second or longer; then the least-loaded
    /// thread. A client whose threads open their connections in bursts from one CPU
    /// each keeps its locality; connections that all keep arriving on one CPU (a
    /// single-queue NIC) still spread over every lane thread.
    fn within_share(&self, home: usize) -> usize {
        let Some(least) = over_share(&self.held(), home) else {
            self.unbalanced_since[home].store(0, Ordering::Relaxed);
            return home;
        };
        // Never 0 once started, so 0 keeps meaning "in balance".
        let now = u64::try_from(self.started.elapsed().as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        let since = match self.unbalanced_since[home].compare_exchange(
            0,
            now,
            Ordering::Relaxed,
            Ordering::Relaxed,
        ) {
            Ok(_) => now,
            Err(since) => since,
        };
        if now.saturating_sub(since) >= UNBALANCED_GRACE.as_millis() as u64 {
            least
        } else {
            home
        }
    }

    /// The CPUs the lane's threads are pinned to, one each (`None`: they float). A node
    /// binds its plain-HTTP serving threads on the same placement, so a connection is
    /// accepted and served on the CPU its packets arrive on.
    pub fn cpu_placement(&self) -> Option<&CpuPlacement> {
        self.placement.as_ref()
    }

    /// Connections each lane thread holds now, in thread order.
    fn held(&self) -> Vec<usize> {
        self.live
            .iter()
            .map(|n| n.load(Ordering::Relaxed))
            .collect()
    }

    /// Connections handed to the lane so far (`brdyun_shed_lane_connections_total`).
    pub fn handed(&self) -> u64 {
        self.shedder.lane().laned_connections()
    }
}

/// The least-loaded lane thread when `home` holds more than half as many connections
/// again as it, plus [`UNBALANCED_SLACK`]; `None` while `home` is within its share.
fn over_share(held: &[usize], home: usize) -> Option<usize> {
    let (least, fewest) = held.iter().copied().enumerate().min_by_key(|&(_, n)| n)?;
    (held[home] > fewest + fewest / 2 + UNBALANCED_SLACK).then_some(least)
}

/// Counts one connection off its lane thread's share when dropped.
struct Held(Arc<[AtomicUsize]>, usize);

impl Drop for Held {
    fn drop(&mut self) {
        self.0[self.1].fetch_sub(1, Ordering::Relaxed);
    }
}

/// The lane's loop: serves each connection handed over until shutdown, then lets
/// them finish for a short grace period; `(live, index)` is the count of connections
/// this thread holds.
async fn serve_lane<A: HttpApp>(
    app: A,
    mut receiver: mpsc::UnboundedReceiver<Handed>,
    mut shutdown: watch::Receiver<bool>,
    (live, index): (Arc<[AtomicUsize]>, usize),
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
        let held = Held(Arc::clone(&live), index);
        let Ok(stream) = TcpStream::from_std(stream) else {
            continue;
        };
        let (app, closing) = (app.clone(), closing_rx.clone());
        connections.spawn(async move {
            let edge = permit.as_ref().map_or_else(Default::default, |p| p.edge());
            // Held while the connection is served here.
            let _permit = permit;
            let _held = held;
            serve_accepted(stream, peer, app, None, closing, edge).await;
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

#[cfg(test)]
mod tests {
    use super::over_share;

    #[test]
    fn a_lane_thread_is_over_its_share_only_well_past_the_least_loaded() {
        // A burst of one client thread's connections stays home.
        assert_eq!(over_share(&[8, 0], 0), None);
        assert_eq!(over_share(&[9, 0], 0), Some(1));
        assert_eq!(over_share(&[64, 40], 0), None);
        assert_eq!(over_share(&[69, 40], 0), Some(1));
        // Home is the least loaded, or all are equal.
        assert_eq!(over_share(&[0, 50, 3], 0), None);
        assert_eq!(over_share(&[7, 7, 7], 2), None);
        assert_eq!(over_share(&[30, 20, 5], 1), Some(2));
    }
}
