//! A meeting's lifecycle (MTG-1) and the MC's collection of meetings.
//!
//! ```text
//! created ──start──► live ──close──► closed
//!    └──────────────close───────────────┘
//! ```
//! Lock/unlock and the viewer limit apply until the meeting is closed; a closed meeting
//! never opens again (its id stays taken, so an old link never shows a new meeting).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::code::ErrorCode;

/// Most meetings one MC keeps (open and closed); creates beyond it are refused.
pub const MAX_MEETINGS: usize = 10_000;
/// Longest title accepted, in bytes.
pub const MAX_TITLE_LEN: usize = 256;
/// Most viewers a host may remove from one meeting (the list nodes check every
/// private viewer against).
pub const MAX_REMOVED_VIEWERS: usize = 10_000;
/// Longest viewer id (a viewer token's `sub`), bytes.
pub const MAX_VIEWER_ID_LEN: usize = 128;

/// A meeting id: it is the stream name in every node URL, so 1 to 64 of
/// `A-Z a-z 0-9 - _`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct MeetingId(String);

/// A meeting id that breaks the alphabet or length rule.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("a meeting id is 1 to 64 letters, digits, '-' or '_'")]
pub struct InvalidMeetingId;

impl MeetingId {
    /// Parses an id.
    ///
    /// # Errors
    /// [`InvalidMeetingId`] when it is empty, longer than 64 bytes or has other characters.
    pub fn parse(id: &str) -> Result<Self, InvalidMeetingId> {
        let ok = !id.is_empty()
            && id.len() <= 64
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if ok {
            Ok(Self(id.to_owned()))
        } else {
            Err(InvalidMeetingId)
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for MeetingId {
    type Error = InvalidMeetingId;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<MeetingId> for String {
    fn from(id: MeetingId) -> String {
        id.0
    }
}

impl fmt::Display for MeetingId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a meeting is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MeetingState {
    /// Created, not started: viewers get 103002, publishing is refused.
    Created,
    /// Started: the stream is accepted and delivered.
    Live,
    /// Closed for good: viewers get 103003.
    Closed,
}

/// The secrets of a meeting, made by the MC (randomness is not this crate's business).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeetingSecrets {
    /// The key a publisher must give (`rtmp://mc/live/<id>?key=<stream_key>`).
    pub stream_key: String,
    /// The bearer token of the meeting's host.
    pub host_token: String,
}

/// What a create request asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewMeeting {
    /// The id (the stream name on every node).
    pub id: String,
    /// A human title.
    #[serde(default)]
    pub title: String,
    /// Most viewers across all nodes; `None` for no limit.
    #[serde(default)]
    pub viewer_limit: Option<u32>,
    /// Viewers need a viewer token (a private meeting).
    #[serde(default)]
    pub private: bool,
    /// How long the recordings store keeps the meeting's recording, days (1 to
    /// [`MAX_RECORDING_DEPTH_DAYS`]); `None`: the store's default.
    #[serde(default)]
    pub recording_depth_days: Option<u32>,
    /// Its audio languages, the floor first ([`crate::languages::check`]); fewer than
    /// two: one audio.
    #[serde(default)]
    pub languages: Vec<crate::MeetingLanguage>,
}

/// The longest a meeting's recording may be kept, days (100 years).
pub const MAX_RECORDING_DEPTH_DAYS: u32 = 36_500;

/// A recording retention of `days`, in milliseconds (what the stores and sweeps count).
pub fn recording_depth_ms(days: u32) -> u64 {
    u64::from(days).saturating_mul(86_400_000)
}

/// One meeting as the MC keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meeting {
    /// The id.
    pub id: MeetingId,
    /// A human title.
    pub title: String,
    /// The lifecycle state.
    pub state: MeetingState,
    /// Locked by the host: no new viewers (103011); viewers already in stay.
    pub locked: bool,
    /// Most viewers across all nodes; `None` for no limit.
    pub viewer_limit: Option<u32>,
    /// The publish key.
    pub stream_key: String,
    /// The host's bearer token.
    pub host_token: String,
    /// When it was created, Unix ms.
    pub created_ms: i64,
    /// When it started, Unix ms.
    pub started_ms: Option<i64>,
    /// When it closed, Unix ms.
    pub closed_ms: Option<i64>,
    /// Viewers need a viewer token (absent from stores written before private
    /// meetings: public).
    #[serde(default)]
    pub private: bool,
    /// Viewer ids the host removed: nodes refuse their sessions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed_viewers: Vec<String>,
    /// How long the recordings store keeps its recording, days (`None`: the store's
    /// default; absent from stores written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recording_depth_days: Option<u32>,
    /// Its audio languages, the floor first (absent from stores written before them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub languages: Vec<crate::MeetingLanguage>,
}

/// A change a host or admin asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// created → live (idempotent on a live meeting).
    Start,
    /// Refuse new viewers.
    Lock,
    /// Accept new viewers again.
    Unlock,
    /// → closed (idempotent on a closed meeting).
    Close,
    /// Set or clear the viewer limit.
    SetViewerLimit(Option<u32>),
}

