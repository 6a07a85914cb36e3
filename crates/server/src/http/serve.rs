//! Serving the router on a listener, over plain HTTP or HTTPS (rustls), with
//! graceful shutdown: `run(listener, app, tls, shutdown)` on the caller's runtime, or
//! [`bind_reuseport`] + [`serve_on_threads`] for a node: one `SO_REUSEPORT` listener
//! per serving thread, each thread with its own current-thread runtime, so a connection
//! is served start to finish on one thread (no cross-thread wake-ups, no work stealing),
//! as nginx's workers do. [`bind_reuseport_placed`] also pins each thread to a CPU and
//! gives each connection to the thread of the CPU its SYN arrived on
//! ([`crate::http::cpu_placement`]).

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::http::conn_limits::ConnectionLimits;
pub use crate::http::connection::Connection;
use crate::http::connection::{close_gracefully, serve_accepted};
use crate::http::cpu_placement::{pin_current_thread, serving_runtime, CpuPlacement};
use crate::http::edge_limits::EdgeLimits;
use crate::http::http_app::HttpApp;
use crate::http::lane::PriorityLane;
pub use crate::http::tls::{tls_acceptor, TlsError};
use crate::shed::Shedder;

/// Listening sockets bound to one address with `SO_REUSEPORT`, one per serving thread:
/// the kernel spreads incoming connections over them (by the CPU their SYN came in on
/// when they are placed, by hash otherwise).
#[derive(Debug)]
pub struct ReusePortListeners {
    listeners: Vec<std::net::TcpListener>,
    local: SocketAddr,
    /// Listener `i`'s thread runs on `placement.cpu(i)`.
    placement: Option<CpuPlacement>,
}

impl ReusePortListeners {
    /// The address they listen on (the port is resolved when port 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }
}

/// Binds `count` (at least one) listening sockets to `addr` with `SO_REUSEPORT`.
///
/// `SO_REUSEPORT` would let a second node of the same user share a configured port
/// silently, so a non-zero port is first probed with a plain bind: a port already
/// taken (by a reuse-port group or anything else) is refused as `AddrInUse`.
///
/// # Errors
/// The address is taken or cannot be bound, or a socket option is refused.
pub fn bind_reuseport(addr: SocketAddr, count: usize) -> io::Result<ReusePortListeners> {
    bind_group(addr, count, None)
}

/// [`bind_reuseport`] with one listener per CPU of `placement`, each marked with its
/// CPU (`SO_INCOMING_CPU`), so the kernel gives a connection to the listener of the CPU
/// its SYN was processed on; [`serve_on_threads`] pins each listener's thread there.
///
/// # Errors
/// As [`bind_reuseport`].
pub fn bind_reuseport_placed(
    addr: SocketAddr,
    placement: CpuPlacement,
) -> io::Result<ReusePortListeners> {
    bind_group(addr, placement.len(), Some(placement))
}

fn bind_group(
    addr: SocketAddr,
    count: usize,
    placement: Option<CpuPlacement>,
) -> io::Result<ReusePortListeners> {
    if addr.port() != 0 {
        drop(std::net::TcpListener::bind(addr)?);
    }
    let cpu = |index: usize| placement.as_ref().map(|p| p.cpu(index));
    let first = reuseport_socket(addr, cpu(0))?;
    let local = first.local_addr()?;
    let mut listeners = Vec::with_capacity(count.max(1));
    listeners.push(first);
    for index in 1..count {
        listeners.push(reuseport_socket(local, cpu(index))?);
    }
    Ok(ReusePortListeners {
        listeners,
        local,
        placement,
    })
}

fn reuseport_socket(addr: SocketAddr, cpu: Option<usize>) -> io::Result<std::net::TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    if let Some(cpu) = cpu {
        // Before listen: the listener joins its reuse-port group's CPU map then. Without
        // it the kernel picks a listener by hash, as for an unplaced group.
        if let Err(error) = socket.set_cpu_affinity(cpu) {
            tracing::warn!(cpu, %error, "SO_INCOMING_CPU refused: connections spread by hash");
        }
    }
    socket.listen(1024)?;
    Ok(socket.into())
}

