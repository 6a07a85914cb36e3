//! Every per-stream file name of a node and an MC ([`stream_file`], [`archive`],
//! [`fmp4`], [`llhls`], [`subtitles`]) and the one number grammar they share
//! ([`number`]): what the manifests here write and what the node's route table parses
//! back. Nothing here does I/O or allocates.

pub mod archive;
pub mod fmp4;
pub mod llhls;
pub mod number;
pub mod stream_file;
pub mod subtitles;

pub use archive::{period_ms, ArchiveRequest, MAX_PERIOD_SECS};
pub use fmp4::Fmp4File;
pub use llhls::{BadQuery, Directives, LlFile};
pub use stream_file::{relay_query, segment_uri, FileRole, RelayQuery, StreamFile};
pub use subtitles::SubtitleFile;

/// The path of the node's clock, the `UTCTiming` every live MPD names.
pub const UTC_TIMING_PATH: &str = "/api/time";
