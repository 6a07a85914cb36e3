//! Transport stream packets: the 4-byte header, the adaptation field, and a reader
//! that finds packet boundaries in bytes arriving in arbitrary chunks.

use thiserror::Error;

use super::{PACKET_SIZE, SYNC_BYTE};

/// Why 188 bytes are not a usable transport stream packet.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PacketError {
    /// The slice is not exactly [`PACKET_SIZE`] bytes long.
    #[error("ts packet has {0} bytes, expected 188")]
    Length(usize),
    /// The first byte is not [`SYNC_BYTE`].
    #[error("ts packet does not start with the sync byte")]
    NoSync,
    /// The adaptation field claims more bytes than the packet holds.
    #[error("ts adaptation field length {0} exceeds the packet")]
    AdaptationLength(u8),
}

/// The parts of the adaptation field that the demuxer acts on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AdaptationField {
    /// The continuity counter or the time base is discontinuous at this packet.
    pub discontinuity: bool,
    /// The packet starts a random access point (e.g. a keyframe's PES).
    pub random_access: bool,
    /// Program clock reference in 27 MHz ticks (base × 300 + extension).
    pub pcr: Option<u64>,
}

/// One parsed transport stream packet, borrowing its payload from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    /// The transport_error_indicator: a lower layer flagged this packet as damaged.
    pub transport_error: bool,
    /// payload_unit_start_indicator: a PES or PSI section starts in this payload.
    pub pusi: bool,
    /// The 13-bit packet identifier.
    pub pid: u16,
    /// transport_scrambling_control (0 = clear).
    pub scrambling: u8,
    /// True when the packet carries a payload (adaptation_field_control bit 0).
    pub has_payload: bool,
    /// The 4-bit continuity counter.
    pub continuity_counter: u8,
    /// The adaptation field, when present.
    pub adaptation: Option<AdaptationField>,
    /// The payload bytes (empty when there is none).
    pub payload: &'a [u8],
}

impl<'a> Packet<'a> {
    /// Parses one 188-byte packet.
    ///
    /// # Errors
    /// [`PacketError`] when the length, sync byte or adaptation field length is wrong.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, PacketError> {
        if bytes.len() != PACKET_SIZE {
            return Err(PacketError::Length(bytes.len()));
        }
        let (header, rest) = bytes.split_at(4);
        if header[0] != SYNC_BYTE {
            return Err(PacketError::NoSync);
        }
        let afc = (header[3] >> 4) & 0x03;
        let has_adaptation = afc & 0x02 != 0;
        let has_payload = afc & 0x01 != 0;
        let mut adaptation = None;
        let mut payload_start = 0;
        if has_adaptation {
            let len = rest[0];
            let field = rest
                .get(1..1 + usize::from(len))
                .ok_or(PacketError::AdaptationLength(len))?;
            adaptation = Some(parse_adaptation(field));
            payload_start = 1 + usize::from(len);
        }
        let payload = if has_payload {
            &rest[payload_start..]
        } else {
            &[]
        };
        Ok(Packet {
            transport_error: header[1] & 0x80 != 0,
            pusi: header[1] & 0x40 != 0,
            pid: (u16::from(header[1] & 0x1f) << 8) | u16::from(header[2]),
            scrambling: header[3] >> 6,
            has_payload,
            continuity_counter: header[3] & 0x0f,
            adaptation,
            payload,
        })
    }

    /// True when the adaptation field sets discontinuity_indicator.
    pub fn discontinuity(&self) -> bool {
        self.adaptation.is_some_and(|a| a.discontinuity)
    }
}

