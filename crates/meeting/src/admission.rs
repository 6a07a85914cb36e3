//! A node's answer to a viewer opening a meeting's stream, from what the node knows of
//! its MC (the link) and of the meeting (its last view from the MC).
//!
//! The link decides what a node says when it cannot ask: 102005 when the MC was
//! reachable and is not now (a transient outage the node rides out, serving what it
//! has), 1041xx when no connection to the MC has been established since the node
//! started (one code per cause: usually configuration — wrong host, port, certificate).

use serde::{Deserialize, Serialize};

use crate::code::{ConnectCause, ErrorCode};
use crate::meeting::{Meeting, MeetingState};

/// What a node knows of its MC right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McLink {
    /// No answer yet (the first poll is in flight).
    Starting,
    /// The last poll succeeded.
    Connected,
    /// The MC answered before; the last poll failed with this cause.
    Lost(ConnectCause),
    /// The MC has never answered; the last poll failed with this cause.
    Unreachable(ConnectCause),
}

impl McLink {
    /// The link after a failed poll with `cause`.
    pub fn failed(self, cause: ConnectCause) -> McLink {
        match self {
            McLink::Connected | McLink::Lost(_) => McLink::Lost(cause),
            McLink::Starting | McLink::Unreachable(_) => McLink::Unreachable(cause),
        }
    }

    /// The code a viewer gets for a meeting the node cannot ask about, if any.
    pub fn error(self) -> Option<ErrorCode> {
        match self {
            McLink::Connected => None,
            McLink::Starting | McLink::Lost(_) => Some(ErrorCode::McUnavailable),
            McLink::Unreachable(cause) => Some(ErrorCode::McConnect(cause)),
        }
    }
}

/// One meeting as the MC shows it to nodes (no secrets).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MeetingView {
    /// The meeting id.
    pub id: String,
    /// Its lifecycle state.
    pub state: MeetingState,
    /// Locked by the host.
    pub locked: bool,
    /// The viewer limit across all nodes.
    pub viewer_limit: Option<u32>,
    /// Viewers across all nodes, as last reported to the MC.
    pub viewers: u64,
    /// The meeting's ABR ladder as the MC encodes it: rung names in master-playlist
    /// order (`source` for the source itself); empty without a ladder.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ladder: Vec<String>,
    /// Viewers need a viewer token (a private meeting).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub private: bool,
    /// Viewer ids the host removed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<String>,
    /// Live, but the MC has no media for it yet (its publisher has not started): nodes
    /// pull nothing and answer viewers "not started" until the MC has.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub waiting: bool,
    /// How long the recordings store keeps its recording, days (`None`: the node's
    /// setting): nodes expire the objects they upload by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recording_depth_days: Option<u32>,
    /// Its audio languages, the floor first: a node offers each other one as an
    /// audio-only rendition it pulls from the MC.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub languages: Vec<crate::MeetingLanguage>,
}

impl MeetingView {
    /// The view of a meeting with `viewers` counted across nodes.
    pub fn of(meeting: &Meeting, viewers: u64) -> Self {
        Self {
            id: meeting.id.to_string(),
            state: meeting.state,
            locked: meeting.locked,
            viewer_limit: meeting.viewer_limit,
            viewers,
            ladder: Vec::new(),
            private: meeting.private,
            removed: meeting.removed_viewers.clone(),
            waiting: false,
            recording_depth_days: meeting.recording_depth_days,
            languages: meeting.languages.clone(),
        }
    }
}

/// Decides whether a *new* viewer may open a meeting on this node (viewers already
/// watching are never turned away by this).
///
/// - `view`: the meeting as last seen from the MC (`None`: the MC does not list it);
/// - `reported_here`: this node's own count inside `view.viewers`;
/// - `here_now`: this node's viewers of the meeting right now;
/// - `delivering`: the node has the meeting's stream (segments to serve).
///
/// When the link is down, a meeting the node is delivering is judged on its last view
/// (viewers keep arriving while the MC is away); any other meeting gets the link's code.
///
/// # Errors
/// The code the viewer gets.
pub fn admit_new_viewer(
    link: McLink,
    view: Option<&MeetingView>,
    reported_here: u64,
    here_now: u64,
    delivering: bool,
) -> Result<(), ErrorCode> {
    if let Some(code) = link.error() {
        if !(delivering && view.is_some()) {
            return Err(code);
        }
    }
    let Some(view) = view else {
        return Err(ErrorCode::NotOnMc);
    };
    match view.state {
        MeetingState::Created => return Err(ErrorCode::NotStarted),
        MeetingState::Closed => return Err(ErrorCode::Closed),
        MeetingState::Live => {}
    }
    if view.locked {
        return Err(ErrorCode::Locked);
    }
    if let Some(limit) = view.viewer_limit {
        let elsewhere = view.viewers.saturating_sub(reported_here);
        if elsewhere.saturating_add(here_now) >= u64::from(limit) {
            return Err(ErrorCode::Full);
        }
    }
    if !delivering {
        // Live on the MC, not yet here: the stream is starting.
        return Err(ErrorCode::NotStarted);
    }
    Ok(())
}
