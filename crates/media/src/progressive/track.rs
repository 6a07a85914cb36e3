//! One track's samples accumulated in the compact forms its `stbl` boxes take:
//! run-length durations and composition offsets, sync sample numbers, one size per
//! sample, one entry per chunk (about four bytes a sample).

use crate::fmp4::samples::{clamp_u32, Run};
use crate::fmp4::Fmp4Error;

/// The most samples one track may have: its tables (at most 24 bytes a sample with
/// its chunk) then stay far below the 32-bit size of `moov` with both tracks full,
/// and the count is 400 hours of 48 kHz AAC.
pub(super) const MAX_SAMPLES: usize = 1 << 26;

/// One track's samples, as its `stbl` lists them.
#[derive(Debug, Clone, Default)]
pub(super) struct TrackTable {
    /// Each sample's size in bytes (`stsz`).
    pub(super) sizes: Vec<u32>,
    /// Runs of (sample count, duration) of the samples whose duration is known (`stts`);
    /// the last sample's waits for the next sample's DTS or [`TrackTable::settle`].
    pub(super) durations: Vec<(u32, u32)>,
    /// Runs of (sample count, composition offset) (`ctts`).
    pub(super) offsets: Vec<(u32, i32)>,
    /// 1-based numbers of the sync samples (`stss`).
    pub(super) sync: Vec<u32>,
    /// Each chunk's (offset in the `mdat` payload, sample count).
    pub(super) chunks: Vec<(u64, u32)>,
    /// DTS of the first sample.
    pub(super) first_dts: Option<u64>,
    /// DTS of the last sample.
    last_dts: Option<u64>,
    /// Earliest and latest PTS of any sample.
    pub(super) pts_range: Option<(u64, u64)>,
}

impl TrackTable {
    /// Adds a segment's run of this track as one chunk at `offset` in the payload.
    pub(super) fn push_run(&mut self, run: &Run<'_>, offset: u64) -> Result<(), Fmp4Error> {
        if run.samples.is_empty() {
            return Ok(());
        }
        if self.sizes.len().saturating_add(run.samples.len()) > MAX_SAMPLES {
            return Err(Fmp4Error::TooLarge);
        }
        let count = run.samples.len() as u32;
        self.chunks.push((offset, count));
        for s in &run.samples {
            let size = u32::try_from(s.size).map_err(|_| Fmp4Error::TooLarge)?;
            if let Some(previous) = self.last_dts {
                push_run_length(
                    &mut self.durations,
                    clamp_u32(s.dts.saturating_sub(previous)),
                );
            }
            self.first_dts.get_or_insert(s.dts);
            self.last_dts = Some(s.dts);
            self.sizes.push(size);
            let cto = s.cto.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32;
            push_run_length(&mut self.offsets, cto);
            if s.sync {
                self.sync.push(self.sizes.len() as u32);
            }
            let pts = s.dts.saturating_add_signed(i64::from(cto));
            self.pts_range = Some(match self.pts_range {
                Some((lo, hi)) => (lo.min(pts), hi.max(pts)),
                None => (pts, pts),
            });
        }
        Ok(())
    }

    /// Gives the last sample the previous one's duration (or `default` when alone);
    /// returns that duration.
    pub(super) fn settle(&mut self, default: u64) -> u32 {
        if self.last_dts.take().is_none() {
            return 0;
        }
        let last = self
            .durations
            .last()
            .map_or(clamp_u32(default), |&(_, d)| d);
        push_run_length(&mut self.durations, last);
        last
    }

    /// Sum of the sample durations (the track's media duration).
    pub(super) fn media_duration(&self) -> u64 {
        self.durations
            .iter()
            .map(|&(n, d)| u64::from(n) * u64::from(d))
            .sum()
    }

    /// Whether the composition offsets are worth a `ctts`: some sample has PTS ≠ DTS.
    pub(super) fn has_offsets(&self) -> bool {
        self.offsets.iter().any(|&(_, o)| o != 0)
    }
}

/// Appends `value` to run-length `runs`.
fn push_run_length<T: PartialEq + Copy>(runs: &mut Vec<(u32, T)>, value: T) {
    match runs.last_mut() {
        Some((n, v)) if *v == value && *n < u32::MAX => *n += 1,
        _ => runs.push((1, value)),
    }
}

/// A settled track: its table and its last sample's duration.
#[derive(Debug, Clone, Default)]
pub(super) struct Settled {
    /// The table, every duration known.
    pub(super) table: TrackTable,
    /// The last sample's duration.
    pub(super) last_duration: u32,
}
