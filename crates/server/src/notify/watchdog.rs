//! The watchdog loop: an OS thread of its own (not a task: the runtime it would run on
//! may be what hangs) that asks the process's own `/healthz` over loopback through the
//! real HTTP path — accept, a serving thread, the router, the heartbeat check — and
//! pings the service manager only on a 200. A process whose serving threads or main
//! runtime hang stops pinging, and the manager (`WatchdogSec=`) kills and restarts it.
//!
//! The probe goes to the plain-HTTP listener every node and MC has (`http`); a TLS
//! listener is served by the same threads and router, so its health is the same.
//! A listener bound to every address is probed on loopback.
//!
//! The probe's socket is bound first and its exact address published
//! ([`crate::http::conn_limits::ProbePeer`]) for as long as it is open, so the accept path
//! admits it outside the connection caps: a flood that fills them refuses new viewers
//! but never gets a process that still serves killed.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::Notifier;
use crate::http::conn_limits::ProbePeer;

/// Pause before a failed probe is tried again, within the same ping period.
const RETRY: Duration = Duration::from_millis(100);

/// The running watchdog thread; [`Watchdog::stop`] ends it.
#[derive(Debug)]
pub struct Watchdog {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Starts pinging `notifier` every `period / 2` (`period`: `$WATCHDOG_USEC`) while
    /// `GET /healthz` on `listener` answers 200 within a quarter of the period (at most
    /// 1 s).
    ///
    /// # Errors
    /// The thread cannot be created.
    pub fn start(
        notifier: Arc<Notifier>,
        period: Duration,
        listener: SocketAddr,
    ) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let every = period / 2;
        let timeout = (period / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
        let target = probe_address(listener);
        let stopped = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("watchdog".to_owned())
            .spawn(move || run(&notifier, every, timeout, target, &stopped))?;
        tracing::info!(period_ms = period.as_millis() as u64, %target, "watchdog: pinging while /healthz answers");
        Ok(Self {
            stop,
            thread: Some(thread),
        })
    }

    /// Stops pinging and waits for the thread (at most one probe's timeout).
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Where to probe a listener bound to `listener`: itself, or loopback for an
/// unspecified address.
pub fn probe_address(listener: SocketAddr) -> SocketAddr {
    let ip = match listener.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, listener.port())
}

fn run(
    notifier: &Notifier,
    every: Duration,
    timeout: Duration,
    target: SocketAddr,
    stop: &AtomicBool,
) {
    let mut failing_since: Option<Instant> = None;
    while !stop.load(Ordering::SeqCst) {
        match probe(target, timeout) {
            Ok(()) => {
                if let Some(since) = failing_since.take() {
                    tracing::info!(
                        failed_ms = since.elapsed().as_millis() as u64,
                        "watchdog: /healthz answers again"
                    );
                }
                notifier.watchdog();
                sleep_unless_stopped(every, stop);
            }
            Err(why) => {
                if failing_since.is_none() {
                    tracing::warn!(%why, "watchdog: /healthz does not answer 200; not pinging");
                    failing_since = Some(Instant::now());
                }
                sleep_unless_stopped(RETRY, stop);
            }
        }
    }
}

/// Sleeps `pause` in short steps, ending early when `stop` is raised.
fn sleep_unless_stopped(pause: Duration, stop: &AtomicBool) {
    let until = Instant::now() + pause;
    while !stop.load(Ordering::SeqCst) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

/// The probe's connection; its published address is withdrawn before the socket
/// closes (fields drop after `drop`), so no other socket can ever be taken for it.
struct Probing {
    stream: TcpStream,
}

impl Drop for Probing {
    fn drop(&mut self) {
        ProbePeer::withdraw();
    }
}

/// A connection to `target` from a socket bound (to `target`'s address, an ephemeral
/// port) and published as the probe's before it connects.
fn connect(target: SocketAddr, timeout: Duration) -> Result<Probing, String> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(
        Domain::for_address(target),
        Type::STREAM,
        Some(Protocol::TCP),
    )
    .map_err(|e| format!("socket: {e}"))?;
    socket
        .bind(&SocketAddr::new(target.ip(), 0).into())
        .map_err(|e| format!("bind: {e}"))?;
    let local = socket
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .ok_or("bind: no local address")?;
    ProbePeer::publish(local);
    let probing = Probing {
        stream: TcpStream::from(socket),
    };
    socket2::SockRef::from(&probing.stream)
        .connect_timeout(&target.into(), timeout)
        .map_err(|e| format!("connect: {e}"))?;
    Ok(probing)
}

/// One `GET /healthz` on a new connection to `target`, every step within `timeout`:
/// `Ok` on a 200.
///
/// # Errors
/// Why not, in words for the log.
pub fn probe(target: SocketAddr, timeout: Duration) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    let left = || {
        deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1))
    };
    let mut probing = connect(target, timeout)?;
    let stream = &mut probing.stream;
    stream
        .set_write_timeout(Some(left()))
        .map_err(|e| e.to_string())?;
    let request = format!("GET /healthz HTTP/1.1\r\nHost: {target}\r\nConnection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("write: {e}"))?;
    // The status line is all that is read: "HTTP/1.1 200 ".
    let mut head = [0u8; 12];
    let mut read = 0;
    while read < head.len() {
        stream
            .set_read_timeout(Some(left()))
            .map_err(|e| e.to_string())?;
        match stream.read(&mut head[read..]) {
            Ok(0) => return Err("closed before the status line".to_owned()),
            Ok(n) => read += n,
            Err(e) => return Err(format!("read: {e}")),
        }
    }
    match &head[9..12] {
        b"200" => Ok(()),
        status => Err(format!("status {}", String::from_utf8_lossy(status))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn an_unspecified_listener_is_probed_on_loopback() {
        let any: SocketAddr = "0.0.0.0:8080".parse().expect("addr");
        assert_eq!(probe_address(any), "127.0.0.1:8080".parse().expect("addr"));
        let any6: SocketAddr = "[::]:8080".parse().expect("addr");
        assert_eq!(probe_address(any6), "[::1]:8080".parse().expect("addr"));
        let one: SocketAddr = "127.0.0.2:81".parse().expect("addr");
        assert_eq!(probe_address(one), one);
    }

    /// A server that answers `status` to one request, or (`None`) accepts and never
    /// answers: the probe passes only on a 200, and gives up on silence in time.
    #[test]
    fn the_probe_passes_on_200_only_and_gives_up_on_silence() {
        let serve = |status: Option<&'static str>| {
            let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
            let addr = listener.local_addr().expect("addr");
            let server = std::thread::spawn(move || {
                let (mut conn, _) = listener.accept().expect("accept");
                let mut buf = [0u8; 512];
                let _ = conn.read(&mut buf);
                match status {
                    Some(status) => {
                        let _ = conn.write_all(
                            format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\n\r\n").as_bytes(),
                        );
                    }
                    None => std::thread::sleep(Duration::from_millis(600)),
                }
            });
            (addr, server)
        };
        let timeout = Duration::from_millis(300);
        let (addr, server) = serve(Some("200 OK"));
        assert_eq!(probe(addr, timeout), Ok(()));
        server.join().expect("server");
        let (addr, server) = serve(Some("503 Service Unavailable"));
        assert_eq!(probe(addr, timeout), Err("status 503".to_owned()));
        server.join().expect("server");
        let (addr, server) = serve(None);
        let started = Instant::now();
        assert!(probe(addr, timeout).is_err());
        assert!(
            started.elapsed() < Duration::from_millis(550),
            "{:?}",
            started.elapsed()
        );
        server.join().expect("server");
    }
}
