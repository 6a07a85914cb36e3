//! How a caption block travels: in the TS packets of [`CAPTION_PID`] right after the
//! segment's timeline marker, so that the segment itself — what the relay sends, what
//! the archive keeps — carries its captions.
//!
//! The PID is not listed in the PMT (players skip it, as they skip the marker). The
//! first packet of a block sets payload_unit_start; the block states its own length and
//! ends with a CRC, so the packets need no continuity across segments: their counters
//! restart at 0 in every segment and the demuxer does not check them.

use bytes::Bytes;

use super::{PACKET_SIZE, SYNC_BYTE};
use crate::captions::block::{BlockError, CaptionBlock, MAX_BLOCK_LEN};

/// PID of the caption block packets (beside [`crate::ts::MARKER_PID`]).
pub const CAPTION_PID: u16 = 0x1ff1;

const PAYLOAD: usize = PACKET_SIZE - 4;

/// The TS packets that carry `block` (its encoded bytes), the last one padded with 0xFF.
pub fn block_packets(block: &[u8]) -> Vec<u8> {
    let count = block.len().div_ceil(PAYLOAD).max(1);
    let mut out = Vec::with_capacity(count * PACKET_SIZE);
    for (i, chunk) in block.chunks(PAYLOAD).enumerate() {
        let pusi = if i == 0 { 0x40 } else { 0x00 };
        out.push(SYNC_BYTE);
        out.push(pusi | ((CAPTION_PID >> 8) as u8 & 0x1f));
        out.push((CAPTION_PID & 0xff) as u8);
        out.push(0x10 | (i as u8 & 0x0f));
        out.extend_from_slice(chunk);
        out.resize(out.len() + PAYLOAD - chunk.len(), 0xff);
    }
    out
}

/// The segment `data` (a brdyun segment: marker packet first) with the caption
/// packets of `block` inserted right after its marker packet.
pub fn splice_block(data: &Bytes, block: &CaptionBlock) -> Bytes {
    let packets = block_packets(&block.encode());
    let at = PACKET_SIZE.min(data.len());
    let mut out = Vec::with_capacity(data.len() + packets.len());
    out.extend_from_slice(&data[..at]);
    out.extend_from_slice(&packets);
    out.extend_from_slice(&data[at..]);
    Bytes::from(out)
}

/// The caption packets of a segment's bytes (right after its marker packet, where
/// [`splice_block`] and the segment writer put them); empty when it has none.
pub fn block_packets_of(data: &[u8]) -> &[u8] {
    let count = data
        .chunks_exact(PACKET_SIZE)
        .skip(1)
        .take_while(|p| p[0] == SYNC_BYTE && pid(p) == CAPTION_PID)
        .count();
    data.get(PACKET_SIZE..PACKET_SIZE * (1 + count))
        .unwrap_or_default()
}

/// The caption block of a segment's bytes, if it carries one; a damaged block is an
/// error. Reads only the packets right after the marker, where [`splice_block`] puts it.
///
/// # Errors
/// [`BlockError`] when packets of [`CAPTION_PID`] are there but do not hold a block.
pub fn segment_block(data: &[u8]) -> Result<Option<CaptionBlock>, BlockError> {
    let mut assembler = BlockAssembler::default();
    for packet in data.chunks_exact(PACKET_SIZE).skip(1) {
        if packet[0] != SYNC_BYTE || pid(packet) != CAPTION_PID {
            break;
        }
        if let Some(done) = assembler.push(packet[1] & 0x40 != 0, &packet[4..])? {
            return CaptionBlock::parse(&done).map(Some);
        }
    }
    if assembler.pending() {
        return Err(BlockError::Truncated);
    }
    Ok(None)
}

fn pid(packet: &[u8]) -> u16 {
    (u16::from(packet[1] & 0x1f) << 8) | u16::from(packet[2])
}

/// Reassembles blocks from the payloads of [`CAPTION_PID`] packets (what the demuxer
/// does with them). A block is handed on whole; a new start drops an unfinished one.
#[derive(Debug, Default)]
pub struct BlockAssembler {
    buf: Vec<u8>,
    started: bool,
}

