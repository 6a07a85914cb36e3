//! The ingest listeners of this process (RTMP, RTMPS, SRT) as operators read them in
//! `/api/node` and on the Backups screen: each listener's address, its connections and
//! publishes, and what it refused — failed TLS handshakes, unknown meetings, wrong
//! keys, busy slots, its caps and deadlines — by code. Those refusals come before a
//! stream is known (a TLS handshake, a wrong key), so they belong to the listener, not
//! to a stream's status.

use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, PoisonError, RwLock};

use ingest::rtmp::RtmpStats;
use ingest::srt::SrtStats;
use serde_json::{json, Value};

use crate::link_view::{link_json, split_publish_name};

/// One listener's status, read when asked.
type StatusFn = Box<dyn Fn() -> Value + Send + Sync>;

/// The listeners started in this process, in start order.
#[derive(Default)]
pub struct IngestListeners {
    list: RwLock<Vec<StatusFn>>,
}

impl std::fmt::Debug for IngestListeners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self
            .list
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        f.debug_struct("IngestListeners")
            .field("listeners", &count)
            .finish()
    }
}

impl IngestListeners {
    /// Adds an RTMP listener (`protocol` is `rtmp` or `rtmps`; only the latter has TLS
    /// handshakes).
    pub fn add_rtmp(&self, protocol: &'static str, addr: SocketAddr, stats: Arc<RtmpStats>) {
        self.add(Box::new(move || rtmp_json(protocol, addr, &stats)));
    }

    /// Adds an SRT listener.
    pub fn add_srt(&self, addr: SocketAddr, stats: Arc<SrtStats>) {
        self.add(Box::new(move || srt_json(addr, &stats)));
    }

    fn add(&self, status: StatusFn) {
        self.list
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(status);
    }

    /// Every listener's status, in start order (`[]` when none is configured).
    pub fn to_json(&self) -> Value {
        let list = self.list.read().unwrap_or_else(PoisonError::into_inner);
        Value::Array(list.iter().map(|status| status()).collect())
    }
}

/// `(code, count)` pairs as `{code, reason, count}` objects.
pub fn by_code_json(list: &[(codes::InputFault, u64)]) -> Vec<Value> {
    list.iter()
        .map(|(code, count)| json!({ "code": code.code(), "reason": code.label(), "count": count }))
        .collect()
}

fn rtmp_json(protocol: &'static str, addr: SocketAddr, stats: &RtmpStats) -> Value {
    let s = stats.snapshot();
    let mut value = json!({
        "protocol": protocol,
        "addr": addr.to_string(),
        "connections": s.connections,
        "active_connections": s.active_connections,
        "publishes": s.publishes,
        "bytes": s.bytes,
        "frames": s.frames,
        "protocol_errors": s.protocol_errors,
        "refused": by_code_json(&stats.rejections_by_code()),
        "limits": by_code_json(&stats.limits.by_code()),
    });
    if protocol == "rtmps" {
        value["tls_handshakes"] = json!(stats.tls_handshakes.load(Relaxed));
        value["tls_handshake_failures"] = json!(stats.tls_handshake_failures.load(Relaxed));
    }
    value
}

/// An SRT listener: connections, the handshakes it refused and the publishers its
/// limits cut, by code, and each publisher's link.
fn srt_json(addr: SocketAddr, stats: &SrtStats) -> Value {
    json!({
        "protocol": "srt",
        "addr": addr.to_string(),
        "connections": stats.connections.load(Relaxed),
        "active_connections": stats.active_connections.load(Relaxed),
        "bytes": stats.bytes.load(Relaxed),
        "frames": stats.frames.load(Relaxed),
        "restarts": stats.restarts.load(Relaxed),
        "refused": by_code_json(&stats.refusals()),
        "limits": by_code_json(&stats.limits.by_code()),
        "links": stats.links().iter().map(|(name, link)| {
            let (stream, slot) = split_publish_name(name);
            let mut value = link_json(link);
            value["stream"] = json!(stream);
            value["slot"] = json!(slot);
            value
        }).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The count a listener's status gives `code` among its refusals.
    fn refused(listener: &Value, code: u32) -> Option<u64> {
        listener["refused"]
            .as_array()?
            .iter()
            .find(|r| r["code"] == code)?["count"]
            .as_u64()
    }

    #[test]
    fn each_listener_shows_what_it_refused_by_code() {
        let listeners = IngestListeners::default();
        assert_eq!(listeners.to_json(), json!([]));
        let rtmps = Arc::new(RtmpStats::default());
        rtmps.rejected(&ingest::publish::PublishRejection::WrongKey);
        rtmps.tls_handshake_failures.fetch_add(2, Relaxed);
        let srt = Arc::new(SrtStats::default());
        srt.refused(codes::InputFault::BadPassphrase);
        srt.set_link("m1@backup", ingest::srt::LinkStats::default());
        listeners.add_rtmp(
            "rtmps",
            "127.0.0.1:1936".parse().unwrap(),
            Arc::clone(&rtmps),
        );
        listeners.add_srt("127.0.0.1:9000".parse().unwrap(), srt);
        let doc = listeners.to_json();
        assert_eq!(doc[0]["protocol"], "rtmps");
        assert_eq!(doc[0]["addr"], "127.0.0.1:1936");
        assert_eq!(doc[0]["tls_handshake_failures"], 2);
        assert_eq!(refused(&doc[0], 111_028), Some(1), "{doc}");
        assert_eq!(doc[1]["protocol"], "srt");
        assert_eq!(refused(&doc[1], 111_030), Some(1), "{doc}");
        assert_eq!(doc[1]["links"][0]["stream"], "m1");
        assert_eq!(doc[1]["links"][0]["slot"], "backup");
        let plain = IngestListeners::default();
        plain.add_rtmp("rtmp", "127.0.0.1:1935".parse().unwrap(), rtmps);
        assert!(plain.to_json()[0].get("tls_handshakes").is_none());
    }
}
