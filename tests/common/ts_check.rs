//! The carriage rules a brdyun TS segment keeps for players (ISO/IEC 13818-1), read
//! from the packets themselves, not through brdyun's demuxer: PAT and PMT before any
//! PES, a PCR before the first PES and at most 100 ms after the last, a PTS on every
//! PES, and one access unit delimiter opening every H.264 picture (§2.14).

use media::codec::nal::annexb_nals;

const PACKET: usize = 188;
const VIDEO_PID: u16 = 0x0100;
const AUDIO_PID: u16 = 0x0101;
const PMT_PID: u16 = 0x1000;
/// The delimiter brdyun writes: a 4-byte start code, the NAL header, the picture type.
const DELIMITER_BYTES: usize = 6;

/// What a conformant segment holds, and what its delimiters cost.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    /// Video access units (PES) in the segment.
    pub pictures: usize,
    /// Bytes of the delimiters in the elementary stream.
    pub delimiter_bytes: usize,
    /// TS packets the segment has only because of its delimiters (a PES that 6 bytes
    /// fewer would have fitted in one packet less).
    pub extra_packets: usize,
    /// The segment's size.
    pub bytes: usize,
}

fn pid(p: &[u8]) -> u16 {
    u16::from(p[1] & 0x1f) << 8 | u16::from(p[2])
}

/// The payload of a packet (after its adaptation field).
fn payload(p: &[u8]) -> &[u8] {
    let afc = (p[3] >> 4) & 0x03;
    let start = if afc & 0x02 != 0 {
        5 + usize::from(p[4])
    } else {
        4
    };
    if afc & 0x01 == 0 || start > PACKET {
        return &[];
    }
    &p[start..]
}

/// The PCR base of a packet, if its adaptation field carries one.
fn pcr(p: &[u8]) -> Option<u64> {
    if p[3] & 0x20 == 0 || p[4] == 0 || p[5] & 0x10 == 0 {
        return None;
    }
    let b: Vec<u64> = p[6..11].iter().map(|&x| u64::from(x)).collect();
    Some(b[0] << 25 | b[1] << 17 | b[2] << 9 | b[3] << 1 | b[4] >> 7)
}

/// Packets a PES of `len` bytes takes when its first packet has room for `first`.
fn packets_for(len: usize, first: usize) -> usize {
    1 + len.saturating_sub(first).div_ceil(PACKET - 4)
}

/// One video PES: its bytes and the payload room of its first packet.
struct Pes {
    bytes: Vec<u8>,
    first_room: usize,
}

/// Checks `ts` (one segment) against the rules above; the first broken rule otherwise.
pub fn check(ts: &[u8]) -> Result<Report, String> {
    if ts.is_empty() || !ts.len().is_multiple_of(PACKET) {
        return Err(format!("{} bytes: not whole packets", ts.len()));
    }
    let (mut pat, mut pmt) = (false, false);
    let mut last_pcr: Option<u64> = None;
    let mut video: Vec<Pes> = Vec::new();
    for (i, p) in ts.chunks(PACKET).enumerate() {
        if p[0] != 0x47 {
            return Err(format!("packet {i}: no sync byte"));
        }
        let pid = pid(p);
        let pusi = p[1] & 0x40 != 0;
        if let Some(value) = pcr(p) {
            if let Some(prev) = last_pcr {
                let step = value.wrapping_sub(prev) & ((1 << 33) - 1);
                if step > 9_000 {
                    return Err(format!("packet {i}: {step} ticks since the last PCR"));
                }
            }
            last_pcr = Some(value);
        }
        match pid {
            0 => pat = true,
            PMT_PID => pmt = pat,
            VIDEO_PID | AUDIO_PID if pusi => {
                if !pmt {
                    return Err(format!("packet {i}: a PES before PAT and PMT"));
                }
                if last_pcr.is_none() {
                    return Err(format!("packet {i}: a PES before any PCR"));
                }
                let pes = payload(p);
                if pes.len() < 14 || pes[..3] != [0, 0, 1] || pes[7] & 0x80 == 0 {
                    return Err(format!("packet {i}: a PES without a PTS"));
                }
                if pid == VIDEO_PID {
                    video.push(Pes {
                        bytes: pes.to_vec(),
                        first_room: pes.len(),
                    });
                }
            }
            // A packet with payload continues the PES (one without carries a PCR only).
            VIDEO_PID if !payload(p).is_empty() => match video.last_mut() {
                Some(pes) => pes.bytes.extend_from_slice(payload(p)),
                None => return Err(format!("packet {i}: video before its PES start")),
            },
            _ => {}
        }
    }
    let mut report = Report {
        bytes: ts.len(),
        ..Report::default()
    };
    for (n, pes) in video.iter().enumerate() {
        let es = &pes.bytes[9 + usize::from(pes.bytes[8])..];
        let delimiters = annexb_nals(es).filter(|nal| nal[0] & 0x1f == 9).count();
        let first = annexb_nals(es).next().map(|nal| nal[0] & 0x1f);
        if first != Some(9) || delimiters != 1 {
            return Err(format!(
                "picture {n}: first NAL type {first:?}, {delimiters} delimiters"
            ));
        }
        report.pictures += 1;
        report.delimiter_bytes += DELIMITER_BYTES;
        report.extra_packets += packets_for(pes.bytes.len(), pes.first_room)
            - packets_for(pes.bytes.len() - DELIMITER_BYTES, pes.first_room);
    }
    if report.pictures == 0 {
        return Err("no picture".into());
    }
    Ok(report)
}
