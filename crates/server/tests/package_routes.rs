//! A stream that is a package (OTT-GRP-1, OTT-ELIG-3): the muxed source rendition and
//! ladder rungs cut on its segments, each with a window of its own, served at
//! `/{stream}/{rung}/{file}` and listed in one master playlist while they are
//! switchable.

mod harness;

use std::sync::Arc;

use harness::{as_text, demo_frames, get, media_playlist, tracks};
use media::segmenter::{RungCutter, RungSegment, Segment, Segmenter, SegmenterConfig, StartPoint};
use media::TimelineMarker;
use server::stream::package::{LiveSegment, Package};

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

/// How many segments the `SegmentTimeline`s of an MPD list, all together.
fn timeline_segments(mpd: &str) -> usize {
    mpd.split("<S ")
        .skip(1)
        .map(|s| s.split("/>").next().unwrap_or(""))
        .map(|s| {
            s.split_once("r=\"")
                .and_then(|(_, r)| r.split('"').next()?.parse::<usize>().ok())
                .map_or(1, |r| r + 1)
        })
        .sum()
}

/// The variant URIs of a master playlist, in order.
fn variant_uris(master: &str) -> Vec<&str> {
    master
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .collect()
}

/// Pushes a copy of `segment` to one of the channel's renditions.
fn push_segment(
    channel: &Package,
    rendition: &Arc<server::stream::rendition::Rendition>,
    segment: &Segment,
) {
    channel.push_to(
        rendition,
        LiveSegment::from(segment.clone()),
        tracks(),
        None,
    );
}

