//! A corpus of damaged MPEG-TS for tests of damaged and hostile input: a clean source
//! made by ffmpeg, and each kind of damage a network, a broken muxer or a hostile sender
//! produces, applied to it deterministically. Plain `std`, so the media crate's tests
//! include it too (`#[path]`).

#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// Bytes of a transport packet.
pub const PACKET: usize = 188;

/// PID of the video stream in ffmpeg's default layout.
pub const VIDEO_PID: u16 = 0x100;
/// PID of the audio stream in ffmpeg's default layout.
pub const AUDIO_PID: u16 = 0x101;

/// Makes `seconds` of 320x180 25-fps H.264 (a keyframe every second) and AAC, as
/// MPEG-TS, with ffmpeg, in `dir`.
pub fn clean_source(dir: &Path, seconds: u32) -> Vec<u8> {
    let path = dir.join("clean.ts");
    let status = Command::new("ffmpeg")
        .args(["-nostdin", "-hide_banner", "-loglevel", "error", "-y"])
        .args(["-f", "lavfi", "-i", "testsrc=size=320x180:rate=25"])
        .args(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000"])
        .args(["-t", &seconds.to_string()])
        .args([
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-g",
            "25",
            "-bf",
            "0",
        ])
        .args(["-c:a", "aac", "-b:a", "64k", "-f", "mpegts"])
        .arg(&path)
        .status()
        .expect("run ffmpeg");
    assert!(status.success(), "ffmpeg made no source");
    std::fs::read(&path).expect("read the source")
}

/// A deterministic xorshift generator (the corpus must be the same on every run).
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// One kind of damage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Damage {
    /// Random bit flips, `per_million` bits of every million.
    BitFlips { per_million: u64 },
    /// The continuity counter of every `every`-th video packet is wrong.
    CcErrors { every: usize },
    /// Every `every`-th video packet carries transport_error_indicator.
    TransportErrors { every: usize },
    /// Every `every`-th packet is lost.
    PacketLoss { every: usize },
    /// From `at_s` seconds on, PTS and DTS are moved by `by_s` seconds (either way).
    TimestampJump { at_s: u64, by_s: i64 },
    /// The timestamps cross the 33-bit wrap `at_s` seconds in (legal).
    Wraparound { at_s: u64 },
    /// Every `every`-th audio PES declares a length that is a lie.
    PesLengthLies { every: usize },
    /// Every video PES header is split across two packets (legal).
    SplitPesHeaders,
    /// The PAT and PMT never come.
    NoPsi,
    /// Random bytes, no packet structure.
    Garbage,
    /// Packets cut short at random (a sender that loses bytes, not packets).
    PartialPackets { every: usize },
    /// From `at_s` seconds on, no video packet starts a PES: one endless PES.
    EndlessPes { at_s: u64 },
    /// Video PES headers carry no PTS (their flags cleared; the bytes stay as stuffing).
    NoVideoPts,
}

/// The PID of a packet.
pub fn pid(packet: &[u8]) -> u16 {
    u16::from(packet[1] & 0x1f) << 8 | u16::from(packet[2])
}

fn pusi(packet: &[u8]) -> bool {
    packet[1] & 0x40 != 0
}

/// Offset of the payload in a packet.
fn payload_offset(packet: &[u8]) -> usize {
    if packet[3] & 0x20 != 0 {
        (5 + usize::from(packet[4])).min(PACKET)
    } else {
        4
    }
}

/// Reads a 33-bit PES timestamp.
fn read_ts(b: &[u8]) -> u64 {
    (u64::from(b[0] >> 1 & 7) << 30)
        | (u64::from(b[1]) << 22)
        | (u64::from(b[2] >> 1) << 15)
        | (u64::from(b[3]) << 7)
        | u64::from(b[4] >> 1)
}

