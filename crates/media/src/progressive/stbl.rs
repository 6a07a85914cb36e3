//! The sample tables of one track (`stts`, `ctts`, `stss`, `stsz`, `stsc`, `co64`),
//! written from a settled [`TrackTable`].

use bytes::BufMut;

use super::track::TrackTable;
use crate::fmp4::bmff::{close, open_full};

/// Writes the tables of `table` (`stss` for video: its sync samples); returns where the
/// `co64` entries start, which hold offsets into the `mdat` payload until the caller
/// adds the head's length ([`add_to_offsets`]).
pub(super) fn write_tables(out: &mut Vec<u8>, table: &TrackTable, video: bool) -> usize {
    let stts = open_full(out, b"stts", 0, 0);
    out.put_u32(table.durations.len() as u32);
    for &(count, duration) in &table.durations {
        out.put_u32(count);
        out.put_u32(duration);
    }
    close(out, stts);
    if table.has_offsets() {
        let signed = table.offsets.iter().any(|&(_, o)| o < 0);
        let ctts = open_full(out, b"ctts", u8::from(signed), 0);
        out.put_u32(table.offsets.len() as u32);
        for &(count, offset) in &table.offsets {
            out.put_u32(count);
            out.put_i32(offset);
        }
        close(out, ctts);
    }
    if video {
        let stss = open_full(out, b"stss", 0, 0);
        out.put_u32(table.sync.len() as u32);
        for &number in &table.sync {
            out.put_u32(number);
        }
        close(out, stss);
    }
    let stsz = open_full(out, b"stsz", 0, 0);
    out.put_u32(0); // sample_size: each sample's below
    out.put_u32(table.sizes.len() as u32);
    for &size in &table.sizes {
        out.put_u32(size);
    }
    close(out, stsz);
    let stsc = open_full(out, b"stsc", 0, 0);
    let entries_at = out.len();
    out.put_u32(0);
    let mut entries = 0u32;
    let mut previous = None;
    for (i, &(_, count)) in table.chunks.iter().enumerate() {
        if previous != Some(count) {
            out.put_u32(i as u32 + 1); // first_chunk
            out.put_u32(count); // samples_per_chunk
            out.put_u32(1); // sample_description_index
            entries += 1;
            previous = Some(count);
        }
    }
    out[entries_at..entries_at + 4].copy_from_slice(&entries.to_be_bytes());
    close(out, stsc);
    let co64 = open_full(out, b"co64", 0, 0);
    out.put_u32(table.chunks.len() as u32);
    let offsets_at = out.len();
    for &(offset, _) in &table.chunks {
        out.put_u64(offset);
    }
    close(out, co64);
    offsets_at
}

/// Adds `base` to the `count` 64-bit chunk offsets written at `at`.
pub(super) fn add_to_offsets(out: &mut [u8], at: usize, count: usize, base: u64) {
    for entry in out[at..at + 8 * count].chunks_exact_mut(8) {
        let mut value = [0u8; 8];
        value.copy_from_slice(entry);
        let moved = u64::from_be_bytes(value).saturating_add(base);
        entry.copy_from_slice(&moved.to_be_bytes());
    }
}
