//! The mesh snapshot as plain values: what every node and member announces.
//!
//! The `mesh` crate fills these from gossip; `ott` only reads them.

use std::fmt;
use std::str::FromStr;

/// A node's identity in the mesh (name + generation, as gossip spells it).
///
/// Compared and hashed as bytes: the rendezvous choice (OTT-GRP-2) hashes it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub String);

impl NodeId {
    /// Wraps a gossip node id.
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// The node's name: the id without its `@generation` (a restarted node keeps it).
    pub fn name(&self) -> &str {
        self.0.rsplit_once('@').map_or(&self.0, |(name, _)| name)
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A release version with a fourth build number (`2.1.0.456`), compared in that order.
///
/// Members on a node below the group's minimum compatible version accept no viewers
/// (OTT-GRP-5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Version {
    /// Major.
    pub major: u32,
    /// Minor.
    pub minor: u32,
    /// Patch.
    pub patch: u32,
    /// Build number; `0` when the text had only three parts.
    pub build: u32,
}

impl Version {
    /// The seed's minimum compatible version for OTT redundancy (OTT-GRP-5): 2.1.0.456.
    pub const SEED_MINIMUM: Version = Version::new(2, 1, 0, 456);

    /// A version from its four numbers.
    pub const fn new(major: u32, minor: u32, patch: u32, build: u32) -> Self {
        Self {
            major,
            minor,
            patch,
            build,
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{}.{}.{}",
            self.major, self.minor, self.patch, self.build
        )
    }
}

/// Why a version string did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("version must be three or four dot-separated numbers, got {0:?}")]
pub struct VersionError(pub String);

impl FromStr for Version {
    type Err = VersionError;

    /// Parses `2.1.0` or `2.1.0.456`; a `-suffix` or `+suffix` (semver pre-release or
    /// build metadata) is ignored.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || VersionError(s.chars().take(64).collect());
        let core = s.trim().split(['-', '+']).next().unwrap_or_default();
        let mut nums = [0u32; 4];
        let mut count = 0;
        for part in core.split('.') {
            let slot = nums.get_mut(count).ok_or_else(err)?;
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(err());
            }
            *slot = part.parse().map_err(|_| err())?;
            count += 1;
        }
        if count < 3 {
            return Err(err());
        }
        Ok(Version::new(nums[0], nums[1], nums[2], nums[3]))
    }
}

/// The URL scheme of an announced address or of a viewer's connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTPS; the node's certificate is issued for its host name (OTT-ADDR-3).
    Https,
}

/// One address a node announces for viewers to reach it directly (OTT-ADDR-1).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Announced {
    /// Scheme, host and port, no path: `https://node-b.example.net` or
    /// `http://203.0.113.7:8080`.
    pub url_base: String,
    /// The scheme of `url_base`.
    pub scheme: Scheme,
    /// Reachable from the internet (OTT-ADDR-2); private, loopback, link-local, CGNAT
    /// and ULA addresses are not.
    pub public: bool,
    /// A CDN name shared by several nodes: never a backup address (OTT-ADDR-5).
    pub cdn_shared: bool,
}

/// A node's current load, as it measures it (OTT-ELIG-5, OTT-OVL-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Load {
    /// CPU load, percent (0–100).
    pub cpu_percent: u8,
    /// Network interface load, percent of capacity (0–100).
    pub net_percent: u8,
    /// Viewers this node serves that arrived from another node with a pass.
    pub backup_sessions: u32,
}

/// The limits above which a node refuses viewers from other nodes (OTT-OVL-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Thresholds {
    /// The CPU error threshold of the node's alert settings, percent.
    pub cpu_error_percent: u8,
    /// The network error threshold of the node's alert settings, percent.
    pub net_error_percent: u8,
    /// The "backup session limit"; `None` = unlimited.
    pub backup_session_limit: Option<u32>,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            cpu_error_percent: 90,
            net_error_percent: 90,
            backup_session_limit: None,
        }
    }
}

/// What the mesh knows about one node (OTT-GRP-3, OTT-GRP-5, OTT-ADDR-*, OTT-ELIG-4/5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeView {
    /// Gossip identity.
    pub id: NodeId,
    /// Its release version (OTT-GRP-5).
    pub version: Version,
    /// Its public host name, when configured (OTT-ADDR-1).
    pub hostname: Option<String>,
    /// The addresses it announces for viewers (OTT-ADDR-1..5).
    pub addresses: Vec<Announced>,
    /// Its clock minus this node's clock, milliseconds (OTT-ELIG-4).
    pub clock_offset_ms: i64,
    /// It holds the domain's current view key (OTT-GRP-3, OTT-ELIG-4).
    pub has_view_key: bool,
    /// Its load (OTT-ELIG-5).
    pub load: Load,
    /// Its refusal thresholds (OTT-OVL-1).
    pub thresholds: Thresholds,
    /// Failure detection says it is up.
    pub alive: bool,
    /// How long since this node last heard its gossip heartbeat, ms (0 for this node):
    /// a node that is up but silent for seconds is hung (SIGSTOP, a stuck runtime)
    /// well before failure detection calls it dead.
    pub silent_ms: i64,
    /// Its operator drains it (OTT-OPS): it takes no new viewers, and steering moves
    /// its switching viewers to their backups.
    pub draining: bool,
    /// Its HTTPS certificate is not issued for its host name (OTT-ADDR-3): no HTTPS
    /// viewer is sent to it.
    pub certificate_mismatch: bool,
}

