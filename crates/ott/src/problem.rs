//! The named problems of OTT groups, in the plain words the Backups screen shows
//! (OTT-OPS-1) and alert 78 carries (OTT-OPS-3).

use crate::view::{NodeId, Version};

/// Something that keeps a member from serving as a backup, or a group from being
/// protected. `Display` is the plain-words text; [`Problem::code`] a stable key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Problem {
    /// Failure detection marks the node dead.
    #[error("node {node} is not reachable in the mesh")]
    NodeDown {
        /// The node.
        node: NodeId,
    },
    /// Up in the mesh but silent: no heartbeat heard for longer than
    /// [`crate::SILENT_AFTER_MS`] (hung, or cut off).
    #[error("node {node} has not been heard from for {silent_ms} ms: it may be hung")]
    Unresponsive {
        /// The node.
        node: NodeId,
        /// Since its last heartbeat.
        silent_ms: i64,
    },
    /// The operator drains the node: it takes no new viewers.
    #[error("node {node} is draining: it takes no new viewers")]
    Draining {
        /// The node.
        node: NodeId,
    },
    /// OTT-GRP-5.
    #[error("node {node} runs version {version}, older than the minimum compatible {minimum}: its members accept no viewers")]
    VersionTooOld {
        /// The node.
        node: NodeId,
        /// What it runs.
        version: Version,
        /// The minimum.
        minimum: Version,
    },
    /// OTT-ELIG-1: "can substitute" is off.
    #[error("the member on node {node} is not offered as backup (can substitute is off)")]
    CannotSubstitute {
        /// The node.
        node: NodeId,
    },
    /// OTT-ELIG-1: no live window in the last 10 minutes.
    #[error("the member on node {node} has not delivered its live window in the last 10 minutes")]
    LiveWindowStale {
        /// The node.
        node: NodeId,
    },
    /// OTT-ELIG-2, OTT-GRP-4.
    #[error("the member on node {node} is not on the same timeline (not the same source)")]
    NotSameTimeline {
        /// The node.
        node: NodeId,
    },
    /// OTT-ELIG-3: no HLS over MPEG-TS.
    #[error("the member on node {node} does not deliver hls over mpeg-ts")]
    NotHlsTs {
        /// The node.
        node: NodeId,
    },
    /// OTT-ELIG-3: the rungs do not pair up one to one.
    #[error("the member on node {node} has a different ladder (number of rungs)")]
    LadderMismatch {
        /// The node.
        node: NodeId,
    },
    /// OTT-ELIG-3: a rung of another codec.
    #[error("the member on node {node} has rungs of another codec")]
    CodecMismatch {
        /// The node.
        node: NodeId,
    },
    /// OTT-ELIG-3: an adaptive package's rung above 1.25× ours.
    #[error("the member on node {node} has a rung above 1.25 times our bitrate")]
    BitrateTooHigh {
        /// The node.
        node: NodeId,
    },
    /// OTT-ELIG-3: one of our audio languages is not among its renditions, so a viewer
    /// listening to it would lose it there.
    #[error("the member on node {node} does not carry the audio language {language}")]
    LanguageMissing {
        /// The node.
        node: NodeId,
        /// The first of our languages it lacks (ISO 639-2).
        language: String,
    },
    /// OTT-ELIG-4, OTT-GRP-3.
    #[error("the clock of node {node} differs from ours by {offset_ms} ms, more than 240 s")]
    ClockSkew {
        /// The node.
        node: NodeId,
        /// Its clock minus ours.
        offset_ms: i64,
    },
    /// OTT-ELIG-4.
    #[error("node {node} does not have the ott view key")]
    NoViewKey {
        /// The node.
        node: NodeId,
    },
    /// OTT-ELIG-5, OTT-OVL-1.
    #[error("node {node} is overloaded and refuses viewers from other nodes")]
    Overloaded {
        /// The node.
        node: NodeId,
    },
    /// OTT-ADDR-2.
    #[error("a node has only private addresses for backup ({node})")]
    OnlyPrivateAddresses {
        /// The node.
        node: NodeId,
    },
    /// OTT-ADDR-3.
    #[error("a node has no https address for backup ({node})")]
    NoHttpsAddress {
        /// The node.
        node: NodeId,
    },
    /// OTT-ADDR-3: the certificate the node serves HTTPS with is not issued for its
    /// host name.
    #[error("a node's https certificate is not issued for its host name, so https viewers cannot be sent there ({node})")]
    CertificateNotForHostname {
        /// The node.
        node: NodeId,
    },
    /// OTT-ADDR-5.
    #[error("a node has only cdn names shared with other nodes, which cannot be backup addresses ({node})")]
    OnlyCdnSharedAddresses {
        /// The node.
        node: NodeId,
    },
    /// OTT-ADDR-1.
    #[error("a node announces no address for backup ({node})")]
    NoAddress {
        /// The node.
        node: NodeId,
    },
    /// OTT-GRP-2: fewer than two eligible members.
    #[error(
        "group {group} has {eligible} eligible member(s), fewer than two: it is not protected"
    )]
    NotEnoughMembers {
        /// The group.
        group: String,
        /// Eligible members, this node's included.
        eligible: usize,
    },
    /// This node has no member in the group it is asked about.
    #[error("this node has no member in group {group}")]
    NotInGroup {
        /// The group.
        group: String,
    },
}