/// A node with stream `s`, a package of the source and the rungs `240p` and `bad`.
fn package_node() -> (server::AppState, Arc<Package>) {
    let state = harness::node(None);
    let channel = Arc::new(Package::with_rungs(
        "s",
        5,
        packaging::render::renderer(2000),
        &["source".to_owned(), "240p".to_owned(), "bad".to_owned()],
    ));
    state.add_stream(Arc::clone(&channel), None);
    (state, channel)
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
    let (state, channel) = package_node();
    let (rung, misaligned) = (
        Arc::clone(channel.rendition("240p").expect("the rung")),
        Arc::clone(channel.rendition("bad").expect("the rung")),
    );
    let push = |rendition: &Arc<server::stream::rendition::Rendition>, segment: &Segment| {
        push_segment(&channel, rendition, segment);
    };
    // The rungs start late: their first three segments come after the source's were
    // listed in the MPD (the newest source segment waits for a rung that has not
    // started).
    for s in &source[..4] {
        push(channel.main(), s);
    }
    let before = as_text(&get(&state, "/s/index.mpd").await.body).to_owned();
    assert_eq!(
        timeline_segments(&before),
        2 * 3,
        "three of four listed: {before}"
    );
    let rungs_of = |msn: u64| {
        [(&rung, &good), (&misaligned, &bad)]
            .into_iter()
            .filter_map(move |(rendition, cut)| {
                let r = cut.iter().find(|r| r.segment.msn == msn)?;
                Some((rendition, &r.segment))
            })
    };
    for s in &source[..3] {
        for (rendition, segment) in rungs_of(s.msn) {
            push(rendition, segment);
        }
    }
    // A live period's Representations never change, and a listed segment keeps its
    // rungs: the late rung joins at the next segment, in a period of its own (keyed by
    // the rung and its sequence).
    let after = as_text(&get(&state, "/s/index.mpd").await.body).to_owned();
    assert_eq!(after.matches("<Period ").count(), 1, "{after}");
    assert!(!after.contains("id=\"240p\""), "{after}");
    assert_eq!(
        timeline_segments(&after),
        2 * 3,
        "as listed before: {after}"
    );
    for (i, s) in source.iter().enumerate().skip(3) {
        if i > 3 {
            push(channel.main(), s);
        }
        for (rendition, segment) in rungs_of(s.msn) {
            push(rendition, segment);
        }
    }
    let joined = as_text(&get(&state, "/s/index.mpd").await.body).to_owned();
    let (without, with) = joined
        .split_once("<Period id=\"d0-240p.0@")
        .expect("the rung's period: {joined}");
    assert!(without.contains("<Period id=\"d0@"), "{joined}");
    assert!(!without.contains("id=\"240p\""), "{joined}");
    assert!(with.contains("<Representation id=\"240p\""), "{joined}");

    let master = get(&state, "/s/index.m3u8").await;
    assert_eq!(master.status, 200);
    let text = as_text(&master.body);
    let uris = variant_uris(text);
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

    // fMP4 HLS has the same ladder, each rendition at its fmp4.m3u8.
    let fmp4 = get(&state, "/s/fmp4-index.m3u8").await;
    assert_eq!(fmp4.status, 200);
    let fmp4 = as_text(&fmp4.body);
    let uris = variant_uris(fmp4);
    assert_eq!(uris, vec!["fmp4.m3u8", "240p/fmp4.m3u8"], "{fmp4}");
    assert_eq!(get(&state, "/s/240p/fmp4.m3u8").await.status, 200);

    // The live MPD: one video AdaptationSet whose Representations are the source and
    // the offered rung, with the same SegmentTimeline; the rung's files are its own.
    let mpd = get(&state, "/s/index.mpd").await;
    assert_eq!(mpd.status, 200);
    let mpd = as_text(&mpd.body);
    let mpd = mpd
        .split_once("<Period id=\"d0-240p.0@")
        .map(|(_, period)| period)
        .expect("the rung's period: {mpd}");
    assert_eq!(mpd.matches("contentType=\"video\"").count(), 1, "{mpd}");
    assert!(mpd.contains("<Representation id=\"v\""), "{mpd}");
    assert!(mpd.contains("<Representation id=\"240p\""), "{mpd}");
    assert!(
        !mpd.contains("id=\"bad\""),
        "the misaligned rung is no Representation: {mpd}"
    );
    let timelines: Vec<String> = mpd
        .split("<SegmentTimeline>")
        .skip(1)
        .map(|t| t.split("</SegmentTimeline>").next().unwrap_or(""))
        .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(timelines.len(), 3, "source video, rung, audio: {mpd}");
    assert!(
        timelines.windows(2).all(|w| w[0] == w[1]),
        "one timeline: {mpd}"
    );
    assert!(
        mpd.contains("initialization=\"240p/init-0-v.mp4\""),
        "{mpd}"
    );
    assert_eq!(get(&state, "/s/240p/init-0-v.mp4").await.status, 200);
    let answer = get(&state, &format!("/s/240p/seg-{}-v.m4s", newest.segment.msn)).await;
    assert_eq!(answer.status, 200);

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

/// A recorder for one rendition of the package, in its own folder under `dir`.
/// The ids of an MPD's periods, in order.
fn period_ids(mpd: &str) -> Vec<&str> {
    mpd.split("<Period id=\"")
        .skip(1)
        .filter_map(|p| p.split('"').next())
        .collect()
}

#[tokio::test]
async fn a_rung_late_for_one_segment_leaves_it_out_and_every_period_id_is_unique() {
    let (source, good, _) = cut();
    let (state, channel) = package_node();
    let rung = Arc::clone(channel.rendition("240p").expect("the rung"));
    let push = |rendition: &Arc<server::stream::rendition::Rendition>, segment: &Segment| {
        push_segment(&channel, rendition, segment);
    };
    // The rung follows the source segment by segment, but its segment `late` comes
    // only after the source's next one (the newest stays held back: the ladder's other
    // rung never starts here).
    let late = source[source.len() - 3].msn;
    let mut delayed = None;
    for s in &source {
        push(channel.main(), s);
        if let Some(segment) = delayed.take() {
            push(&rung, segment);
        }
        let r = good
            .iter()
            .find(|r| r.segment.msn == s.msn)
            .expect("a rung segment");
        if s.msn == late {
            delayed = Some(&r.segment);
        } else {
            push(&rung, &r.segment);
        }
    }
    let mpd = as_text(&get(&state, "/s/index.mpd").await.body).to_owned();
    let ids = period_ids(&mpd);
    let unique: std::collections::BTreeSet<&&str> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "a period id twice: {ids:?}\n{mpd}");
    let newest = late + 1;
    let tail: Vec<String> = ids[ids.len() - 2..]
        .iter()
        .map(|id| (*id).to_owned())
        .collect();
    assert_eq!(
        tail,
        vec![format!("d0@{late}"), format!("d0-240p.0@{newest}")],
        "the late segment alone without the rung, then the rung again: {mpd}"
    );
    let last_period = mpd.rsplit("<Period ").next().expect("a period");
    assert!(last_period.contains("<Representation id=\"240p\""), "{mpd}");
}

fn recorder(dir: &std::path::Path, name: &str) -> Arc<server::stream::recorder::Recorder> {
    let settings =
        server::stream::recorder::RecorderSettings::new(dir.join(name), dvr::Retention::default());
    server::stream::recorder::Recorder::start(name, settings).expect("the archive opens")
}