/// Reads the flags and the PCR of an adaptation field (without its length byte).
fn parse_adaptation(field: &[u8]) -> AdaptationField {
    let Some((&flags, rest)) = field.split_first() else {
        return AdaptationField::default();
    };
    let pcr = if flags & 0x10 != 0 {
        rest.get(..6).map(|b| {
            let base = (u64::from(b[0]) << 25)
                | (u64::from(b[1]) << 17)
                | (u64::from(b[2]) << 9)
                | (u64::from(b[3]) << 1)
                | (u64::from(b[4]) >> 7);
            let ext = (u64::from(b[4] & 0x01) << 8) | u64::from(b[5]);
            base * 300 + ext
        })
    } else {
        None
    };
    AdaptationField {
        discontinuity: flags & 0x80 != 0,
        random_access: flags & 0x40 != 0,
        pcr,
    }
}

/// Finds packet boundaries in a byte stream delivered in arbitrary chunks.
///
/// A stream is locked when a sync byte is followed by another one 188 bytes later;
/// once locked, a packet is handed on only when the byte after it is the next packet's
/// sync byte, so a packet cut short (its 188 bytes would take the start of the next
/// one) is dropped with the lock, never delivered spliced. The last packet waits for
/// the next byte, or for [`PacketReader::finish`] at the end of the input; how the
/// bytes are chunked never changes what comes out. Only a packet and a byte (or, while
/// scanning, fewer than 189 bytes) are ever buffered, so memory stays bounded whatever
/// the input.
#[derive(Debug, Default)]
pub struct PacketReader {
    carry: Vec<u8>,
    synced: bool,
    sync_losses: u64,
}

/// What the reader hands to its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReaderEvent<'a> {
    /// 188 bytes that start with the sync byte, followed by another one.
    Packet(&'a [u8]),
    /// The lock was lost: bytes were skipped to find the next packet.
    SyncLost,
}

impl PacketReader {
    /// A reader that has not yet locked onto the stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many times an established lock was lost.
    pub fn sync_losses(&self) -> u64 {
        self.sync_losses
    }

