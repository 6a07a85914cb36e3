//! Where archived segments are read from: the node's local archive today
//! (`dvr::ArchiveReader`), another store behind the same trait next. The archive's
//! packaging ([`super::fmp4`], [`super::master`]) reads through it only.

use std::io;
use std::path::Path;

use dvr::index::Entry;

/// An archive of one rendition: its index and its segments' bytes.
pub trait SegmentSource: Send + Sync + std::fmt::Debug {
    /// What tells this archive from every other in the process (the local archive's
    /// directory): the key of the facts derived from it and cached.
    fn key(&self) -> &Path;

    /// The index entry of archived segment `msn`.
    fn entry(&self, msn: u64) -> Option<Entry>;

    /// The entries of archived segment `msn` and of up to `before` segments archived
    /// just ahead of it, oldest first, with the place of `msn`'s among them.
    fn around(&self, msn: u64, before: usize) -> Option<(Vec<Entry>, usize)>;

    /// One archived segment's bytes.
    ///
    /// # Errors
    /// The segment is gone (retention ran meanwhile) or unreadable.
    fn read(&self, entry: &Entry) -> io::Result<Vec<u8>>;

    /// The first `len` bytes of one archived segment (all of it when shorter): what a
    /// reader of the segment's head (its marker, its caption block) needs.
    ///
    /// # Errors
    /// As [`SegmentSource::read`].
    fn read_head(&self, entry: &Entry, len: usize) -> io::Result<Vec<u8>>;
}

impl SegmentSource for dvr::ArchiveReader {
    fn key(&self) -> &Path {
        self.dir()
    }

    fn entry(&self, msn: u64) -> Option<Entry> {
        self.with_index(|index| index.by_msn(msn).copied())
    }

    fn around(&self, msn: u64, before: usize) -> Option<(Vec<Entry>, usize)> {
        self.with_index(|index| {
            let all = index.entries();
            let at = all.partition_point(|e| e.msn < msn);
            (all.get(at)?.msn == msn).then(|| {
                let lo = at.saturating_sub(before);
                (all[lo..=at].to_vec(), at - lo)
            })
        })
    }

    fn read(&self, entry: &Entry) -> io::Result<Vec<u8>> {
        dvr::ArchiveReader::read(self, entry)
    }

    fn read_head(&self, entry: &Entry, len: usize) -> io::Result<Vec<u8>> {
        dvr::ArchiveReader::read_head(self, entry, len)
    }
}
