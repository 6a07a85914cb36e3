//! The typed gossip state: constant key names and the JSON each key holds.
//!
//! A node owns these keys in its own chitchat state:
//!
//! | key | value |
//! |---|---|
//! | [`KEY_NODE`] | [`NodeAnnounce`] as JSON: version, host name, addresses, load, thresholds |
//! | [`KEY_CLOCK`] | its wall clock, Unix ms, rewritten every gossip round |
//! | [`KEY_VIEW_KEY`] | the fingerprint of its current view key, 16 hex digits |
//! | [`MEMBER_PREFIX`]`<stream>` | an [`ott::MemberView`] as JSON (without its node, the key's owner), one key per member |
//!
//! The announced types are `ott` values (a member is announced as the
//! [`ott::MemberView`] every node builds of it); the JSON is a private mirror with
//! `serde` (the `ott` crate stays free of it). Unknown JSON fields are ignored and
//! missing optional ones take defaults, so a newer node's state still reads.

use ott::{
    Announced, ArchiveRanges, Load, MemberView, NodeId, Rung, Scheme, Thresholds, Transport,
    Version,
};
use serde::{Deserialize, Serialize};

/// Key of the node's announce.
pub const KEY_NODE: &str = "node";
/// Key of the node's clock, Unix ms as decimal text.
pub const KEY_CLOCK: &str = "clock";
/// Key of the node's current view-key fingerprint, 16 lowercase hex digits.
pub const KEY_VIEW_KEY: &str = "view_key";
/// Prefix of member keys; the rest of the key is the stream name.
pub const MEMBER_PREFIX: &str = "member:";
/// The most audio languages a member's announce is read with: a stream has at most 8.
const MAX_ANNOUNCED_LANGUAGES: usize = 8;

/// What a node tells the domain about itself (OTT-GRP-5, OTT-ADDR-*, OTT-ELIG-5,
/// OTT-OVL-1). The clock and the view-key fingerprint are published by the mesh
/// itself.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeAnnounce {
    /// Its release version (OTT-GRP-5).
    pub version: Version,
    /// Its public host name, when configured (OTT-ADDR-1).
    pub hostname: Option<String>,
    /// The addresses viewers may reach it at (OTT-ADDR-1..5).
    pub addresses: Vec<Announced>,
    /// Its current load (OTT-ELIG-5).
    pub load: Load,
    /// Its refusal thresholds (OTT-OVL-1).
    pub thresholds: Thresholds,
    /// Its operator drains it: no new viewers, switching viewers steered away.
    pub draining: bool,
    /// Its HTTPS certificate is not issued for its host name (OTT-ADDR-3): HTTPS
    /// viewers cannot be sent to it.
    pub certificate_mismatch: bool,
}

/// The chitchat key of a member.
pub fn member_key(stream: &str) -> String {
    format!("{MEMBER_PREFIX}{stream}")
}

/// Formats a view-key fingerprint for [`KEY_VIEW_KEY`].
pub fn fingerprint_text(fp: u64) -> String {
    format!("{fp:016x}")
}

/// Parses a [`KEY_VIEW_KEY`] value.
pub fn parse_fingerprint(text: &str) -> Option<u64> {
    u64::from_str_radix(text, 16).ok()
}

// ---- JSON mirrors ---------------------------------------------------------------

#[derive(Serialize, Deserialize)]
struct WireNode {
    version: String,
    #[serde(default)]
    hostname: Option<String>,
    #[serde(default)]
    addresses: Vec<WireAddress>,
    #[serde(default)]
    load: WireLoad,
    #[serde(default)]
    thresholds: Option<WireThresholds>,
    /// Absent from nodes that cannot drain (an earlier version): not draining.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    draining: bool,
    /// Absent from earlier versions, and when the certificate is right.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    certificate_mismatch: bool,
}

#[derive(Serialize, Deserialize)]
struct WireAddress {
    url_base: String,
    https: bool,
    public: bool,
    #[serde(default)]
    cdn_shared: bool,
}

#[derive(Serialize, Deserialize, Default)]
struct WireLoad {
    cpu: u8,
    net: u8,
    backup_sessions: u32,
}

#[derive(Serialize, Deserialize)]
struct WireThresholds {
    cpu_error: u8,
    net_error: u8,
    #[serde(default)]
    backup_session_limit: Option<u32>,
}

#[derive(Serialize, Deserialize)]
struct WireMember {
    group: String,
    stream: String,
    can_substitute: bool,
    #[serde(default)]
    live_window_at_ms: Option<i64>,
    #[serde(default)]
    timeline_fingerprint: Option<u64>,
    #[serde(default)]
    ladder: Vec<WireRung>,
    /// Absent from nodes of one audio, and of versions before languages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    languages: Vec<String>,
    #[serde(default)]
    archive_ts: Vec<(i64, i64)>,
    #[serde(default)]
    archive_fmp4: Vec<(i64, i64)>,
}

