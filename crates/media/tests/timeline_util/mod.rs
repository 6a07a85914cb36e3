//! Shared by the timeline tests: a synthetic source (H.264-looking video with B-frames
//! and irregular GOPs, ADTS audio, any 33-bit start), a fresh segmenter, and what a
//! downstream node does with a relay.

#![allow(dead_code)]

use bytes::Bytes;
use media::codec::aac::AudioSpecificConfig;
use media::ts::{DemuxEvent, Demuxer};
use media::{Codec, Frame, Segment, Segmenter, SegmenterConfig, StartPoint};

pub const WRAP: u64 = 1 << 33;
pub const FRAME: u64 = 3_600; // 25 fps
pub const AAC_FRAME: u64 = 1_920; // 1024 samples at 48 kHz
pub const EPOCH_MS: i64 = 1_714_564_800_000;

/// A synthetic source: H.264-looking Annex B video with B-frames and irregular GOPs,
/// ADTS audio, timestamps from any 33-bit start (so "negative" starts and wraps).
pub struct Synth {
    pub video: bool,
    pub audio: bool,
    pub bframes: bool,
    /// GOP lengths in frames, cycled (each 1 + 3m when B-frames are on).
    pub gops: Vec<u64>,
    /// 33-bit timestamp of the first displayed picture.
    pub start: u64,
    /// Audio arrives this many ticks before the video with the same timestamp.
    pub audio_lead: u64,
}

pub fn payload(seed: u64, len: usize) -> Vec<u8> {
    // Never zero, so no start code emulation.
    (0..len)
        .map(|i| ((seed.wrapping_mul(31) + i as u64 * 7) % 200 + 16) as u8)
        .collect()
}

pub fn h264(index: u64, key: bool) -> Bytes {
    let mut d = Vec::new();
    if key {
        d.extend_from_slice(&[0, 0, 0, 1, 0x67, 0x64, 0x00, 0x1f, 0xac, 0xd9]);
        d.extend_from_slice(&[0, 0, 0, 1, 0x68, 0xeb, 0xe3, 0xcb]);
        d.extend_from_slice(&[0, 0, 0, 1, 0x65]);
        d.extend_from_slice(&payload(index, 1500 + (index % 7) as usize * 211));
    } else {
        d.extend_from_slice(&[0, 0, 0, 1, 0x41]);
        d.extend_from_slice(&payload(index, 90 + (index % 13) as usize * 37));
    }
    Bytes::from(d)
}

pub fn adts(index: u64) -> Bytes {
    let cfg = AudioSpecificConfig {
        object_type: 2,
        sample_rate_index: 3,
        channels: 2,
    };
    let body = payload(index + 99, 150 + (index % 5) as usize * 20);
    let mut d = Vec::new();
    cfg.write_adts_header(body.len(), &mut d)
        .expect("small aac frame");
    d.extend_from_slice(&body);
    Bytes::from(d)
}

impl Synth {
    pub fn new(start: u64) -> Self {
        Self {
            video: true,
            audio: true,
            bframes: true,
            gops: vec![25],
            start,
            audio_lead: 27_000,
        }
    }

    /// Frames covering `seconds`, in arrival order.
    pub fn frames(&self, seconds: u64) -> Vec<Frame> {
        let total = seconds * 25;
        let mut out: Vec<(u64, Frame)> = Vec::new();
        if self.video {
            let mut n = 0u64; // display index of the GOP start
            let mut g = 0usize;
            let mut decode = 0u64;
            while n < total {
                let len = self.gops[g % self.gops.len()];
                g += 1;
                // Decode order within the GOP as display offsets: I, then (P, B, B)…
                let mut order = vec![0u64];
                if self.bframes {
                    let mut a = 1;
                    while a + 2 < len {
                        order.extend_from_slice(&[a + 2, a, a + 1]);
                        a += 3;
                    }
                    order.extend(a..len);
                } else {
                    order.extend(1..len);
                }
                for off in order {
                    let display = n + off;
                    let delay = if self.bframes { FRAME } else { 0 };
                    let dts = self.start + decode * FRAME;
                    let pts = dts.wrapping_sub(decode * FRAME) + display * FRAME + delay;
                    let dts = dts & media::PTS_MASK;
                    let pts = pts & media::PTS_MASK;
                    out.push((
                        decode * FRAME,
                        Frame {
                            codec: Codec::H264,
                            pts,
                            dts,
                            keyframe: off == 0,
                            data: h264(display, off == 0),
                        },
                    ));
                    decode += 1;
                }
                n += len;
            }
        }
        if self.audio {
            let count = total * FRAME / AAC_FRAME;
            for j in 0..count {
                let ts = (self.start + j * AAC_FRAME) & media::PTS_MASK;
                out.push((
                    (j * AAC_FRAME).saturating_sub(self.audio_lead),
                    Frame {
                        codec: Codec::Aac,
                        pts: ts,
                        dts: ts,
                        keyframe: true,
                        data: adts(j),
                    },
                ));
            }
        }
        out.sort_by_key(|(arrival, _)| *arrival);
        out.into_iter().map(|(_, f)| f).collect()
    }
}

