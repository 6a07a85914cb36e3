//! PES packets: the header with its 33-bit PTS/DTS, and reassembly of a PES from the
//! payloads of consecutive transport packets.

use bytes::{Bytes, BytesMut};
use thiserror::Error;

use crate::PTS_MASK;

/// Why a PES header could not be read.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PesError {
    /// Fewer bytes than the header declares.
    #[error("pes header truncated")]
    Truncated,
    /// The packet does not start with the 0x000001 start code prefix.
    #[error("pes start code missing")]
    NoStartCode,
    /// The optional header does not start with the '10' marker bits.
    #[error("pes optional header malformed")]
    Malformed,
}

/// The fields of a PES header the demuxer needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PesHeader {
    /// stream_id (0xe0.. video, 0xc0.. audio, 0xbd private stream 1, …).
    pub stream_id: u8,
    /// PES_packet_length: bytes after this field, 0 = unbounded (video only).
    pub packet_length: u16,
    /// Presentation timestamp, 33 bits.
    pub pts: Option<u64>,
    /// Decoding timestamp, 33 bits (only present with a PTS).
    pub dts: Option<u64>,
    /// Offset of the elementary-stream payload from the start of the PES.
    pub payload_offset: usize,
}

/// Stream ids whose PES has no optional header (ISO/IEC 13818-1 table 2-21).
fn has_optional_header(stream_id: u8) -> bool {
    !matches!(
        stream_id,
        0xbc | 0xbe | 0xbf | 0xf0 | 0xf1 | 0xf2 | 0xf8 | 0xff
    )
}

/// Reads a 33-bit timestamp from its 5-byte, marker-bit-interleaved form.
fn read_timestamp(b: &[u8]) -> Option<u64> {
    let b = b.get(..5)?;
    let ts = (u64::from(b[0] >> 1 & 0x07) << 30)
        | (u64::from(b[1]) << 22)
        | (u64::from(b[2] >> 1) << 15)
        | (u64::from(b[3]) << 7)
        | u64::from(b[4] >> 1);
    Some(ts & PTS_MASK)
}

impl PesHeader {
    /// Parses the header at the start of a PES packet.
    ///
    /// # Errors
    /// [`PesError`] when the start code is missing or the header is cut short.
    pub fn parse(pes: &[u8]) -> Result<Self, PesError> {
        let [a, b, c, stream_id, l0, l1, ref rest @ ..] = *pes else {
            return Err(PesError::Truncated);
        };
        if [a, b, c] != [0, 0, 1] {
            return Err(PesError::NoStartCode);
        }
        let packet_length = u16::from_be_bytes([l0, l1]);
        if !has_optional_header(stream_id) {
            return Ok(PesHeader {
                stream_id,
                packet_length,
                pts: None,
                dts: None,
                payload_offset: 6,
            });
        }
        let [m, flags, header_len, ref opt @ ..] = *rest else {
            return Err(PesError::Truncated);
        };
        if m & 0xc0 != 0x80 {
            return Err(PesError::Malformed);
        }
        let opt = opt
            .get(..usize::from(header_len))
            .ok_or(PesError::Truncated)?;
        let (pts, dts) = match flags >> 6 {
            0b10 => (Some(read_timestamp(opt).ok_or(PesError::Truncated)?), None),
            0b11 => (
                Some(read_timestamp(opt).ok_or(PesError::Truncated)?),
                Some(read_timestamp(opt.get(5..).unwrap_or_default()).ok_or(PesError::Truncated)?),
            ),
            _ => (None, None),
        };
        Ok(PesHeader {
            stream_id,
            packet_length,
            pts,
            dts,
            payload_offset: 9 + usize::from(header_len),
        })
    }
}

/// A complete PES: its header and the elementary-stream payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pes {
    /// The parsed header.
    pub header: PesHeader,
    /// The payload after the header, sharing the reassembly buffer.
    pub payload: Bytes,
    /// False when the PES lost bytes on the way: it ended before its declared length,
    /// or carried more than it declared (a lie or a loss; either way its payload
    /// cannot be trusted).
    pub intact: bool,
}

/// What came out of feeding one packet to a [`PesAssembler`].
#[derive(Debug, Default)]
pub struct PesOutput {
    /// PES packets completed by this packet (at most two: the previous one at a
    /// PUSI, and the new one if it is complete within this packet).
    pub complete: Vec<Pes>,
    /// How many malformed PES were dropped or cut (lying lengths, bad headers,
    /// payload whose start was lost).
    pub errors: u64,
    /// How many PES were dropped for outgrowing [`MAX_PES_SIZE`].
    pub oversize: u64,
    /// How many PES were lost outside those delivered here (a PES whose start was
    /// lost, a header that cannot be read, an oversize PES, bytes past a declared
    /// length): a video decoder loses its reference from the first of them on.
    pub lost: u64,
    /// Where the first of those losses fell: the number of PES in `complete` before it.
    pub lost_at: Option<usize>,
}

