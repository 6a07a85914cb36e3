//! The meeting core of brdyun, shared by the MC (`brdyun mc`) and the nodes.
//!
//! Pure: no I/O, no clock, no randomness — time (`now_ms`) and secrets are passed in.
//!
//! - [`code`]: the one table of public error codes (102004 … 104118, 16): HTTP status,
//!   messages in English and Chinese, log level and metric label, and the 18
//!   [`ConnectCause`]s behind 104101–104118.
//! - [`meeting`]: a meeting's lifecycle (created → live → closed, lock, viewer limit,
//!   stream key) and the MC's collection of meetings, serializable for the MC's store.
//! - [`version`]: client versions (`X-Brdyun-Client-Version`) and the 102011 / 16 rule.
//! - [`viewers`]: viewer counts reported by nodes, summed across nodes by the MC.
//! - [`admission`]: a node's decision for a viewer opening a meeting's stream.
//! - [`languages`]: a meeting's audio languages (the floor and its interpretations).
//!
//! Data flow: the MC owns [`Meetings`] and [`ViewerCounts`]; nodes poll it and get a
//! [`MeetingView`] per meeting; a node answers each new viewer with
//! [`admission::admit_new_viewer`], whose error is an [`ErrorCode`] sent as
//! `{"code": N, "message": "..."}`.

pub mod admission;
/// The meeting codes, from the one code table of the `codes` crate.
pub mod code {
    pub use codes::meeting::*;
    pub use codes::{CodeInfo, LogLevel};
}
pub mod languages;
pub mod meeting;
pub mod session_keys;
pub mod version;
pub mod viewers;

pub use admission::{admit_new_viewer, McLink, MeetingView};
pub use code::{CodeInfo, ConnectCause, ErrorCode, LogLevel};
pub use languages::{LanguageProblem, MeetingLanguage};
pub use meeting::{
    recording_depth_ms, Action, InvalidMeetingId, Meeting, MeetingError, MeetingId, MeetingSecrets,
    MeetingState, Meetings, NewMeeting, MAX_RECORDING_DEPTH_DAYS,
};
pub use session_keys::{SessionKeyWire, SessionKeysWire, MAX_SESSION_KEYS};
pub use version::{check_client, ClientVersion, CLIENT_VERSION_HEADER};
pub use viewers::ViewerCounts;
