//! Caps on the HTTP connections a node holds open, in total and per client address, so
//! that a client opening connections without end cannot exhaust the node's file
//! descriptors or crowd out the other viewers (with the header-read timeout of
//! [`crate::connection`], which closes the connections that send nothing). A connection
//! over a cap is answered at once with the code of the cap and closed.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use codes::{Code, RequestError};

/// What the caps allow and what they refused.
#[derive(Debug)]
pub struct ConnectionLimits {
    max_total: usize,
    max_per_client: usize,
    open: Mutex<Open>,
    refused_full: AtomicU64,
    refused_client: AtomicU64,
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
    client: IpAddr,
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
        }
    }

    /// Admits a connection from `client`, or says which cap refuses it
    /// ([`RequestError::ConnectionsFull`], [`RequestError::TooManyConnections`]).
    pub fn admit(self: &Arc<Self>, client: IpAddr) -> Result<ConnectionPermit, RequestError> {
        // An IPv4 client reaching an IPv6 listener is the same client.
        let client = client.to_canonical();
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
            client,
        })
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.lock().total
    }

    /// Registers the open connections and the refusals with the metrics registry.
    pub fn register_metrics(self: &Arc<Self>, metrics: &crate::metrics::Metrics) {
        let limits = Arc::clone(self);
        metrics.register(Box::new(move |out: &mut String| {
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

impl Drop for ConnectionPermit {
    fn drop(&mut self) {
        let mut open = self.limits.lock();
        open.total = open.total.saturating_sub(1);
        if let Some(count) = open.per_client.get_mut(&self.client) {
            *count -= 1;
            if *count == 0 {
                open.per_client.remove(&self.client);
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

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
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
