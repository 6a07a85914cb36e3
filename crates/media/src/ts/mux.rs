//! The MPEG-TS muxer: (timeline marker, frames) → the bytes of one segment.
//!
//! Deterministic by construction: the output is a pure function of its inputs, so two
//! nodes with the same marker and the same frames write the same bytes. A segment is:
//!
//! ```text
//! marker packet (MARKER_PID) · PAT · PMT · one PES per frame, in the order given
//! ```
//!
//! Every PES carries its exact PES_packet_length (0 only for video over 64 KiB), a PTS,
//! and a DTS when it differs. Every video access unit starts with an access unit
//! delimiter (ISO/IEC 13818-1 §2.14, §2.17): one is written before a frame that lacks
//! it ([`missing_delimiter`]), so an RTMP publish and an ffmpeg-made TS come out alike.
//! The first packet of every PES on the PCR PID (video, or audio for audio-only streams)
//! carries a PCR of `dts − PCR_OFFSET` (mod 2^33); PCRs are at most 100 ms apart
//! ([`PcrClock`]: a picture gap is filled with adaptation-field-only packets, and a
//! segment whose first frame is not on the PCR PID opens with one). A keyframe's first
//! packet sets random_access_indicator. Packets are padded with adaptation-field
//! stuffing, never with null packets.

use bytes::Bytes;

use super::captions::block_packets;
use super::pcr::PcrClock;
use super::psi::crc32_mpeg2;
use super::{AUDIO_PID, MARKER_PID, PACKET_SIZE, PMT_PID, SYNC_BYTE, VIDEO_PID};
use crate::captions::CaptionBlock;
use crate::codec::aud::missing_delimiter;
use crate::timeline::{ContinuityCounters, MarkerPhase, TimelineMarker, Tracks};
use crate::{Frame, TrackKind, PTS_MASK};

/// How far the PCR lags the DTS it accompanies (100 ms at 90 kHz): the decoder
/// receives every frame this long before it must decode it.
pub const PCR_OFFSET: u64 = 9_000;

/// PID of the program association table.
const PAT_PID: u16 = 0x0000;
/// The single program every brdyun TS carries.
const PROGRAM_NUMBER: u16 = 1;
/// PES stream_id of the (first) video stream.
const STREAM_ID_VIDEO: u8 = 0xe0;
/// PES stream_id of the (first) audio stream.
const STREAM_ID_AUDIO: u8 = 0xc0;
/// Payload bytes of one packet after its 4-byte header.
const PAYLOAD_SIZE: usize = PACKET_SIZE - 4;

/// Writes one segment: the marker packet, the caption block's packets (when it has
/// one), PAT, PMT, then one PES per frame in the given order, continuing the
/// continuity counters of `marker.state.cc`.
///
/// The PMT lists `marker.state.tracks`; frames of a kind the PMT does not list are still
/// written on their kind's PID (the caller keeps the tracks up to date, see
/// [`Tracks::with_frames`]). Returns the bytes (a multiple of 188) and the counters
/// for the next segment.
pub fn write_segment(
    marker: &TimelineMarker,
    frames: &[Frame],
    captions: Option<&CaptionBlock>,
) -> (Bytes, ContinuityCounters) {
    let captions = captions.map(|block| block_packets(&block.encode()));
    let estimate: usize = frames.iter().map(|f| f.data.len() + 40).sum::<usize>()
        + captions.as_ref().map_or(0, Vec::len);
    let mut w = Writer {
        out: Vec::with_capacity((estimate / PAYLOAD_SIZE + 4 + frames.len()) * PACKET_SIZE),
        cc: marker.state.cc,
        pcr: PcrClock::default(),
    };
    let tracks = marker.state.tracks;
    w.packet(MARKER_PID, false, None, &marker.encode());
    if let Some(packets) = &captions {
        w.out.extend_from_slice(packets);
    }
    w.section(PAT_PID, &pat_section());
    w.section(PMT_PID, &pmt_section(tracks));
    let pcr_pid = pcr_pid(tracks);
    for frame in frames {
        w.frame(frame, pcr_pid);
    }
    (Bytes::from(w.out), w.cc)
}

