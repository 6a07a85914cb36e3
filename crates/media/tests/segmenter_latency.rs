//! A segment is ready as soon as its last frame has arrived (ingest-to-playlist
//! latency), even when the source packs audio in late multi-frame bursts the way
//! ffmpeg's MPEG-TS muxer does, and no audio frame is lost on the way.

use bytes::Bytes;
use media::codec::aac::AudioSpecificConfig;
use media::segmenter::{Segmenter, SegmenterConfig, StartPoint};
use media::ts::demux::{DemuxEvent, Demuxer};
use media::{Codec, Frame, TrackKind};

const VIDEO_TICKS: u64 = 3_600; // 25 fps
const AUDIO_TICKS: u64 = 1_920; // 1024 samples at 48 kHz
const BURST: u64 = 8; // AAC frames per PES, as ffmpeg packs them

fn video(i: u64) -> Frame {
    let key = i.is_multiple_of(25);
    let mut data = vec![0, 0, 0, 1, if key { 0x65 } else { 0x41 }];
    data.extend(std::iter::repeat_n(0x5a, 300));
    Frame {
        codec: Codec::H264,
        pts: i * VIDEO_TICKS,
        dts: i * VIDEO_TICKS,
        keyframe: key,
        data: Bytes::from(data),
    }
}

fn audio(j: u64) -> Frame {
    let config = AudioSpecificConfig {
        object_type: 2,
        sample_rate_index: 3,
        channels: 2,
    };
    let mut data = Vec::new();
    config
        .write_adts_header(40, &mut data)
        .expect("small frame");
    data.extend(std::iter::repeat_n(0x21, 40));
    Frame {
        codec: Codec::Aac,
        pts: j * AUDIO_TICKS,
        dts: j * AUDIO_TICKS,
        keyframe: true,
        data: Bytes::from(data),
    }
}

/// Video in real time; audio in bursts of `BURST` frames, each sent once the video has
/// run `lag` ticks past the burst's last frame.
fn source(seconds: u64, lag: u64) -> Vec<Frame> {
    let mut out = Vec::new();
    let mut next_audio = 0;
    for i in 0..seconds * 25 {
        out.push(video(i));
        let now = i * VIDEO_TICKS;
        while (next_audio + BURST - 1) * AUDIO_TICKS + lag <= now {
            out.extend((next_audio..next_audio + BURST).map(audio));
            next_audio += BURST;
        }
    }
    out
}

#[test]
fn segments_are_ready_when_their_last_frame_arrives_and_lose_no_audio() {
    for lag in [0, 40 * 90, 170 * 90] {
        let frames = source(20, lag);
        let mut segmenter = Segmenter::new(
            SegmenterConfig::default(),
            StartPoint::Fresh {
                min_msn: 0,
                min_discontinuity_seq: 0,
            },
        );
        let mut segments = Vec::new();
        for (index, frame) in frames.iter().enumerate() {
            if let Some(segment) = segmenter.push(frame.clone(), 1_700_000_000_000) {
                segments.push((index, segment));
            }
            while let Some(segment) = segmenter.pop_ready() {
                segments.push((index, segment));
            }
        }
        assert!(
            segments.len() >= 8,
            "lag {lag}: {} segments",
            segments.len()
        );
        for window in segments.windows(2) {
            let (ready_at, segment) = &window[0];
            let cut = window[1].1.start_ts;
            // The frame whose arrival completed this segment: the last input frame that
            // belongs before the cut (video by dts, audio by pts), or the keyframe at the cut.
            let last_needed = frames
                .iter()
                .enumerate()
                .filter(|(_, f)| match f.kind() {
                    TrackKind::Video => f.dts < cut || f.pts == cut,
                    TrackKind::Audio => f.pts < cut,
                })
                .map(|(i, _)| i)
                .max()
                .expect("frames before the cut");
            assert_eq!(
                *ready_at, last_needed,
                "lag {lag}: segment {} was ready at input {ready_at}, its last frame came at {last_needed}",
                segment.msn
            );
        }
        assert_eq!(
            segmenter.stats().dropped_late,
            0,
            "lag {lag}: audio dropped"
        );
        // Every audio frame after the first keyframe is in exactly one segment.
        let mut demuxer = Demuxer::new();
        let mut events = Vec::new();
        for (_, segment) in &segments {
            demuxer.push(&segment.data, &mut events);
        }
        demuxer.flush(&mut events);
        let mut pts: Vec<u64> = events
            .iter()
            .filter_map(|e| match e {
                DemuxEvent::Frame(f) if f.kind() == TrackKind::Audio => Some(f.pts),
                _ => None,
            })
            .collect();
        let count = pts.len();
        pts.dedup();
        assert_eq!(
            pts.len(),
            count,
            "lag {lag}: an audio frame is in two segments"
        );
        for pair in pts.windows(2) {
            assert_eq!(
                pair[1] - pair[0],
                AUDIO_TICKS,
                "lag {lag}: an audio frame is missing"
            );
        }
    }
}
