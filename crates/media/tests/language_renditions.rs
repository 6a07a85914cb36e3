//! A source with two audio languages (tests/fixtures/two_languages.ts): the floor rides
//! in the segmenter's muxed segments; the other language is cut on the same segments by
//! an audio rendition cutter, on the same MSNs and dates, each of its segments starting
//! within one audio frame of the video segment's start.

use media::segmenter::{RungCutter, RungSegment};
use media::ts::{demux_frames, DemuxEvent, Demuxer};
use media::{Segment, Segmenter, SegmenterConfig, StartPoint, TimelineMarker, TrackKind};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

/// 1024 samples at 48 kHz, in 90 kHz ticks.
const AAC_FRAME_48K: u64 = 1920;

/// Segments the fixture: the muxed source and the alternate language.
fn cut() -> (Vec<Segment>, Vec<RungSegment>) {
    cut_losing(None)
}

/// [`cut`], the language's frames with a PTS in `lost` (a span, ticks) never coming: its
/// feed lost there.
fn cut_losing(lost: Option<(u64, u64)>) -> (Vec<Segment>, Vec<RungSegment>) {
    let mut demuxer = Demuxer::new();
    let mut events = Vec::new();
    demuxer.push(&fixture("two_languages.ts"), &mut events);
    demuxer.flush(&mut events);
    let config = SegmenterConfig {
        target_duration_ms: 1000,
        ..SegmenterConfig::default()
    };
    let mut source = Segmenter::new(
        config,
        StartPoint::Fresh {
            min_msn: 0,
            min_discontinuity_seq: 0,
        },
    );
    let mut language = RungCutter::audio_rendition();
    let (mut floor, mut other) = (Vec::new(), Vec::new());
    let announce = |segment: Segment, floor: &mut Vec<Segment>, language: &mut RungCutter| {
        let marker = TimelineMarker::parse(&segment.data[4..188]).expect("marker");
        floor.push(segment);
        language.source_segment(marker)
    };
    for event in events {
        match event {
            DemuxEvent::Frame(frame) => {
                if let Some(segment) = source.push(frame, 1_700_000_000_000) {
                    other.extend(announce(segment, &mut floor, &mut language));
                }
            }
            DemuxEvent::AlternateAudio { pid: 0x102, frame }
                if !lost.is_some_and(|(from, to)| (from..to).contains(&frame.pts)) =>
            {
                other.extend(language.frame(frame));
            }
            _ => {}
        }
    }
    if let Some(last) = source.flush() {
        other.extend(announce(last, &mut floor, &mut language));
    }
    other.extend(language.flush());
    (floor, other)
}

#[test]
fn the_language_is_cut_on_the_floors_segments() {
    let (floor, other) = cut();
    assert_eq!(floor.len(), 3);
    // Every segment the language has audio for, on the floor's MSN, span and date.
    let msns: Vec<u64> = other.iter().map(|r| r.segment.msn).collect();
    assert_eq!(msns, floor.iter().map(|s| s.msn).collect::<Vec<_>>());
    for (rung, source) in other.iter().zip(&floor) {
        assert!(rung.aligned, "msn {}", source.msn);
        assert_eq!(rung.segment.start_ts, source.start_ts);
        assert_eq!(rung.segment.duration_ticks, source.duration_ticks);
        assert_eq!(
            rung.segment.program_date_time_ms,
            source.program_date_time_ms
        );
        let video_start = demux_frames(&source.data)
            .iter()
            .filter(|f| f.kind() == TrackKind::Video)
            .map(|f| f.pts)
            .min()
            .expect("video");
        let frames = demux_frames(&rung.segment.data);
        assert!(frames.iter().all(|f| f.kind() == TrackKind::Audio));
        let first = frames.iter().map(|f| f.pts).min().expect("audio");
        assert!(
            first >= video_start && first - video_start < AAC_FRAME_48K,
            "msn {}: audio at {first}, video at {video_start}",
            source.msn
        );
        // Same encoder settings: the language has the floor's frame count.
        let floor_audio = demux_frames(&source.data)
            .iter()
            .filter(|f| f.kind() == TrackKind::Audio)
            .count();
        assert!(
            frames.len().abs_diff(floor_audio) <= 1,
            "msn {}",
            source.msn
        );
    }
    // The two languages' encodings differ (440 Hz vs 880 Hz).
    assert_ne!(other[1].segment.data, floor[1].data);
}

/// A node following the language's relay (its segments' bytes, markers first, each
/// followed by a null packet as the live relay sends them) cuts the same segments, byte
/// for byte, each as soon as its bytes are in: the first audio frame of a language
/// segment starts it though it is not at the span's exact start.
#[test]
fn a_node_following_the_languages_relay_cuts_the_same_bytes_at_once() {
    let (_, other) = cut();
    assert_follows_byte_for_byte(&other);
}

/// A span the language's feed had nothing for is silence on the video's MSN, and a
/// node following the relay writes it too, byte for byte: a player on that language
/// gets every MSN the video has, and plays through the span.
#[test]
fn a_lost_span_is_a_silent_segment_that_nodes_write_too() {
    let (floor, _) = cut();
    let lost = (
        floor[1].start_ts,
        floor[1].start_ts + floor[1].duration_ticks,
    );
    let (_, other) = cut_losing(Some(lost));
    let msns: Vec<u64> = other.iter().map(|r| r.segment.msn).collect();
    assert_eq!(msns, floor.iter().map(|s| s.msn).collect::<Vec<_>>());
    let lost = &other[1].segment;
    let frames = demux_frames(&lost.data);
    let first = other[0].segment.data.clone();
    let template = demux_frames(&first)
        .pop()
        .expect("a frame before the loss")
        .data;
    let silent = media::codec::aac_silence::silent_adts_frame(&template).expect("silence");
    assert!(
        !frames.is_empty() && frames.iter().all(|f| f.data[..] == silent[..]),
        "the lost span is silence"
    );
    let marker = TimelineMarker::parse(&lost.data[4..188]).expect("marker");
    assert_eq!(
        (marker.video_frames, marker.audio_frames),
        (0, frames.len() as u32)
    );
    assert_follows_byte_for_byte(&other);
}

/// A follower of `other`'s relay writes each of its segments as soon as its bytes are
/// in, byte for byte.
fn assert_follows_byte_for_byte(other: &[RungSegment]) {
    let mut follower = Segmenter::new(SegmenterConfig::default(), StartPoint::Adopt);
    let mut demuxer = Demuxer::new();
    let mut followed = Vec::new();
    for (i, rung) in other.iter().enumerate() {
        let mut events = Vec::new();
        demuxer.push(&rung.segment.data, &mut events);
        // The live relay follows each whole segment with a null packet: its last packet
        // is then read at once.
        let mut null = [0xffu8; media::ts::PACKET_SIZE];
        null[..4].copy_from_slice(&[0x47, 0x1f, 0xff, 0x10]);
        demuxer.push(&null, &mut events);
        for event in events {
            let done = match event {
                DemuxEvent::Frame(frame) => follower.push(frame, 0),
                DemuxEvent::Marker(marker) => follower.push_marker(&marker).expect("marker"),
                _ => None,
            };
            followed.extend(done);
            followed.extend(std::iter::from_fn(|| follower.pop_ready()));
        }
        assert_eq!(
            followed.len(),
            i + 1,
            "segment {} written once its bytes are in",
            rung.segment.msn
        );
    }
    for (mine, theirs) in followed.iter().zip(other) {
        assert_eq!(mine.data, theirs.segment.data, "msn {}", theirs.segment.msn);
    }
}