/// A continuous MPEG-TS written one frame at a time (to feed an encoder as the frames
/// arrive, not a segment later): PAT and PMT before the first frame and every video
/// keyframe, one PES per frame with its PCR, the counters running on across calls.
#[derive(Debug, Clone)]
pub struct FrameMuxer {
    cc: ContinuityCounters,
    pcr: PcrClock,
    tracks: Tracks,
    started: bool,
}

impl FrameMuxer {
    /// A muxer whose PMT lists `tracks`; frames of an unlisted kind are still written on
    /// their kind's PID.
    pub fn new(tracks: Tracks) -> Self {
        Self {
            cc: ContinuityCounters::default(),
            pcr: PcrClock::default(),
            tracks,
            started: false,
        }
    }

    /// The packets of one frame (preceded by PAT and PMT where due).
    pub fn write(&mut self, frame: &Frame) -> Bytes {
        let mut w = Writer {
            out: Vec::with_capacity((frame.data.len() / PAYLOAD_SIZE + 4) * PACKET_SIZE),
            cc: self.cc,
            pcr: self.pcr,
        };
        let video = frame.kind() == TrackKind::Video;
        if !self.started || (video && frame.keyframe) {
            w.section(PAT_PID, &pat_section());
            w.section(PMT_PID, &pmt_section(self.tracks));
            self.started = true;
        }
        w.frame(frame, pcr_pid(self.tracks));
        self.cc = w.cc;
        self.pcr = w.pcr;
        Bytes::from(w.out)
    }
}

/// The live relay's transport stream: segments sent as they are cut, not once written
/// (the whole-segment relay concatenates [`write_segment`]s). An open marker, PAT and
/// PMT where a segment starts, one PES per frame as the segmenter places it, and the
/// segment's caption block and close marker once it is written; see
/// [`crate::timeline`]. The counters run on across segments, so the stream is
/// continuous; a downstream segmenter writes each segment again from its close marker
/// and frames, byte for byte the upstream's.
#[derive(Debug, Clone, Default)]
pub struct RelayMuxer {
    cc: ContinuityCounters,
    pcr: PcrClock,
    tracks: Tracks,
}

impl RelayMuxer {
    /// A muxer at the start of a relay response.
    pub fn new() -> Self {
        Self::default()
    }

    /// A segment starts: its open marker ([`TimelineMarker::opening`] of what is known
    /// at its start), PAT and PMT.
    pub fn open(&mut self, marker: &TimelineMarker) -> Bytes {
        let tracks = self.tracks;
        self.tracks = Tracks {
            video: tracks.video.or(marker.state.tracks.video),
            audio: tracks.audio.or(marker.state.tracks.audio),
        };
        let mut w = Writer {
            out: Vec::with_capacity(3 * PACKET_SIZE),
            cc: self.cc,
            pcr: self.pcr,
        };
        w.packet(
            MARKER_PID,
            false,
            None,
            &marker.encode_phase(MarkerPhase::Open),
        );
        w.section(PAT_PID, &pat_section());
        w.section(PMT_PID, &pmt_section(self.tracks));
        self.cc = w.cc;
        Bytes::from(w.out)
    }

    /// One frame placed in a segment being cut; PAT and PMT come first when it brings a
    /// track the PMT does not list yet (a demuxer ignores PIDs it was not told of).
    pub fn frame(&mut self, frame: &Frame) -> Bytes {
        let mut w = Writer {
            out: Vec::with_capacity((frame.data.len() / PAYLOAD_SIZE + 4) * PACKET_SIZE),
            cc: self.cc,
            pcr: self.pcr,
        };
        let tracks = self.tracks.with_frames([frame]);
        if tracks != self.tracks {
            self.tracks = tracks;
            w.section(PAT_PID, &pat_section());
            w.section(PMT_PID, &pmt_section(tracks));
        }
        w.frame(frame, pcr_pid(self.tracks));
        self.cc = w.cc;
        self.pcr = w.pcr;
        Bytes::from(w.out)
    }