impl PesOutput {
    /// Notes a PES lost at this point of the output.
    fn lose(&mut self) {
        self.lost += 1;
        self.lost_at.get_or_insert(self.complete.len());
    }
}

/// Largest PES the assembler buffers; beyond it the PES is dropped (hostile input
/// must not grow memory without bound).
pub const MAX_PES_SIZE: usize = 16 << 20;

/// Reassembles one PID's PES packets from transport packet payloads.
///
/// A PES ends when its declared PES_packet_length is reached, or, when the length is 0
/// (unbounded video) or was a lie, at the next payload_unit_start_indicator. Bytes
/// past a declared length are dropped until the next start (as ffmpeg does), and a PES
/// cut short by the next start is delivered marked not [`Pes::intact`]; both count as
/// errors. Payload before the first start is a join in mid-PES, not an error; payload
/// without a start after that means the start was lost.
#[derive(Debug, Default)]
pub struct PesAssembler {
    buf: BytesMut,
    /// Total PES size when the header declares one.
    expected: Option<usize>,
    /// True while bytes belong to a started PES.
    active: bool,
    /// True after a PES ended at its declared length, until the next start.
    skipping: bool,
    /// The PES being assembled already lost bytes (it carried more than declared).
    damaged: bool,
    /// A PES start has been seen: payload without a start is a loss from now on.
    started: bool,
}

impl PesAssembler {
    /// An assembler waiting for its first PES start.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one packet's payload.
    pub fn push(&mut self, pusi: bool, payload: &[u8], out: &mut PesOutput) {
        if pusi {
            if self.active {
                // Shorter than declared: a lie or lost packets.
                if self.expected.is_some() {
                    out.errors += 1;
                    self.damaged = true;
                }
                self.finish(out);
            }
            self.active = true;
            self.started = true;
            self.skipping = false;
            self.damaged = false;
            self.expected = None;
        } else if self.skipping {
            if !payload.is_empty() {
                // Counted once: the rest of this payload run is quiet until a start.
                out.errors += 1;
                out.lose();
                self.skipping = false;
                self.started = false;
            }
            return;
        } else if !self.active {
            if self.started && !payload.is_empty() {
                // The start of this PES was lost.
                out.errors += 1;
                out.lose();
                self.started = false;
            }
            return;
        }
        let mut data = payload;
        if let Some(total) = self.expected {
            let room = total.saturating_sub(self.buf.len());
            if data.len() > room {
                out.errors += 1;
                self.damaged = true;
                data = data.get(..room).unwrap_or(data);
            }
        }
        if self.buf.len() + data.len() > MAX_PES_SIZE {
            out.oversize += 1;
            out.lose();
            self.reset();
            // Give the memory back: an endless PES must not keep 16 MiB per PID.
            self.buf = BytesMut::new();
            return;
        }
        self.buf.extend_from_slice(data);
        if self.expected.is_none() && self.buf.len() >= 6 {
            let declared = usize::from(u16::from_be_bytes([self.buf[4], self.buf[5]]));
            if declared != 0 {
                let total = 6 + declared;
                self.expected = Some(total);
                if self.buf.len() > total {
                    out.errors += 1;
                    self.damaged = true;
                    self.buf.truncate(total);
                }
            }
        }
        if self.expected.is_some_and(|total| self.buf.len() >= total) {
            self.finish(out);
            self.skipping = true;
        }
    }

    /// Delivers whatever PES is being assembled (end of input).
    pub fn flush(&mut self, out: &mut PesOutput) {
        if self.active {
            if self.expected.is_some() {
                out.errors += 1;
                self.damaged = true;
            }
            self.finish(out);
        }
    }

    /// Drops the PES being assembled because bytes of this PID were lost; true when
    /// there was one (it is lost with them). The packets after the loss continue a PES
    /// whose start is gone: they are skipped quietly until the next start.
    pub fn discard(&mut self) -> bool {
        let had = self.active && !self.buf.is_empty();
        self.reset();
        had
    }

    /// Forgets the PES being assembled; payload before the next start is skipped
    /// quietly, as at a join.
    pub fn reset(&mut self) {
        self.buf.clear();
        self.active = false;
        self.skipping = false;
        self.damaged = false;
        self.started = false;
        self.expected = None;
    }