/// A source of 1-s GOPs at 25 fps (no B-frames) with 48-kHz audio arriving
/// `audio_lag` behind the video of the same timestamp (as ffmpeg's MPEG-TS muxer sends
/// it), cut off after video frame `video_frames - 1` as a killed publisher is: the
/// audio that would have arrived after that never does.
pub fn cut_source(start: u64, video_frames: u64, audio_lag: u64) -> Vec<Frame> {
    let mut out: Vec<(u64, Frame)> = Vec::new();
    for i in 0..video_frames {
        let ts = start + i * FRAME;
        out.push((
            ts,
            Frame {
                codec: Codec::H264,
                pts: ts,
                dts: ts,
                keyframe: i % 25 == 0,
                data: h264(i, i % 25 == 0),
            },
        ));
    }
    let last_arrival = start + (video_frames - 1) * FRAME;
    for j in 0.. {
        let ts = start + j * AAC_FRAME;
        if ts + audio_lag > last_arrival {
            break;
        }
        out.push((
            ts + audio_lag,
            Frame {
                codec: Codec::Aac,
                pts: ts,
                dts: ts,
                keyframe: true,
                data: adts(j),
            },
        ));
    }
    out.sort_by_key(|(arrival, _)| *arrival);
    out.into_iter().map(|(_, f)| f).collect()
}

/// Feeds frames with a wall clock that follows the media clock.
pub fn run(seg: &mut Segmenter, frames: &[Frame], clock_base: u64) -> Vec<Segment> {
    let mut out = Vec::new();
    for f in frames {
        let elapsed = (f.dts.wrapping_sub(clock_base) & media::PTS_MASK) / 90;
        if let Some(s) = seg.push(f.clone(), EPOCH_MS + elapsed as i64) {
            out.push(s);
        }
        while let Some(s) = seg.pop_ready() {
            out.push(s);
        }
    }
    while let Some(s) = seg.flush() {
        out.push(s);
    }
    out
}

pub fn fresh(config: SegmenterConfig) -> Segmenter {
    Segmenter::new(
        config,
        StartPoint::Fresh {
            min_msn: 0,
            min_discontinuity_seq: 0,
        },
    )
}

/// What a downstream node does: demux the relay stream and follow its markers.
pub fn relay(bytes: &[u8], chunk: usize) -> (Vec<Segment>, Segmenter) {
    let mut demux = Demuxer::new();
    let mut b = Segmenter::new(SegmenterConfig::default(), StartPoint::Adopt);
    let mut out = Vec::new();
    let mut events = Vec::new();
    let feed = |events: &mut Vec<DemuxEvent>, b: &mut Segmenter, out: &mut Vec<Segment>| {
        for e in events.drain(..) {
            let done = match e {
                DemuxEvent::Frame(f) => b.push(f, 0),
                DemuxEvent::Marker(m) => b.push_marker(&m).expect("valid marker"),
                DemuxEvent::Discontinuity(r) => panic!("unexpected discontinuity {r:?}"),
                DemuxEvent::Captions(_) | DemuxEvent::AlternateAudio { .. } => None,
            };
            out.extend(done);
            while let Some(s) = b.pop_ready() {
                out.push(s);
            }
        }
    };
    for c in bytes.chunks(chunk) {
        demux.push(c, &mut events);
        feed(&mut events, &mut b, &mut out);
    }
    demux.flush(&mut events);
    feed(&mut events, &mut b, &mut out);
    while let Some(s) = b.flush() {
        out.push(s);
    }
    (out, b)
}

pub fn concat(segments: &[Segment]) -> Vec<u8> {
    segments
        .iter()
        .flat_map(|s| s.data.iter().copied())
        .collect()
}

pub fn assert_same(a: &[Segment], b: &[Segment]) {
    assert_eq!(a.len(), b.len(), "segment count");
    for (x, y) in a.iter().zip(b) {
        assert_eq!(
            (x.msn, x.discontinuity_seq, x.discontinuous, x.start_ts),
            (y.msn, y.discontinuity_seq, y.discontinuous, y.start_ts)
        );
        assert_eq!(x.duration_ticks, y.duration_ticks, "duration of {}", x.msn);
        assert_eq!(
            x.program_date_time_ms, y.program_date_time_ms,
            "pdt of {}",
            x.msn
        );
        assert_eq!(x.keyframe_start, y.keyframe_start);
        assert!(x.data == y.data, "bytes of segment {} differ", x.msn);
    }
}

/// A long, irregular source: B-frames, irregular GOPs (some longer than the target),
/// AAC arriving ahead of video, a first timestamp just below 2^33 ("negative") so the
/// clock wraps, and later a jump of the source clock.
pub fn hard_source() -> Vec<Frame> {
    let mut first = Synth::new(WRAP - 4 * FRAME);
    first.gops = vec![25, 13, 37, 7, 61, 19, 25, 10, 4];
    let mut frames = first.frames(70);
    let mut after_jump = Synth::new(123_456_789);
    after_jump.gops = vec![31, 22];
    frames.extend(after_jump.frames(20));
    frames
}
