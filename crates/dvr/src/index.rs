//! The archive index: pure, in memory, ordered by media sequence number and time.
//!
//! Entries are appended in recording order (strictly increasing MSN, non-decreasing
//! start time) and removed only from the front (retention), so the index is a vector
//! with a moving head: appends, lookups by MSN and range queries are O(1) or O(log n)
//! and a query returns a borrowed slice. Gaps (missing sequence numbers, or time
//! between one entry's end and the next one's start) are kept in a side list updated
//! on each append and trim, so the status of a week-long archive costs nothing.

use std::collections::VecDeque;

use crate::retention::Retention;
use crate::ArchiveRange;

/// Two consecutive entries further apart than this (ms) are separated by a gap; below
/// it, the difference is rounding of durations to milliseconds.
pub const GAP_TOLERANCE_MS: i64 = 500;

/// One archived segment: where it sits on the timeline and where its bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Media sequence number.
    pub msn: u64,
    /// Discontinuity sequence number.
    pub discontinuity_seq: u64,
    /// The live playlist had EXT-X-DISCONTINUITY before this segment.
    pub discontinuous: bool,
    /// Program date time of the first frame, Unix milliseconds.
    pub start_ms: i64,
    /// Duration in 90 kHz ticks.
    pub duration_ticks: u64,
    /// The data file (a time-span number, see `store`).
    pub file: u32,
    /// Byte offset in the data file.
    pub offset: u64,
    /// Length in bytes.
    pub size: u32,
}

impl Entry {
    /// Duration in milliseconds, rounded to nearest.
    pub fn duration_ms(&self) -> i64 {
        i64::try_from(self.duration_ticks.saturating_add(45) / 90).unwrap_or(i64::MAX)
    }

    /// End of the segment, Unix milliseconds.
    pub fn end_ms(&self) -> i64 {
        self.start_ms.saturating_add(self.duration_ms())
    }
}

/// Why an entry was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    /// The MSN does not move forward: numbers are the archive's keys.
    #[error("msn {msn} is not after the newest archived msn {newest}")]
    MsnNotIncreasing {
        /// The refused number.
        msn: u64,
        /// The newest number in the index.
        newest: u64,
    },
    /// The start time goes back before the newest entry's start.
    #[error("segment starts at {start_ms} before the newest archived start {newest_start_ms}")]
    TimeGoesBack {
        /// The refused start.
        start_ms: i64,
        /// The newest start in the index.
        newest_start_ms: i64,
    },
}

/// Entries of a query, with the ordinal of the first: ordinals number the entries of
/// the index consecutively and never change while the index lives (a trim moves the
/// base), so a sliding playlist can use them as its media sequence numbers even across
/// gaps in the MSNs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slice<'a> {
    /// Ordinal of `entries[0]`.
    pub first_ordinal: u64,
    /// Discontinuities (flagged or over a gap) from the start of the index up to and
    /// including `entries[0]`: the EXT-X-DISCONTINUITY-SEQUENCE of a playlist that starts
    /// there, stable while the index lives.
    pub first_discontinuity: u64,
    /// The entries, oldest first.
    pub entries: &'a [Entry],
}

/// A gap between two archived entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Gap {
    range: ArchiveRange,
    /// The MSN of the entry after the gap.
    next_msn: u64,
}

/// The index of one archive (one stream, one protocol).
#[derive(Debug, Clone, Default)]
pub struct Index {
    entries: Vec<Entry>,
    /// Per entry, the running count of breaks (discontinuity or gap) up to it.
    breaks: Vec<u64>,
    head: usize,
    base_ordinal: u64,
    bytes: u64,
    gaps: VecDeque<Gap>,
}

/// True when `b` does not follow `a` without a hole (missing MSNs or missing time).
pub fn is_gap(a: &Entry, b: &Entry) -> bool {
    b.msn != a.msn.saturating_add(1) || b.start_ms > a.end_ms().saturating_add(GAP_TOLERANCE_MS)
}

impl Index {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// The live entries, oldest first.
    pub fn entries(&self) -> &[Entry] {
        self.entries.get(self.head..).unwrap_or(&[])
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len() - self.head
    }

    /// True when nothing is archived.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Total bytes of the archived segments.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The oldest entry.
    pub fn first(&self) -> Option<&Entry> {
        self.entries().first()
    }

    /// The newest entry.
    pub fn last(&self) -> Option<&Entry> {
        self.entries().last()
    }