    fn finish(&mut self, out: &mut PesOutput) {
        let pes = self.buf.split().freeze();
        let intact = !self.damaged;
        self.active = false;
        self.damaged = false;
        self.expected = None;
        match PesHeader::parse(&pes) {
            Ok(header) if header.payload_offset <= pes.len() => {
                let payload = pes.slice(header.payload_offset..);
                out.complete.push(Pes {
                    header,
                    payload,
                    intact,
                });
            }
            _ => {
                out.errors += 1;
                out.lose();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Encodes a timestamp with the given 4-bit prefix, as a muxer writes it.
    fn ts_bytes(prefix: u8, ts: u64) -> [u8; 5] {
        [
            (prefix << 4) | (((ts >> 30) as u8 & 0x07) << 1) | 1,
            (ts >> 22) as u8,
            (((ts >> 15) as u8) << 1) | 1,
            (ts >> 7) as u8,
            ((ts as u8) << 1) | 1,
        ]
    }

    fn pes(pts: u64, dts: u64, payload: &[u8], declare_len: bool) -> Vec<u8> {
        let mut v = vec![0, 0, 1, 0xe0, 0, 0, 0x80, 0xc0, 10];
        v.extend(ts_bytes(3, pts));
        v.extend(ts_bytes(1, dts));
        v.extend(payload);
        if declare_len {
            let len = (v.len() - 6) as u16;
            v[4..6].copy_from_slice(&len.to_be_bytes());
        }
        v
    }

    #[test]
    fn header_reads_33_bit_timestamps() {
        let max = PTS_MASK;
        let p = pes(max, 12345, b"xyz", true);
        let h = PesHeader::parse(&p).unwrap();
        assert_eq!(h.pts, Some(max));
        assert_eq!(h.dts, Some(12345));
        assert_eq!(&p[h.payload_offset..], b"xyz");
    }

    #[test]
    fn unbounded_pes_ends_at_next_start() {
        let mut asm = PesAssembler::new();
        let mut out = PesOutput::default();
        let first = pes(9000, 9000, &[7; 300], false);
        asm.push(true, &first[..184], &mut out);
        asm.push(false, &first[184..], &mut out);
        assert!(out.complete.is_empty());
        asm.push(true, &pes(18000, 18000, b"b", false), &mut out);
        assert_eq!(out.complete.len(), 1);
        assert_eq!(out.complete[0].payload.as_ref(), &[7; 300][..]);
        asm.flush(&mut out);
        assert_eq!(out.complete[1].payload.as_ref(), b"b");
        assert_eq!(out.errors, 0);
    }

    #[test]
    fn payload_before_the_first_start_is_a_join_and_after_it_a_lost_start() {
        let mut asm = PesAssembler::new();
        let mut out = PesOutput::default();
        asm.push(false, b"middle of a pes", &mut out);
        assert_eq!((out.errors, out.lost), (0, 0), "a join in mid-PES");
        let whole = pes(0, 0, b"abcd", true);
        asm.push(true, &whole, &mut out);
        assert_eq!(out.complete.len(), 1);
        assert!(out.complete[0].intact);
        // The next PES's start packet is lost: its continuation counts once.
        asm.push(false, b"rest of a lost pes", &mut out);
        asm.push(false, b"more of it", &mut out);
        assert_eq!((out.errors, out.lost, out.lost_at), (1, 1, Some(1)));
        // A discard drops the PES in progress and skips quietly to the next start.
        let mut out = PesOutput::default();
        asm.push(true, &pes(3000, 3000, &[1; 300], false), &mut out);
        assert!(asm.discard());
        asm.push(false, b"after the loss", &mut out);
        assert_eq!((out.errors, out.lost, out.complete.len()), (0, 0, 0));
    }

    #[test]
    fn an_endless_pes_is_dropped_at_the_bound_and_the_next_one_is_whole() {
        let mut asm = PesAssembler::new();
        let mut out = PesOutput::default();
        asm.push(true, &pes(0, 0, &[], false), &mut out);
        let chunk = [7u8; 184];
        for _ in 0..MAX_PES_SIZE / chunk.len() + 10 {
            asm.push(false, &chunk, &mut out);
        }
        assert_eq!((out.oversize, out.lost, out.errors), (1, 1, 0));
        assert!(out.complete.is_empty());
        assert!(asm.buf.capacity() < 64 * 1024, "the memory is given back");
        asm.push(true, &pes(9000, 9000, b"next", false), &mut out);
        asm.flush(&mut out);
        assert_eq!(out.complete.len(), 1);
        assert!(out.complete[0].intact);
        assert_eq!(out.complete[0].payload.as_ref(), b"next");
    }

    #[test]
    fn lying_lengths_are_cut_and_counted() {
        let mut asm = PesAssembler::new();
        let mut out = PesOutput::default();
        // Declares 2 payload bytes more than it carries.
        let mut short = pes(0, 0, b"abcd", true);
        short[5] += 2;
        asm.push(true, &short, &mut out);
        assert!(out.complete.is_empty());
        // Declares fewer bytes than it carries.
        let mut long = pes(3000, 3000, b"abcd", true);
        long[5] -= 2;
        asm.push(true, &long, &mut out);
        assert_eq!(out.complete.len(), 2);
        assert_eq!(out.complete[0].payload.as_ref(), b"abcd");
        assert_eq!(out.complete[1].payload.as_ref(), b"ab");
        assert!(
            out.complete.iter().all(|p| !p.intact),
            "neither can be trusted"
        );
        assert_eq!(out.errors, 2);
    }
}
