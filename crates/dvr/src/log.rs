//! The index log: an append-only file of records, each `[length u32 LE][crc32 u32 LE]
//! [payload]`, so a reader can tell a complete record from a torn or corrupted one.
//!
//! Replaying the log rebuilds the index: a `Segment` record appends an entry, a `Trim`
//! record drops every entry before an MSN (retention). Replay stops at the first record
//! that is short, too long or fails its CRC; everything from there on is a torn tail
//! from a crash and is cut off.

use crate::index::Entry;

/// Bytes before a payload: length and CRC.
pub const HEADER_LEN: usize = 8;
/// No payload is longer than this; a larger length field is corruption.
pub const MAX_PAYLOAD: usize = 256;

const KIND_SEGMENT: u8 = 1;
const KIND_TRIM: u8 = 2;

/// One record of the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record {
    /// A segment was archived.
    Segment(Entry),
    /// Entries with an MSN below this one were dropped by retention.
    Trim {
        /// The first MSN kept.
        first_kept_msn: u64,
    },
}

impl Record {
    /// The record as it is written to the log, header included.
    pub fn encode(&self) -> Vec<u8> {
        let mut payload = Vec::with_capacity(64);
        match self {
            Record::Segment(e) => {
                payload.push(KIND_SEGMENT);
                payload.extend_from_slice(&e.msn.to_le_bytes());
                payload.extend_from_slice(&e.discontinuity_seq.to_le_bytes());
                payload.push(u8::from(e.discontinuous));
                payload.extend_from_slice(&e.start_ms.to_le_bytes());
                payload.extend_from_slice(&e.duration_ticks.to_le_bytes());
                payload.extend_from_slice(&e.file.to_le_bytes());
                payload.extend_from_slice(&e.offset.to_le_bytes());
                payload.extend_from_slice(&e.size.to_le_bytes());
            }
            Record::Trim { first_kept_msn } => {
                payload.push(KIND_TRIM);
                payload.extend_from_slice(&first_kept_msn.to_le_bytes());
            }
        }
        let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
        let len = u32::try_from(payload.len()).expect("payloads are a few dozen bytes");
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&crc32(&payload).to_le_bytes());
        out.extend_from_slice(&payload);
        out
    }

    fn decode_payload(payload: &[u8]) -> Option<Record> {
        let mut r = Reader(payload);
        let record = match r.u8()? {
            KIND_SEGMENT => Record::Segment(Entry {
                msn: r.u64()?,
                discontinuity_seq: r.u64()?,
                discontinuous: match r.u8()? {
                    0 => false,
                    1 => true,
                    _ => return None,
                },
                start_ms: i64::from_le_bytes(r.array()?),
                duration_ticks: r.u64()?,
                file: u32::from_le_bytes(r.array()?),
                offset: r.u64()?,
                size: u32::from_le_bytes(r.array()?),
            }),
            KIND_TRIM => Record::Trim {
                first_kept_msn: r.u64()?,
            },
            _ => return None,
        };
        r.0.is_empty().then_some(record)
    }
}

/// The records of a log, and how many leading bytes hold them (the rest is a torn or
/// corrupt tail).
pub fn decode_all(bytes: &[u8]) -> (Vec<Record>, usize) {
    let mut records = Vec::with_capacity(bytes.len() / 58);
    let mut at = 0usize;
    while let Some((record, len)) = decode_one(bytes.get(at..).unwrap_or(&[])) {
        records.push(record);
        at += len;
    }
    (records, at)
}

/// Decodes the record at the start of `bytes`: the record and its encoded length.
pub fn decode_one(bytes: &[u8]) -> Option<(Record, usize)> {
    let header: [u8; HEADER_LEN] = bytes.get(..HEADER_LEN)?.try_into().ok()?;
    let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let crc = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    if len == 0 || len > MAX_PAYLOAD {
        return None;
    }
    let payload = bytes.get(HEADER_LEN..HEADER_LEN + len)?;
    if crc32(payload) != crc {
        return None;
    }
    Some((Record::decode_payload(payload)?, HEADER_LEN + len))
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.0.split_first_chunk::<N>()?;
        self.0 = rest;
        Some(*head)
    }
    fn u8(&mut self) -> Option<u8> {
        self.array::<1>().map(|[b]| b)
    }
    fn u64(&mut self) -> Option<u64> {
        self.array().map(u64::from_le_bytes)
    }
}

/// CRC-32 (IEEE 802.3, reflected, the zlib one).
pub fn crc32(data: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            table[i] = c;
            i += 1;
        }
        table
    };
    let mut crc = 0xFFFF_FFFFu32;
    for &b in data {
        crc = TABLE[((crc ^ u32::from(b)) & 0xFF) as usize] ^ (crc >> 8);
    }
    crc ^ 0xFFFF_FFFF
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_of_check_string() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }
}
