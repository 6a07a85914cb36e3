//! LL-HLS through the router with a real pipeline fed the demo clip's frames: parts cut
//! live concatenate to their segment and equal the fMP4 packaging of the TS segment;
//! blocking reloads answer as soon as the part exists; far-future requests are refused
//! at once; delta updates skip; the preload-hinted part blocks until it exists.

mod harness;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use bytes::Bytes;
use ingest::IngestEvent;
use media::fmp4::{package_ts_segment, InitConfig};
use media::segmenter::Segment;
use media::ts::{DemuxEvent, Demuxer};
use media::{Frame, TrackKind, PTS_MASK};
use server::metrics::Metrics;
use server::stream::llhls::{LlChannel, LlSettings};
use server::stream::package::Package;
use server::stream::pipeline::{self, PipelineSettings};
use server::AppState;
use tokio::sync::mpsc;

use harness::{as_text, demo_frames, get, Answer};

/// The clip's frames from its first keyframe, and its period (90 kHz).
fn clip() -> (Vec<Frame>, u64) {
    let frames = demo_frames();
    let video: Vec<&Frame> = frames
        .iter()
        .filter(|f| f.kind() == TrackKind::Video)
        .collect();
    let first_key = video.iter().find(|f| f.keyframe).expect("a keyframe").dts;
    let last = video.last().expect("video").dts;
    let period = last - first_key + 3600;
    let frames = frames.into_iter().filter(|f| f.dts >= first_key).collect();
    (frames, period)
}

/// `laps` laps of the clip, re-stamped into one continuous stream.
fn looped(laps: u64) -> Vec<Frame> {
    let (frames, period) = clip();
    let mut out = Vec::new();
    for lap in 0..laps {
        for f in &frames {
            let mut f = f.clone();
            f.dts = (f.dts + lap * period) & PTS_MASK;
            f.pts = (f.pts + lap * period) & PTS_MASK;
            out.push(f);
        }
    }
    out
}

struct Node {
    state: AppState,
    channel: Arc<Package>,
    ll: Arc<LlChannel>,
    events: Option<mpsc::Sender<IngestEvent>>,
    pipeline: tokio::task::JoinHandle<()>,
}

fn node(target_ms: u64, part_ms: u64) -> Node {
    let state = harness::node(None);
    let channel = Arc::new(Package::new(
        "s",
        30,
        packaging::render::renderer(target_ms),
    ));
    let ll = Arc::new(LlChannel::new(LlSettings {
        part_ms,
        hold_back_ms: None,
        target_ms,
    }));
    assert!(channel.set_llhls(Arc::clone(&ll)));
    state.add_stream(Arc::clone(&channel), None);
    let (tx, rx) = mpsc::channel(100_000);
    let settings = PipelineSettings {
        languages: Vec::new(),
        target_duration_ms: target_ms,
        state_file: None,
        publish_latency: Arc::new(server::metrics::Histogram::default()),
    };
    let pipeline = tokio::spawn(pipeline::run(Arc::clone(&channel), rx, settings));
    Node {
        state,
        channel,
        ll,
        events: Some(tx),
        pipeline,
    }
}

impl Node {
    async fn feed(&self, frames: &[Frame]) {
        let tx = self.events.as_ref().expect("open");
        for f in frames {
            tx.send(IngestEvent::Frame(f.clone()))
                .await
                .expect("pipeline runs");
        }
    }

    /// Feeds everything and waits until the pipeline has flushed.
    async fn finish(mut self, frames: &[Frame]) -> Self {
        self.feed(frames).await;
        self.events = None;
        let pipeline = std::mem::replace(&mut self.pipeline, tokio::spawn(async {}));
        pipeline.await.expect("pipeline ends");
        self
    }

