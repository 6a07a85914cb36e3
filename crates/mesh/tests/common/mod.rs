//! Helpers of the mesh integration tests: nodes on loopback, bounded waits.

#![allow(dead_code)]

use std::future::Future;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use mesh::{Mesh, MeshConfig, MeshHandle, NodeAnnounce};
use ott::{Announced, Load, Rung, Scheme, Thresholds, Transport, Version};

pub const SECRET: &[u8] = b"domain secret of the test mesh";

pub fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().expect("literal")
}

/// A config with the production defaults (250 ms rounds, phi 16), seeded.
pub fn config(name: &str, seeds: &[SocketAddr]) -> MeshConfig {
    let mut c = MeshConfig::new(name, loopback(), SECRET);
    c.seeds = seeds.iter().map(ToString::to_string).collect();
    c
}

pub fn announce(name: &str) -> NodeAnnounce {
    NodeAnnounce {
        version: Version::new(2, 1, 0, 460),
        hostname: Some(format!("{name}.example.net")),
        addresses: vec![Announced {
            url_base: format!("https://{name}.example.net"),
            scheme: Scheme::Https,
            public: true,
            cdn_shared: false,
        }],
        load: Load {
            cpu_percent: 10,
            net_percent: 5,
            backup_sessions: 0,
        },
        thresholds: Thresholds::default(),
        draining: false,
        certificate_mismatch: false,
    }
}

/// A member to announce (its `node` is set by the announcing mesh).
pub fn member(stream: &str) -> ott::MemberView {
    ott::MemberView {
        node: ott::NodeId::new("set by the mesh"),
        group: "meeting-group".into(),
        stream: stream.into(),
        can_substitute: true,
        live_window_at_ms: Some(1_780_000_000_000),
        timeline_fingerprint: Some(0xfeed),
        ladder: vec![Rung {
            codec: "h264".into(),
            audio_codec: Some("aac".into()),
            bitrate_bps: 2_000_000,
            transport: Transport::Ts,
        }],
        languages: vec!["eng".into(), "spa".into()],
        archive: Default::default(),
    }
}

/// Starts a node, announces it with one member named after it.
pub async fn node(config: MeshConfig) -> MeshHandle {
    let name = config.node_name.clone();
    let h = Mesh::start(config).await.expect("mesh starts");
    h.set_node(announce(&name)).await.expect("announce");
    h.set_members(vec![member(&format!("{name}-stream"))])
        .await
        .expect("members");
    h
}

/// Polls `check` every 50 ms until it holds or `limit` passes; returns the time it
/// took, or panics with `what`.
pub async fn wait_until<F, Fut>(limit: Duration, what: &str, mut check: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let start = Instant::now();
    loop {
        if check().await {
            return start.elapsed();
        }
        assert!(start.elapsed() < limit, "timed out after {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The names of the alive peers in a node's snapshot, sorted.
pub fn alive_peers(h: &MeshHandle) -> Vec<String> {
    let mut v: Vec<String> = h
        .snapshot()
        .nodes
        .iter()
        .filter(|n| n.alive)
        .map(|n| mesh::node_name(&n.id).to_owned())
        .collect();
    v.sort();
    v
}
