//! The demuxer and the probes against ffmpeg-made streams, checked against ffprobe's
//! view of the same files (tests/fixtures/README.txt says how both were made).

use media::codec::probe::{probe_audio, probe_video};
use media::ts::demux::AudioTrack;
use media::ts::{DemuxEvent, Demuxer, DiscontinuityReason};
use media::{Codec, Frame, TrackKind};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

fn demux(data: &[u8]) -> (Vec<DemuxEvent>, Demuxer) {
    let mut demuxer = Demuxer::new();
    let mut events = Vec::new();
    demuxer.push(data, &mut events);
    demuxer.flush(&mut events);
    (events, demuxer)
}

fn frames(events: &[DemuxEvent], kind: TrackKind) -> Vec<&Frame> {
    events
        .iter()
        .filter_map(|e| match e {
            DemuxEvent::Frame(f) if f.kind() == kind => Some(f),
            _ => None,
        })
        .collect()
}

/// Counts the ADTS frames in an audio PES by walking their frame_length fields.
fn adts_frames(mut data: &[u8]) -> usize {
    let mut n = 0;
    while data.len() >= 7 && data[0] == 0xff && data[1] & 0xf0 == 0xf0 {
        let len = (usize::from(data[3] & 0x03) << 11)
            | (usize::from(data[4]) << 3)
            | usize::from(data[5] >> 5);
        assert!(len >= 7 && len <= data.len(), "adts frame length {len}");
        data = &data[len..];
        n += 1;
    }
    assert!(
        data.is_empty(),
        "{} bytes after the last adts frame",
        data.len()
    );
    n
}

struct Expected {
    video: Option<ExpectedVideo>,
    audio: Option<ExpectedAudio>,
}

struct ExpectedVideo {
    codec: Codec,
    frames: usize,
    first_pts: u64,
    first_dts: u64,
    keyframes: &'static [usize],
    codec_string: &'static str,
}

struct ExpectedAudio {
    pes: usize,
    adts_frames: usize,
    first_pts: u64,
    sample_rate: u32,
}

fn check(name: &str, expected: Expected) {
    let (events, demuxer) = demux(&fixture(name));
    let stats = demuxer.stats();
    assert_eq!(stats.cc_errors, 0, "{name}");
    assert_eq!(stats.pes_errors, 0, "{name}");
    assert_eq!(stats.crc_errors, 0, "{name}");
    assert_eq!(stats.sync_losses, 0, "{name}");
    assert_eq!(stats.packets as usize, fixture(name).len() / 188, "{name}");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, DemuxEvent::Discontinuity(_))),
        "{name}: a clean file has no discontinuity"
    );

    let video = frames(&events, TrackKind::Video);
    match expected.video {
        None => assert!(video.is_empty(), "{name}"),
        Some(v) => {
            assert_eq!(video.len(), v.frames, "{name}: video frames");
            assert!(video.iter().all(|f| f.codec == v.codec));
            assert_eq!(
                (video[0].pts, video[0].dts),
                (v.first_pts, v.first_dts),
                "{name}"
            );
            let keys: Vec<usize> = (0..video.len()).filter(|&i| video[i].keyframe).collect();
            assert_eq!(keys, v.keyframes, "{name}: keyframe positions");
            // 25 fps: decoding order advances one frame duration at a time.
            for w in video.windows(2) {
                assert_eq!(w[1].dts - w[0].dts, 3600, "{name}: dts step");
            }
            let info = probe_video(video[0]).expect("the first keyframe carries an sps");
            assert_eq!(info.codec, v.codec);
            assert_eq!(info.codec_string, v.codec_string, "{name}");
            assert_eq!((info.width, info.height), (320, 180), "{name}");
            // Frames without parameter sets (non-keyframes here) probe to nothing.
            assert_eq!(probe_video(video[1]), None);
        }
    }

    let audio = frames(&events, TrackKind::Audio);
    match expected.audio {
        None => assert!(audio.is_empty(), "{name}"),
        Some(a) => {
            // The demuxer splits each PES (ffprobe counts `pes` of them) into its ADTS
            // frames (ffprobe's packets), one Frame each.
            assert!(a.pes < a.adts_frames, "{name}: several frames per pes");
            assert_eq!(
                audio.len(),
                a.adts_frames,
                "{name}: one frame per adts frame"
            );
            assert!(audio.iter().all(|f| adts_frames(&f.data) == 1));
            assert!(audio.iter().all(|f| f.codec == Codec::Aac && f.keyframe));
            assert_eq!(audio[0].pts, a.first_pts, "{name}");
            assert!(audio.iter().all(|f| f.pts == f.dts));
            // Each frame is 1024 samples after the one before (to the 90 kHz tick).
            let frame_ticks = 1024.0 * 90_000.0 / f64::from(a.sample_rate);
            for w in audio.windows(2) {
                let step = (w[1].pts - w[0].pts) as f64;
                assert!(
                    (step - frame_ticks).abs() <= 1.0,
                    "{name}: audio step {step}"
                );
            }
            let info = probe_audio(audio[0]).expect("adts header");
            assert_eq!(info.codec_string, "mp4a.40.2");
            assert_eq!((info.sample_rate, info.channels), (a.sample_rate, 2));
        }
    }
    let frames_total = video.len() + audio.len();
    assert_eq!(stats.frames as usize, frames_total, "{name}");
}

