//! Property tests of the segmenter's invariants over random sources: MSN consecutive,
//! durations summing to the timeline, dates following the timestamps, every segment
//! starting with marker + PAT + PMT, whole 188-byte packets, continuity counters
//! continuous across concatenated segments, a PCR before the first PES and at most
//! 100 ms apart, one access unit delimiter opening every picture, and relays
//! reproducing the bytes.

use std::collections::HashMap;

use bytes::Bytes;
use media::timeline::TimelineMarker;
use media::ts::{DemuxEvent, Demuxer, AUDIO_PID, MARKER_PID, PACKET_SIZE, PMT_PID, VIDEO_PID};
use media::{Codec, Frame, Segment, Segmenter, SegmenterConfig, StartPoint, PTS_MASK};
use proptest::prelude::*;

const FRAME: u64 = 3_600;
const AAC_FRAME: u64 = 1_920;

#[derive(Debug, Clone)]
struct Source {
    video: bool,
    audio: bool,
    bframes: bool,
    gops: Vec<u64>,
    start: u64,
    audio_lead: u64,
    seconds: u64,
    /// Frame index (in arrival order) where the source clock jumps, if any.
    jump_at: Option<usize>,
}

fn source() -> impl Strategy<Value = Source> {
    (
        prop_oneof![Just((true, true)), Just((true, false)), Just((false, true))],
        any::<bool>(),
        prop::collection::vec(1u64..80, 1..6),
        0u64..=PTS_MASK,
        0u64..60_000,
        8u64..30,
        prop::option::of(50usize..600),
    )
        .prop_map(
            |((video, audio), bframes, gops, start, audio_lead, seconds, jump_at)| Source {
                video,
                audio,
                bframes,
                gops,
                start,
                audio_lead,
                seconds,
                jump_at,
            },
        )
}

fn data(seed: u64, key: bool, audio: bool) -> Bytes {
    let len = if key { 900 } else { 60 } + (seed % 11) as usize * 29;
    let mut d = if audio {
        // One well-formed ADTS frame (48 kHz stereo AAC-LC), as the demuxer expects.
        let config = media::codec::aac::AudioSpecificConfig {
            object_type: 2,
            sample_rate_index: 3,
            channels: 2,
        };
        let mut header = Vec::new();
        config
            .write_adts_header(len, &mut header)
            .expect("small frame");
        header
    } else if key {
        vec![0, 0, 0, 1, 0x65]
    } else {
        vec![0, 0, 0, 1, 0x41]
    };
    d.extend((0..len).map(|i| ((seed + i as u64 * 3) % 200 + 16) as u8));
    Bytes::from(d)
}

impl Source {
    fn frames(&self) -> Vec<Frame> {
        let total = self.seconds * 25;
        let mut out: Vec<(u64, Frame)> = Vec::new();
        if self.video {
            let (mut n, mut g, mut decode) = (0u64, 0usize, 0u64);
            while n < total {
                let len = self.gops[g % self.gops.len()];
                g += 1;
                let mut order = vec![0u64];
                let mut a = 1;
                if self.bframes {
                    while a + 2 < len {
                        order.extend_from_slice(&[a + 2, a, a + 1]);
                        a += 3;
                    }
                }
                order.extend(a..len);
                for off in order {
                    let delay = if self.bframes { FRAME } else { 0 };
                    let dts = self.start + decode * FRAME;
                    let pts = self.start + (n + off) * FRAME + delay;
                    out.push((
                        decode * FRAME,
                        Frame {
                            codec: Codec::H264,
                            pts: pts & PTS_MASK,
                            dts: dts & PTS_MASK,
                            keyframe: off == 0,
                            data: data(decode, off == 0, false),
                        },
                    ));
                    decode += 1;
                }
                n += len;
            }
        }
        if self.audio {
            for j in 0..total * FRAME / AAC_FRAME {
                let ts = (self.start + j * AAC_FRAME) & PTS_MASK;
                out.push((
                    (j * AAC_FRAME).saturating_sub(self.audio_lead),
                    Frame {
                        codec: Codec::Aac,
                        pts: ts,
                        dts: ts,
                        keyframe: true,
                        data: data(j, true, true),
                    },
                ));
            }
        }
        out.sort_by_key(|(t, _)| *t);
        let mut frames: Vec<Frame> = out.into_iter().map(|(_, f)| f).collect();
        if let Some(at) = self.jump_at.filter(|&at| at < frames.len()) {
            // Everything from here on is an hour later on the source clock.
            for f in &mut frames[at..] {
                f.pts = (f.pts + 324_000_000) & PTS_MASK;
                f.dts = (f.dts + 324_000_000) & PTS_MASK;
            }
        }
        frames
    }
}