/// Why a meeting operation was refused; each maps to one public code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum MeetingError {
    /// A meeting with that id exists (open or closed): 102004.
    #[error("meeting already exists")]
    Exists,
    /// No meeting with that id: 104005.
    #[error("meeting not found")]
    NotFound,
    /// The meeting is closed: 103003.
    #[error("meeting closed")]
    Closed,
    /// The meeting has not started: 103002.
    #[error("meeting not started")]
    NotStarted,
    /// The meeting is locked: 103011.
    #[error("meeting locked")]
    Locked,
    /// The viewer limit is reached: 103006.
    #[error("meeting full")]
    Full,
    /// The MC holds [`MAX_MEETINGS`] meetings already: it cannot take more (102005).
    #[error("too many meetings")]
    Capacity,
}

impl MeetingError {
    /// The public code.
    pub fn code(self) -> ErrorCode {
        match self {
            MeetingError::Exists => ErrorCode::MeetingExists,
            MeetingError::NotFound => ErrorCode::NotOnMc,
            MeetingError::Closed => ErrorCode::Closed,
            MeetingError::NotStarted => ErrorCode::NotStarted,
            MeetingError::Locked => ErrorCode::Locked,
            MeetingError::Full => ErrorCode::Full,
            MeetingError::Capacity => ErrorCode::McUnavailable,
        }
    }
}

impl From<MeetingError> for ErrorCode {
    fn from(e: MeetingError) -> Self {
        e.code()
    }
}

impl Meeting {
    /// Applies an action at `now_ms`.
    ///
    /// # Errors
    /// [`MeetingError::Closed`] for anything but `Close` on a closed meeting.
    pub fn apply(&mut self, action: Action, now_ms: i64) -> Result<(), MeetingError> {
        if self.state == MeetingState::Closed {
            return match action {
                Action::Close => Ok(()),
                _ => Err(MeetingError::Closed),
            };
        }
        match action {
            Action::Start => {
                if self.state == MeetingState::Created {
                    self.state = MeetingState::Live;
                    self.started_ms = Some(now_ms);
                }
            }
            Action::Close => {
                self.state = MeetingState::Closed;
                self.closed_ms = Some(now_ms);
            }
            Action::Lock => self.locked = true,
            Action::Unlock => self.locked = false,
            Action::SetViewerLimit(limit) => self.viewer_limit = limit,
        }
        Ok(())
    }

    /// May one more viewer join, with `viewers` already watching across all nodes?
    ///
    /// # Errors
    /// Not started (103002), closed (103003), locked (103011) or full (103006), checked
    /// in that order.
    pub fn admit(&self, viewers: u64) -> Result<(), MeetingError> {
        match self.state {
            MeetingState::Created => Err(MeetingError::NotStarted),
            MeetingState::Closed => Err(MeetingError::Closed),
            MeetingState::Live if self.locked => Err(MeetingError::Locked),
            MeetingState::Live => match self.viewer_limit {
                Some(limit) if viewers >= u64::from(limit) => Err(MeetingError::Full),
                _ => Ok(()),
            },
        }
    }
}