    /// Feeds `data`, calling `f` for every packet (and lock loss) it completes, in order.
    pub fn push(&mut self, data: &[u8], mut f: impl FnMut(ReaderEvent<'_>)) {
        let mut data = data;
        if data.is_empty() {
            return;
        }
        if !self.carry.is_empty() {
            if self.synced && self.carry.first() == Some(&SYNC_BYTE) {
                let take = (PACKET_SIZE - self.carry.len()).min(data.len());
                let (head, tail) = data.split_at(take);
                self.carry.extend_from_slice(head);
                data = tail;
                // A whole packet waits for the byte after it.
                let Some(&next) = data.first() else {
                    return;
                };
                if next == SYNC_BYTE {
                    f(ReaderEvent::Packet(&self.carry));
                    self.carry.clear();
                } else {
                    self.lose_lock(&mut f);
                    // Scan again from the byte after the false sync byte.
                    let mut joined = self.carry.split_off(1);
                    self.carry.clear();
                    joined.extend_from_slice(data);
                    let used = self.scan(&joined, &mut f);
                    joined.drain(..used);
                    self.carry = joined;
                    return;
                }
            } else {
                // Scanning for a lock across the chunk boundary: join the bytes (the
                // carry is at most one packet long, so this copy is small).
                let mut joined = std::mem::take(&mut self.carry);
                joined.extend_from_slice(data);
                let used = self.scan(&joined, &mut f);
                joined.drain(..used);
                self.carry = joined;
                return;
            }
        }
        let used = self.scan(data, &mut f);
        self.carry
            .extend_from_slice(data.get(used..).unwrap_or_default());
    }

    /// The end of the input: hands on the last packet, which had no byte after it.
    pub fn finish(&mut self, mut f: impl FnMut(ReaderEvent<'_>)) {
        if self.synced && self.carry.len() == PACKET_SIZE && self.carry[0] == SYNC_BYTE {
            f(ReaderEvent::Packet(&self.carry));
        }
        self.carry.clear();
    }

    fn lose_lock(&mut self, f: &mut impl FnMut(ReaderEvent<'_>)) {
        self.synced = false;
        self.sync_losses += 1;
        f(ReaderEvent::SyncLost);
    }

    /// Emits the packets found in `buf`; returns how many bytes were used up.
    fn scan(&mut self, buf: &[u8], f: &mut impl FnMut(ReaderEvent<'_>)) -> usize {
        let mut pos = 0;
        loop {
            let rest = buf.get(pos..).unwrap_or_default();
            if self.synced {
                let Some(pkt) = rest.get(..PACKET_SIZE) else {
                    return pos;
                };
                if pkt[0] != SYNC_BYTE {
                    self.lose_lock(f);
                    continue;
                }
                match rest.get(PACKET_SIZE) {
                    // The packet waits for the byte after it.
                    None => return pos,
                    Some(&SYNC_BYTE) => {
                        f(ReaderEvent::Packet(pkt));
                        pos += PACKET_SIZE;
                    }
                    // Cut short, or followed by garbage: dropped with the lock.
                    Some(_) => {
                        self.lose_lock(f);
                        pos += 1;
                    }
                }
                continue;
            }
            // Not locked: look for a sync byte confirmed by the next packet's.
            let mut i = 0;
            loop {
                let Some(off) = rest
                    .get(i..)
                    .and_then(|r| r.iter().position(|&b| b == SYNC_BYTE))
                else {
                    return buf.len();
                };
                let cand = i + off;
                match rest.get(cand + PACKET_SIZE) {
                    None => return pos + cand,
                    Some(&SYNC_BYTE) => {
                        pos += cand;
                        self.synced = true;
                        break;
                    }
                    Some(_) => i = cand + 1,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(pid: u16, cc: u8, payload_byte: u8) -> Vec<u8> {
        let mut p = vec![SYNC_BYTE, 0x40 | (pid >> 8) as u8, pid as u8, 0x10 | cc];
        p.resize(PACKET_SIZE, payload_byte);
        p
    }

    #[test]
    fn parses_header_and_pcr() {
        let mut p = packet(0x100, 7, 0xaa);
        p[3] = 0x30 | 7; // adaptation + payload
        p[4] = 7; // adaptation length
        p[5] = 0x80 | 0x40 | 0x10; // discontinuity, random access, PCR
                                   // PCR base 1, extension 2.
        p[6..12].copy_from_slice(&[0, 0, 0, 0, 0x80 | 0x7e, 2]);
        let pkt = Packet::parse(&p).unwrap();
        assert_eq!(pkt.pid, 0x100);
        assert!(pkt.pusi);
        assert_eq!(pkt.continuity_counter, 7);
        let af = pkt.adaptation.unwrap();
        assert!(af.discontinuity && af.random_access);
        assert_eq!(af.pcr, Some(300 + 2));
        assert_eq!(pkt.payload.len(), 184 - 8);
    }

    #[test]
    fn adaptation_length_past_the_end_is_an_error() {
        let mut p = packet(0x100, 0, 0);
        p[3] = 0x30;
        p[4] = 184;
        assert_eq!(Packet::parse(&p), Err(PacketError::AdaptationLength(184)));
    }

    #[test]
    fn reader_resyncs_after_garbage() {
        let mut data = vec![0x47, 1, 2, 3];
        for cc in 0..3 {
            data.extend(packet(0x100, cc, 0));
        }
        data.extend([0x00, 0x47, 0x01]);
        for cc in 3..6 {
            data.extend(packet(0x100, cc, 0));
        }
        let mut reader = PacketReader::new();
        let mut ccs = Vec::new();
        let mut lost = 0;
        let mut on = |ev: ReaderEvent<'_>| match ev {
            ReaderEvent::Packet(p) => ccs.push(Packet::parse(p).unwrap().continuity_counter),
            ReaderEvent::SyncLost => lost += 1,
        };
        for chunk in data.chunks(7) {
            reader.push(chunk, &mut on);
        }
        reader.finish(&mut on);
        // Packet 2, followed by garbage, cannot be told from one cut short: dropped.
        assert_eq!(ccs, vec![0, 1, 3, 4, 5]);
        assert_eq!(lost, 1);
        assert_eq!(reader.sync_losses(), 1);
    }
}
