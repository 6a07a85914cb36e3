//! Caps on the HTTP connections a node or an MC holds open, in total and per client
//! address, so that a client opening connections without end cannot exhaust the
//! process's file descriptors or crowd out the other viewers (with the deadlines of
//! [`crate::http::edge_limits`], which close the connections that send nothing). A connection
//! over a cap is answered at once with the code of the cap and closed. The caps travel
//! with the [`EdgeLimits`] every admitted connection is served within.
//!
//! Unless configured, the caps are derived from the descriptors the process may hold
//! ([`DerivedCaps::for_descriptors`]), so that the caps, not `EMFILE`, refuse a flood.
//!
//! The caps never decide liveness: the watchdog's own probe connection
//! ([`ProbePeer`]) is admitted outside them, so a flood that fills them (or 2,000
//! viewers behind a reverse proxy on the same host, all from 127.0.0.1) cannot make
//! the service manager kill a process that still serves.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use codes::{Code, RequestError};

use crate::http::edge_limits::EdgeLimits;

/// What the caps allow and what they refused.
#[derive(Debug)]
pub struct ConnectionLimits {
    max_total: usize,
    max_per_client: usize,
    open: Mutex<Open>,
    refused_full: AtomicU64,
    refused_client: AtomicU64,
    edge: EdgeLimits,
}

/// The connections open now: in all, and per client address.
#[derive(Debug, Default)]
struct Open {
    total: usize,
    per_client: HashMap<IpAddr, usize>,
}

/// One admitted connection; dropping it (the connection ended) frees its place.
#[derive(Debug)]
pub struct ConnectionPermit {
    limits: Arc<ConnectionLimits>,
    /// The client it counts for; `None` for the watchdog's probe, counted nowhere.
    client: Option<IpAddr>,
}

/// The exact local address (ip and port) of the watchdog's probe socket while a probe
/// is under way, so that the accept path admits that one connection outside the caps.
/// It cannot be spoofed: the watchdog binds the socket before publishing its address,
/// without `SO_REUSEADDR`/`SO_REUSEPORT`, so no other socket can hold that address
/// until the watchdog withdraws it (before closing its socket).
#[derive(Debug)]
pub struct ProbePeer;

/// The probe's port, 0 when none is under way: checked first, so that every other
/// connection costs one relaxed load.
static PROBE_PORT: AtomicU16 = AtomicU16::new(0);
static PROBE_ADDRESS: Mutex<Option<SocketAddr>> = Mutex::new(None);

impl ProbePeer {
    /// Publishes `local`, the bound address of the probe socket about to connect.
    pub fn publish(local: SocketAddr) {
        *lock_probe() = Some(local);
        PROBE_PORT.store(local.port(), Ordering::SeqCst);
    }

    /// Withdraws the published address (call before the probe socket is closed).
    pub fn withdraw() {
        PROBE_PORT.store(0, Ordering::SeqCst);
        *lock_probe() = None;
    }

    /// Whether `peer` is exactly the published probe socket.
    pub fn is(peer: SocketAddr) -> bool {
        let port = PROBE_PORT.load(Ordering::SeqCst);
        if port == 0 || port != peer.port() {
            return false;
        }
        let published = *lock_probe();
        published.is_some_and(|probe| same_socket(probe, peer))
    }
}

/// Whether two addresses are one socket's, an IPv4 address and its IPv6-mapped form
/// being the same (a probe from 127.0.0.1 to a dual-stack listener shows as
/// `::ffff:127.0.0.1`).
fn same_socket(a: SocketAddr, b: SocketAddr) -> bool {
    let canonical = |ip: IpAddr| match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    a.port() == b.port() && canonical(a.ip()) == canonical(b.ip())
}