/// Writes a 33-bit PES timestamp, keeping the 4-bit prefix and the marker bits.
fn write_ts(b: &mut [u8], ts: u64) {
    let ts = ts & ((1 << 33) - 1);
    b[0] = (b[0] & 0xf0) | ((ts >> 29) as u8 & 0x0e) | 1;
    b[1] = (ts >> 22) as u8;
    b[2] = ((ts >> 14) as u8 & 0xfe) | 1;
    b[3] = (ts >> 7) as u8;
    b[4] = ((ts << 1) as u8) | 1;
}

/// Applies `f` to the PTS and DTS of every PES starting in a packet.
fn map_timestamps(data: &mut [u8], mut f: impl FnMut(u64) -> u64) {
    for packet in data.chunks_exact_mut(PACKET) {
        if !pusi(packet) || !matches!(pid(packet), VIDEO_PID | AUDIO_PID) {
            continue;
        }
        let at = payload_offset(packet);
        let pes = &mut packet[at..];
        if pes.len() < 19 || pes[..3] != [0, 0, 1] {
            continue;
        }
        let flags = pes[7] >> 6;
        if flags & 2 != 0 {
            let pts = read_ts(&pes[9..14]);
            write_ts(&mut pes[9..14], f(pts));
        }
        if flags == 3 {
            let dts = read_ts(&pes[14..19]);
            write_ts(&mut pes[14..19], f(dts));
        }
    }
}

/// The first PTS of the source (to place time-based damage).
fn first_pts(data: &[u8]) -> u64 {
    let mut first = None;
    let mut copy = data.to_vec();
    map_timestamps(&mut copy, |ts| {
        first.get_or_insert(ts);
        ts
    });
    first.unwrap_or(0)
}

/// `source` with `damage` applied.
pub fn damaged(source: &[u8], damage: Damage) -> Vec<u8> {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut data = source.to_vec();
    let start = first_pts(source);
    match damage {
        Damage::BitFlips { per_million } => {
            let bits = data.len() as u64 * 8;
            for _ in 0..bits * per_million / 1_000_000 {
                let bit = rng.below(bits);
                data[(bit / 8) as usize] ^= 1 << (bit % 8);
            }
        }
        Damage::CcErrors { every } => every_nth_video_packet(&mut data, every, |packet| {
            packet[3] = (packet[3] & 0xf0) | (packet[3].wrapping_add(5) & 0x0f);
        }),
        Damage::TransportErrors { every } => {
            every_nth_video_packet(&mut data, every, |packet| packet[1] |= 0x80);
        }
        Damage::PacketLoss { every } => {
            data = data
                .chunks_exact(PACKET)
                .enumerate()
                .filter(|(i, _)| (i + 1) % every != 0)
                .flat_map(|(_, p)| p.to_vec())
                .collect();
        }
        Damage::TimestampJump { at_s, by_s } => {
            let at = start + at_s * 90_000;
            let by = by_s * 90_000;
            map_timestamps(&mut data, |ts| {
                if ts >= at {
                    (ts as i64 + by).rem_euclid(1 << 33) as u64
                } else {
                    ts
                }
            });
        }
        Damage::Wraparound { at_s } => {
            let shift = (1u64 << 33) - start - at_s * 90_000;
            map_timestamps(&mut data, |ts| ts.wrapping_add(shift) & ((1 << 33) - 1));
        }
        Damage::PesLengthLies { every } => {
            let mut n = 0;
            for packet in data.chunks_exact_mut(PACKET) {
                if pid(packet) != AUDIO_PID || !pusi(packet) {
                    continue;
                }
                n += 1;
                let at = payload_offset(packet);
                if n % every == 0 && packet.len() >= at + 6 {
                    let lie = rng.below(0x1_0000) as u16;
                    packet[at + 4..at + 6].copy_from_slice(&lie.to_be_bytes());
                }
            }
        }
        Damage::SplitPesHeaders => data = split_video_pes_headers(&data),
        Damage::NoVideoPts => {
            for packet in data.chunks_exact_mut(PACKET) {
                let at = payload_offset(packet);
                if pid(packet) == VIDEO_PID && pusi(packet) && packet.len() > at + 8 {
                    packet[at + 7] &= 0x3f;
                }
            }
        }
        Damage::NoPsi => {
            data = data
                .chunks_exact(PACKET)
                .filter(|p| !matches!(pid(p), 0 | 0x1000))
                .flat_map(<[u8]>::to_vec)
                .collect();
        }
        Damage::Garbage => {
            for byte in &mut data {
                *byte = match rng.next() as u8 {
                    0x47 => 0x48,
                    b => b,
                };
            }
        }
        Damage::PartialPackets { every } => {
            data = data
                .chunks_exact(PACKET)
                .enumerate()
                .flat_map(|(i, p)| {
                    let keep = if (i + 1) % every == 0 {
                        1 + rng.below(PACKET as u64 - 1) as usize
                    } else {
                        PACKET
                    };
                    p[..keep].to_vec()
                })
                .collect();
        }
        Damage::EndlessPes { at_s } => {
            let at = start + at_s * 90_000;
            let mut endless = false;
            for packet in data.chunks_exact_mut(PACKET) {
                if pid(packet) != VIDEO_PID || !pusi(packet) {
                    continue;
                }
                if endless {
                    packet[1] &= !0x40;
                    continue;
                }
                let o = payload_offset(packet);
                let pes = &packet[o..];
                if pes.len() >= 14 && pes[7] & 0x80 != 0 && read_ts(&pes[9..14]) >= at {
                    endless = true;
                }
            }
        }
    }
    data
}