/// The segment container of a rung.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    /// MPEG-TS segments (HLS).
    Ts,
    /// fMP4/CMAF segments (LL-HLS, DASH).
    Fmp4,
}

/// One rendition a member packages. A member that packages a rendition in both
/// containers announces one rung per container.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Rung {
    /// Video codec family as announced (`h264`, `h265`); compared case-insensitively.
    pub codec: String,
    /// Audio codec family of the rung's audio (`aac`), when it has audio; compared
    /// case-insensitively.
    pub audio_codec: Option<String>,
    /// Peak bit rate, bits per second.
    pub bitrate_bps: u64,
    /// Segment container.
    pub transport: Transport,
}

/// The archive a member holds, per container (OTT-ARCH-1): recorded stretches
/// `(from_ms, to_ms)` in Unix milliseconds. Only their span, oldest to newest, counts
/// for redirects (OTT-ARCH-2).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ArchiveRanges {
    /// MPEG-TS archive (HLS catch-up).
    pub ts: Vec<(i64, i64)>,
    /// fMP4 archive (LL-HLS and DASH catch-up).
    pub fmp4: Vec<(i64, i64)>,
}

impl ArchiveRanges {
    /// The stretches recorded in one container.
    pub fn for_transport(&self, transport: Transport) -> &[(i64, i64)] {
        match transport {
            Transport::Ts => &self.ts,
            Transport::Fmp4 => &self.fmp4,
        }
    }

    /// The archive range in one container: oldest to newest recording (OTT-ARCH-2).
    /// Stretches with `to < from` are ignored.
    pub fn span(&self, transport: Transport) -> Option<(i64, i64)> {
        self.for_transport(transport)
            .iter()
            .filter(|(from, to)| from <= to)
            .fold(None, |acc, &(from, to)| match acc {
                None => Some((from, to)),
                Some((a, b)) => Some((a.min(from), b.max(to))),
            })
    }
}

/// One stream or adaptive package of one node in an OTT group (OTT-GRP-1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberView {
    /// The node carrying it.
    pub node: NodeId,
    /// The backup group name (OTT-GRP-1).
    pub group: String,
    /// The stream or package name on that node (it may differ between nodes).
    pub stream: String,
    /// "Can substitute": offered as a backup (OTT-ELIG-1).
    pub can_substitute: bool,
    /// When it last delivered its live window, Unix ms on *its* node's clock
    /// (OTT-ELIG-1); `None` = never.
    pub live_window_at_ms: Option<i64>,
    /// Fingerprint of its recent segments; equal fingerprints prove the same
    /// timeline (OTT-ELIG-2, OTT-GRP-4).
    pub timeline_fingerprint: Option<u64>,
    /// Its renditions (OTT-ELIG-3).
    pub ladder: Vec<Rung>,
    /// Its audio languages as ISO 639-2 codes, the floor's first; empty when it has one
    /// audio. A backup must carry each of ours, or a viewer's pick would be lost.
    pub languages: Vec<String>,
    /// Its archive ranges (OTT-ARCH-1/2).
    pub archive: ArchiveRanges,
}

/// The delivery protocol of a request: decides which transport and archive count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// HLS over MPEG-TS.
    Hls,
    /// Low-latency HLS (fMP4 parts).
    LlHls,
    /// MPEG-DASH (fMP4).
    Dash,
}

impl Protocol {
    /// The container this protocol's segments and archive use (OTT-ARCH-1).
    pub fn transport(self) -> Transport {
        match self {
            Protocol::Hls => Transport::Ts,
            Protocol::LlHls | Protocol::Dash => Transport::Fmp4,
        }
    }
}

/// A snapshot of the mesh from this node's point of view: the input of every
/// decision that involves more than one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// This node (its `clock_offset_ms` is 0).
    pub this: NodeView,
    /// The other nodes of the domain.
    pub nodes: Vec<NodeView>,
    /// Every member of every group, this node's included.
    pub members: Vec<MemberView>,
    /// The minimum compatible version (OTT-GRP-5).
    pub min_version: Version,
}

impl Snapshot {
    /// A node by id, this node included.
    pub fn node(&self, id: &NodeId) -> Option<&NodeView> {
        if self.this.id == *id {
            return Some(&self.this);
        }
        self.nodes.iter().find(|n| n.id == *id)
    }

    /// This node's member in a group.
    pub fn own_member(&self, group: &str) -> Option<&MemberView> {
        self.members
            .iter()
            .find(|m| m.group == group && m.node == self.this.id)
    }

    /// Other nodes' members of a group, with their node (members whose node is
    /// unknown are skipped).
    pub fn others<'a>(
        &'a self,
        group: &'a str,
    ) -> impl Iterator<Item = (&'a NodeView, &'a MemberView)> + 'a {
        self.members
            .iter()
            .filter(move |m| m.group == group && m.node != self.this.id)
            .filter_map(move |m| self.node(&m.node).map(|n| (n, m)))
    }

    /// The names of the groups this node is a member of, sorted, without repeats.
    pub fn own_groups(&self) -> Vec<&str> {
        let mut groups: Vec<&str> = self
            .members
            .iter()
            .filter(|m| m.node == self.this.id)
            .map(|m| m.group.as_str())
            .collect();
        groups.sort_unstable();
        groups.dedup();
        groups
    }
}