#[test]
fn h264_with_b_frames_and_aac() {
    check(
        "h264_aac.ts",
        Expected {
            video: Some(ExpectedVideo {
                codec: Codec::H264,
                frames: 75,
                first_pts: 133_200,
                first_dts: 126_000,
                keyframes: &[0, 25, 50],
                codec_string: "avc1.64000c",
            }),
            audio: Some(ExpectedAudio {
                pes: 9,
                adts_frames: 142,
                first_pts: 131_280,
                sample_rate: 48_000,
            }),
        },
    );
}

#[test]
fn h265_with_b_frames_and_aac() {
    check(
        "h265_aac.ts",
        Expected {
            video: Some(ExpectedVideo {
                codec: Codec::H265,
                frames: 75,
                first_pts: 133_200,
                first_dts: 126_000,
                keyframes: &[0, 25, 50],
                codec_string: "hvc1.1.6.L60.90",
            }),
            audio: Some(ExpectedAudio {
                pes: 9,
                adts_frames: 131,
                first_pts: 131_110,
                sample_rate: 44_100,
            }),
        },
    );
}

#[test]
fn h264_video_only() {
    check(
        "h264_only.ts",
        Expected {
            video: Some(ExpectedVideo {
                codec: Codec::H264,
                frames: 50,
                first_pts: 126_000,
                first_dts: 126_000,
                keyframes: &[0, 25],
                codec_string: "avc1.4d400c",
            }),
            audio: None,
        },
    );
}

#[test]
fn aac_audio_only() {
    check(
        "aac_only.ts",
        Expected {
            video: None,
            audio: Some(ExpectedAudio {
                pes: 6,
                adts_frames: 95,
                first_pts: 126_000,
                sample_rate: 48_000,
            }),
        },
    );
}

#[test]
fn video_pts_match_ffprobe() {
    // Sum of the 75 video PTS that ffprobe lists for h264_aac.ts (B-frame reordering
    // makes the sequence non-monotonic; the sum pins every value's presence).
    let (events, _) = demux(&fixture("h264_aac.ts"));
    let video = frames(&events, TrackKind::Video);
    let sum: u64 = video.iter().map(|f| f.pts).sum();
    assert_eq!(sum, EXPECTED_H264_AAC_PTS_SUM);
    // The second frame in decoding order is a B-frame shown before the anchor's successor.
    assert!(video.windows(2).any(|w| w[1].pts < w[0].pts));
}

const EXPECTED_H264_AAC_PTS_SUM: u64 = 19_980_000;

#[test]
fn a_changed_program_is_a_discontinuity() {
    // h264_aac.ts then h265_aac.ts: the PMT switches PID 0x100 from H.264 to H.265.
    let mut data = fixture("h264_aac.ts");
    data.extend(fixture("h265_aac.ts"));
    let (events, _) = demux(&data);
    let change = events
        .iter()
        .position(|e| *e == DemuxEvent::Discontinuity(DiscontinuityReason::ProgramChange))
        .expect("program change reported");
    let before = frames(&events[..change], TrackKind::Video);
    let after = frames(&events[change..], TrackKind::Video);
    assert_eq!(before.len(), 75);
    assert!(before.iter().all(|f| f.codec == Codec::H264));
    assert_eq!(after.len(), 75);
    assert!(after.iter().all(|f| f.codec == Codec::H265));
    assert_eq!(frames(&events, TrackKind::Audio).len(), 142 + 131);
}

