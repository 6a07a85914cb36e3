//! The URL grammar of a node and an MC, in one place: the route table ([`route`]),
//! every per-stream file name ([`stream_file`], [`archive`], [`fmp4`], [`llhls`],
//! [`subtitles`]) and
//! the one number grammar they share ([`number`]).
//!
//! A request's path is parsed once, at the edge, into a [`Target`] that travels in the
//! request's context: the edge counts it, the shedding layer classifies it, and the
//! stream handlers read its parsed file instead of parsing the name again. Nothing here
//! does I/O or allocates; the module depends on no other module of the crate but
//! `metrics` (for the label type).

pub mod route;

pub use packaging::url::{archive, fmp4, llhls, number, stream_file, subtitles};

pub use archive::{period_ms, ArchiveRequest, MAX_PERIOD_SECS};
pub use fmp4::Fmp4File;
pub use llhls::{BadQuery, Directives, LlFile};
pub use route::{Route, Target};
pub use stream_file::{relay_query, segment_uri, FileRole, RelayQuery, StreamFile};
pub use subtitles::SubtitleFile;
