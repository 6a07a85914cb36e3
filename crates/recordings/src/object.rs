//! One archive object: the bytes of one closed data file's segments, then their index,
//! then a fixed footer — everything a reader needs in one object, so a conditional put
//! makes the whole unit appear at once or not at all.
//!
//! ```text
//! [segment bytes, back to back][index: one dvr log record per segment][footer: 24 bytes]
//! footer = b"BRDYARC1" ‖ index offset (u64 BE) ‖ index length (u64 BE)
//! ```
//!
//! Index records are the archive's own log records ([`dvr::log`], length and CRC-32
//! each) with offsets counted from the object's start. Everything in an object is a
//! function of the timeline (the segments' bytes and their places), so two nodes that
//! recorded the same segments write the same object under the same [`ObjectKey`].

use bytes::Bytes;
use dvr::log::{decode_all, Record};
use dvr::Entry;

/// The footer's magic: names the format and its version.
pub const MAGIC: &[u8; 8] = b"BRDYARC1";
/// Length of the footer.
pub const FOOTER_LEN: usize = 24;

/// Why an object cannot be read as an archive object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectError {
    /// The footer is missing, has another magic, or points outside the object.
    #[error("not an archive object (bad footer)")]
    BadFooter,
    /// An index record failed its length or CRC check, or is not a segment.
    #[error("archive object index is corrupt")]
    BadIndex,
}

/// Where a segment of an object is: the entry as recorded, with `offset` counted from
/// the object's start.
pub type ObjectEntry = Entry;

/// Builds an object from one data file's entries (in MSN order) and the data file's
/// bytes `data`, which start at byte `base` of the file: the segments are copied with
/// their offsets rebased to the object.
///
/// # Panics
/// Never for entries read from the same index as `data`; an entry outside `data` is a
/// caller bug and panics in debug builds only (the object is then built without it).
pub fn encode(entries: &[Entry], data: &[u8], base: u64) -> (Vec<u8>, Vec<ObjectEntry>) {
    let mut out = Vec::with_capacity(data.len() + entries.len() * 64 + FOOTER_LEN);
    let mut placed = Vec::with_capacity(entries.len());
    for entry in entries {
        let start = entry.offset.checked_sub(base).map(|s| s as usize);
        let range = start.and_then(|s| Some(s..s.checked_add(entry.size as usize)?));
        let Some(bytes) = range.and_then(|r| data.get(r)) else {
            debug_assert!(false, "entry {} outside the data read", entry.msn);
            continue;
        };
        let moved = Entry {
            offset: out.len() as u64,
            ..*entry
        };
        out.extend_from_slice(bytes);
        placed.push(moved);
    }
    let index_offset = out.len() as u64;
    for entry in &placed {
        out.extend_from_slice(&Record::Segment(*entry).encode());
    }
    let index_len = out.len() as u64 - index_offset;
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&index_offset.to_be_bytes());
    out.extend_from_slice(&index_len.to_be_bytes());
    (out, placed)
}

/// Reads a footer: where the index is (`offset..offset + len`) in an object of
/// `object_len` bytes.
///
/// # Errors
/// [`ObjectError::BadFooter`].
pub fn decode_footer(footer: &[u8], object_len: u64) -> Result<(u64, u64), ObjectError> {
    let footer: &[u8; FOOTER_LEN] = footer.try_into().map_err(|_| ObjectError::BadFooter)?;
    if &footer[..8] != MAGIC {
        return Err(ObjectError::BadFooter);
    }
    let number = |at: usize| {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&footer[at..at + 8]);
        u64::from_be_bytes(bytes)
    };
    let (offset, len) = (number(8), number(16));
    let end = offset.checked_add(len).ok_or(ObjectError::BadFooter)?;
    if end.checked_add(FOOTER_LEN as u64) != Some(object_len) {
        return Err(ObjectError::BadFooter);
    }
    Ok((offset, len))
}

/// Reads an object's index (the bytes `decode_footer` pointed at): every entry, each
/// inside the data part `0..index_offset`, in MSN order.
///
/// # Errors
/// [`ObjectError::BadIndex`] when any record is torn, corrupt, out of order or points
/// outside the data.
pub fn decode_index(index: &[u8], index_offset: u64) -> Result<Vec<ObjectEntry>, ObjectError> {
    let (records, valid) = decode_all(index);
    if valid != index.len() {
        return Err(ObjectError::BadIndex);
    }
    let mut entries: Vec<Entry> = Vec::with_capacity(records.len());
    for record in records {
        let Record::Segment(entry) = record else {
            return Err(ObjectError::BadIndex);
        };
        let inside = entry
            .offset
            .checked_add(u64::from(entry.size))
            .is_some_and(|end| end <= index_offset);
        let follows = entries.last().is_none_or(|l| entry.msn > l.msn);
        if !inside || !follows {
            return Err(ObjectError::BadIndex);
        }
        entries.push(entry);
    }
    Ok(entries)
}

/// Reads a whole object held in memory: its entries, checked.
///
/// # Errors
/// [`ObjectError`] when the footer or index is bad.
pub fn decode(object: &Bytes) -> Result<Vec<ObjectEntry>, ObjectError> {
    let len = object.len();
    let footer = object
        .get(len.saturating_sub(FOOTER_LEN)..)
        .ok_or(ObjectError::BadFooter)?;
    let (offset, index_len) = decode_footer(footer, len as u64)?;
    let index = &object[offset as usize..(offset + index_len) as usize];
    decode_index(index, offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(msn: u64, offset: u64, size: u32) -> Entry {
        Entry {
            msn,
            discontinuity_seq: 0,
            discontinuous: false,
            start_ms: 1_000 * msn as i64,
            duration_ticks: 90_000,
            file: 7,
            offset,
            size,
        }
    }

    #[test]
    fn an_object_reads_back_with_rebased_offsets() {
        let data: Vec<u8> = (0..30u8).collect();
        // The file's first segment was dropped by retention: the read starts at 10.
        let entries = [entry(2, 10, 8), entry(3, 18, 12)];
        let (object, placed) = encode(&entries, &data[10..], 10);
        let object = Bytes::from(object);
        let back = decode(&object).unwrap();
        assert_eq!(back, placed);
        assert_eq!(back[0].offset, 0);
        assert_eq!(&object[0..8], &data[10..18]);
        assert_eq!(&object[8..20], &data[18..30]);
    }

    #[test]
    fn a_damaged_object_is_refused_not_misread() {
        let data = vec![9u8; 16];
        let (object, _) = encode(&[entry(1, 0, 16)], &data, 0);
        for cut in [1, 5, 24, 30] {
            let short = Bytes::copy_from_slice(&object[..object.len() - cut]);
            assert!(decode(&short).is_err(), "cut {cut}");
        }
        let mut flipped = object.clone();
        let at = 20; // inside the index record
        flipped[at] ^= 0xff;
        assert_eq!(decode(&Bytes::from(flipped)), Err(ObjectError::BadIndex));
    }
}