    /// Waits (bounded) until the pipeline has taken every frame sent so far and acted on
    /// it. The test runtime has one thread: once the channel is empty, the pipeline task
    /// finishes the last frame the next time this task yields (it awaits nothing else
    /// without a state file).
    async fn settle(&self) {
        let tx = self.events.as_ref().expect("open");
        let deadline = Instant::now() + Duration::from_secs(10);
        while tx.capacity() != tx.max_capacity() {
            assert!(Instant::now() < deadline, "the pipeline took the frames");
            tokio::task::yield_now().await;
        }
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
    }
}

/// Waits (bounded) until `n` requests are blocked on the LL-HLS position: the
/// request was read and is waiting, not merely not yet scheduled.
async fn blocked(ll: &LlChannel, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while ll
        .counters
        .blocked
        .load(std::sync::atomic::Ordering::Relaxed)
        < n
    {
        assert!(Instant::now() < deadline, "{n} blocked request(s)");
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn parts_concatenate_to_segments_equal_to_the_ts_packaging() {
    let frames = looped(2);
    let node = node(2000, 1000).finish(&frames).await;
    let ll = node.ll.snapshot();
    let ts = node.channel.snapshot();
    assert!(ll.segments.len() >= 8, "{} segments", ll.segments.len());
    let c = &node.ll.counters;
    let live = c.live_segments.load(std::sync::atomic::Ordering::Relaxed);
    let packaged = c
        .packaged_segments
        .load(std::sync::atomic::Ordering::Relaxed);
    let mismatches = c.mismatches.load(std::sync::atomic::Ordering::Relaxed);
    println!("live {live}, packaged {packaged}, mismatches {mismatches}");
    assert_eq!(mismatches, 0);
    assert!(packaged <= 1, "only the first segment lacks live parts");
    let metrics = Metrics::new();
    server::stream::llhls::register_metrics(&node.ll, "s", &metrics);
    let rendered = metrics.render();
    assert!(rendered.contains(&format!(
        "brdyun_llhls_live_segments_total{{stream=\"s\"}} {live}\n"
    )));
    assert!(rendered.contains("brdyun_llhls_mismatches_total{stream=\"s\"} 0\n"));
    assert!(rendered.contains("brdyun_llhls_blocked_requests{stream=\"s\"} 0\n"));
    // Same numbers and durations as the TS timeline.
    for s in &ll.segments {
        let t = ts.segment(s.msn).expect("same msn in the ts window");
        assert_eq!(
            (
                s.duration_ticks,
                s.program_date_time_ms,
                s.discontinuity_seq
            ),
            (
                t.duration_ticks,
                t.program_date_time_ms,
                t.discontinuity_seq
            )
        );
    }
    for s in &ll.segments {
        // The segment route serves the concatenation of the part routes.
        let Answer {
            status,
            body: whole,
            ..
        } = get(&node.state, &format!("/s/llseg-{}.m4s", s.msn)).await;
        assert_eq!(status, StatusCode::OK);
        let mut joined = Vec::new();
        for i in 0..s.parts.len() {
            let Answer {
                status, body: part, ..
            } = get(&node.state, &format!("/s/part-{}-{i}.m4s", s.msn)).await;
            assert_eq!(status, StatusCode::OK);
            joined.extend_from_slice(&part);
        }
        assert_eq!(joined, whole.to_vec(), "msn {}", s.msn);
        let seconds = ((s.duration_ticks + 45_000) / 90_000).max(1) as usize;
        assert_eq!(s.parts.len(), seconds, "1-s parts, msn {}", s.msn);
        // … and the bytes are the fMP4 packaging of the TS segment.
        let t = ts.segment(s.msn).expect("ts");
        let seg = |x: &server::stream::package::LiveSegment| Segment {
            msn: x.msn,
            discontinuity_seq: x.discontinuity_seq,
            discontinuous: x.discontinuous,
            start_ts: media::fmp4::frames_from_ts(&x.data, 0)
                .iter()
                .filter(|f| f.frame.kind() == TrackKind::Video)
                .map(|f| f.ext_pts)
                .next()
                .unwrap_or(0),
            duration_ticks: x.duration_ticks,
            program_date_time_ms: x.program_date_time_ms,
            keyframe_start: true,
            ..Segment::from_marker(&x.marker.expect("a marker"), x.data.clone())
        };
        let ts_seg = seg(t);
        let frames = media::fmp4::frames_from_ts(&ts_seg.data, ts_seg.start_ts);
        let config = InitConfig::from_frames(frames.iter().map(|t| &t.frame)).expect("config");
        let mut expected = Vec::new();
        package_ts_segment(&config, &ts_seg, None, Some(90_000), &mut expected).expect("packaging");
        assert_eq!(
            whole.to_vec(),
            expected,
            "msn {} differs from the ts packaging",
            s.msn
        );
        // One fMP4 form per MSN: the fMP4 HLS segment is the LL-HLS segment, the very
        // bytes the LL-HLS window holds (nothing packaged a second time).
        let Answer {
            status, body: seg, ..
        } = get(&node.state, &format!("/s/seg-{}.m4s", s.msn)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(seg, whole, "seg-{0}.m4s is llseg-{0}.m4s", s.msn);
        let stored = ts.segment(s.msn).expect("stored");
        let muxed = stored.fmp4_bytes(media::fmp4::Track::Muxed).expect("muxed");
        assert_eq!(
            muxed.as_ptr(),
            s.bytes.as_ptr(),
            "msn {}: one allocation for both names",
            s.msn
        );
    }
    // The init segment of the EXT-X-MAP is served.
    let Answer { body: playlist, .. } = get(&node.state, "/s/ll.m3u8").await;
    let map = as_text(&playlist)
        .lines()
        .find_map(|l| l.strip_prefix("#EXT-X-MAP:URI=\""))
        .and_then(|l| l.strip_suffix('"'))
        .expect("EXT-X-MAP")
        .to_owned();
    let Answer {
        status, body: init, ..
    } = get(&node.state, &format!("/s/{map}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(&init[4..8], b"ftyp");
    // … and it is the init of the TS segments' tracks (video and audio).
    let last = ts.newest().expect("a segment");
    let frames = media::fmp4::frames_from_ts(&last.data, 0);
    let config = InitConfig::from_frames(frames.iter().map(|t| &t.frame)).expect("config");
    assert_eq!(config.track_count(), 2);
    let mut expected = Vec::new();
    media::fmp4::write_init(&config, &mut expected).expect("init");
    assert_eq!(init.to_vec(), expected);
    // … under both names: the fMP4 HLS init of the sequence is the same file.
    let plain = map.replace("ll-init-", "init-");
    let Answer {
        status, body: same, ..
    } = get(&node.state, &format!("/s/{plain}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(same, init, "{plain} is {map}");
}

#[tokio::test]
async fn playlist_parses_back_and_lists_parts_of_the_last_three_targets() {
    let frames = looped(2);
    let node = node(2000, 1000);
    // Stop mid-stream so a segment is in progress.
    node.feed(&frames[..frames.len() * 3 / 4]).await;
    node.settle().await;
    let Answer { status, body, .. } = get(&node.state, "/s/ll.m3u8").await;
    assert_eq!(status, StatusCode::OK);
    let t = as_text(&body);
    println!("{t}");
    // The 2-s target plus a second of room for segments longer than the target.
    assert!(t.starts_with("#EXTM3U\n#EXT-X-VERSION:9\n#EXT-X-TARGETDURATION:3\n"));
    assert!(t.contains(
        "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=18.000,PART-HOLD-BACK=3.000\n#EXT-X-PART-INF:PART-TARGET=1.000\n"
    ));
    assert!(t.contains("#EXT-X-MAP:URI=\"ll-init-"));
    assert!(t.contains(",INDEPENDENT=YES\n"));
    let hint = t
        .lines()
        .find(|l| l.starts_with("#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"part-"))
        .expect("preload hint");
    assert!(hint.ends_with(".m4s\""));
    // Parts only for the segments ending within three target durations of the end.
    let with_parts: std::collections::BTreeSet<&str> = t
        .lines()
        .filter_map(|l| l.split("URI=\"part-").nth(1))
        .filter_map(|l| l.split('-').next())
        .collect();
    assert!((4..=7).contains(&with_parts.len()), "{with_parts:?}");
    let parsed = m3u8_rs::parse_media_playlist_res(&body).expect("m3u8-rs parses it");
    let ll = node.ll.snapshot();
    assert_eq!(parsed.target_duration, 3);
    assert_eq!(
        parsed.media_sequence,
        ll.segments.front().expect("a segment").msn
    );
    assert_eq!(parsed.segments.len(), ll.segments.len());
    for (p, s) in parsed.segments.iter().zip(&ll.segments) {
        assert_eq!(p.uri, format!("llseg-{}.m4s", s.msn));
        assert!((f64::from(p.duration) - s.duration_ticks as f64 / 90_000.0).abs() < 0.001);
        assert!(p.program_date_time.is_some());
    }
    // The master playlist names ll.m3u8.
    let Answer {
        status,
        body: master,
        ..
    } = get(&node.state, "/s/ll-index.m3u8").await;
    assert_eq!(status, StatusCode::OK);
    let master = m3u8_rs::parse_master_playlist_res(&master).expect("master parses");
    assert_eq!(master.variants[0].uri, "ll.m3u8");
}

/// The next part after what the playlist lists: `(msn, part)`.
fn next_part(ll: &LlChannel) -> (u64, usize) {
    let p = ll.snapshot().position;
    match p.pending {
        Some((msn, parts)) => (msn, parts),
        None => (p.last_complete.expect("a segment").0 + 1, 0),
    }
}

#[tokio::test]
async fn blocking_reload_answers_as_soon_as_the_part_exists() {
    let frames = looped(2);
    let node = node(2000, 1000);
    let half = frames.len() / 2;
    node.feed(&frames[..half]).await;
    node.settle().await;
    let mut figures = Vec::new();
    let mut at = half;
    for _ in 0..4 {
        let (msn, part) = next_part(&node.ll);
        let uri = format!("/s/ll.m3u8?_HLS_msn={msn}&_HLS_part={part}");
        let state = node.state.clone();
        let request = tokio::spawn(async move {
            let answer = get(&state, &uri).await;
            (answer, Instant::now())
        });
        // It waits while the part does not exist: it is counted as blocked.
        blocked(&node.ll, 1).await;
        assert!(
            !request.is_finished(),
            "answered before part {msn}.{part} existed"
        );
        // Feed frame by frame: the answer must come right after the frame that
        // completes the part (pipeline processing included).
        let mut completed_by = None;
        while at < frames.len() {
            node.feed(&frames[at..at + 1]).await;
            at += 1;
            let sent = Instant::now();
            for _ in 0..50 {
                tokio::task::yield_now().await;
                if request.is_finished() {
                    break;
                }
            }
            if request.is_finished() {
                completed_by = Some(sent);
                break;
            }
        }
        let published = completed_by.expect("the part appeared");
        assert!(node.ll.snapshot().position.satisfies(msn, Some(part)));
        let (Answer { status, body, .. }, answered) =
            tokio::time::timeout(Duration::from_secs(5), request)
                .await
                .expect("answered")
                .expect("task");
        assert_eq!(status, StatusCode::OK);
        assert!(
            as_text(&body).contains(&format!("part-{msn}-{part}.m4s")),
            "the answer lists the part"
        );
        figures.push(answered.saturating_duration_since(published));
    }
    let worst = figures.iter().max().copied().unwrap_or_default();
    println!("blocking reload: last frame of the part in → answer {figures:?} (worst {worst:?})");
    assert!(worst < Duration::from_millis(50), "{worst:?}");
}

#[tokio::test]
async fn far_future_and_malformed_requests_are_refused_at_once() {
    let frames = looped(1);
    let node = node(2000, 1000);
    node.feed(&frames[..frames.len() / 2]).await;
    node.settle().await;
    let last = node
        .ll
        .snapshot()
        .position
        .last_complete
        .expect("a segment")
        .0;
    for uri in [
        format!("/s/ll.m3u8?_HLS_msn={}", last + 3),
        format!("/s/ll.m3u8?_HLS_msn={}&_HLS_part=0", last + 50),
        "/s/ll.m3u8?_HLS_part=1".to_owned(),
        "/s/ll.m3u8?_HLS_msn=x".to_owned(),
    ] {
        let started = Instant::now();
        let Answer { status, .. } = get(&node.state, &uri).await;
        let took = started.elapsed();
        println!("{uri}: {status} in {took:?}");
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}");
        assert!(took < Duration::from_millis(50), "{uri}: {took:?}");
    }
    // Two ahead is allowed: it waits (and is answered later or times out).
    let uri = format!("/s/ll.m3u8?_HLS_msn={}", last + 2);
    let state = node.state.clone();
    let request = tokio::spawn(async move { get(&state, &uri).await });
    blocked(&node.ll, 1).await;
    assert!(!request.is_finished());
    request.abort();
    // A viewer that goes away while blocked is no longer counted.
    let _ = request.await;
    assert_eq!(
        node.ll
            .counters
            .blocked
            .load(std::sync::atomic::Ordering::Relaxed),
        0,
        "an aborted wait left the gauge"
    );
    // Unknown names are 404.
    assert_eq!(
        get(&node.state, "/s/part-1.m4s").await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        get(&node.state, "/s/llseg-999.m4s").await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test(start_paused = true)]
async fn a_part_that_does_not_come_gets_503_after_three_target_durations() {
    let frames = looped(1);
    let node = node(2000, 1000);
    node.feed(&frames[..frames.len() / 2]).await;
    for _ in 0..200 {
        tokio::task::yield_now().await;
    }
    let (msn, part) = next_part(&node.ll);
    let started = tokio::time::Instant::now();
    let Answer { status, .. } = get(
        &node.state,
        &format!("/s/ll.m3u8?_HLS_msn={msn}&_HLS_part={part}"),
    )
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(6) && waited < Duration::from_secs(7),
        "{waited:?}"
    );
}

#[tokio::test]
async fn delta_update_skips_old_segments() {
    let frames = looped(3);
    let node = node(2000, 1000).finish(&frames).await;
    let Answer { body: full, .. } = get(&node.state, "/s/ll.m3u8").await;
    let Answer { body: delta, .. } = get(&node.state, "/s/ll.m3u8?_HLS_skip=YES").await;
    let Answer { body: v2, .. } = get(&node.state, "/s/ll.m3u8?_HLS_skip=v2").await;
    assert!(!as_text(&full).contains("#EXT-X-SKIP"));
    let skipped: usize = as_text(&delta)
        .lines()
        .find_map(|l| l.strip_prefix("#EXT-X-SKIP:SKIPPED-SEGMENTS="))
        .expect("EXT-X-SKIP")
        .parse()
        .expect("a count");
    assert!(skipped > 0);
    assert_eq!(delta, v2);
    let count = |b: &Bytes| {
        as_text(b)
            .lines()
            .filter(|l| l.starts_with("llseg-"))
            .count()
    };
    assert_eq!(count(&full), count(&delta) + skipped);
    // What is left covers at least CAN-SKIP-UNTIL (6 target durations, 18 s).
    assert!(count(&delta) * 2 >= 18, "{}", as_text(&delta));
}

#[tokio::test]
async fn the_preload_hinted_part_blocks_until_it_exists() {
    let frames = looped(2);
    let node = node(2000, 1000);
    let half = frames.len() / 2;
    node.feed(&frames[..half]).await;
    node.settle().await;
    let Answer { body: playlist, .. } = get(&node.state, "/s/ll.m3u8").await;
    let hint = as_text(&playlist)
        .lines()
        .find_map(|l| l.strip_prefix("#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\""))
        .and_then(|l| l.strip_suffix('"'))
        .expect("hint")
        .to_owned();
    let state = node.state.clone();
    let uri = format!("/s/{hint}");
    let request = tokio::spawn(async move { get(&state, &uri).await });
    blocked(&node.ll, 1).await;
    assert!(!request.is_finished());
    node.feed(&frames[half..half + 100]).await;
    let Answer { status, body, .. } = tokio::time::timeout(Duration::from_secs(5), request)
        .await
        .expect("answered")
        .expect("task");
    assert_eq!(status, StatusCode::OK);
    let Answer { body: again, .. } = get(&node.state, &format!("/s/{hint}")).await;
    assert_eq!(body, again);
    let first_of_segment = hint.ends_with("-0.m4s");
    let expected: &[u8] = if first_of_segment { b"styp" } else { b"moof" };
    assert_eq!(&body[4..8], expected, "{hint}");
}

#[tokio::test]
async fn a_follower_cuts_the_same_parts_from_the_upstream_markers() {
    let frames = looped(2);
    let upstream = node(2000, 1000).finish(&frames).await;
    // The upstream's relay: its TS segments (marker first) back to back.
    let relay: Vec<u8> = upstream
        .channel
        .snapshot()
        .segments
        .iter()
        .flat_map(|s| s.data.to_vec())
        .collect();
    let mut demuxer = Demuxer::new();
    let mut events = Vec::new();
    demuxer.push(&relay, &mut events);
    demuxer.flush(&mut events);
    let follower = node(2000, 1000);
    {
        let tx = follower.events.as_ref().expect("open");
        for e in events {
            let event = match e {
                DemuxEvent::Frame(f) => IngestEvent::Frame(f),
                DemuxEvent::Marker(m) => IngestEvent::Marker(m),
                DemuxEvent::Captions(c) => IngestEvent::Captions(c),
                DemuxEvent::Discontinuity(_) | DemuxEvent::AlternateAudio { .. } => continue,
            };
            tx.send(event).await.expect("pipeline");
        }
    }
    let follower = follower.finish(&[]).await;
    let c = &follower.ll.counters;
    let live = c.live_segments.load(std::sync::atomic::Ordering::Relaxed);
    let mismatches = c.mismatches.load(std::sync::atomic::Ordering::Relaxed);
    println!("follower: live {live}, mismatches {mismatches}");
    assert_eq!(mismatches, 0);
    let (up, down) = (upstream.ll.snapshot(), follower.ll.snapshot());
    assert!(live as usize + 1 >= down.segments.len(), "parts cut live");
    // Every segment both have (but the last, whose successor the follower never saw)
    // is byte-identical, part by part.
    let mut compared = 0;
    for s in down.segments.iter().rev().skip(1) {
        let Some(u) = up.segment(s.msn) else { continue };
        let first_difference = s.bytes.iter().zip(u.bytes.iter()).position(|(a, b)| a != b);
        assert!(
            s.bytes == u.bytes,
            "msn {}: {} vs {} bytes, first difference at {first_difference:?}; parts {:?} vs {:?}",
            s.msn,
            s.bytes.len(),
            u.bytes.len(),
            s.parts,
            u.parts
        );
        compared += 1;
    }
    assert!(compared >= 6, "{compared} segments compared");
}

/// Samples per track (video, audio) in fMP4 bytes: the `trun` sample counts of every
/// `moof`, by the `tfhd` track id (1 video, 2 audio, as brdyun writes them).
fn samples_per_track(bytes: &[u8]) -> (u64, u64) {
    fn boxes(mut data: &[u8], mut visit: impl FnMut(&[u8; 4], &[u8])) {
        while data.len() >= 8 {
            let size = u32::from_be_bytes(data[0..4].try_into().expect("4 bytes")) as usize;
            let kind: [u8; 4] = data[4..8].try_into().expect("4 bytes");
            if size < 8 || size > data.len() {
                return;
            }
            visit(&kind, &data[8..size]);
            data = &data[size..];
        }
    }
    let mut counts = (0u64, 0u64);
    boxes(bytes, |kind, moof| {
        if kind != b"moof" {
            return;
        }
        boxes(moof, |kind, traf| {
            if kind != b"traf" {
                return;
            }
            let mut track = 0u32;
            boxes(traf, |kind, body| match kind {
                b"tfhd" => track = u32::from_be_bytes(body[4..8].try_into().expect("id")),
                b"trun" => {
                    let n = u64::from(u32::from_be_bytes(body[4..8].try_into().expect("n")));
                    if track == 1 {
                        counts.0 += n;
                    } else {
                        counts.1 += n;
                    }
                }
                _ => {}
            });
        });
    });
    counts
}

/// One stored segment, three views (DESIGN "the stream as a package"): for
/// every segment of the window, the TS bytes, the fMP4 view and the LL-HLS view carry
/// the same MSN, duration and PDT and the same frames, and what each protocol's route
/// answers is that view.
#[tokio::test]
async fn ts_fmp4_and_llhls_are_views_of_one_stored_segment() {
    let node = node(2000, 1000).finish(&looped(2)).await;
    let window = node.channel.snapshot();
    let ll_listed = node.ll.snapshot();
    assert!(
        window.segments.len() >= 8,
        "{} segments",
        window.segments.len()
    );
    let mut compared = 0;
    for stored in &window.segments {
        let timeline = (
            stored.msn,
            stored.duration_ticks,
            stored.program_date_time_ms,
        );
        let marker = media::fmp4::marker_of(&stored.data).expect("a marker first");
        assert_eq!(
            (
                marker.state.msn,
                marker.duration_ticks,
                marker.program_date_time_ms
            ),
            timeline
        );
        let fmp4 = stored.fmp4().expect("every segment has its fmp4 view");
        assert_eq!(fmp4.marker, marker);
        let frames = media::fmp4::frames_from_ts(&stored.data, marker.start_ts);
        let ts_counts = frames
            .iter()
            .fold((0, 0), |(v, a), t| match t.frame.kind() {
                TrackKind::Video => (v + 1, a),
                TrackKind::Audio => (v, a + 1),
            });
        assert!(ts_counts.0 > 0 && ts_counts.1 > 0, "{ts_counts:?}");
        let muxed = stored
            .fmp4_bytes(media::fmp4::Track::Muxed)
            .expect("packaged");
        assert_eq!(
            samples_per_track(&muxed),
            ts_counts,
            "fmp4 of {}",
            stored.msn
        );
        // The routes answer the stored bytes and views.
        let Answer { body: ts, .. } = get(&node.state, &format!("/s/seg-{}.ts", stored.msn)).await;
        assert_eq!(ts, stored.data);
        let Answer { body: m4s, .. } =
            get(&node.state, &format!("/s/seg-{}.m4s", stored.msn)).await;
        assert_eq!(m4s, muxed);
        // The first segment has no live parts (the packager had seen no audio yet).
        let Some(ll) = stored.ll() else { continue };
        assert_eq!(
            (ll.msn, ll.duration_ticks, ll.program_date_time_ms),
            timeline
        );
        assert_eq!(
            samples_per_track(&ll.bytes),
            ts_counts,
            "ll of {}",
            stored.msn
        );
        let Answer { body: llseg, .. } =
            get(&node.state, &format!("/s/llseg-{}.m4s", stored.msn)).await;
        assert_eq!(llseg, ll.bytes);
        assert!(ll_listed.segments.iter().any(|s| Arc::ptr_eq(s, ll)));
        compared += 1;
    }
    assert!(
        compared + 1 >= window.segments.len(),
        "{compared} with ll views"
    );
}