#[derive(Serialize, Deserialize)]
struct WireRung {
    codec: String,
    bitrate_bps: u64,
    fmp4: bool,
    /// Absent from nodes that announced video only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    audio: Option<String>,
}

impl From<&NodeAnnounce> for WireNode {
    fn from(n: &NodeAnnounce) -> Self {
        WireNode {
            version: n.version.to_string(),
            hostname: n.hostname.clone(),
            addresses: n
                .addresses
                .iter()
                .map(|a| WireAddress {
                    url_base: a.url_base.clone(),
                    https: a.scheme == Scheme::Https,
                    public: a.public,
                    cdn_shared: a.cdn_shared,
                })
                .collect(),
            load: WireLoad {
                cpu: n.load.cpu_percent,
                net: n.load.net_percent,
                backup_sessions: n.load.backup_sessions,
            },
            thresholds: Some(WireThresholds {
                cpu_error: n.thresholds.cpu_error_percent,
                net_error: n.thresholds.net_error_percent,
                backup_session_limit: n.thresholds.backup_session_limit,
            }),
            draining: n.draining,
            certificate_mismatch: n.certificate_mismatch,
        }
    }
}

impl From<WireNode> for NodeAnnounce {
    fn from(w: WireNode) -> Self {
        NodeAnnounce {
            // An unreadable version reads as 0.0.0.0: below any minimum, so the
            // node shows as a problem instead of vanishing (OTT-GRP-5).
            version: w.version.parse().unwrap_or_default(),
            hostname: w.hostname,
            addresses: w
                .addresses
                .into_iter()
                .map(|a| Announced {
                    url_base: a.url_base,
                    scheme: if a.https { Scheme::Https } else { Scheme::Http },
                    public: a.public,
                    cdn_shared: a.cdn_shared,
                })
                .collect(),
            load: Load {
                cpu_percent: w.load.cpu,
                net_percent: w.load.net,
                backup_sessions: w.load.backup_sessions,
            },
            thresholds: w
                .thresholds
                .map(|t| Thresholds {
                    cpu_error_percent: t.cpu_error,
                    net_error_percent: t.net_error,
                    backup_session_limit: t.backup_session_limit,
                })
                .unwrap_or_default(),
            draining: w.draining,
            certificate_mismatch: w.certificate_mismatch,
        }
    }
}

impl From<&MemberView> for WireMember {
    fn from(m: &MemberView) -> Self {
        WireMember {
            group: m.group.clone(),
            stream: m.stream.clone(),
            can_substitute: m.can_substitute,
            live_window_at_ms: m.live_window_at_ms,
            timeline_fingerprint: m.timeline_fingerprint,
            ladder: m
                .ladder
                .iter()
                .map(|r| WireRung {
                    codec: r.codec.clone(),
                    bitrate_bps: r.bitrate_bps,
                    fmp4: r.transport == Transport::Fmp4,
                    audio: r.audio_codec.clone(),
                })
                .collect(),
            languages: m.languages.clone(),
            archive_ts: m.archive.ts.clone(),
            archive_fmp4: m.archive.fmp4.clone(),
        }
    }
}

impl WireMember {
    /// The member as the view of it on `node`, the owner of the key it was read from.
    fn into_view(self, node: NodeId) -> MemberView {
        let w = self;
        MemberView {
            node,
            group: w.group,
            stream: w.stream,
            can_substitute: w.can_substitute,
            live_window_at_ms: w.live_window_at_ms,
            timeline_fingerprint: w.timeline_fingerprint,
            ladder: w
                .ladder
                .into_iter()
                .map(|r| Rung {
                    codec: r.codec,
                    audio_codec: r.audio,
                    bitrate_bps: r.bitrate_bps,
                    transport: if r.fmp4 {
                        Transport::Fmp4
                    } else {
                        Transport::Ts
                    },
                })
                .collect(),
            // ISO 639-2 codes only, as many as a stream may have: a peer's bug shows
            // as a missing language, never as text on the Backups screen.
            languages: w.languages.into_iter().fold(Vec::new(), |mut codes, code| {
                let iso = code.len() == 3 && code.bytes().all(|b| b.is_ascii_lowercase());
                if iso && codes.len() < MAX_ANNOUNCED_LANGUAGES && !codes.contains(&code) {
                    codes.push(code);
                }
                codes
            }),
            archive: ArchiveRanges {
                ts: w.archive_ts,
                fmp4: w.archive_fmp4,
            },
        }
    }
}

/// The JSON of a node announce.
pub fn encode_node(n: &NodeAnnounce) -> String {
    serde_json::to_string(&WireNode::from(n)).expect("plain structs always serialize")
}

/// A node announce from its JSON; `None` when it does not parse.
pub fn decode_node(json: &str) -> Option<NodeAnnounce> {
    serde_json::from_str::<WireNode>(json).ok().map(Into::into)
}