    /// A segment was written: `packets` as they are (its caption block: whole TS
    /// packets that check themselves, which a follower needs before it writes the
    /// segment), then its whole marker flagged close.
    pub fn close(&mut self, marker: &TimelineMarker, packets: &[u8]) -> Bytes {
        let mut w = Writer {
            out: Vec::with_capacity(PACKET_SIZE + packets.len()),
            cc: self.cc,
            pcr: self.pcr,
        };
        w.out.extend_from_slice(packets);
        w.packet(
            MARKER_PID,
            false,
            None,
            &marker.encode_phase(MarkerPhase::Close),
        );
        self.cc = w.cc;
        Bytes::from(w.out)
    }
}

/// The PID that carries the PCR: video when there is video, else audio.
fn pcr_pid(tracks: Tracks) -> u16 {
    if tracks.video.is_some() || tracks.audio.is_none() {
        VIDEO_PID
    } else {
        AUDIO_PID
    }
}

/// The PAT section (without pointer field): one program, PMT on [`PMT_PID`].
fn pat_section() -> Vec<u8> {
    let mut s = vec![0x00, 0, 0, 0x00, 0x01, 0xc1, 0x00, 0x00];
    s.extend_from_slice(&PROGRAM_NUMBER.to_be_bytes());
    s.extend_from_slice(&(0xe000 | PMT_PID).to_be_bytes());
    finish_section(s)
}

/// The PMT section (without pointer field) listing `tracks`, video first.
fn pmt_section(tracks: Tracks) -> Vec<u8> {
    let mut s = vec![0x02, 0, 0];
    s.extend_from_slice(&PROGRAM_NUMBER.to_be_bytes());
    s.extend_from_slice(&[0xc1, 0x00, 0x00]);
    s.extend_from_slice(&(0xe000 | pcr_pid(tracks)).to_be_bytes());
    s.extend_from_slice(&[0xf0, 0x00]);
    let streams = [
        tracks.video.map(|c| (c, VIDEO_PID)),
        tracks.audio.map(|c| (c, AUDIO_PID)),
    ];
    for (codec, pid) in streams.into_iter().flatten() {
        s.push(codec.stream_type());
        s.extend_from_slice(&(0xe000 | pid).to_be_bytes());
        s.extend_from_slice(&[0xf0, 0x00]);
    }
    finish_section(s)
}

/// Fills in section_length (syntax indicator set) and appends the CRC.
fn finish_section(mut s: Vec<u8>) -> Vec<u8> {
    let section_length = (s.len() - 3 + 4) as u16;
    s[1] = 0xb0 | ((section_length >> 8) as u8 & 0x0f);
    s[2] = section_length as u8;
    let crc = crc32_mpeg2(&s);
    s.extend_from_slice(&crc.to_be_bytes());
    s
}

/// Encodes a 33-bit timestamp in the 5-byte PES form with the given 4-bit prefix.
fn pes_timestamp(prefix: u8, ts: u64) -> [u8; 5] {
    let ts = ts & PTS_MASK;
    [
        (prefix << 4) | (((ts >> 30) as u8 & 0x07) << 1) | 1,
        (ts >> 22) as u8,
        (((ts >> 15) as u8) << 1) | 1,
        (ts >> 7) as u8,
        ((ts as u8) << 1) | 1,
    ]
}