fn lock_probe() -> std::sync::MutexGuard<'static, Option<SocketAddr>> {
    PROBE_ADDRESS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl ConnectionLimits {
    /// Caps of `max_total` connections in all and `max_per_client` from one address
    /// (each at least 1).
    pub fn new(max_total: usize, max_per_client: usize) -> Self {
        Self {
            max_total: max_total.max(1),
            max_per_client: max_per_client.max(1),
            open: Mutex::new(Open::default()),
            refused_full: AtomicU64::new(0),
            refused_client: AtomicU64::new(0),
            edge: EdgeLimits::default(),
        }
    }

    /// These caps, their connections served within `edge` (deadlines, body cap).
    #[must_use]
    pub fn with_edge(mut self, edge: EdgeLimits) -> Self {
        self.edge = edge;
        self
    }

    /// What each admitted connection is served within.
    pub fn edge(&self) -> EdgeLimits {
        self.edge
    }

    /// The cap on all connections.
    pub fn max_total(&self) -> usize {
        self.max_total
    }

    /// The cap on one client address's connections.
    pub fn max_per_client(&self) -> usize {
        self.max_per_client
    }

    /// Admits a connection from `peer`, or says which cap refuses it
    /// ([`RequestError::ConnectionsFull`], [`RequestError::TooManyConnections`]). The
    /// watchdog's probe ([`ProbePeer`]) is admitted outside the caps.
    pub fn admit(self: &Arc<Self>, peer: SocketAddr) -> Result<ConnectionPermit, RequestError> {
        if ProbePeer::is(peer) {
            return Ok(ConnectionPermit {
                limits: Arc::clone(self),
                client: None,
            });
        }
        // A client is counted as viewers are: an IPv4 address whole (the same through an
        // IPv6 listener), an IPv6 one by its /64 — one host's addresses are one client.
        let client = IpAddr::V6(std::net::Ipv6Addr::from(ott::address_prefix(peer.ip())));
        let mut open = self.lock();
        if open.total >= self.max_total {
            self.refused_full.fetch_add(1, Ordering::Relaxed);
            return Err(RequestError::ConnectionsFull);
        }
        let from_client = open.per_client.entry(client).or_insert(0);
        if *from_client >= self.max_per_client {
            self.refused_client.fetch_add(1, Ordering::Relaxed);
            return Err(RequestError::TooManyConnections);
        }
        *from_client += 1;
        open.total += 1;
        Ok(ConnectionPermit {
            limits: Arc::clone(self),
            client: Some(client),
        })
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.lock().total
    }

    /// Registers the open connections, the refusals and the cut request bodies
    /// ([`crate::http::bounded_body`]) with the metrics registry.
    pub fn register_metrics(self: &Arc<Self>, metrics: &crate::metrics::Metrics) {
        let limits = Arc::clone(self);
        metrics.register(Box::new(move |out: &mut String| {
            crate::http::bounded_body::render_metrics(out);
            let _ = writeln!(out, "brdyun_http_connections_open {}", limits.open());
            for (reason, counter) in [
                ("node_full", &limits.refused_full),
                ("client_full", &limits.refused_client),
            ] {
                let _ = writeln!(
                    out,
                    "brdyun_http_connections_refused_total{{reason=\"{reason}\"}} {}",
                    counter.load(Ordering::Relaxed)
                );
            }
        }));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        match self.open.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}

impl ConnectionPermit {
    /// What the admitted connection is served within.
    pub fn edge(&self) -> EdgeLimits {
        self.limits.edge
    }
}

/// The connection caps a process sets when none is configured, from the descriptors it
/// may hold: room is left for everything else (archive files, relays, etcd, RTMP,
/// the MC link), and one address may take a tenth of the whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DerivedCaps {
    /// All HTTP(S) connections.
    pub max_total: usize,
    /// From one client address.
    pub max_per_client: usize,
}

/// Share of the descriptor limit the HTTP connections may take, in percent.
const SHARE_OF_DESCRIPTORS: u64 = 80;

/// The total cap is never derived above this: beyond it, an operator sets it.
pub const MAX_DERIVED_TOTAL: usize = 20_000;