fn segment_all(frames: &[Frame]) -> (Vec<Segment>, Segmenter) {
    let mut seg = Segmenter::new(
        SegmenterConfig::default(),
        StartPoint::Fresh {
            min_msn: 0,
            min_discontinuity_seq: 0,
        },
    );
    let mut out = Vec::new();
    // A wall clock that follows the source's steps (a real-time source); a jump of its
    // timestamps is not time passing.
    let first = frames
        .first()
        .map(|f| media::segmenter::unwrap_ts(f.dts, None));
    let (mut last, mut newest, mut jumped) = (first, first.unwrap_or(0), 0u64);
    for f in frames {
        let dts = media::segmenter::unwrap_ts(f.dts, last);
        last = Some(dts);
        if dts > newest + 90_000 {
            jumped += dts - newest;
        }
        newest = newest.max(dts);
        let elapsed_ms = (newest - first.unwrap_or(0) - jumped) / 90;
        out.extend(seg.push(f.clone(), 1_700_000_000_000 + elapsed_ms as i64));
        while let Some(s) = seg.pop_ready() {
            out.push(s);
        }
    }
    while let Some(s) = seg.flush() {
        out.push(s);
    }
    (out, seg)
}

fn relay(bytes: &[u8]) -> Vec<Segment> {
    let mut demux = Demuxer::new();
    let mut b = Segmenter::new(SegmenterConfig::default(), StartPoint::Adopt);
    let mut events = Vec::new();
    demux.push(bytes, &mut events);
    demux.flush(&mut events);
    let mut out = Vec::new();
    for e in events {
        match e {
            DemuxEvent::Frame(f) => out.extend(b.push(f, 0)),
            DemuxEvent::Marker(m) => out.extend(b.push_marker(&m).ok().flatten()),
            DemuxEvent::Discontinuity(_) => b.discontinuity(),
            DemuxEvent::Captions(_) | DemuxEvent::AlternateAudio { .. } => {}
        }
        while let Some(s) = b.pop_ready() {
            out.push(s);
        }
    }
    while let Some(s) = b.flush() {
        out.push(s);
    }
    out
}

fn pid(p: &[u8]) -> u16 {
    u16::from(p[1] & 0x1f) << 8 | u16::from(p[2])
}

/// The PCR base of a packet's adaptation field, if it carries one.
fn pcr_of(p: &[u8]) -> Option<u64> {
    let has_af = p[3] & 0x20 != 0;
    if !has_af || p[4] == 0 || p[5] & 0x10 == 0 {
        return None;
    }
    let b: Vec<u64> = p[6..11].iter().map(|&x| u64::from(x)).collect();
    Some(b[0] << 25 | b[1] << 17 | b[2] << 9 | b[3] << 1 | b[4] >> 7)
}