impl BlockAssembler {
    /// Feeds one packet's payload; returns the block's bytes when it is complete.
    ///
    /// # Errors
    /// [`BlockError`] when a block's header is unreadable or an unfinished block was
    /// cut off by the next one (the damaged block is dropped either way).
    pub fn push(&mut self, unit_start: bool, payload: &[u8]) -> Result<Option<Bytes>, BlockError> {
        let mut cut_off = false;
        if unit_start {
            cut_off = self.started;
            self.buf.clear();
            self.started = true;
        } else if !self.started {
            return Ok(None);
        }
        self.buf.extend_from_slice(payload);
        if self.buf.len() < 20 {
            return if cut_off {
                Err(BlockError::Truncated)
            } else {
                Ok(None)
            };
        }
        let total = match CaptionBlock::stated_len(&self.buf) {
            Ok(total) => total,
            Err(e) => {
                self.reset();
                return Err(e);
            }
        };
        if cut_off {
            // The previous block never finished; this one may still.
            if self.buf.len() >= total {
                let done = Bytes::copy_from_slice(&self.buf[..total]);
                self.reset();
                return Ok(Some(done));
            }
            return Err(BlockError::Truncated);
        }
        if self.buf.len() >= total {
            let done = Bytes::copy_from_slice(&self.buf[..total]);
            self.reset();
            return Ok(Some(done));
        }
        if self.buf.len() > MAX_BLOCK_LEN {
            self.reset();
            return Err(BlockError::Malformed("length"));
        }
        Ok(None)
    }

    /// A block has started and not finished.
    pub fn pending(&self) -> bool {
        self.started
    }

    fn reset(&mut self) {
        self.buf.clear();
        self.started = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::captions::block::{CaptionTrack, Cue};

    fn block(cues: usize) -> CaptionBlock {
        CaptionBlock {
            msn: 7,
            tracks: vec![CaptionTrack::new("en", "en", "English")],
            cues: (0..cues as u64)
                .map(|i| Cue {
                    track: 0,
                    start_ts: 1000 + i,
                    end_ts: 2000 + i,
                    text: format!("cue number {i}"),
                })
                .collect(),
        }
    }

    fn segment() -> Bytes {
        let mut data = vec![0u8; PACKET_SIZE * 3];
        for (i, p) in data.chunks_mut(PACKET_SIZE).enumerate() {
            p[0] = SYNC_BYTE;
            p[1] = 0x1f;
            p[2] = 0xf0 + i as u8;
        }
        Bytes::from(data)
    }

    #[test]
    fn a_spliced_block_is_read_back_from_the_segment() {
        for cues in [0, 1, 30] {
            let b = block(cues);
            let spliced = splice_block(&segment(), &b);
            assert_eq!(spliced.len() % PACKET_SIZE, 0);
            assert_eq!(&spliced[..PACKET_SIZE], &segment()[..PACKET_SIZE]);
            assert_eq!(
                &spliced[spliced.len() - 2 * PACKET_SIZE..],
                &segment()[PACKET_SIZE..]
            );
            assert_eq!(segment_block(&spliced), Ok(Some(b)));
        }
        assert_eq!(segment_block(&segment()), Ok(None));
    }

    #[test]
    fn the_assembler_survives_losses_and_starts_over() {
        let bytes = block(30).encode();
        let packets = block_packets(&bytes);
        let payloads: Vec<(bool, &[u8])> = packets
            .chunks(PACKET_SIZE)
            .map(|p| (p[1] & 0x40 != 0, &p[4..]))
            .collect();
        assert!(payloads.len() > 2);
        let mut a = BlockAssembler::default();
        // The middle packet lost: the next block's start reports the cut-off one.
        for (start, payload) in payloads.iter().take(1) {
            assert_eq!(a.push(*start, payload), Ok(None));
        }
        let mut results = Vec::new();
        for (start, payload) in &payloads {
            results.push(a.push(*start, payload));
        }
        assert!(results[0].is_err());
        assert_eq!(
            results.last().cloned().unwrap().unwrap().unwrap().len(),
            bytes.len()
        );
        // A continuation without a start is ignored.
        let mut b = BlockAssembler::default();
        assert_eq!(b.push(false, payloads[1].1), Ok(None));
        assert!(!b.pending());
    }
}