/// One address may hold this fraction of the total cap (a whole office behind one NAT
/// address counts as one client).
const PER_CLIENT_DIVISOR: usize = 10;

impl DerivedCaps {
    /// The caps for a process that may hold `soft_limit` descriptors
    /// (`RLIMIT_NOFILE`): the total 80 % of it (at most [`MAX_DERIVED_TOTAL`]), one
    /// address a tenth of the total; each at least 1.
    pub fn for_descriptors(soft_limit: u64) -> Self {
        let share = soft_limit.saturating_mul(SHARE_OF_DESCRIPTORS) / 100;
        let max_total = usize::try_from(share)
            .unwrap_or(usize::MAX)
            .clamp(1, MAX_DERIVED_TOTAL);
        Self {
            max_total,
            max_per_client: (max_total / PER_CLIENT_DIVISOR).max(1),
        }
    }

    /// The caps in force: each configured one as given, the others derived.
    pub fn or_configured(self, total: Option<usize>, per_client: Option<usize>) -> Self {
        Self {
            max_total: total.unwrap_or(self.max_total),
            max_per_client: per_client.unwrap_or(self.max_per_client),
        }
    }
}

impl Drop for ConnectionPermit {
    fn drop(&mut self) {
        let Some(client) = self.client else {
            return;
        };
        let mut open = self.limits.lock();
        open.total = open.total.saturating_sub(1);
        if let Some(count) = open.per_client.get_mut(&client) {
            *count -= 1;
            if *count == 0 {
                open.per_client.remove(&client);
            }
        }
    }
}

