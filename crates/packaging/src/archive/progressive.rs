//! A run of archived segments as one progressive ("faststart") MP4 file: `ftyp`, the
//! `moov` indexing every sample, one `mdat` — for editors and players that take no
//! fragmented file. Two blocking passes over the archived TS, one segment in memory
//! at a time ([`media::progressive`]):
//!
//! 1. [`plan`] reads every segment of the run and gives the file's head, its length
//!    (an HTTP answer's Content-Length) and each segment's share of the `mdat`;
//! 2. [`chunk`] packages one segment's share, in the plan's order, as the answer is
//!    sent; a segment whose bytes no longer match the plan fails, so a file never
//!    indexes bytes it does not hold.
//!
//! The tracks are those of the run's init configuration, derived as
//! [`super::fmp4::init`] derives it (the run's first segment, or the segments before it).

use bytes::Bytes;
use dvr::index::Entry;
use media::fmp4::{frames_from_ts, Fmp4Error, InitConfig};
use media::progressive::{write_chunks, SampleTables};

use super::fmp4::{archived, read_marked, runs, ArchiveFmp4Error};
use super::SegmentSource;

/// Pass 1's result: everything needed to send the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgressivePlan {
    /// The file's first bytes: `ftyp`, `moov` and the `mdat` header.
    pub head: Bytes,
    /// The whole file's length.
    pub total_len: u64,
    /// Each segment's MSN and the bytes [`chunk`] gives for it, in file order.
    pub segments: Vec<(u64, u64)>,
    /// The tracks the file carries.
    pub config: InitConfig,
}

/// Why a progressive file cannot be planned or one of its chunks written.
#[derive(Debug, thiserror::Error)]
pub enum ProgressiveError {
    /// No segment was asked for.
    #[error("no segments")]
    NoSegments,
    /// A segment is not (or no longer) archived.
    #[error("segment {0} is not archived")]
    NotArchived(u64),
    /// The segments are not one run: a discontinuity or a gap lies between them (one
    /// file has one `moov`).
    #[error("segments are not one run")]
    NotOneRun,
    /// An archived segment could not be read or has no configuration.
    #[error(transparent)]
    Archive(#[from] ArchiveFmp4Error),
    /// The samples do not fit a progressive file (see [`Fmp4Error`]).
    #[error("cannot package: {0}")]
    Package(#[from] Fmp4Error),
    /// The caller stopped wanting the file (its client left) before the plan was done.
    #[error("no longer wanted")]
    Abandoned,
    /// [`chunk`] was asked for a segment the plan does not hold.
    #[error("segment {0} is not in the plan")]
    NotPlanned(u64),
    /// A segment's samples are not what the plan measured: the archive changed.
    #[error("segment {msn} changed: {actual} bytes where the plan has {expected}")]
    Changed {
        /// The segment.
        msn: u64,
        /// Its bytes by the plan.
        expected: u64,
        /// Its bytes now.
        actual: u64,
    },
}

/// Pass 1: reads archived segments `msns` (oldest first, one run) and plans their
/// progressive file. Blocking; reads every segment once, keeping one at a time, and
/// asks `wanted` before each: a plan nobody waits for any more stops
/// ([`ProgressiveError::Abandoned`]).
///
/// # Errors
/// [`ProgressiveError::NoSegments`], [`ProgressiveError::NotArchived`] and
/// [`ProgressiveError::NotOneRun`] for a request the archive cannot answer;
/// [`ProgressiveError::Archive`] when a segment cannot be read or configured;
/// [`ProgressiveError::Package`] when the samples do not fit a file.
pub fn plan(
    reader: &dyn SegmentSource,
    msns: &[u64],
    wanted: &dyn Fn() -> bool,
) -> Result<ProgressivePlan, ProgressiveError> {
    let first = *msns.first().ok_or(ProgressiveError::NoSegments)?;
    let entries = msns
        .iter()
        .map(|&msn| reader.entry(msn).ok_or(ProgressiveError::NotArchived(msn)))
        .collect::<Result<Vec<Entry>, _>>()?;
    if runs(&entries).len() != 1 {
        return Err(ProgressiveError::NotOneRun);
    }
    let (first_ts, first_marker, config) =
        archived(reader, first)?.ok_or(ProgressiveError::NotArchived(first))?;
    let mut tables = SampleTables::new(&config);
    tables.push_segment(&frames_from_ts(&first_ts, first_marker.start_ts))?;
    drop(first_ts);
    for entry in &entries[1..] {
        if !wanted() {
            return Err(ProgressiveError::Abandoned);
        }
        let (ts, marker) = read_marked(reader, entry)?;
        tables.push_segment(&frames_from_ts(&ts, marker.start_ts))?;
    }
    let head = tables.finish()?;
    Ok(ProgressivePlan {
        head: Bytes::from(head.bytes),
        total_len: head.total_len,
        segments: msns.iter().copied().zip(head.segment_lens).collect(),
        config,
    })
}

/// Pass 2: segment `msn`'s share of the file's `mdat` (its video chunk, then its audio
/// chunk), as `plan` measured it. Blocking; reads the one segment.
///
/// # Errors
/// [`ProgressiveError::NotPlanned`] for a segment the plan lacks,
/// [`ProgressiveError::NotArchived`] and [`ProgressiveError::Archive`] when it cannot
/// be read, [`ProgressiveError::Changed`] when its samples differ from the plan's.
pub fn chunk(
    reader: &dyn SegmentSource,
    plan: &ProgressivePlan,
    msn: u64,
) -> Result<Bytes, ProgressiveError> {
    // The plan's segments are in MSN order (one run, oldest first).
    let expected = plan
        .segments
        .binary_search_by_key(&msn, |&(m, _)| m)
        .map(|at| plan.segments[at].1)
        .map_err(|_| ProgressiveError::NotPlanned(msn))?;
    let entry = reader
        .entry(msn)
        .ok_or(ProgressiveError::NotArchived(msn))?;
    let (ts, marker) = read_marked(reader, &entry)?;
    let frames = frames_from_ts(&ts, marker.start_ts);
    let mut out = Vec::with_capacity(usize::try_from(expected).unwrap_or(0));
    let actual = write_chunks(&plan.config, &frames, &mut out);
    if actual != expected {
        return Err(ProgressiveError::Changed {
            msn,
            expected,
            actual,
        });
    }
    Ok(Bytes::from(out))
}
