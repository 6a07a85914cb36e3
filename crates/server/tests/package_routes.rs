//! A stream that is a package (OTT-GRP-1, OTT-ELIG-3): the muxed source rendition and
//! ladder rungs cut on its segments, each with a window of its own, served at
//! `/{stream}/{rung}/{file}` and listed in one master playlist while they are
//! switchable.

mod harness;

use std::sync::Arc;

use harness::{as_text, demo_frames, get, media_playlist, tracks};
use media::segmenter::{RungCutter, RungSegment, Segment, Segmenter, SegmenterConfig, StartPoint};
use media::TimelineMarker;
use server::channel::{Channel, LiveSegment};

/// The demo clip cut as the source, and two rungs cut on its segments: `240p` with the
/// source's own frames (aligned), `bad` with every keyframe flag cleared (misaligned).
fn cut() -> (Vec<Segment>, Vec<RungSegment>, Vec<RungSegment>) {
    let mut segmenter = Segmenter::new(
        SegmenterConfig::default(),
        StartPoint::Fresh {
            min_msn: 0,
            min_discontinuity_seq: 0,
        },
    );
    let mut source = Vec::new();
    for frame in demo_frames() {
        source.extend(segmenter.push(frame, 1_700_000_000_000));
        while let Some(s) = segmenter.pop_ready() {
            source.push(s);
        }
    }
    let (mut good, mut bad) = (RungCutter::new(), RungCutter::new());
    let (mut good_out, mut bad_out) = (Vec::new(), Vec::new());
    for segment in &source {
        let marker = TimelineMarker::parse(&segment.data[4..188]).expect("a marker");
        good_out.extend(good.source_segment(marker));
        bad_out.extend(bad.source_segment(marker));
        for frame in media::ts::demux_frames(&segment.data) {
            let mut unkeyed = frame.clone();
            unkeyed.keyframe &= frame.kind() == media::TrackKind::Audio;
            good_out.extend(good.frame(frame));
            bad_out.extend(bad.frame(unkeyed));
        }
    }
    good_out.extend(good.flush());
    bad_out.extend(bad.flush());
    (source, good_out, bad_out)
}

#[tokio::test]
async fn every_switchable_rung_is_a_variant_of_the_master_and_serves_its_own_window() {
    let (source, good, bad) = cut();
    assert!(source.len() >= 3, "the clip gives several segments");
    assert_eq!(good.len(), source.len());
    assert!(good.iter().all(|r| r.aligned) && bad.iter().all(|r| !r.aligned));
    assert!(
        !bad.is_empty(),
        "misaligned segments are written once the start has settled"
    );
    let state = harness::node(None);
    let channel = Arc::new(Channel::with_rungs(
        "s",
        5,
        server::render::renderer(2000),
        &["source".to_owned(), "240p".to_owned(), "bad".to_owned()],
    ));
    state.add_stream(Arc::clone(&channel), None);
    let (rung, misaligned) = (
        Arc::clone(channel.rendition("240p").expect("the rung")),
        Arc::clone(channel.rendition("bad").expect("the rung")),
    );
    for s in &source {
        channel.push_to(channel.main(), LiveSegment::from(s.clone()), tracks(), None);
    }
    for (rendition, cut) in [(&rung, &good), (&misaligned, &bad)] {
        for r in cut {
            channel.push_to(
                rendition,
                LiveSegment::from(r.segment.clone()),
                tracks(),
                None,
            );
        }
    }

    let master = get(&state, "/s/index.m3u8").await;
    assert_eq!(master.status, 200);
    let text = as_text(&master.body);
    let uris: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .collect();
    assert_eq!(
        uris,
        vec!["mono.m3u8", "240p/mono.m3u8"],
        "the source first, then the aligned rung; the misaligned one is left out:\n{text}"
    );
    assert_eq!(text.matches("#EXT-X-STREAM-INF:").count(), 2);

    let main = media_playlist(&get(&state, "/s/mono.m3u8").await.body);
    let answer = get(&state, "/s/240p/mono.m3u8").await;
    assert_eq!(answer.status, 200);
    let rung_playlist = media_playlist(&answer.body);
    assert_eq!(rung_playlist.media_sequence, main.media_sequence);
    assert_eq!(rung_playlist.segments.len(), main.segments.len());
    for (a, b) in rung_playlist.segments.iter().zip(&main.segments) {
        assert_eq!(
            (a.duration, a.program_date_time, &a.uri),
            (b.duration, b.program_date_time, &b.uri),
            "the rung lists the source's MSNs, durations and dates"
        );
    }
    let newest = good.last().expect("a rung segment");
    let segment = get(&state, &format!("/s/240p/seg-{}.ts", newest.segment.msn)).await;
    assert_eq!(segment.status, 200);
    assert_eq!(segment.body, newest.segment.data, "the rung's own bytes");
    let parsed = TimelineMarker::parse(&segment.body[4..188]).expect("marker");
    let source_marker =
        TimelineMarker::parse(&source.last().expect("source").data[4..188]).expect("marker");
    assert_eq!(
        (
            parsed.state.msn,
            parsed.start_ts,
            parsed.program_date_time_ms
        ),
        (
            source_marker.state.msn,
            source_marker.start_ts,
            source_marker.program_date_time_ms
        )
    );

    // The misaligned rung is still served (a player that asks gets it), but not offered.
    assert_eq!(get(&state, "/s/bad/mono.m3u8").await.status, 200);
    // A rung has no master, MPD or archive of its own, and an unknown rung is no file.
    for path in [
        "/s/240p/index.m3u8",
        "/s/240p/index.mpd",
        "/s/nope/mono.m3u8",
        "/s/main/mono.m3u8",
        "/s/240p/index-1700000000-30.m3u8",
    ] {
        let answer = get(&state, path).await;
        assert_eq!(answer.status, 404, "{path}");
        assert_eq!(harness::json(&answer.body)["code"], 108_001, "{path}");
    }
}