#[tokio::test]
async fn a_recorded_package_is_a_catch_up_ladder() {
    let (source, good, bad) = cut();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let (state, channel) = package_node();
    let renditions = [
        (Arc::clone(channel.main()), "main"),
        (
            Arc::clone(channel.rendition("240p").expect("the rung")),
            "240p",
        ),
        (
            Arc::clone(channel.rendition("bad").expect("the rung")),
            "bad",
        ),
    ];
    let mut recorders = Vec::new();
    for (rendition, name) in &renditions {
        let recorder = recorder(dir.path(), name);
        assert!(rendition.set_archive(Arc::clone(&recorder)));
        recorders.push(recorder);
    }
    // What the pipelines do with a published segment: record it, then list it.
    let live = |segment: &Segment| LiveSegment::from(segment.clone());
    let cuts: [Vec<LiveSegment>; 3] = [
        source.iter().map(live).collect(),
        good.iter().map(|r| live(&r.segment)).collect(),
        bad.iter().map(|r| live(&r.segment)).collect(),
    ];
    for (((rendition, _), recorder), segments) in renditions.iter().zip(&recorders).zip(&cuts) {
        for segment in segments {
            recorder.record(segment);
            channel.push_to(rendition, segment.clone(), tracks(), None);
        }
        harness::wait_recorded(recorder, segments.len() as u64);
    }

    // The whole recording: the clip is dated from 1,700,000,000 s.
    let period = "1699999990-600";
    let master = get(&state, &format!("/s/index-{period}.m3u8")).await;
    assert_eq!(master.status, 200);
    let text = as_text(&master.body);
    let uris = variant_uris(text);
    assert_eq!(
        uris,
        vec![
            format!("mono-{period}.m3u8"),
            format!("240p/mono-{period}.m3u8")
        ],
        "the source, then the aligned rung; the misaligned one is left out:\n{text}"
    );
    let variants: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("#EXT-X-STREAM-INF:"))
        .collect();
    for variant in &variants {
        for attribute in [
            "BANDWIDTH=",
            "AVERAGE-BANDWIDTH=",
            "CODECS=\"avc1.",
            "RESOLUTION=",
            "FRAME-RATE=",
        ] {
            assert!(variant.contains(attribute), "{attribute} in {variant}");
        }
    }

    // Each rendition's catch-up playlist lists the same MSNs, durations and dates, and
    // its segments are the rendition's own recorded bytes.
    let source_playlist = get(&state, &format!("/s/mono-{period}.m3u8")).await;
    assert_eq!(source_playlist.status, 200);
    let source_playlist = media_playlist(&source_playlist.body);
    let rung_answer = get(&state, &format!("/s/240p/mono-{period}.m3u8")).await;
    assert_eq!(rung_answer.status, 200);
    let rung_playlist = media_playlist(&rung_answer.body);
    assert_eq!(rung_playlist.media_sequence, source_playlist.media_sequence);
    assert_eq!(rung_playlist.segments.len(), source.len());
    for (a, b) in rung_playlist.segments.iter().zip(&source_playlist.segments) {
        assert_eq!(
            (a.duration, a.program_date_time, &a.uri),
            (b.duration, b.program_date_time, &b.uri)
        );
    }
    for rung_segment in &good {
        let path = format!("/s/240p/dvr-{}.ts", rung_segment.segment.msn);
        let answer = get(&state, &path).await;
        assert_eq!(answer.status, 200, "{path}");
        assert_eq!(answer.body, rung_segment.segment.data, "{path}");
    }
    // Under a rung, the name without `mono-` is the rung's media playlist too.
    let same = get(&state, &format!("/s/240p/index-{period}.m3u8")).await;
    assert_eq!(same.body, rung_answer.body);
    // The rung's fMP4 catch-up comes from its own archive.
    let fmp4 = get(&state, &format!("/s/240p/fmp4-{period}.m3u8")).await;
    assert_eq!(fmp4.status, 200);
    assert!(
        as_text(&fmp4.body).contains("dvr-"),
        "{}",
        as_text(&fmp4.body)
    );
    // The catch-up MPD: the rung is one more video Representation of each period, with
    // its own archived files; the misaligned rung is none.
    let mpd = get(&state, &format!("/s/index-{period}.mpd")).await;
    assert_eq!(mpd.status, 200);
    let mpd = as_text(&mpd.body);
    assert!(mpd.contains("type=\"static\""), "{mpd}");
    assert!(mpd.contains("<Representation id=\"240p\""), "{mpd}");
    assert!(!mpd.contains("id=\"bad\""), "{mpd}");
    let first = good.first().expect("a rung segment").segment.msn;
    assert!(
        mpd.contains(&format!("initialization=\"240p/dvr-init-{first}-v.mp4\"")),
        "{mpd}"
    );
    for path in [
        format!("/s/240p/dvr-init-{first}-v.mp4"),
        format!("/s/240p/dvr-{first}-v.m4s"),
    ] {
        assert_eq!(get(&state, &path).await.status, 200, "{path}");
    }
    // A period with nothing recorded is no master.
    assert_eq!(get(&state, "/s/index-1600000000-60.m3u8").await.status, 404);
    // The stream's status shows each rendition's archive.
    let status = harness::json(&get(&state, "/api/streams/s").await.body);
    let rung_status = status["renditions"]
        .as_array()
        .and_then(|all| all.iter().find(|r| r["name"] == "240p"))
        .expect("the rung's status");
    assert_eq!(rung_status["dvr"]["segments"], good.len());
}