/// The JSON of a member (its node is the key's owner, not written).
pub fn encode_member(m: &MemberView) -> String {
    serde_json::to_string(&WireMember::from(m)).expect("plain structs always serialize")
}

/// The member `node` announced in `json`; `None` when it does not parse.
pub fn decode_member(json: &str, node: NodeId) -> Option<MemberView> {
    serde_json::from_str::<WireMember>(json)
        .ok()
        .map(|w| w.into_view(node))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_node() -> NodeAnnounce {
        NodeAnnounce {
            version: Version::new(2, 1, 0, 456),
            hostname: Some("node-b.example.net".into()),
            addresses: vec![
                Announced {
                    url_base: "https://node-b.example.net".into(),
                    scheme: Scheme::Https,
                    public: true,
                    cdn_shared: false,
                },
                Announced {
                    url_base: "http://10.0.0.2:8080".into(),
                    scheme: Scheme::Http,
                    public: false,
                    cdn_shared: true,
                },
            ],
            load: Load {
                cpu_percent: 37,
                net_percent: 12,
                backup_sessions: 4,
            },
            thresholds: Thresholds {
                cpu_error_percent: 85,
                net_error_percent: 80,
                backup_session_limit: Some(500),
            },
            draining: true,
            certificate_mismatch: true,
        }
    }

    #[test]
    fn node_and_member_roundtrip_through_json() {
        let n = sample_node();
        assert_eq!(decode_node(&encode_node(&n)), Some(n));
        let m = MemberView {
            node: NodeId::new("n1"),
            group: "g".into(),
            stream: "meeting".into(),
            can_substitute: true,
            live_window_at_ms: Some(1_780_000_000_123),
            timeline_fingerprint: Some(u64::MAX - 7),
            languages: vec!["eng".into(), "spa".into()],
            ladder: vec![
                Rung {
                    codec: "h264".into(),
                    audio_codec: Some("aac".into()),
                    bitrate_bps: 2_500_000,
                    transport: Transport::Ts,
                },
                Rung {
                    codec: "h264".into(),
                    audio_codec: Some("aac".into()),
                    bitrate_bps: 2_500_000,
                    transport: Transport::Fmp4,
                },
            ],
            archive: ArchiveRanges {
                ts: vec![(1, 2), (5, 9)],
                fmp4: vec![],
            },
        };
        assert_eq!(decode_member(&encode_member(&m), m.node.clone()), Some(m));
    }

    proptest::proptest! {
        // Peers are authenticated, but a bug or a newer version must not crash us.
        #[test]
        fn decoders_never_panic(text in ".{0,200}") {
            let _ = decode_node(&text);
            let _ = decode_member(&text, NodeId::new("n"));
            let _ = parse_fingerprint(&text);
        }

        #[test]
        fn announces_roundtrip(
            cpu in 0u8..=100,
            sessions in proptest::prelude::any::<u32>(),
            fp in proptest::prelude::any::<u64>(),
            at in proptest::prelude::any::<i64>(),
            stream in "[a-z0-9_-]{1,64}",
        ) {
            let mut n = sample_node();
            n.load.cpu_percent = cpu;
            n.load.backup_sessions = sessions;
            proptest::prop_assert_eq!(decode_node(&encode_node(&n)), Some(n));
            let m = MemberView {
                node: NodeId::new("n"),
                group: "g".into(),
                stream,
                can_substitute: at % 2 == 0,
                live_window_at_ms: Some(at),
                timeline_fingerprint: Some(fp),
                ladder: vec![],
                languages: vec![],
                archive: ArchiveRanges { ts: vec![(at, at)], fmp4: vec![] },
            };
            proptest::prop_assert_eq!(decode_member(&encode_member(&m), m.node.clone()), Some(m));
        }
    }

    #[test]
    fn garbage_and_bad_versions_do_not_panic() {
        assert_eq!(decode_node("{"), None);
        assert_eq!(decode_member("[]", NodeId::new("n")), None);
        let n = decode_node(r#"{"version":"banana","future":1}"#).expect("reads");
        assert_eq!(n.version, Version::default());
        assert_eq!(n.thresholds, Thresholds::default());
    }

    #[test]
    fn announced_languages_are_read_as_iso_codes_only() {
        let m = decode_member(
            r#"{"group":"g","stream":"s","can_substitute":true,
                "languages":["eng","<b>","SPA","spa","eng","fr","fra","deu","ita","jpn","kor","zho","por"]}"#,
            NodeId::new("n"),
        )
        .expect("reads");
        assert_eq!(
            m.languages,
            ["eng", "spa", "fra", "deu", "ita", "jpn", "kor", "zho"]
        );
        let old = decode_member(
            r#"{"group":"g","stream":"s","can_substitute":true}"#,
            NodeId::new("n"),
        )
        .expect("reads a member of a node before languages");
        assert!(old.languages.is_empty());
    }
}