/// The PES header of a frame (PTS, plus DTS when it differs), then the access unit
/// delimiter the frame lacks, if it is video without one.
fn pes_header(frame: &Frame) -> Vec<u8> {
    let delimiter = missing_delimiter(frame.codec, &frame.data);
    let delimiter = delimiter.as_ref().map_or(&[][..], |d| d.as_bytes());
    let with_dts = frame.pts != frame.dts;
    let header_data_len: u8 = if with_dts { 10 } else { 5 };
    let stream_id = match frame.kind() {
        TrackKind::Video => STREAM_ID_VIDEO,
        TrackKind::Audio => STREAM_ID_AUDIO,
    };
    // An exact length lets a demuxer hand a frame over as soon as its last packet
    // arrives; with length 0 a relay follower would hold a segment's last video frame
    // until the next segment starts. Video too large for 16 bits is written unbounded
    // (length 0), which MPEG-TS allows for video.
    let len = 3 + usize::from(header_data_len) + delimiter.len() + frame.data.len();
    let packet_length = u16::try_from(len).unwrap_or(0);
    let mut h = Vec::with_capacity(26);
    h.extend_from_slice(&[0x00, 0x00, 0x01, stream_id]);
    h.extend_from_slice(&packet_length.to_be_bytes());
    // '10' marker bits, data_alignment_indicator; PTS_DTS_flags.
    h.push(0x84);
    h.push(if with_dts { 0xc0 } else { 0x80 });
    h.push(header_data_len);
    if with_dts {
        h.extend_from_slice(&pes_timestamp(0b0011, frame.pts));
        h.extend_from_slice(&pes_timestamp(0b0001, frame.dts));
    } else {
        h.extend_from_slice(&pes_timestamp(0b0010, frame.pts));
    }
    h.extend_from_slice(delimiter);
    h
}

/// A PCR field: 33-bit base, 6 reserved bits, 9-bit extension (0).
fn pcr_field(base: u64) -> [u8; 6] {
    [
        (base >> 25) as u8,
        (base >> 17) as u8,
        (base >> 9) as u8,
        (base >> 1) as u8,
        ((base as u8 & 1) << 7) | 0x7e,
        0x00,
    ]
}

/// Packet writer with its continuity counters and PCR clock.
struct Writer {
    out: Vec<u8>,
    cc: ContinuityCounters,
    pcr: PcrClock,
}

impl Writer {
    /// The next continuity counter of `pid` (post-increment).
    fn next_cc(&mut self, pid: u16) -> u8 {
        let c = match pid {
            PAT_PID => &mut self.cc.pat,
            PMT_PID => &mut self.cc.pmt,
            VIDEO_PID => &mut self.cc.video,
            AUDIO_PID => &mut self.cc.audio,
            _ => &mut self.cc.marker,
        };
        let now = *c & 0x0f;
        *c = (now + 1) & 0x0f;
        now
    }

    /// Writes `frame` on its kind's PID, with the PCRs due before it and, on the PCR
    /// PID, its own.
    fn frame(&mut self, frame: &Frame, pcr_pid: u16) {
        let pid = match frame.kind() {
            TrackKind::Video => VIDEO_PID,
            TrackKind::Audio => AUDIO_PID,
        };
        let target = ((frame.dts & PTS_MASK) + (1 << 33) - PCR_OFFSET) & PTS_MASK;
        while let Some(value) = self.pcr.next_fill(target) {
            self.pcr_only(pcr_pid, value);
        }
        let pcr = if pid == pcr_pid {
            Some(self.pcr.stamp(target))
        } else {
            if self.pcr.is_unset() {
                let value = self.pcr.stamp(target);
                self.pcr_only(pcr_pid, value);
            }
            None
        };
        self.pes(pid, frame, pcr);
    }

    /// Writes a packet of `pid` with no payload, only an adaptation field carrying the
    /// PCR `base`. Its continuity counter repeats the PID's last one (a packet without
    /// payload does not advance it).
    fn pcr_only(&mut self, pid: u16, base: u64) {
        let next = match pid {
            VIDEO_PID => self.cc.video,
            _ => self.cc.audio,
        };
        let cc = next.wrapping_sub(1) & 0x0f;
        let start = self.out.len();
        self.out.extend_from_slice(&[
            SYNC_BYTE,
            (pid >> 8) as u8 & 0x1f,
            pid as u8,
            0x20 | cc,
            (PAYLOAD_SIZE - 1) as u8,
            0x10,
        ]);
        self.out.extend_from_slice(&pcr_field(base));
        self.out.resize(start + PACKET_SIZE, 0xff);
    }

