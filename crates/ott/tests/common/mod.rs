//! Plain-value builders for a healthy mesh; each test breaks one thing.
#![allow(dead_code)]

use ott::{
    Announced, ArchiveRanges, Load, MemberView, NodeId, NodeView, Rung, Scheme, Snapshot,
    Thresholds, Transport, Version,
};

/// "Now" in every test: 2026-01-01T00:00:00Z.
pub const NOW: i64 = 1_767_225_600_000;
pub const GROUP: &str = "meeting-1";
pub const FINGERPRINT: u64 = 0x5eed_0001;

pub fn id(name: &str) -> NodeId {
    NodeId::new(name)
}

/// A healthy node with a public HTTPS host name.
pub fn node(name: &str) -> NodeView {
    let host = format!("{name}.example.net");
    NodeView {
        id: id(name),
        version: Version::new(2, 1, 0, 456),
        hostname: Some(host.clone()),
        addresses: vec![Announced {
            url_base: format!("https://{host}"),
            scheme: Scheme::Https,
            public: true,
            cdn_shared: false,
        }],
        clock_offset_ms: 0,
        has_view_key: true,
        load: Load {
            cpu_percent: 20,
            net_percent: 20,
            backup_sessions: 0,
        },
        thresholds: Thresholds {
            cpu_error_percent: 85,
            net_error_percent: 85,
            backup_session_limit: Some(1000),
        },
        alive: true,
        silent_ms: 0,
        draining: false,
        certificate_mismatch: false,
    }
}

pub fn rung(codec: &str, bitrate_bps: u64) -> Rung {
    Rung {
        codec: codec.into(),
        audio_codec: Some("aac".into()),
        bitrate_bps,
        transport: Transport::Ts,
    }
}

/// A healthy member of [`GROUP`] on `name`, stream `live`, on the same timeline.
pub fn member(name: &str) -> MemberView {
    MemberView {
        node: id(name),
        group: GROUP.into(),
        stream: "live".into(),
        can_substitute: true,
        live_window_at_ms: Some(NOW - 2_000),
        timeline_fingerprint: Some(FINGERPRINT),
        ladder: vec![
            rung("h264", 2_000_000),
            Rung {
                codec: "h264".into(),
                audio_codec: Some("aac".into()),
                bitrate_bps: 2_000_000,
                transport: Transport::Fmp4,
            },
        ],
        languages: Vec::new(),
        archive: ArchiveRanges::default(),
    }
}

/// A mesh of `this` plus `others`, each with a healthy member of [`GROUP`].
pub fn snapshot(this: &str, others: &[&str]) -> Snapshot {
    let mut members = vec![member(this)];
    members.extend(others.iter().map(|n| member(n)));
    Snapshot {
        this: node(this),
        nodes: others.iter().map(|n| node(n)).collect(),
        members,
        min_version: Version::SEED_MINIMUM,
    }
}

pub fn node_mut<'a>(s: &'a mut Snapshot, name: &str) -> &'a mut NodeView {
    s.nodes
        .iter_mut()
        .find(|n| n.id.as_str() == name)
        .expect("test node exists")
}

pub fn member_mut<'a>(s: &'a mut Snapshot, name: &str) -> &'a mut MemberView {
    s.members
        .iter_mut()
        .find(|m| m.node.as_str() == name)
        .expect("test member exists")
}
