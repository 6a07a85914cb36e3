//! The DVR archive of a node: every segment a stream publishes, kept on disk by time,
//! served back as catch-up playlists and downloads (OTT-ARCH-1/2; DESIGN.md
//! invariant 6, "nothing acknowledged is lost").
//!
//! # Shape
//!
//! - [`index`] is **pure** (no I/O, no clock): an in-memory, time-ordered list of
//!   [`Entry`]s with range and gap queries and retention by depth and by bytes, the
//!   current time passed in. It is what every query (playlists, status, cluster gossip
//!   of [`ArchiveRange`]s) reads.
//! - [`playlist`] is pure too: an index slice as a VOD, EVENT or sliding live playlist.
//! - [`store`] puts an index on disk: segment data appended to one file per time span
//!   (10 minutes by default), and an append-only index log whose records carry a length
//!   and a CRC-32 ([`log`]). At open the log is replayed, a torn or corrupt tail is cut
//!   off, entries whose data is missing are dropped, data past the last indexed byte
//!   (a segment half-written at a crash) is truncated and files nothing refers to are
//!   removed. Every write goes through a [`files::FileLayer`], so a failing disk can be
//!   injected in tests.
//!
//! - [`remote`] attaches a second tier (object storage): its entries fill what the disk
//!   lacks, in one merged index every query reads.
//!
//! Data flows one way: the live pipeline hands a finished segment to a recorder task
//! (in `server`), which calls [`store::Store::append`] off the live path; readers hold an
//! [`store::ArchiveReader`] that shares the index behind a read-write lock and read the
//! data files directly.

pub mod files;
pub mod index;
pub mod log;
pub mod playlist;
pub mod remote;
pub mod retention;
pub mod store;

pub use index::{Entry, Index, IndexError, Slice};
pub use retention::{parse_depth, Retention};
pub use store::{ArchiveReader, Recovery, Store, StoreError};

use serde::Serialize;

/// The container format of an archive. Each protocol keeps its own archive (OTT-ARCH-1:
/// the archive of the request's protocol counts), in its own directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// MPEG-TS segments, served to HLS players.
    Ts,
    /// fMP4/CMAF segments for LL-HLS and DASH (not recorded yet).
    Fmp4,
}

impl Protocol {
    /// The directory name of this protocol's archive under a stream's directory.
    pub fn dir_name(self) -> &'static str {
        match self {
            Protocol::Ts => "ts",
            Protocol::Fmp4 => "fmp4",
        }
    }
}

/// A period of wall-clock time, `[from_ms, to_ms)` in Unix milliseconds: the extent of an
/// archive (oldest..newest recording) or one gap inside it. Other crates (the cluster's
/// gossip, OTT-ARCH-2) compare nodes by these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct ArchiveRange {
    /// Start, Unix milliseconds (inclusive).
    pub from_ms: i64,
    /// End, Unix milliseconds (exclusive).
    pub to_ms: i64,
}

impl ArchiveRange {
    /// Length in milliseconds (0 when empty or inverted).
    pub fn duration_ms(&self) -> i64 {
        (self.to_ms - self.from_ms).max(0)
    }

    /// How many milliseconds of `other` this range covers.
    pub fn overlap_ms(&self, other: &ArchiveRange) -> i64 {
        (self.to_ms.min(other.to_ms) - self.from_ms.max(other.from_ms)).max(0)
    }
}