/// Serves `app` on each listener from its own OS thread running a current-thread tokio
/// runtime (pinned to the listener's CPU when bound by [`bind_reuseport_placed`]),
/// until `shutdown` turns true; the returned future resolves when every serving thread
/// has finished (open connections get the same grace period as [`run`]).
/// The rest of the node (ingest, pipelines, the shedding monitor) stays on the
/// caller's runtime; the router's state is shared by all threads. With a `shedder`,
/// each thread also runs its queueing-delay probe ([`crate::shed::overload::run_serving_probe`]), so
/// the overload monitor sees a flood that queues on these threads.
///
/// # Errors
/// A runtime or a thread could not be created (threads already started are told to
/// stop through `shutdown` by the caller).
pub fn serve_on_threads<A: HttpApp>(
    listeners: ReusePortListeners,
    app: A,
    tls: Option<TlsAcceptor>,
    shutdown: tokio::sync::watch::Receiver<bool>,
    lane: Option<Arc<PriorityLane>>,
    shedder: Option<Arc<Shedder>>,
    limits: Option<Arc<ConnectionLimits>>,
) -> io::Result<impl Future<Output = ()> + Send + 'static> {
    let mut done = Vec::with_capacity(listeners.listeners.len());
    let placement = listeners.placement;
    for (index, listener) in listeners.listeners.into_iter().enumerate() {
        let cpu = placement.as_ref().map(|p| p.cpu(index));
        let runtime = serving_runtime(placement.as_ref())?;
        let listener = {
            let _entered = runtime.enter();
            TcpListener::from_std(listener)?
        };
        let (app, tls, shutdown) = (app.clone(), tls.clone(), shutdown.clone());
        let lane = lane.clone();
        let shedder = shedder.clone();
        let limits = limits.clone();
        let (finished, finished_rx) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name(format!("http-{index}"))
            .spawn(move || {
                if let Some(Err(error)) = cpu.map(pin_current_thread) {
                    // Every thread fails alike; the first says so.
                    if index == 0 {
                        tracing::warn!(%error, "serving threads are not pinned");
                    }
                }
                if let Some(shedder) = shedder {
                    runtime.spawn(crate::shed::overload::run_serving_probe(
                        shedder,
                        stopped(shutdown.clone()),
                    ));
                }
                // The thread's heartbeat: `/healthz` fails (naming it) if this thread hangs.
                let scheme = if tls.is_some() { "https" } else { "http" };
                runtime.spawn(crate::health::heartbeat::beat(
                    format!("{scheme}-{index}"),
                    stopped(shutdown.clone()),
                ));
                runtime.block_on(run_with_lane(
                    listener,
                    app,
                    tls,
                    stopped(shutdown),
                    lane,
                    limits,
                ));
                // Archive reads may still hold a blocking thread: do not wait for ever.
                runtime.shutdown_timeout(Duration::from_secs(1));
                let _ = finished.send(());
            })?;
        done.push(finished_rx);
    }
    Ok(async move {
        for finished in done {
            // An error means the thread ended without saying so (a panic): it is over.
            let _ = finished.await;
        }
    })
}

/// Resolves once `shutdown` turns true (or its sender is gone).
async fn stopped(mut shutdown: tokio::sync::watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}

/// Serves `app` on `listener` until `shutdown` resolves, then stops accepting and
/// lets open connections finish for a short grace period.
pub async fn run<A: HttpApp>(
    listener: TcpListener,
    app: A,
    tls: Option<TlsAcceptor>,
    shutdown: impl Future<Output = ()>,
) {
    run_with_lane(listener, app, tls, shutdown, None, None).await;
}