impl Problem {
    /// A stable kebab-case key for APIs, metrics labels and alert labels.
    pub fn code(&self) -> &'static str {
        match self {
            Problem::NodeDown { .. } => "node-down",
            Problem::Unresponsive { .. } => "unresponsive",
            Problem::Draining { .. } => "draining",
            Problem::VersionTooOld { .. } => "version-too-old",
            Problem::CannotSubstitute { .. } => "cannot-substitute",
            Problem::LiveWindowStale { .. } => "live-window-stale",
            Problem::NotSameTimeline { .. } => "not-same-timeline",
            Problem::NotHlsTs { .. } => "not-hls-ts",
            Problem::LadderMismatch { .. } => "ladder-mismatch",
            Problem::CodecMismatch { .. } => "codec-mismatch",
            Problem::BitrateTooHigh { .. } => "bitrate-too-high",
            Problem::LanguageMissing { .. } => "language-missing",
            Problem::ClockSkew { .. } => "clock-skew",
            Problem::NoViewKey { .. } => "no-view-key",
            Problem::Overloaded { .. } => "overloaded",
            Problem::OnlyPrivateAddresses { .. } => "only-private-addresses",
            Problem::NoHttpsAddress { .. } => "no-https-address",
            Problem::CertificateNotForHostname { .. } => "certificate-not-for-hostname",
            Problem::OnlyCdnSharedAddresses { .. } => "only-cdn-shared-addresses",
            Problem::NoAddress { .. } => "no-address",
            Problem::NotEnoughMembers { .. } => "not-enough-members",
            Problem::NotInGroup { .. } => "not-in-group",
        }
    }

    /// The node the problem is about, if it is about one.
    pub fn node(&self) -> Option<&NodeId> {
        match self {
            Problem::NodeDown { node }
            | Problem::Unresponsive { node, .. }
            | Problem::Draining { node }
            | Problem::VersionTooOld { node, .. }
            | Problem::CannotSubstitute { node }
            | Problem::LiveWindowStale { node }
            | Problem::NotSameTimeline { node }
            | Problem::NotHlsTs { node }
            | Problem::LadderMismatch { node }
            | Problem::CodecMismatch { node }
            | Problem::BitrateTooHigh { node }
            | Problem::LanguageMissing { node, .. }
            | Problem::ClockSkew { node, .. }
            | Problem::NoViewKey { node }
            | Problem::Overloaded { node }
            | Problem::OnlyPrivateAddresses { node }
            | Problem::NoHttpsAddress { node }
            | Problem::CertificateNotForHostname { node }
            | Problem::OnlyCdnSharedAddresses { node }
            | Problem::NoAddress { node } => Some(node),
            Problem::NotEnoughMembers { .. } | Problem::NotInGroup { .. } => None,
        }
    }

    /// Problems that alert 78 (`reserve-ott-problem`) reports: everything about a
    /// member or node except overload (alert 79), an operator's drain, and the
    /// group-level ones (alert 70).
    pub fn is_member_problem(&self) -> bool {
        !matches!(
            self,
            Problem::Overloaded { .. }
                | Problem::Draining { .. }
                | Problem::NotEnoughMembers { .. }
                | Problem::NotInGroup { .. }
        )
    }
}