    /// Writes one packet carrying `payload` (at most 184 bytes minus the adaptation
    /// field), padding with adaptation-field stuffing. `af` is the adaptation field body
    /// after its length byte (flags and optional fields), if one is needed.
    fn packet(&mut self, pid: u16, pusi: bool, af: Option<&[u8]>, payload: &[u8]) {
        let cc = self.next_cc(pid);
        let start = self.out.len();
        self.out.push(SYNC_BYTE);
        self.out
            .push((if pusi { 0x40 } else { 0 }) | ((pid >> 8) as u8 & 0x1f));
        self.out.push(pid as u8);
        let af_body = af.unwrap_or(&[]);
        let af_needed = af.is_some() || payload.len() < PAYLOAD_SIZE;
        self.out.push(if af_needed { 0x30 } else { 0x10 } | cc);
        if af_needed {
            let af_total = PAYLOAD_SIZE - payload.len();
            debug_assert!(
                af_total > af_body.len(),
                "adaptation field overflows packet"
            );
            self.out.push((af_total - 1) as u8);
            if af_total > 1 {
                if af_body.is_empty() {
                    self.out.push(0x00);
                } else {
                    self.out.extend_from_slice(af_body);
                }
                let used = af_body.len().max(1) + 1;
                self.out.resize(self.out.len() + (af_total - used), 0xff);
            }
        }
        self.out.extend_from_slice(payload);
        debug_assert_eq!(self.out.len() - start, PACKET_SIZE);
    }

    /// Writes a PSI section in one packet (pointer field 0).
    fn section(&mut self, pid: u16, section: &[u8]) {
        let mut payload = Vec::with_capacity(PAYLOAD_SIZE);
        payload.push(0x00);
        payload.extend_from_slice(section);
        payload.resize(PAYLOAD_SIZE, 0xff);
        self.packet(pid, true, None, &payload);
    }