/// [`run`], handing every plain-HTTP connection whose first request is CRITICAL to the
/// node's [`PriorityLane`] when one is given, and admitting connections within
/// `limits` when given (one over a cap is answered with the cap's code and closed);
/// each connection is served within the limits' [`EdgeLimits`] (the defaults without).
pub async fn run_with_lane<A: HttpApp>(
    listener: TcpListener,
    app: A,
    tls: Option<TlsAcceptor>,
    shutdown: impl Future<Output = ()>,
    lane: Option<Arc<PriorityLane>>,
    limits: Option<Arc<ConnectionLimits>>,
) {
    let edge = limits
        .as_ref()
        .map_or_else(EdgeLimits::default, |l| l.edge());
    let (closing_tx, closing_rx) = tokio::sync::watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(pair) => pair,
            Err(error) => {
                // EMFILE and friends: back off instead of spinning.
                tracing::warn!(%error, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let permit = match limits.as_ref().map(|l| l.admit(peer)) {
            Some(Err(refusal)) => {
                let plain = tls.is_none();
                connections.spawn(refuse(stream, refusal, plain));
                while connections.try_join_next().is_some() {}
                continue;
            }
            Some(Ok(permit)) => Some(permit),
            None => None,
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let tls = tls.clone();
        let closing = closing_rx.clone();
        let lane = lane.clone();
        connections.spawn(async move {
            if let (Some(lane), None) = (lane, &tls) {
                if lane.wants(&stream).await {
                    // The permit goes with the connection.
                    lane.hand_over(stream, peer, permit);
                    return;
                }
            }
            // Held while the connection is served here.
            let _permit = permit;
            serve_accepted(stream, peer, app, tls, closing, edge).await;
        });
        // Reap finished connection tasks so the set does not grow without bound.
        while connections.try_join_next().is_some() {}
    }
    close_gracefully(&closing_tx, connections).await;
}

/// Answers a connection refused by a cap with its coded answer (plain HTTP only: a TLS
/// client would not read it) and closes it, giving the client at most a second.
async fn refuse(mut stream: tokio::net::TcpStream, refusal: codes::RequestError, plain: bool) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    if plain {
        let answer = crate::http::conn_limits::refusal_bytes(refusal);
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            stream.write_all(&answer).await?;
            stream.shutdown().await?;
            // A lingering close: the client's request is read and dropped until it
            // closes too, so the kernel does not reset the connection (and discard the
            // answer) over unread input.
            let mut sink = [0u8; 1024];
            while stream.read(&mut sink).await? > 0 {}
            std::io::Result::Ok(())
        })
        .await;
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::{bind_reuseport, bind_reuseport_placed, serve_on_threads};
    use crate::http::cpu_placement::{pin_current_thread, CpuPlacement};

    use crate::metrics::Metrics;
    use crate::{AppState, NodeIdentity};

    fn app() -> crate::app::NodeApp {
        crate::router(AppState::new(
            NodeIdentity {
                name: "threads".into(),
                hostname: None,
            },
            Metrics::new(),
            None,
        ))
    }

    async fn get(addr: SocketAddr, path: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let request = format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.expect("write");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.expect("read");
        answer
    }

    #[tokio::test]
    async fn threads_serve_the_router_and_stop_on_shutdown() {
        let listeners = bind_reuseport("127.0.0.1:0".parse().expect("addr"), 2).expect("bind");
        let addr = listeners.local_addr();
        assert_ne!(addr.port(), 0);
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let done = tokio::spawn(
            serve_on_threads(listeners, app(), None, stopped, None, None, None).expect("start"),
        );
        // Enough connections that the kernel hands some to each listener.
        for _ in 0..16 {
            let answer = get(addr, "/api/node").await;
            assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
            assert!(answer.contains("\"threads\""), "{answer}");
            let missing = get(addr, "/nope").await;
            assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");
        }
        stop.send(true).expect("threads listen");
        tokio::time::timeout(Duration::from_secs(10), done)
            .await
            .expect("every thread stops")
            .expect("no panic");
        assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    }

    #[test]
    fn a_taken_port_is_refused() {
        let plain = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let taken = plain.local_addr().expect("addr");
        let error = bind_reuseport(taken, 2).expect_err("port in use");
        assert_eq!(error.kind(), std::io::ErrorKind::AddrInUse);
        // A second reuse-port group cannot silently share a node's port either.
        let group = bind_reuseport("127.0.0.1:0".parse().expect("addr"), 2).expect("bind");
        let error = bind_reuseport(group.local_addr(), 2).expect_err("port in use");
        assert_eq!(error.kind(), std::io::ErrorKind::AddrInUse);
    }

    /// The kernel's release, as (major, minor).
    fn kernel_release() -> Option<(u32, u32)> {
        let text = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
        let mut parts = text.trim().split(['.', '-']);
        Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
    }

    /// A client pinned to a CPU connects on loopback (whose receive path runs on the
    /// sender's CPU): the listener placed on that CPU gets the connection, every time.
    /// Linux steers by `SO_INCOMING_CPU` inside a reuse-port group from 6.1 on.
    #[test]
    fn a_placed_listener_group_gives_each_connection_to_its_syn_cpu() {
        match kernel_release() {
            Some(release) if release >= (6, 1) => {}
            other => {
                eprintln!("skipped: kernel {other:?} picks a reuse-port listener by hash");
                return;
            }
        }
        let placement = CpuPlacement::allowed().expect("an affinity mask");
        let group = bind_reuseport_placed("127.0.0.1:0".parse().expect("addr"), placement.clone())
            .expect("bind");
        for round in 0..4 * placement.len() {
            let index = round % placement.len();
            let cpu = placement.cpu(index);
            let addr = group.local_addr();
            let client = std::thread::spawn(move || {
                pin_current_thread(cpu).expect("pin");
                std::net::TcpStream::connect(addr).expect("connect")
            })
            .join()
            .expect("client");
            let deadline = std::time::Instant::now() + Duration::from_secs(2);
            let accepted = loop {
                let accepted: Vec<bool> = group
                    .listeners
                    .iter()
                    .map(|listener| listener.accept().is_ok())
                    .collect();
                if accepted.contains(&true) || std::time::Instant::now() > deadline {
                    break accepted;
                }
                std::thread::sleep(Duration::from_millis(5));
            };
            let expected: Vec<bool> = (0..placement.len()).map(|i| i == index).collect();
            assert_eq!(accepted, expected, "round {round}, client on CPU {cpu}");
            drop(client);
        }
    }
}