#[test]
fn marker_packets_are_delivered_in_order() {
    // A packet on MARKER_PID between the PSI and the first PES (not listed in the PMT).
    let data = fixture("h264_only.ts");
    let mut marker = vec![0x47, 0x40 | 0x1f, 0xf0, 0x10];
    marker.extend((0..184).map(|i| i as u8));
    let mut stream = data[..2 * 188].to_vec();
    stream.extend(&marker);
    stream.extend(&data[2 * 188..]);
    let (events, demuxer) = demux(&stream);
    let markers: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            DemuxEvent::Marker(b) => Some(b),
            _ => None,
        })
        .collect();
    assert_eq!(markers.len(), 1);
    assert_eq!(markers[0].as_ref(), &marker[4..]);
    assert!(matches!(events[0], DemuxEvent::Marker(_)));
    assert_eq!(demuxer.stats().frames, 50);
}

/// A multi-program stream (an encoder's ladder, one rung per program): each program is
/// demuxed on its own, the shared audio PID in both, with the same timestamps.
#[test]
fn each_program_of_a_ladder_is_demuxed_on_its_own() {
    let data = fixture("ladder_two_programs.ts");
    let rung = |program: u16| {
        let mut demuxer = Demuxer::for_program(program);
        let mut events = Vec::new();
        demuxer.push(&data, &mut events);
        demuxer.flush(&mut events);
        events
    };
    let (first, second) = (rung(1), rung(2));
    let (v1, v2) = (
        frames(&first, TrackKind::Video),
        frames(&second, TrackKind::Video),
    );
    assert_eq!(
        (v1.len(), v2.len()),
        (26, 26),
        "ffprobe counts 26 per program"
    );
    let height = |f: &Frame| probe_video(f).map(|i| i.height);
    assert_eq!(height(v1[0]), Some(144));
    assert_eq!(height(v2[0]), Some(96));
    let pts = |v: &[&Frame]| v.iter().map(|f| (f.pts, f.keyframe)).collect::<Vec<_>>();
    assert_eq!(
        pts(&v1),
        pts(&v2),
        "the rungs share timestamps and keyframes"
    );
    let (a1, a2) = (
        frames(&first, TrackKind::Audio),
        frames(&second, TrackKind::Audio),
    );
    assert!(!a1.is_empty());
    assert_eq!(a1, a2, "the audio PID is in both programs");
    let (default, _) = demux(&data);
    assert_eq!(
        frames(&default, TrackKind::Video),
        v1,
        "without a program number the first one is followed"
    );
    assert!(
        frames(&rung(3), TrackKind::Video).is_empty(),
        "no such program"
    );
}

fn alternate_frames(events: &[DemuxEvent], on: u16) -> Vec<&Frame> {
    events
        .iter()
        .filter_map(|e| match e {
            DemuxEvent::AlternateAudio { pid, frame } if *pid == on => Some(frame),
            _ => None,
        })
        .collect()
}

/// A TS with two audio streams (two languages): the first is the main audio, the second
/// an alternate on its PID, each named by its ISO 639 descriptor; both carry every ADTS
/// frame ffprobe counts (142 each), on the same timestamps.
#[test]
fn a_second_audio_stream_is_an_alternate_language() {
    let (events, demuxer) = demux(&fixture("two_languages.ts"));
    let language = |code| media::Language::parse(code);
    assert_eq!(
        demuxer.audio_tracks(),
        [
            AudioTrack {
                pid: 0x101,
                language: language("eng"),
                main: true
            },
            AudioTrack {
                pid: 0x102,
                language: language("spa"),
                main: false
            },
        ]
    );
    let main = frames(&events, TrackKind::Audio);
    let alternate = alternate_frames(&events, 0x102);
    assert_eq!((main.len(), alternate.len()), (142, 142));
    assert_eq!((main[0].pts, alternate[0].pts), (126_000, 126_000));
    assert!(main.iter().zip(&alternate).all(|(m, a)| m.pts == a.pts));
    // Two tones, two encodings: the alternate is not the main audio again.
    assert!(main.iter().zip(&alternate).any(|(m, a)| m.data != a.data));
    assert_eq!(frames(&events, TrackKind::Video).len(), 75);
    assert_eq!(demuxer.stats().frames, 75 + 142 + 142);
}

/// A language leaving the PMT (the next source has one audio stream on the same PIDs)
/// is not a change of program: the main timeline runs on.
#[test]
fn a_language_leaving_is_no_change_of_program() {
    let mut data = fixture("two_languages.ts");
    data.extend(fixture("h264_aac.ts"));
    let (events, demuxer) = demux(&data);
    assert!(!events
        .iter()
        .any(|e| *e == DemuxEvent::Discontinuity(DiscontinuityReason::ProgramChange)));
    assert_eq!(alternate_frames(&events, 0x102).len(), 142);
    assert_eq!(frames(&events, TrackKind::Audio).len(), 142 + 142);
    assert_eq!(demuxer.audio_tracks().len(), 1);
}