/// Applies `f` to every `every`-th packet of the video PID.
fn every_nth_video_packet(data: &mut [u8], every: usize, mut f: impl FnMut(&mut [u8])) {
    let video = data
        .chunks_exact_mut(PACKET)
        .filter(|p| pid(p) == VIDEO_PID);
    for (n, packet) in video.enumerate() {
        if (n + 1) % every == 0 {
            f(packet);
        }
    }
}

/// Every video PES header split across two packets: the start packet carries only
/// the first five bytes of the PES, behind adaptation-field stuffing.
pub fn split_video_pes_headers(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() * 11 / 10);
    let mut shift = 0u8;
    for packet in data.chunks_exact(PACKET) {
        let video = pid(packet) == VIDEO_PID;
        let cc = |p: &mut Vec<u8>, extra: u8| {
            if video {
                p[3] =
                    (p[3] & 0xf0) | ((p[3] & 0x0f).wrapping_add(shift.wrapping_add(extra)) & 0x0f);
            }
        };
        if !video || !pusi(packet) {
            let mut p = packet.to_vec();
            cc(&mut p, 0);
            out.extend(p);
            continue;
        }
        let o = payload_offset(packet);
        let af = if packet[3] & 0x20 != 0 {
            &packet[5..o]
        } else {
            &[][..]
        };
        let payload = &packet[o..];
        let mut first = vec![packet[0], packet[1], packet[2], 0x30 | (packet[3] & 0x0f)];
        first.push(178);
        if af.is_empty() {
            first.push(0);
        } else {
            first.extend(af);
        }
        first.resize(PACKET - 5, 0xff);
        first.extend(&payload[..5]);
        let rest = &payload[5..];
        let mut second = vec![
            packet[0],
            packet[1] & !0x40,
            packet[2],
            0x30 | (packet[3] & 0x0f),
        ];
        second.push((PACKET - 5 - rest.len()) as u8);
        if PACKET - 4 - rest.len() > 1 {
            second.push(0);
        }
        second.resize(PACKET - rest.len(), 0xff);
        second.extend(rest);
        cc(&mut first, 0);
        cc(&mut second, 1);
        out.extend(first);
        out.extend(second);
        shift = shift.wrapping_add(1);
    }
    out
}