    /// Writes one frame as a PES over as many packets as it needs.
    fn pes(&mut self, pid: u16, frame: &Frame, pcr: Option<u64>) {
        let header = pes_header(frame);
        let mut first_af = Vec::with_capacity(7);
        if frame.keyframe || pcr.is_some() {
            let mut flags = 0u8;
            if frame.keyframe {
                flags |= 0x40;
            }
            if pcr.is_some() {
                flags |= 0x10;
            }
            first_af.push(flags);
            if let Some(base) = pcr {
                first_af.extend_from_slice(&pcr_field(base));
            }
        }
        let total = header.len() + frame.data.len();
        let mut pos = 0usize;
        let mut first = true;
        let mut chunk = Vec::with_capacity(PAYLOAD_SIZE);
        while pos < total {
            let af = (first && !first_af.is_empty()).then_some(first_af.as_slice());
            let room = PAYLOAD_SIZE - af.map_or(0, |a| a.len() + 1);
            let n = room.min(total - pos);
            chunk.clear();
            let end = pos + n;
            if pos < header.len() {
                let h_end = end.min(header.len());
                chunk.extend_from_slice(&header[pos..h_end]);
            }
            if end > header.len() {
                let d_start = pos.max(header.len()) - header.len();
                chunk.extend_from_slice(&frame.data[d_start..end - header.len()]);
            }
            self.packet(pid, first, af, &chunk);
            pos = end;
            first = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Codec;

    #[test]
    fn frames_written_one_by_one_are_one_continuous_stream() {
        let clip = include_bytes!("../../../../assets/demo-meeting.ts");
        let video: Vec<Frame> = crate::ts::demux_frames(clip)
            .into_iter()
            .filter(|f| f.kind() == TrackKind::Video)
            .collect();
        let mut muxer = FrameMuxer::new(Tracks {
            video: Some(Codec::H264),
            audio: None,
        });
        let mut stream = Vec::new();
        for frame in &video {
            stream.extend_from_slice(&muxer.write(frame));
        }
        let mut demuxer = crate::ts::Demuxer::new();
        let mut events = Vec::new();
        demuxer.push(&stream, &mut events);
        demuxer.flush(&mut events);
        let back: Vec<Frame> = events
            .into_iter()
            .filter_map(|e| match e {
                crate::ts::DemuxEvent::Frame(f) => Some(f),
                _ => None,
            })
            .collect();
        assert_eq!(back, video);
        assert_eq!(demuxer.stats().cc_errors, 0);
    }

    /// The video access units of a written segment, as the demuxer hands them over.
    fn written_pictures(frames: &[Frame]) -> Vec<Bytes> {
        let mut marker = TimelineMarker::default();
        marker.state.tracks = Tracks {
            video: Some(Codec::H264),
            audio: None,
        };
        let (ts, _) = write_segment(&marker, frames, None);
        crate::ts::demux_frames(&ts)
            .into_iter()
            .filter(|f| f.kind() == TrackKind::Video)
            .map(|f| f.data)
            .collect()
    }

    #[test]
    fn a_picture_gets_one_delimiter_whether_or_not_it_came_with_one() {
        let idr = [0, 0, 0, 1, 0x65, 0xb8, 0x41, 0x22];
        let frame = |data: &[u8], dts: u64| Frame {
            codec: Codec::H264,
            pts: dts,
            dts,
            keyframe: true,
            data: Bytes::copy_from_slice(data),
        };
        let with = [&[0, 0, 0, 1, 0x09, 0x10][..], &idr].concat();
        let pictures = written_pictures(&[frame(&idr, 90_000), frame(&with, 93_600)]);
        assert_eq!(pictures.len(), 2);
        for picture in &pictures {
            assert_eq!(&picture[..], &with[..], "one delimiter, then the picture");
        }
    }

    #[test]
    fn a_picture_gap_keeps_pcrs_within_100_ms() {
        let frame = |dts: u64| Frame {
            codec: Codec::H264,
            pts: dts,
            dts,
            keyframe: false,
            data: Bytes::from_static(&[0, 0, 0, 1, 0x41, 0x9a]),
        };
        let mut marker = TimelineMarker::default();
        marker.state.tracks.video = Some(Codec::H264);
        // Half a second between two pictures.
        let (ts, _) = write_segment(&marker, &[frame(90_000), frame(135_000)], None);
        let pcrs: Vec<u64> = ts
            .chunks(PACKET_SIZE)
            .filter(|p| p[3] & 0x20 != 0 && p[4] > 0 && p[5] & 0x10 != 0)
            .map(|p| {
                let b: Vec<u64> = p[6..11].iter().map(|&x| u64::from(x)).collect();
                b[0] << 25 | b[1] << 17 | b[2] << 9 | b[3] << 1 | b[4] >> 7
            })
            .collect();
        assert_eq!(
            pcrs,
            [81_000, 90_000, 99_000, 108_000, 117_000, 126_000],
            "one PCR per picture and four between"
        );
        // The packets without payload keep the video PID's counter where it was.
        let mut demuxer = crate::ts::Demuxer::new();
        let mut events = Vec::new();
        demuxer.push(&ts, &mut events);
        demuxer.flush(&mut events);
        assert_eq!(demuxer.stats().cc_errors, 0);
    }

    #[test]
    fn timestamps_encode_with_marker_bits() {
        assert_eq!(pes_timestamp(0b0010, 0), [0x21, 0x00, 0x01, 0x00, 0x01]);
        assert_eq!(
            pes_timestamp(0b0010, PTS_MASK),
            [0x2f, 0xff, 0xff, 0xff, 0xff]
        );
    }

    #[test]
    fn psi_sections_carry_a_valid_crc() {
        for s in [
            pat_section(),
            pmt_section(Tracks {
                video: Some(Codec::H264),
                audio: Some(Codec::Aac),
            }),
        ] {
            // The CRC over a section including its CRC is zero.
            assert_eq!(crc32_mpeg2(&s), 0);
        }
    }
}
