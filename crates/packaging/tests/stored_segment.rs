//! A stored segment's views come from the segmenter's record (marker, frames, caption
//! block) without reading the bytes back, and are the views the bytes alone give: a
//! segment read from an archive or relayed from another node is served the same.

use std::sync::Arc;

use bytes::Bytes;
use media::captions::{CaptionBlock, CaptionTrack, Cue};
use media::fmp4::Track;
use media::segmenter::CaptionSource;
use media::TimelineState;
use media::{Frame, Segment, Segmenter, SegmenterConfig, StartPoint, TimelineMarker};
use packaging::window::{LiveSegment, StoredSegment};

/// One cue per segment, on one track.
#[derive(Debug)]
struct OneCue;

impl CaptionSource for OneCue {
    fn frame(&mut self, _: &Frame, _: Option<TimelineState>, _: bool) {}

    fn upstream(&mut self, _: &Bytes) {}

    fn block_for(&mut self, marker: &TimelineMarker, _: bool) -> Option<CaptionBlock> {
        Some(CaptionBlock {
            msn: marker.state.msn,
            tracks: vec![CaptionTrack::new("en", "en", "English")],
            cues: vec![Cue {
                track: 0,
                start_ts: marker.start_ts,
                end_ts: marker.start_ts + 45_000,
                text: format!("at {}", marker.start_ts),
            }],
        })
    }
}

/// The media fixture (H.264 and AAC from ffmpeg) cut into short segments with captions.
fn segments() -> Vec<Segment> {
    let path = format!(
        "{}/../media/tests/fixtures/h264_aac.ts",
        env!("CARGO_MANIFEST_DIR")
    );
    let ts = std::fs::read(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    let mut segmenter = Segmenter::new(
        SegmenterConfig {
            target_duration_ms: 500,
            ..SegmenterConfig::default()
        },
        StartPoint::Fresh {
            min_msn: 0,
            min_discontinuity_seq: 0,
        },
    );
    segmenter.set_captions(Box::new(OneCue));
    let mut out = Vec::new();
    for frame in media::ts::demux_frames(&ts) {
        let now = 1_714_564_800_000 + (frame.dts / 90) as i64;
        out.extend(segmenter.push(frame, now));
        out.extend(std::iter::from_fn(|| segmenter.pop_ready()));
    }
    out.extend(std::iter::from_fn(|| segmenter.flush()));
    out
}

/// The segment as bytes from elsewhere carry it: no marker, frames or block handed over.
fn bytes_only(segment: &LiveSegment) -> LiveSegment {
    LiveSegment {
        marker: None,
        captions: None,
        frames: Arc::from(Vec::new()),
        ..segment.clone()
    }
}

#[test]
fn the_records_views_are_the_views_of_its_bytes() {
    let segments = segments();
    assert!(segments.len() >= 3, "{} segments", segments.len());
    let (mut from_record, mut from_bytes): (
        Option<Arc<StoredSegment>>,
        Option<Arc<StoredSegment>>,
    ) = (None, None);
    for segment in segments {
        let live = LiveSegment::from(segment);
        assert!(!live.frames.is_empty() && live.marker.is_some() && live.captions.is_some());
        let record = Arc::new(StoredSegment::new(
            live.clone(),
            from_record.as_deref(),
            None,
            None,
        ));
        let bytes = Arc::new(StoredSegment::new(
            bytes_only(&live),
            from_bytes.as_deref(),
            None,
            None,
        ));
        assert!(
            record.frames.is_empty(),
            "the frames are dropped once stored"
        );
        assert_eq!(record.marker, bytes.marker);
        assert_eq!(record.captions, bytes.captions);
        let (a, b) = (record.fmp4().expect("fmp4"), bytes.fmp4().expect("fmp4"));
        assert_eq!(a.marker, b.marker);
        assert_eq!(a.media_bytes, b.media_bytes);
        assert_eq!(a.init.config, b.init.config);
        for track in [Track::Muxed, Track::Video, Track::Audio] {
            assert_eq!(record.fmp4_bytes(track), bytes.fmp4_bytes(track));
        }
        let (ca, cb) = (
            record.captions().expect("vtt"),
            bytes.captions().expect("vtt"),
        );
        assert_eq!(ca.block, cb.block);
        assert_eq!(ca.file("en"), cb.file("en"));
        from_record = Some(record);
        from_bytes = Some(bytes);
    }
}

/// An audio language's span without frames (its feed lost) is silence: stored as it is
/// cut, and as a segment relayed from another node would be (the bytes alone), it is
/// listed as any segment (no gap mark) and has its fMP4 file.
#[test]
fn a_languages_lost_span_is_listed_as_a_segment_of_silence() {
    use media::segmenter::RungCutter;
    let source = segments();
    let marker = |s: &Segment| TimelineMarker::parse(&s.data[4..188]).expect("marker");
    let audio: Vec<Frame> = source
        .iter()
        .flat_map(|s| s.frames.iter().cloned())
        .filter(|f| f.kind() == media::TrackKind::Audio)
        .collect();
    let mut cutter = RungCutter::audio_rendition();
    let mut out = Vec::new();
    for s in &source {
        out.extend(cutter.source_segment(marker(s)));
    }
    // The language for the first span, silent for the second, back for the third.
    let (first, second, third) = (marker(&source[0]), marker(&source[1]), marker(&source[2]));
    let silent = second.start_ts..third.start_ts;
    for frame in audio
        .into_iter()
        .filter(|f| f.pts >= first.start_ts && !silent.contains(&f.pts))
    {
        out.extend(cutter.frame(frame));
    }
    out.extend(cutter.flush());
    let gap = out
        .iter()
        .find(|r| r.segment.msn == source[1].msn)
        .expect("the silent span is written");
    let stored = StoredSegment::new(
        LiveSegment {
            data: gap.segment.data.clone(),
            ..LiveSegment::from(gap.segment.clone())
        },
        None,
        None,
        None,
    );
    assert!(!stored.playlist_segment().gap);
    assert!(stored.fmp4_bytes(Track::Audio).is_some());
    let relayed = StoredSegment::new(
        LiveSegment {
            msn: gap.segment.msn,
            data: gap.segment.data.clone(),
            ..LiveSegment::default()
        },
        None,
        None,
        None,
    );
    assert!(!relayed.playlist_segment().gap, "the bytes alone say it");
    assert!(relayed.fmp4_bytes(Track::Audio).is_some());
    assert!(out.iter().all(|r| r.marker.audio_frames > 0));
    assert!(out.len() >= 3);
}
