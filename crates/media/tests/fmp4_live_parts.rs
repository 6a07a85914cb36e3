//! Live LL-HLS parts: frames of a segment fed one by one to `PartBuilder`, in the
//! interleavings a source may deliver them (audio early, late, in step), give the bytes
//! and parts `write_segment` gives for the whole segment.

mod fmp4_util;

use fmp4_util::*;
use media::fmp4::{
    frames_from_ts, write_segment, InitConfig, NextDts, Part, PartBuilder, ProducerTime,
    SegmentOptions, TimedFrame, MAX_TRACK_WAIT_TICKS,
};
use media::{Segment, TrackKind};

const PART_TICKS: u64 = 18_000; // 200 ms

fn producer_time(s: &Segment) -> Option<ProducerTime> {
    Some(ProducerTime {
        unix_ms: s.program_date_time_ms,
        media_time: s.start_ts,
    })
}

/// The segment's frames in the order a source with audio `lag` ticks behind video
/// (ahead when negative) delivers them; each track stays in DTS order.
fn arrival(frames: &[TimedFrame], lag: i64) -> Vec<TimedFrame> {
    let mut v = frames.to_vec();
    v.sort_by_key(|t| {
        let shift = if t.frame.kind() == TrackKind::Audio {
            lag
        } else {
            0
        };
        t.ext_dts as i64 + shift
    });
    v
}

/// Feeds frames one at a time; returns the bytes and parts, and how many parts were
/// complete before `finish`.
fn build(
    config: &InitConfig,
    s: &Segment,
    frames: Vec<TimedFrame>,
    next: NextDts,
) -> (Vec<u8>, Vec<Part>, usize) {
    let mut b = PartBuilder::new(config.clone(), s.msn, PART_TICKS, producer_time(s));
    let mut out = Vec::new();
    let mut parts = Vec::new();
    for f in frames {
        parts.extend(b.push(f, &mut out).expect("part"));
    }
    let early = parts.len();
    assert_eq!(b.parts_written(), early);
    parts.extend(b.finish(next, &mut out).expect("last part"));
    (out, parts, early)
}

#[test]
fn live_parts_equal_the_segment_written_whole() {
    for name in ["h264_aac.ts", "h265_aac.ts", "aac_only.ts", "h264_only.ts"] {
        let segments = segments(name, 1000);
        let first = frames_from_ts(&segments[0].data, segments[0].start_ts);
        let config = InitConfig::from_frames(first.iter().map(|t| &t.frame)).expect("config");
        for (i, s) in segments.iter().enumerate() {
            let frames = frames_from_ts(&s.data, s.start_ts);
            let next = segments
                .get(i + 1)
                .map(NextDts::of_segment)
                .unwrap_or_default();
            let mut expected = Vec::new();
            let expected_parts = write_segment(
                &config,
                &frames,
                &SegmentOptions {
                    msn: s.msn,
                    part_ticks: Some(PART_TICKS),
                    next_video_dts: next.video,
                    next_audio_dts: next.audio,
                    producer_time: producer_time(s),
                },
                &mut expected,
            )
            .expect("segment");
            // A 1 s segment has 5 parts; the first (from the first frame to the grid
            // line) may be shorter.
            assert!(expected_parts.len() >= 3, "{name} #{i}");
            for lag in [-40_000i64, -27_000, 0, 9_000, 27_000, 60_000] {
                let (out, parts, early) = build(&config, s, arrival(&frames, lag), next);
                assert_eq!(parts, expected_parts, "{name} #{i} lag {lag}");
                assert!(out == expected, "{name} #{i} lag {lag}: bytes differ");
                // Every part but the last is out before the segment ends.
                assert_eq!(early, expected_parts.len() - 1, "{name} #{i} lag {lag}");
            }
        }
    }
}

#[test]
fn parts_wait_for_late_audio_only_so_long() {
    let segments = segments("h264_aac.ts", 2000);
    let s = segments
        .iter()
        .max_by_key(|s| s.duration_ticks)
        .expect("segments");
    let frames = frames_from_ts(&s.data, s.start_ts);
    let config = InitConfig::from_frames(frames.iter().map(|t| &t.frame)).expect("config");
    let audio_frames = frames
        .iter()
        .filter(|t| t.frame.kind() == TrackKind::Audio)
        .count();
    // Audio 2 s late: past the wait, parts go out without it; nothing is lost.
    let late = 2 * 90_000;
    assert!(late as u64 > MAX_TRACK_WAIT_TICKS);
    let mut b = PartBuilder::new(config.clone(), s.msn, PART_TICKS, None);
    let mut out = Vec::new();
    let mut early = 0;
    let mut video_seen = 0;
    for f in arrival(&frames, late) {
        let is_video = f.frame.kind() == TrackKind::Video;
        early += b.push(f, &mut out).expect("part").len();
        video_seen += usize::from(is_video);
        if is_video && video_seen == frames.len() - audio_frames {
            // All video is in, none of the audio: exactly the parts whose boundary the
            // video has passed by the wait are out.
            let video: Vec<u64> = frames
                .iter()
                .filter(|t| t.frame.kind() == TrackKind::Video)
                .map(|t| t.ext_dts)
                .collect();
            let (origin, last) = (video[0], video[video.len() - 1]);
            let forced = (1..)
                .map(|k| origin + k * PART_TICKS)
                .take_while(|b| b + MAX_TRACK_WAIT_TICKS <= last)
                .count();
            assert!(forced >= 3, "the segment is long enough to test the wait");
            assert_eq!(early, forced);
        }
    }
    b.finish(NextDts::default(), &mut out).expect("last part");
    let written: usize = fragments(&out)
        .iter()
        .flat_map(|(_, _, trafs)| trafs)
        .filter(|t| t.track_id == media::fmp4::AUDIO_TRACK_ID)
        .map(|t| t.sizes.len())
        .sum();
    assert_eq!(written, audio_frames);
}