/// Every meeting an MC knows, by id. Serializes to the MC's store as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meetings {
    meetings: BTreeMap<MeetingId, Meeting>,
}

impl Meetings {
    /// No meetings.
    pub fn new() -> Self {
        Self::default()
    }

    /// Creates a meeting in state `created`.
    ///
    /// # Errors
    /// [`MeetingError::Exists`] when the id is taken (even by a closed meeting),
    /// [`MeetingError::Capacity`] when the MC holds [`MAX_MEETINGS`].
    pub fn create(
        &mut self,
        id: MeetingId,
        request: &NewMeeting,
        secrets: MeetingSecrets,
        now_ms: i64,
    ) -> Result<&Meeting, MeetingError> {
        if self.meetings.contains_key(&id) {
            return Err(MeetingError::Exists);
        }
        if self.meetings.len() >= MAX_MEETINGS {
            return Err(MeetingError::Capacity);
        }
        let mut title = request.title.clone();
        truncate_utf8(&mut title, MAX_TITLE_LEN);
        let meeting = Meeting {
            id: id.clone(),
            title,
            state: MeetingState::Created,
            locked: false,
            viewer_limit: request.viewer_limit,
            stream_key: secrets.stream_key,
            host_token: secrets.host_token,
            created_ms: now_ms,
            started_ms: None,
            closed_ms: None,
            private: request.private,
            removed_viewers: Vec::new(),
            recording_depth_days: request.recording_depth_days,
            languages: request.languages.clone(),
        };
        Ok(self.meetings.entry(id).or_insert(meeting))
    }

    /// The meeting with this id.
    ///
    /// # Errors
    /// [`MeetingError::NotFound`].
    pub fn get(&self, id: &MeetingId) -> Result<&Meeting, MeetingError> {
        self.meetings.get(id).ok_or(MeetingError::NotFound)
    }

    /// Applies an action to a meeting and returns it as it is afterwards.
    ///
    /// # Errors
    /// [`MeetingError::NotFound`], or the meeting's own refusal ([`Meeting::apply`]).
    pub fn apply(
        &mut self,
        id: &MeetingId,
        action: Action,
        now_ms: i64,
    ) -> Result<&Meeting, MeetingError> {
        let meeting = self.meetings.get_mut(id).ok_or(MeetingError::NotFound)?;
        meeting.apply(action, now_ms)?;
        Ok(meeting)
    }

    /// Removes a viewer from a meeting (its host's decision): every node refuses that
    /// viewer's session from its next sync on. Idempotent.
    ///
    /// # Errors
    /// [`MeetingError::NotFound`], [`MeetingError::Closed`], or
    /// [`MeetingError::Capacity`] when the meeting's list is full.
    pub fn remove_viewer(
        &mut self,
        id: &MeetingId,
        viewer: &str,
    ) -> Result<&Meeting, MeetingError> {
        let meeting = self.meetings.get_mut(id).ok_or(MeetingError::NotFound)?;
        if meeting.state == MeetingState::Closed {
            return Err(MeetingError::Closed);
        }
        if !meeting.removed_viewers.iter().any(|v| v == viewer) {
            if meeting.removed_viewers.len() >= MAX_REMOVED_VIEWERS {
                return Err(MeetingError::Capacity);
            }
            meeting.removed_viewers.push(viewer.to_owned());
        }
        Ok(meeting)
    }

    /// Sets a meeting record as a shared store holds it (another MC's change seen
    /// through the store), replacing the one with its id.
    pub fn put(&mut self, meeting: Meeting) {
        self.meetings.insert(meeting.id.clone(), meeting);
    }

    /// Forgets a meeting the shared store no longer holds.
    pub fn forget(&mut self, id: &MeetingId) {
        self.meetings.remove(id);
    }

    /// All meetings, by id.
    pub fn iter(&self) -> impl Iterator<Item = &Meeting> {
        self.meetings.values()
    }

    /// How many meetings there are.
    pub fn len(&self) -> usize {
        self.meetings.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.meetings.is_empty()
    }
}

fn truncate_utf8(text: &mut String, max: usize) {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
}