/// The whole HTTP/1.1 answer to a connection refused by a cap: the code's status and
/// JSON body, `Retry-After: 1`, and `Connection: close`.
pub fn refusal_bytes(refusal: RequestError) -> Vec<u8> {
    let code = Code::Request(refusal);
    let body = code.json(None);
    let status = code.status();
    let reason = match status {
        429 => "Too Many Requests",
        _ => "Service Unavailable",
    };
    format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         cache-control: no-store\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, last], 40_000))
    }

    #[test]
    fn a_client_over_its_cap_is_refused_and_a_closed_connection_frees_its_place() {
        let limits = Arc::new(ConnectionLimits::new(10, 2));
        let first = limits.admit(ip(1)).expect("first");
        let _second = limits.admit(ip(1)).expect("second");
        assert_eq!(
            limits.admit(ip(1)).err(),
            Some(RequestError::TooManyConnections)
        );
        let _other = limits
            .admit(ip(2))
            .expect("another client is not held back");
        drop(first);
        let _again = limits.admit(ip(1)).expect("a freed place");
        assert_eq!(limits.open(), 3);
    }

    #[test]
    fn one_ipv6_host_is_one_client_whatever_address_of_its_64_it_uses() {
        let limits = Arc::new(ConnectionLimits::new(10, 2));
        let v6 = |text: &str| SocketAddr::new(text.parse::<IpAddr>().unwrap(), 40_000);
        let _a = limits.admit(v6("2001:db8:7:7::1")).expect("first");
        let _b = limits.admit(v6("2001:db8:7:7::2")).expect("second");
        assert_eq!(
            limits.admit(v6("2001:db8:7:7:ffff::3")).err(),
            Some(RequestError::TooManyConnections),
            "another address of the same /64"
        );
        let _c = limits
            .admit(v6("2001:db8:7:8::1"))
            .expect("another /64 is another client");
        let _d = limits.admit(v6("::ffff:127.0.0.9")).expect("v4-mapped");
        let _e = limits.admit(ip(9)).expect("the same IPv4 client");
        assert_eq!(
            limits.admit(ip(9)).err(),
            Some(RequestError::TooManyConnections),
            "an IPv4 client through an IPv6 listener is that client"
        );
    }

    #[test]
    fn the_node_cap_refuses_every_client_until_a_connection_ends() {
        let limits = Arc::new(ConnectionLimits::new(2, 5));
        let first = limits.admit(ip(1)).expect("first");
        let _second = limits.admit(ip(2)).expect("second");
        assert_eq!(
            limits.admit(ip(3)).err(),
            Some(RequestError::ConnectionsFull)
        );
        drop(first);
        limits.admit(ip(3)).expect("a freed place");
        assert_eq!(limits.refused_full.load(Ordering::Relaxed), 1);
    }

    /// The watchdog's probe socket is admitted with both caps full, only while
    /// published and only from its exact address; it frees no one else's place.
    #[test]
    fn the_published_probe_socket_is_admitted_outside_full_caps() {
        let limits = Arc::new(ConnectionLimits::new(2, 1));
        let _a = limits.admit(ip(1)).expect("first");
        let _b = limits.admit(ip(2)).expect("second");
        let probe = SocketAddr::from(([127, 0, 0, 1], 41_999));
        assert_eq!(
            limits.admit(probe).err(),
            Some(RequestError::ConnectionsFull),
            "not published: an ordinary client"
        );
        ProbePeer::publish(probe);
        let other_port = SocketAddr::from(([127, 0, 0, 1], 41_998));
        assert_eq!(
            limits.admit(other_port).err(),
            Some(RequestError::ConnectionsFull)
        );
        let mapped = SocketAddr::new("::ffff:127.0.0.1".parse().unwrap(), 41_999);
        let permit = limits
            .admit(mapped)
            .expect("the probe, through a dual-stack listener");
        assert_eq!(limits.open(), 2, "the probe is counted nowhere");
        drop(permit);
        assert_eq!(limits.open(), 2);
        ProbePeer::withdraw();
        assert!(
            limits.admit(probe).is_err(),
            "withdrawn: an ordinary client again"
        );
    }

    #[test]
    fn caps_are_derived_below_the_descriptor_limit() {
        assert_eq!(
            DerivedCaps::for_descriptors(1024),
            DerivedCaps {
                max_total: 819,
                max_per_client: 81
            }
        );
        assert_eq!(
            DerivedCaps::for_descriptors(256),
            DerivedCaps {
                max_total: 204,
                max_per_client: 20
            }
        );
        // A large limit keeps the usual ceiling; an absurd one does not overflow.
        assert_eq!(
            DerivedCaps::for_descriptors(1 << 20).max_total,
            MAX_DERIVED_TOTAL
        );
        assert_eq!(
            DerivedCaps::for_descriptors(u64::MAX).max_total,
            MAX_DERIVED_TOTAL
        );
        let tiny = DerivedCaps::for_descriptors(0);
        assert_eq!((tiny.max_total, tiny.max_per_client), (1, 1));
        let configured = DerivedCaps::for_descriptors(256).or_configured(Some(50), None);
        assert_eq!((configured.max_total, configured.max_per_client), (50, 20));
    }

    #[test]
    fn a_permit_carries_the_edge_limits_of_its_caps() {
        let edge = EdgeLimits::with_body_timeout(std::time::Duration::from_secs(3));
        let limits = Arc::new(ConnectionLimits::new(2, 2).with_edge(edge));
        let permit = limits.admit(ip(1)).expect("admitted");
        assert_eq!(permit.edge(), edge);
        assert_ne!(edge, EdgeLimits::default());
    }

    #[test]
    fn a_refusal_is_a_whole_coded_answer() {
        let text =
            String::from_utf8(refusal_bytes(RequestError::TooManyConnections)).expect("text");
        assert!(
            text.starts_with("HTTP/1.1 429 Too Many Requests\r\n"),
            "{text}"
        );
        let (head, body) = text.split_once("\r\n\r\n").expect("head and body");
        assert!(
            head.contains(&format!("content-length: {}", body.len())),
            "{text}"
        );
        let json: serde_json::Value = serde_json::from_str(body).expect("json");
        assert_eq!(json["code"], 108_009);
    }
}
