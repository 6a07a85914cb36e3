//! What the HTTP layer knows about a request before deciding to admit it (SHED-1).

use serde::Deserialize;

use crate::device::DeviceType;

/// The kind of route a request targets; the main input of classification, because it
/// says whether refusing the request stops someone from watching.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteKind {
    /// A live media playlist of a running playback (refresh every target duration).
    LivePlaylist,
    /// A live segment or LL-HLS part of a running playback.
    LiveSegment,
    /// The master playlist: the start of a playback.
    PlaybackStart,
    /// MPEG-TS relay to another node, which feeds that node's viewers (asked with a
    /// credential: `Authorization`).
    Relay,
    /// The MPEG-TS relay asked without a credential: a stranger's bulk download, which
    /// ranks below viewers' segments.
    AnonymousRelay,
    /// An archive (DVR) playlist: browsing or starting an archive view.
    ArchivePlaylist,
    /// An archive (DVR) segment.
    ArchiveSegment,
    /// A preview thumbnail.
    Thumbnail,
    /// Meeting metadata: the MC's meeting view, a node's stream status.
    MeetingMetadata,
    /// A node's own status and its metrics scrape: an operator's reading, not a viewer's.
    Status,
    /// Operator control: the screens, the fault-rule, experiments and pause APIs, the
    /// MC's meeting changes. Never shed by a fault rule or an experiment.
    Admin,
    /// Player telemetry beacons and logs.
    Telemetry,
    /// Speculative prefetch by a player or a peer.
    Prefetch,
    /// Anything not recognised.
    Other,
}

impl RouteKind {
    /// Number of route kinds; sizes the classifier's lookup table.
    pub const COUNT: usize = 14;

    /// All route kinds in declaration order (index = `self as usize`).
    pub const ALL: [RouteKind; RouteKind::COUNT] = [
        RouteKind::LivePlaylist,
        RouteKind::LiveSegment,
        RouteKind::PlaybackStart,
        RouteKind::Relay,
        RouteKind::AnonymousRelay,
        RouteKind::ArchivePlaylist,
        RouteKind::ArchiveSegment,
        RouteKind::Thumbnail,
        RouteKind::MeetingMetadata,
        RouteKind::Status,
        RouteKind::Admin,
        RouteKind::Telemetry,
        RouteKind::Prefetch,
        RouteKind::Other,
    ];

    /// Operator control, which fault rules and experiments never shed: an operator must
    /// always reach the API that removes the rule that sheds (FIT-1).
    pub const fn is_operator_control(self) -> bool {
        matches!(self, RouteKind::Admin)
    }

    /// Stable snake_case name, the same as the config key; for errors and metrics.
    pub const fn as_str(self) -> &'static str {
        match self {
            RouteKind::LivePlaylist => "live_playlist",
            RouteKind::LiveSegment => "live_segment",
            RouteKind::PlaybackStart => "playback_start",
            RouteKind::Relay => "relay",
            RouteKind::AnonymousRelay => "anonymous_relay",
            RouteKind::ArchivePlaylist => "archive_playlist",
            RouteKind::ArchiveSegment => "archive_segment",
            RouteKind::Thumbnail => "thumbnail",
            RouteKind::MeetingMetadata => "meeting_metadata",
            RouteKind::Status => "status",
            RouteKind::Admin => "admin",
            RouteKind::Telemetry => "telemetry",
            RouteKind::Prefetch => "prefetch",
            RouteKind::Other => "other",
        }
    }
}

/// A member identity reduced to a 64-bit hash (of the pass subject or member header),
/// so facts stay `Copy` and matching never allocates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(transparent)]
pub struct MemberId(pub u64);

/// Everything classification and fault injection look at, gathered once per request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestFacts {
    /// Which route the request targets.
    pub route: RouteKind,
    /// The player family, from the User-Agent or a device header.
    pub device: DeviceType,
    /// The member, when the pass, session or a member header identifies one.
    pub member: Option<MemberId>,
    /// Whether this member currently has a running playback on this node.
    pub in_playback: bool,
}

/// The member id of a member name (the `X-Brdyun-Member` header or a fault rule's
/// `members` entry): 64-bit FNV-1a of the bytes, so both sides hash alike, without
/// allocation. An empty name identifies nobody.
pub fn member_id(name: &[u8]) -> Option<MemberId> {
    if name.is_empty() {
        return None;
    }
    let hash = name.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    Some(MemberId(hash))
}