/// The elementary-stream bytes of the first packet of a PES (after its header).
fn pes_payload(p: &[u8]) -> &[u8] {
    let start = if p[3] & 0x20 != 0 {
        5 + usize::from(p[4])
    } else {
        4
    };
    let pes = &p[start..];
    &pes[9 + usize::from(pes[8])..]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn segmenter_invariants_hold(src in source()) {
        let frames = src.frames();
        let (segments, _) = segment_all(&frames);
        prop_assert!(!segments.is_empty());
        let mut counters: HashMap<u16, u8> = HashMap::new();
        for s in &segments {
            prop_assert_eq!(s.data.len() % PACKET_SIZE, 0);
            let packets: Vec<&[u8]> = s.data.chunks(PACKET_SIZE).collect();
            prop_assert!(packets.len() >= 4);
            prop_assert_eq!([pid(packets[0]), pid(packets[1]), pid(packets[2])], [MARKER_PID, 0, PMT_PID]);
            let marker = TimelineMarker::parse(&packets[0][4..]).expect("marker parses");
            prop_assert_eq!(marker.state.msn, s.msn);
            prop_assert_eq!(marker.duration_ticks, s.duration_ticks);
            let mut last_pcr: Option<u64> = None;
            for p in &packets {
                prop_assert_eq!(p[0], 0x47);
                let cc = p[3] & 0x0f;
                let has_payload = p[3] & 0x10 != 0;
                if let Some(prev) = counters.insert(pid(p), cc) {
                    // A packet without payload repeats its PID's counter.
                    let expected = if has_payload { (prev + 1) & 0x0f } else { prev };
                    prop_assert_eq!(cc, expected, "cc of pid {:#x}", pid(p));
                }
                // PCRs at most 100 ms apart, and one before the first PES
                // (ISO/IEC 13818-1 §2.7.2).
                if let Some(pcr) = pcr_of(p) {
                    if let Some(prev) = last_pcr {
                        let step = pcr.wrapping_sub(prev) & PTS_MASK;
                        prop_assert!(step <= 9_000, "pcr step {}", step);
                    }
                    last_pcr = Some(pcr);
                }
                let es = pid(p) == VIDEO_PID || pid(p) == AUDIO_PID;
                if es && p[1] & 0x40 != 0 {
                    prop_assert!(last_pcr.is_some(), "a PES before any PCR");
                }
                // Every video access unit starts with exactly one delimiter.
                if pid(p) == VIDEO_PID && p[1] & 0x40 != 0 {
                    let es = pes_payload(p);
                    prop_assert_eq!(&es[..5], &[0, 0, 0, 1, 0x09][..]);
                    prop_assert_ne!(es[10] & 0x1f, 0x09, "a second delimiter");
                }
            }
        }
        for w in segments.windows(2) {
            let (a, b) = (&w[0], &w[1]);
            prop_assert_eq!(b.msn, a.msn + 1);
            if b.discontinuous {
                prop_assert_eq!(b.discontinuity_seq, a.discontinuity_seq + 1);
                // Dates continue from the end of the previous segment, or (when the
                // wall clock ran more than a second ahead while the stream waited
                // for a keyframe) move forward to the wall clock: never backwards.
                let end = a.program_date_time_ms + (a.duration_ticks / 90) as i64;
                let forward = b.program_date_time_ms - end;
                prop_assert!(forward.abs() <= 1 || forward > 1_000, "{}", forward);
            } else {
                prop_assert_eq!(b.discontinuity_seq, a.discontinuity_seq);
                // Durations sum to the timeline; dates follow the timestamps.
                prop_assert_eq!(a.start_ts + a.duration_ticks, b.start_ts);
                let step = b.program_date_time_ms - a.program_date_time_ms;
                let exact = (a.duration_ticks / 90) as i64;
                prop_assert!(step == exact || step == exact + 1, "{} vs {}", step, exact);
            }
            if src.video {
                let bound = SegmenterConfig::default().max_segment_ticks() + 3 * FRAME;
                prop_assert!(a.duration_ticks <= bound, "{} > {}", a.duration_ticks, bound);
            }
        }
        // A node following from the middle reproduces the rest.
        let k = segments.len() / 2;
        let tail = &segments[k..];
        let bytes: Vec<u8> = tail.iter().flat_map(|s| s.data.iter().copied()).collect();
        let followed = relay(&bytes);
        prop_assert_eq!(followed.len(), tail.len());
        for (x, y) in tail.iter().zip(&followed) {
            prop_assert_eq!(x, y);
        }
    }

    /// Hostile input: arbitrary timestamps, flags, codecs and valid-but-absurd markers,
    /// in both modes, never panic and every output is still whole packets.
    #[test]
    fn arbitrary_input_never_panics(
        ops in prop::collection::vec(
            (0u8..8, any::<u64>(), any::<u64>(), any::<bool>(), any::<u32>(), any::<u64>()),
            1..300,
        ),
        adopt in any::<bool>(),
    ) {
        let start = if adopt {
            StartPoint::Adopt
        } else {
            StartPoint::Fresh { min_msn: u64::MAX - 3, min_discontinuity_seq: u64::MAX - 1 }
        };
        let mut seg = Segmenter::new(SegmenterConfig::default(), start);
        let mut out = Vec::new();
        for (op, a, b, key, n, big) in ops {
            match op {
                0 => {
                    let mut m = TimelineMarker::default();
                    m.state.msn = big;
                    m.start_ts = a;
                    m.state.wraps = a >> 33;
                    m.duration_ticks = b;
                    m.video_frames = n % 4;
                    m.audio_frames = n % 3;
                    m.state.tracks.video = key.then_some(Codec::H265);
                    out.extend(seg.push_marker(&m.encode()).ok().flatten());
                }
                1 => seg.discontinuity(),
                2 => out.extend(seg.flush()),
                _ => {
                    let codec = [Codec::H264, Codec::H265, Codec::Aac][usize::from(op % 3)];
                    let frame = Frame {
                        codec,
                        pts: a & PTS_MASK,
                        dts: if op % 2 == 0 { a & PTS_MASK } else { b & PTS_MASK },
                        keyframe: key,
                        data: data(big, key, codec == Codec::Aac),
                    };
                    out.extend(seg.push(frame, big as i64));
                }
            }
            while let Some(s) = seg.pop_ready() {
                out.push(s);
            }
        }
        for s in out {
            prop_assert_eq!(s.data.len() % PACKET_SIZE, 0);
        }
    }

    /// Damaged timestamps in source mode (a clean cadence with steps of any size,
    /// forward or back, PTS far from DTS, a wall clock that may stall): no segment is
    /// longer than the longest-segment bound and no date runs more than
    /// `MAX_DATE_AHEAD_MS` ahead of the wall clock the frames came with.
    #[test]
    fn damaged_timestamps_never_give_a_wild_duration_or_date(
        ops in prop::collection::vec(
            (0u8..6, 0u64..2_000_000, any::<u64>(), any::<bool>(), 0i64..200),
            1..600,
        ),
        start in 0u64..=PTS_MASK,
    ) {
        let config = SegmenterConfig::default();
        let mut seg = Segmenter::new(
            config,
            StartPoint::Fresh { min_msn: 0, min_discontinuity_seq: 0 },
        );
        let (mut dts, mut now) = (start, 1_700_000_000_000i64);
        let mut out = Vec::new();
        for (i, (op, step, noise, key, wall)) in ops.into_iter().enumerate() {
            dts = match op {
                0 => dts.wrapping_add(step),
                1 => dts.wrapping_sub(step),
                2 => noise,
                _ => dts.wrapping_add(FRAME),
            } & PTS_MASK;
            let pts = if noise % 7 == 0 { noise } else { dts + (noise % 4) * FRAME };
            let audio = i % 3 == 2;
            now += wall;
            let frame = Frame {
                codec: if audio { Codec::Aac } else { Codec::H264 },
                pts: pts & PTS_MASK,
                dts: if audio { pts & PTS_MASK } else { dts },
                keyframe: audio || key,
                data: data(i as u64, key, audio),
            };
            out.extend(seg.push(frame, now).map(|s| (s, now)));
            while let Some(s) = seg.pop_ready() {
                out.push((s, now));
            }
        }
        while let Some(s) = seg.flush() {
            out.push((s, now));
        }
        for (s, at) in &out {
            prop_assert!(s.duration_ticks <= config.longest_segment_ticks(), "msn {} lasts {}", s.msn, s.duration_ticks);
            prop_assert!(
                s.program_date_time_ms <= at + media::segmenter::MAX_DATE_AHEAD_MS,
                "msn {} dated {} ms ahead", s.msn, s.program_date_time_ms - at
            );
        }
    }

    #[test]
    fn marker_parse_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = TimelineMarker::parse(&bytes);
    }

    #[test]
    fn markers_round_trip(
        msn in any::<u64>(), seq in any::<u64>(), anchor in any::<u64>(), unix in any::<i64>(),
        start in any::<u64>(), dur in any::<u64>(), pdt in any::<i64>(), counts in any::<(u32, u32, u32)>(),
        flags in any::<(bool, bool)>(), cc in any::<[u8; 5]>(),
    ) {
        let mut m = TimelineMarker::default();
        m.state.msn = msn;
        m.state.discontinuity_seq = seq;
        m.state.anchor_ts = anchor;
        m.state.anchor_unix_ms = unix;
        m.state.wraps = start >> 33;
        m.state.cc.pat = cc[0] & 15;
        m.state.cc.pmt = cc[1] & 15;
        m.state.cc.video = cc[2] & 15;
        m.state.cc.audio = cc[3] & 15;
        m.state.cc.marker = cc[4] & 15;
        m.state.tracks.video = Some(Codec::H264);
        m.start_ts = start;
        m.duration_ticks = dur;
        m.program_date_time_ms = pdt;
        (m.target_duration_ms, m.video_frames, m.audio_frames) = counts;
        (m.discontinuous, m.keyframe_start) = flags;
        prop_assert_eq!(TimelineMarker::parse(&m.encode()), Ok(m));
    }
}
