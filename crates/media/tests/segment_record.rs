//! The segment record: what the segmenter hands over is what its bytes say (the marker,
//! the frames a demuxer reads back, the caption block), so no view of a live segment
//! reads its bytes back; a caption block written in place gives the very bytes a block
//! spliced in after writing gave (what relays, archives and older nodes expect).

mod timeline_util;

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use media::captions::{CaptionBlock, CaptionTrack, Cue};
use media::fmp4::{frames_from_ts, segment_frames};
use media::segmenter::CaptionSource;
use media::ts::captions::{block_packets, segment_block, splice_block};
use media::{Codec, Frame, Segment, TimelineMarker, TimelineState};
use timeline_util::*;

/// Gives every even segment a block with one cue across its middle; notes what it is
/// shown.
#[derive(Debug, Default)]
struct EvenBlocks {
    seen: Arc<Mutex<Seen>>,
}

#[derive(Debug, Default)]
struct Seen {
    frames: usize,
    upstream: Vec<Bytes>,
}

impl CaptionSource for EvenBlocks {
    fn frame(&mut self, _: &Frame, _: Option<TimelineState>, following: bool) {
        assert!(!following, "a fresh segmenter cuts its own segments");
        self.seen.lock().expect("seen").frames += 1;
    }

    fn upstream(&mut self, block: &Bytes) {
        self.seen.lock().expect("seen").upstream.push(block.clone());
    }

    fn block_for(&mut self, marker: &TimelineMarker, _: bool) -> Option<CaptionBlock> {
        let msn = marker.state.msn;
        msn.is_multiple_of(2).then(|| CaptionBlock {
            msn,
            tracks: vec![CaptionTrack::new("en", "en", "English")],
            cues: vec![Cue {
                track: 0,
                start_ts: marker.start_ts + 1_000,
                end_ts: marker.start_ts + marker.duration_ticks / 2,
                text: format!("segment {msn}"),
            }],
        })
    }
}

fn source() -> Vec<Frame> {
    Synth::new(WRAP - 200_000).frames(12)
}

#[test]
fn a_segments_record_is_what_its_bytes_say() {
    let segments = run(&mut fresh(Default::default()), &source(), WRAP - 200_000);
    assert!(segments.len() >= 5, "{} segments", segments.len());
    for s in &segments {
        let parsed = TimelineMarker::parse(&s.data[4..188]).expect("a marker packet");
        assert_eq!(parsed, s.marker, "msn {}", s.msn);
        // The synthetic video has no access unit delimiters: the record keeps the
        // frames as the bytes carry them, with the one the writer adds.
        let read_back: Vec<Frame> = frames_from_ts(&s.data, s.start_ts)
            .into_iter()
            .map(|t| t.frame)
            .collect();
        assert!(!s.frames.is_empty());
        assert_eq!(&*s.frames, &read_back[..], "msn {}", s.msn);
        assert_eq!(
            segment_frames(s),
            frames_from_ts(&s.data, s.start_ts),
            "msn {}",
            s.msn
        );
        assert!(s.captions.is_none() && s.caption_packets().is_empty());
    }
}

#[test]
fn a_block_written_in_place_gives_the_spliced_bytes() {
    let frames = source();
    let plain = run(&mut fresh(Default::default()), &frames, WRAP - 200_000);
    let mut captioned = fresh(Default::default());
    captioned.set_captions(Box::new(EvenBlocks::default()));
    let with = run(&mut captioned, &frames, WRAP - 200_000);
    assert_eq!(plain.len(), with.len());
    let mut blocks = 0;
    for (a, b) in plain.iter().zip(&with) {
        assert_eq!(a.marker, b.marker);
        assert_eq!(a.frames, b.frames);
        match &b.captions {
            Some(block) => {
                blocks += 1;
                assert_eq!(b.data, splice_block(&a.data, block), "msn {}", b.msn);
                assert_eq!(segment_block(&b.data), Ok(Some((**block).clone())));
                assert_eq!(b.caption_packets(), &block_packets(&block.encode())[..]);
            }
            None => {
                assert_eq!(b.msn % 2, 1);
                assert_eq!(a.data, b.data, "msn {}", b.msn);
            }
        }
    }
    assert!(blocks >= 2, "{blocks} segments with a block");
}

#[test]
fn the_caption_source_sees_every_frame_and_upstream_block() {
    let frames = source();
    let mut segmenter = fresh(Default::default());
    let source = EvenBlocks::default();
    let seen = Arc::clone(&source.seen);
    segmenter.set_captions(Box::new(source));
    segmenter.push_captions(&Bytes::from_static(b"upstream"));
    let written = run(&mut segmenter, &frames, WRAP - 200_000);
    let seen = seen.lock().expect("seen");
    assert_eq!(seen.frames, frames.len());
    assert_eq!(seen.upstream, vec![Bytes::from_static(b"upstream")]);
    assert!(written.iter().any(|s| s.captions.is_some()));
}

#[test]
fn audio_of_several_adts_frames_in_one_frame_leaves_the_views_to_the_bytes() {
    let mut frames = source();
    // An audio frame in the middle (the first ones come before the first keyframe).
    let first_audio = frames.len() / 2
        + frames[frames.len() / 2..]
            .iter()
            .position(|f| f.codec == Codec::Aac)
            .expect("audio");
    let mut double = frames[first_audio].data.to_vec();
    double.extend_from_slice(&adts(7_777));
    frames[first_audio].data = Bytes::from(double);
    let segments: Vec<Segment> = run(&mut fresh(Default::default()), &frames, WRAP - 200_000);
    let holding = segments
        .iter()
        .find(|s| s.frames.is_empty())
        .expect("the segment with the packed audio keeps no frames");
    assert_eq!(
        segment_frames(holding),
        frames_from_ts(&holding.data, holding.start_ts)
    );
    assert!(segments.iter().filter(|s| !s.frames.is_empty()).count() >= 4);
}