    /// Appends the newest entry.
    ///
    /// # Errors
    /// The MSN does not increase or the start time goes back; the index is unchanged.
    pub fn push(&mut self, entry: Entry) -> Result<(), IndexError> {
        let mut brk = entry.discontinuous;
        if let Some(last) = self.last().copied() {
            if entry.msn <= last.msn {
                return Err(IndexError::MsnNotIncreasing {
                    msn: entry.msn,
                    newest: last.msn,
                });
            }
            if entry.start_ms < last.start_ms {
                return Err(IndexError::TimeGoesBack {
                    start_ms: entry.start_ms,
                    newest_start_ms: last.start_ms,
                });
            }
            if is_gap(&last, &entry) {
                brk = true;
                self.gaps.push_back(Gap {
                    range: ArchiveRange {
                        from_ms: last.end_ms(),
                        to_ms: entry.start_ms.max(last.end_ms()),
                    },
                    next_msn: entry.msn,
                });
            }
        }
        let before = self.breaks.last().copied().unwrap_or(0);
        self.breaks.push(before + u64::from(brk));
        self.bytes += u64::from(entry.size);
        self.entries.push(entry);
        Ok(())
    }

    /// The archive's extent, oldest start to newest end (OTT-ARCH-2).
    pub fn range(&self) -> Option<ArchiveRange> {
        Some(ArchiveRange {
            from_ms: self.first()?.start_ms,
            to_ms: self.last()?.end_ms(),
        })
    }

    /// The gaps inside the range, oldest first.
    pub fn gaps(&self) -> impl ExactSizeIterator<Item = ArchiveRange> + '_ {
        self.gaps.iter().map(|g| g.range)
    }

    /// The entries that overlap `[from_ms, to_ms)`, oldest first.
    pub fn query(&self, from_ms: i64, to_ms: i64) -> Slice<'_> {
        let entries = self.entries();
        let mut lo = entries.partition_point(|e| e.start_ms < from_ms);
        while lo > 0 && entries[lo - 1].end_ms() > from_ms {
            lo -= 1;
        }
        let hi = entries.partition_point(|e| e.start_ms < to_ms).max(lo);
        self.slice(lo, hi)
    }

    /// The entries from ordinal `first` on (at most `limit`), oldest first.
    pub fn from_ordinal(&self, first: u64, limit: usize) -> Slice<'_> {
        let entries = self.entries();
        let lo = usize::try_from(first.saturating_sub(self.base_ordinal))
            .unwrap_or(usize::MAX)
            .min(entries.len());
        let hi = lo.saturating_add(limit).min(entries.len());
        self.slice(lo, hi)
    }

    /// The entries `lo..hi` (relative to the head) as a slice; `lo <= hi <= len`.
    fn slice(&self, lo: usize, hi: usize) -> Slice<'_> {
        let entries = self.entries();
        Slice {
            first_ordinal: self.base_ordinal + lo as u64,
            first_discontinuity: self.breaks.get(self.head + lo).copied().unwrap_or(0),
            entries: entries.get(lo..hi).unwrap_or(&[]),
        }
    }

    /// The entry with this MSN.
    pub fn by_msn(&self, msn: u64) -> Option<&Entry> {
        let entries = self.entries();
        entries
            .binary_search_by_key(&msn, |e| e.msn)
            .ok()
            .and_then(|i| entries.get(i))
    }

    /// Drops the `count` oldest entries (or all). Returns how many were dropped.
    pub fn pop_front(&mut self, count: usize) -> usize {
        let count = count.min(self.len());
        for entry in &self.entries[self.head..self.head + count] {
            self.bytes -= u64::from(entry.size);
        }
        self.head += count;
        self.base_ordinal += count as u64;
        if let Some(first_msn) = self.first().map(|e| e.msn) {
            while self.gaps.front().is_some_and(|g| g.next_msn <= first_msn) {
                self.gaps.pop_front();
            }
        } else {
            self.gaps.clear();
        }
        // Reclaim the dead prefix once it outweighs the live part.
        if self.head > 1024 && self.head * 2 > self.entries.len() {
            self.entries.drain(..self.head);
            self.breaks.drain(..self.head);
            self.head = 0;
        }
        count
    }

    /// Applies a retention policy at `now_ms`: entries that ended more than the depth
    /// ago go, then whole data files, oldest first, while the bytes exceed the limit
    /// (a file is the unit the disk gets back). Returns how many entries were dropped.
    pub fn retain(&mut self, policy: &Retention, now_ms: i64) -> usize {
        let mut dropped = 0;
        if let Some(depth) = policy.depth_ms {
            let horizon = now_ms.saturating_sub(i64::try_from(depth).unwrap_or(i64::MAX));
            let old = self.entries().partition_point(|e| e.end_ms() <= horizon);
            dropped += self.pop_front(old);
        }
        if let Some(max_bytes) = policy.max_bytes {
            while self.bytes > max_bytes {
                let Some(file) = self.first().map(|e| e.file) else {
                    break;
                };
                let same = self.entries().partition_point(|e| e.file <= file);
                dropped += self.pop_front(same.max(1));
            }
        }
        dropped
    }
}
