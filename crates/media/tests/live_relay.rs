//! The live relay: a segmenter's placements sent as it places them,
//! and a follower that writes the upstream's segments from them byte for byte.

mod timeline_util;

use media::ts::{DemuxEvent, Demuxer, PACKET_SIZE};
use media::{Frame, Segment, Segmenter, SegmenterConfig, StartPoint};
use timeline_util::*;

/// One live relay: a segmenter's placements sent as it places them
/// (an open marker, the frames, the close marker once the segment is written), what an
/// MC sends a node so its LL-HLS parts are cut as the MC cuts them.
struct LiveRelay {
    mux: media::ts::mux::RelayMuxer,
    bytes: Vec<u8>,
    segments: Vec<Segment>,
}

impl LiveRelay {
    fn of(seg: &mut Segmenter) -> Self {
        seg.keep_placements(true);
        Self {
            mux: media::ts::mux::RelayMuxer::new(),
            bytes: Vec::new(),
            segments: Vec::new(),
        }
    }

    /// After a step of `seg` that returned `first`: what it placed, then the close of
    /// every segment it finished.
    fn step(&mut self, seg: &mut Segmenter, first: Option<Segment>) {
        for p in seg.take_placed() {
            let chunk = match p {
                media::segmenter::Placed::Opened(m) => self.mux.open(&m),
                media::segmenter::Placed::Frame(_, f) => self.mux.frame(&f),
            };
            self.bytes.extend_from_slice(&chunk);
        }
        let mut done: Vec<Segment> = first.into_iter().collect();
        while let Some(s) = seg.pop_ready() {
            done.push(s);
        }
        for s in done {
            let marker = media::TimelineMarker::parse(&s.data[4..188]).expect("whole marker");
            self.bytes.extend_from_slice(&self.mux.close(&marker, &[]));
            self.segments.push(s);
        }
    }
}

/// A source segmenter fed `frames` on the live relay: its segments and the relay bytes.
fn live_relay(seg: &mut Segmenter, frames: &[Frame], clock_base: u64) -> (Vec<Segment>, Vec<u8>) {
    let mut relay = LiveRelay::of(seg);
    for f in frames {
        let elapsed = (f.dts.wrapping_sub(clock_base) & media::PTS_MASK) / 90;
        let first = seg.push(f.clone(), EPOCH_MS + elapsed as i64);
        relay.step(seg, first);
    }
    while let Some(s) = seg.flush() {
        relay.step(seg, Some(s));
    }
    (relay.segments, relay.bytes)
}

/// Where the `k`-th open marker starts in live relay bytes (a node joining there).
fn open_marker_offset(bytes: &[u8], k: usize) -> usize {
    bytes
        .chunks(PACKET_SIZE)
        .enumerate()
        .filter(|(_, p)| {
            let pid = u16::from(p[1] & 0x1f) << 8 | u16::from(p[2]);
            pid == media::ts::MARKER_PID
                && matches!(
                    media::TimelineMarker::parse_phase(&p[4..]),
                    Ok((media::timeline::MarkerPhase::Open, _))
                )
        })
        .nth(k)
        .map(|(i, _)| i * PACKET_SIZE)
        .expect("enough open markers")
}

#[test]
fn a_node_on_the_live_relay_writes_the_upstream_segments_byte_for_byte() {
    let frames = hard_source();
    let (segments, bytes) = live_relay(
        &mut fresh(SegmenterConfig::default()),
        &frames,
        WRAP - 4 * FRAME,
    );
    assert!(segments.len() > 30, "only {} segments", segments.len());
    for chunk in [188 * 7, 1000, 188] {
        let (followed, b) = relay(&bytes, chunk);
        assert_same(&segments, &followed);
        assert_eq!(b.stats().incomplete, 0);
        assert_eq!(b.stats().dropped_unmatched, 0);
    }
    // A node that joins mid-stream, at a segment's open marker, follows from there.
    for k in [3usize, 17] {
        let at = open_marker_offset(&bytes, k);
        let (followed, b) = relay(&bytes[at..], 1000);
        let first = followed.first().expect("segments").msn;
        let from = segments
            .iter()
            .position(|s| s.msn == first)
            .expect("a known msn");
        assert_same(&segments[from..], &followed);
        assert_eq!(b.stats().incomplete, 0);
    }
}

#[test]
fn a_live_relay_of_a_live_relay_is_still_identical() {
    let frames = hard_source();
    let (segments, bytes) = live_relay(&mut fresh(SegmenterConfig::default()), &frames, 0);
    // The first hop follows the live relay and relays on what it places.
    let mut demux = Demuxer::new();
    let mut events = Vec::new();
    demux.push(&bytes, &mut events);
    demux.flush(&mut events);
    let mut hop = Segmenter::new(SegmenterConfig::default(), StartPoint::Adopt);
    let mut on = LiveRelay::of(&mut hop);
    for e in events {
        let first = match e {
            DemuxEvent::Frame(f) => hop.push(f, 0),
            DemuxEvent::Marker(m) => hop.push_marker(&m).expect("valid marker"),
            other => panic!("unexpected {other:?}"),
        };
        on.step(&mut hop, first);
    }
    let (first_hop, second) = (on.segments, on.bytes);
    assert_same(&segments, &first_hop);
    let (second_hop, b) = relay(&second, 4096);
    assert_same(&segments, &second_hop);
    assert_eq!(b.stats().incomplete, 0);
}

#[test]
fn a_node_on_the_live_relay_writes_the_silence_where_the_audio_ended_first() {
    // An input cut four frames after a keyframe with its audio 0.3 s behind: the last
    // two segments are written with silent audio to the video's end
    // (docs/timeline.md, "A track that ends first"), placed as they are filled.
    let start = 900_000;
    let mut seg = fresh(SegmenterConfig::default());
    let (segments, bytes) = live_relay(&mut seg, &cut_source(start, 105, 27_000), start);
    assert!(seg.stats().silence_filled > 0, "{:?}", seg.stats());
    for chunk in [188, 1000] {
        let (followed, b) = relay(&bytes, chunk);
        assert_same(&segments, &followed);
        assert_eq!(b.stats().incomplete, 0);
        assert_eq!(b.stats().dropped_unmatched, 0);
    }
}
