//! The timeline tests (DESIGN.md invariant 1, OTT-GRP-4, OTT-ELIG-2): segments are a
//! function of the source's timestamps, and a downstream node that pulls our TS
//! reproduces them byte for byte.

use media::ts::{DemuxEvent, Demuxer, PACKET_SIZE};
use media::{Codec, Frame, Segment, Segmenter, SegmenterConfig, StartPoint};

mod timeline_util;

use timeline_util::*;

#[test]
fn downstream_node_reproduces_upstream_segments_byte_for_byte() {
    let frames = hard_source();
    let mut a = fresh(SegmenterConfig::default());
    let segments = run(&mut a, &frames, WRAP - 4 * FRAME);
    assert!(segments.len() > 30, "only {} segments", segments.len());
    assert!(a.stats().jumps == 1, "stats: {:?}", a.stats());
    assert!(
        segments.iter().any(|s| s.start_ts >= WRAP),
        "the clock wrapped"
    );
    assert!(
        segments.iter().any(|s| s.discontinuous),
        "the jump is a discontinuity"
    );
    for k in [0usize, 3, 17, segments.len() - 5] {
        let tail = &segments[k..];
        for chunk in [188 * 7, 1000] {
            let (followed, b) = relay(&concat(tail), chunk);
            assert_same(tail, &followed);
            assert_eq!(b.stats().incomplete, 0);
        }
    }
}

#[test]
fn a_relay_of_a_relay_is_still_identical() {
    let frames = hard_source();
    let segments = run(&mut fresh(SegmenterConfig::default()), &frames, 0);
    let (first_hop, _) = relay(&concat(&segments[5..]), 4096);
    let (second_hop, _) = relay(&concat(&first_hop[2..]), 188);
    assert_same(&segments[7..], &second_hop);
}

#[test]
fn explicit_discontinuity_continues_dates_and_is_relayed() {
    let mut a = fresh(SegmenterConfig::default());
    let mut out = run(&mut a, &Synth::new(900_000).frames(9), 900_000);
    a.discontinuity();
    // A publisher restart: timestamps start again at zero.
    out.extend(run(&mut a, &Synth::new(0).frames(9), 0));
    let disc: Vec<_> = out.iter().filter(|s| s.discontinuous).collect();
    assert_eq!(disc.len(), 1);
    let i = out.iter().position(|s| s.discontinuous).expect("one");
    let (before, after) = (&out[i - 1], &out[i]);
    assert_eq!(after.discontinuity_seq, before.discontinuity_seq + 1);
    assert_eq!(after.msn, before.msn + 1);
    let end = before.program_date_time_ms + (before.duration_ticks / 90) as i64;
    assert!(
        (after.program_date_time_ms - end).abs() <= 1,
        "dates continue"
    );
    let (followed, _) = relay(&concat(&out[1..]), 1316);
    assert_same(&out[1..], &followed);
}

#[test]
fn two_fresh_nodes_agree_on_every_shared_segment() {
    // Regular GOPs of 1 s, target 2 s: the grid decides, not the node's start. (Both
    // nodes must join within the same 26.5 h wrap epoch of the source clock: a node
    // cannot count wraps it did not see, which is what the in-band marker is for.)
    let source = Synth::new(5_000_123);
    let frames = source.frames(40);
    let early = run(
        &mut fresh(SegmenterConfig::default()),
        &frames,
        source.start,
    );
    // The second node joins 7.3 s later (mid-GOP, mid-segment).
    let skip = frames
        .iter()
        .position(|f| (f.dts.wrapping_sub(source.start) & media::PTS_MASK) >= 7 * 90_000 + 27_000)
        .expect("late frame");
    let late = run(
        &mut fresh(SegmenterConfig::default()),
        &frames[skip..],
        source.start,
    );
    let mut shared = 0;
    for s in &late[1..late.len() - 1] {
        let e = early
            .iter()
            .find(|e| e.msn == s.msn)
            .expect("same msn on both");
        assert_eq!(
            (e.start_ts, e.duration_ticks),
            (s.start_ts, s.duration_ticks)
        );
        assert_eq!(e.program_date_time_ms, s.program_date_time_ms);
        assert_eq!(
            demux_frames(&e.data),
            demux_frames(&s.data),
            "content of {}",
            s.msn
        );
        shared += 1;
    }
    assert!(shared >= 12, "{shared} shared segments");
}

fn demux_frames(ts: &[u8]) -> Vec<Frame> {
    let mut d = Demuxer::new();
    let mut ev = Vec::new();
    d.push(ts, &mut ev);
    d.flush(&mut ev);
    ev.into_iter()
        .filter_map(|e| match e {
            DemuxEvent::Frame(f) => Some(f),
            _ => None,
        })
        .collect()
}

#[test]
fn min_msn_and_min_discontinuity_seq_are_floors() {
    let mut seg = Segmenter::new(
        SegmenterConfig::default(),
        StartPoint::Fresh {
            min_msn: 1_000_000,
            min_discontinuity_seq: 41,
        },
    );
    let out = run(&mut seg, &Synth::new(0).frames(10), 0);
    assert_eq!(out[0].msn, 1_000_000);
    assert!(out.iter().all(|s| s.discontinuity_seq == 41));
    for w in out.windows(2) {
        assert_eq!(w[1].msn, w[0].msn + 1);
    }
    // Without a floor the first MSN is the grid index of the first frame.
    let start = 20 * 180_000 + 5;
    let out = run(
        &mut fresh(SegmenterConfig::default()),
        &Synth::new(start).frames(5),
        start,
    );
    assert_eq!(out[0].msn, 20);
}

#[test]
fn missing_keyframes_give_bounded_segments() {
    let mut source = Synth::new(0);
    source.gops = vec![1_000_000];
    let config = SegmenterConfig::default();
    let mut seg = fresh(config);
    let out = run(&mut seg, &source.frames(30), 0);
    assert!(seg.stats().forced_cuts >= 3);
    assert!(out.len() >= 4);
    for s in &out {
        assert!(
            s.duration_ticks <= config.max_segment_ticks() + FRAME,
            "{}",
            s.duration_ticks
        );
    }
    assert!(out[0].keyframe_start && !out[1].keyframe_start);
}

#[test]
fn video_only_and_audio_only_streams_cut_on_the_grid() {
    for (video, audio) in [(true, false), (false, true)] {
        let mut source = Synth::new(1_000);
        source.video = video;
        source.audio = audio;
        source.bframes = false;
        let out = run(
            &mut fresh(SegmenterConfig::default()),
            &source.frames(12),
            1_000,
        );
        assert!(out.len() >= 5, "{video} {audio}: {}", out.len());
        for s in &out[1..out.len() - 1] {
            // The first frame at or after a 2 s grid line.
            let into_cell = s.start_ts % 180_000;
            let step = if video { FRAME } else { AAC_FRAME };
            assert!(into_cell < step, "{video} {audio}: {into_cell}");
        }
        let (followed, _) = relay(&concat(&out), 2000);
        assert_same(&out, &followed);
    }
}

#[test]
fn audio_before_the_first_keyframe_is_dropped_and_counted() {
    let mut source = Synth::new(50_000);
    source.audio_lead = 180_000; // audio arrives 2 s ahead of the video
    let frames = source.frames(8);
    let mut seg = fresh(SegmenterConfig::default());
    let out = run(&mut seg, &frames, 50_000);
    assert!(seg.stats().dropped_before_keyframe > 0, "{:?}", seg.stats());
    // Nothing presented before the first keyframe is in the first segment.
    let first = demux_frames(&out[0].data);
    assert!(first.iter().all(|f| f.pts >= out[0].start_ts));
    assert!(first[0].keyframe || first.iter().any(|f| f.keyframe));
}

#[test]
fn every_segment_is_marker_pat_pmt_then_packets() {
    let out = run(&mut fresh(SegmenterConfig::default()), &hard_source(), 0);
    for s in &out {
        assert_eq!(s.data.len() % PACKET_SIZE, 0);
        let pid = |i: usize| {
            let p = &s.data[i * PACKET_SIZE..];
            u16::from(p[1] & 0x1f) << 8 | u16::from(p[2])
        };
        assert_eq!(
            [pid(0), pid(1), pid(2)],
            [media::ts::MARKER_PID, 0, media::ts::PMT_PID]
        );
    }
}

/// Real encoder output (ffmpeg fixture, see fixtures/README.txt): demux → segment
/// (1 s target) → relay → identical; and ffprobe reads our TS back with every frame.
#[test]
fn ffmpeg_fixture_segments_relay_and_probe() {
    let ts = include_bytes!("fixtures/h264_aac.ts");
    let source = demux_frames(ts);
    let config = SegmenterConfig {
        target_duration_ms: 1000,
        ..SegmenterConfig::default()
    };
    let out = run(&mut fresh(config), &source, source[0].dts);
    assert!(out.len() >= 3);
    let relayed = concat(&out);
    let (followed, _) = relay(&relayed, 188 * 3);
    assert_same(&out, &followed);
    let back = demux_frames(&relayed);
    let count = |v: &[Frame], c| v.iter().filter(|f| f.codec == c).count();
    assert_eq!(count(&back, Codec::H264), count(&source, Codec::H264));

    let dir = std::env::temp_dir().join(format!("brdyun-media-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("segments.ts");
    std::fs::write(&path, &relayed).expect("write ts");
    let probe = std::process::Command::new("ffprobe")
        .args(["-v", "error", "-count_packets", "-select_streams", "v:0"])
        .args([
            "-show_entries",
            "stream=codec_name,nb_read_packets",
            "-of",
            "csv=p=0",
        ])
        .arg(&path)
        .output()
        .expect("ffprobe is installed (apt install ffmpeg)");
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8_lossy(&probe.stdout);
    assert!(
        probe.status.success(),
        "{}",
        String::from_utf8_lossy(&probe.stderr)
    );
    // ffprobe lists the stream under its program and under streams: every line agrees.
    let expected = format!("h264,{}", count(&source, Codec::H264));
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    assert!(
        !lines.is_empty() && lines.iter().all(|l| *l == expected),
        "{text}"
    );
}

// Damaged timestamps (docs/timeline.md#damaged-timestamps): no segment is ever
// longer than the longest-segment bound, and no date runs far ahead of the wall clock.

/// Every segment within the bound, every date at most `MAX_DATE_AHEAD_MS` ahead of the
/// clock the frames arrived with.
fn assert_timed(out: &[Segment], config: SegmenterConfig, latest_clock_ms: i64) {
    for s in out {
        assert!(
            s.duration_ticks <= config.longest_segment_ticks(),
            "msn {} lasts {} ticks",
            s.msn,
            s.duration_ticks
        );
        assert!(
            s.program_date_time_ms <= latest_clock_ms + media::segmenter::MAX_DATE_AHEAD_MS,
            "msn {} dated {} ms ahead",
            s.msn,
            s.program_date_time_ms - latest_clock_ms
        );
    }
}

#[test]
fn a_keyframe_with_a_garbage_pts_is_dropped_not_timed() {
    let mut frames = Synth::new(0).frames(20);
    // A bit flip in the PTS of the keyframe at 6 s: 13 hours after its DTS.
    let key = frames
        .iter()
        .position(|f| f.keyframe && f.codec == Codec::H264 && f.dts >= 6 * 90_000)
        .expect("a keyframe");
    frames[key].pts = (frames[key].pts + (1 << 32)) & media::PTS_MASK;
    let config = SegmenterConfig::default();
    let mut seg = fresh(config);
    let out = run(&mut seg, &frames, 0);
    assert_eq!(seg.stats().dropped_bad_pts, 1);
    assert_timed(&out, config, EPOCH_MS + 20_000);
    let total: u64 = out.iter().map(|s| s.duration_ticks).sum();
    assert!(
        total <= 21 * 90_000,
        "the timeline is the source's 20 s: {total}"
    );
}

#[test]
fn a_gap_longer_than_any_segment_breaks_the_timeline() {
    // 7 s of nothing (below the 20-s jump threshold, above the 8-s longest segment).
    let config = SegmenterConfig::default();
    let gap = 7 * 90_000 + config.target_ticks();
    let mut frames = Synth::new(0).frames(6);
    let mut after = Synth::new(6 * 90_000 + gap).frames(6);
    frames.append(&mut after);
    let mut seg = fresh(config);
    let out = run(&mut seg, &frames, 0);
    assert_eq!(seg.stats().untimed, 1, "{:?}", seg.stats());
    assert_timed(&out, config, EPOCH_MS + 21_000);
    let breaks: Vec<&Segment> = out.iter().filter(|s| s.discontinuous).collect();
    assert_eq!(breaks.len(), 1, "one discontinuity where the gap is");
    assert_eq!(breaks[0].discontinuity_seq, 1);
}

#[test]
fn dates_of_a_source_faster_than_the_clock_are_anchored_again() {
    // 120 s of media delivered in 40 s of wall clock (a pull that does not pace).
    let frames = Synth::new(0).frames(120);
    let config = SegmenterConfig::default();
    let mut seg = fresh(config);
    let mut out = Vec::new();
    let mut latest = EPOCH_MS;
    for f in &frames {
        latest = EPOCH_MS + (f.dts / 90 / 3) as i64;
        out.extend(seg.push(f.clone(), latest));
        while let Some(s) = seg.pop_ready() {
            out.push(s);
        }
    }
    while let Some(s) = seg.flush() {
        out.push(s);
    }
    assert_timed(&out, config, latest);
    assert!(seg.stats().untimed >= 2, "{:?}", seg.stats());
    assert!(out.iter().any(|s| s.discontinuous));
}

/// A follower fed the upstream's relay up to segment `k`, then told the input changed
/// (a takeover by a standby of the same source, or another input).
fn follower_until(segments: &[Segment], k: usize, takeover: bool) -> Segmenter {
    follower_cut(segments, k, 0, takeover)
}

/// [`follower_until`] that also got the first `partial` bytes of segment `k` (its
/// relay died in the middle of it).
fn follower_cut(segments: &[Segment], k: usize, partial: usize, takeover: bool) -> Segmenter {
    let mut demux = Demuxer::new();
    let mut b = Segmenter::new(SegmenterConfig::default(), StartPoint::Adopt);
    let mut events = Vec::new();
    let mut bytes = concat(&segments[..k]);
    bytes.extend_from_slice(&segments[k].data[..partial]);
    demux.push(&bytes, &mut events);
    demux.flush(&mut events);
    for e in events {
        match e {
            DemuxEvent::Frame(f) => drop(b.push(f, 0)),
            DemuxEvent::Marker(m) => drop(b.push_marker(&m).expect("valid marker")),
            _ => {}
        }
        while b.pop_ready().is_some() {}
    }
    if takeover {
        b.takeover();
    } else {
        b.discontinuity();
    }
    b
}

/// The source from its first keyframe at most two GOPs (2 s) before `resume`: what a
/// standby's replay of its last two GOPs starts with.
fn replay_before(frames: &[Frame], resume: u64) -> &[Frame] {
    let from = frames
        .iter()
        .position(|f| f.keyframe && f.codec == Codec::H264 && f.pts + 2 * 90_000 >= resume)
        .expect("a keyframe two GOPs back");
    &frames[from..]
}

#[test]
fn a_follower_whose_upstream_dies_carries_on_from_its_own_copy_of_the_source() {
    // An MC pair (docs/mc-pair.md): an MC following the owner's relay takes over from
    // its own publish of the same source, replaying the last two GOPs it has: the
    // segments it cuts from there are the ones the owner would have cut, byte for byte.
    let frames = Synth::new(900_000).frames(30);
    let clock_base = frames[0].dts;
    let upstream = run(&mut fresh(SegmenterConfig::default()), &frames, clock_base);
    let k = 6;
    let mut b = follower_until(&upstream, k, true);
    let carried = run(
        &mut b,
        replay_before(&frames, upstream[k].start_ts),
        clock_base,
    );
    assert!(carried.len() >= 5, "{} segments", carried.len());
    assert_same(&upstream[k..], &carried);
}

#[test]
fn a_publisher_that_comes_back_with_a_new_clock_starts_a_dated_period() {
    let frames = Synth::new(900_000).frames(20);
    let clock_base = frames[0].dts;
    let upstream = run(&mut fresh(SegmenterConfig::default()), &frames, clock_base);
    let k = 5;
    let mut b = follower_until(&upstream, k, false);
    let end = upstream[k - 1].program_date_time_ms
        + i64::try_from(upstream[k - 1].duration_ticks / 90).unwrap();
    // The publisher reconnects 7 s after the followed end, its clock restarted at 0.
    let away_ms = 7_000;
    let restarted = Synth::new(0).frames(10);
    let mut out = Vec::new();
    for f in &restarted {
        let now = end + away_ms + i64::try_from(f.dts / 90).unwrap();
        out.extend(b.push(f.clone(), now));
        while let Some(s) = b.pop_ready() {
            out.push(s);
        }
    }
    let first = out.first().expect("segments after the reconnect");
    assert!(first.discontinuous);
    assert_eq!(
        first.discontinuity_seq,
        upstream[k - 1].discontinuity_seq + 1
    );
    assert_eq!(first.msn, upstream[k - 1].msn + 1, "the sequence goes on");
    assert!(
        (first.program_date_time_ms - (end + away_ms)).abs() < 1_000,
        "dated by the wall clock: {} vs {}",
        first.program_date_time_ms,
        end + away_ms
    );
}

#[test]
fn a_segment_cut_short_by_a_dead_relay_is_completed_from_the_standby_relays_replay() {
    // A node follows one MC's relay, which dies in the middle of segment k; the other
    // MC's relay (same timeline) takes over and replays its last two segments from
    // their markers: the node writes segment k whole, skips k-1, and goes on.
    let frames = Synth::new(900_000).frames(30);
    let upstream = run(
        &mut fresh(SegmenterConfig::default()),
        &frames,
        frames[0].dts,
    );
    let k = 6;
    let mut b = Segmenter::new(SegmenterConfig::default(), StartPoint::Adopt);
    let mut out = Vec::new();
    let feed = |b: &mut Segmenter, bytes: &[u8], out: &mut Vec<Segment>, ends: bool| {
        let mut demux = Demuxer::new();
        let mut events = Vec::new();
        demux.push(bytes, &mut events);
        if ends {
            demux.flush(&mut events);
        }
        for e in events {
            match e {
                DemuxEvent::Frame(f) => out.extend(b.push(f, 0)),
                DemuxEvent::Marker(m) => out.extend(b.push_marker(&m).expect("valid marker")),
                _ => {}
            }
            while let Some(s) = b.pop_ready() {
                out.push(s);
            }
        }
    };
    let mut first = concat(&upstream[..k]);
    let half = upstream[k].data.len() / 2 / PACKET_SIZE * PACKET_SIZE;
    first.extend_from_slice(&upstream[k].data[..half]);
    feed(&mut b, &first, &mut out, false);
    b.takeover();
    feed(&mut b, &concat(&upstream[k - 1..]), &mut out, true);
    while let Some(s) = b.flush() {
        out.push(s);
    }
    assert_same(&upstream, &out);
}

#[test]
fn a_follower_whose_upstream_dies_mid_segment_cuts_that_segment_again_whole() {
    let frames = Synth::new(900_000).frames(30);
    let clock_base = frames[0].dts;
    let upstream = run(&mut fresh(SegmenterConfig::default()), &frames, clock_base);
    let k = 6;
    let half = upstream[k].data.len() / 2 / PACKET_SIZE * PACKET_SIZE;
    let mut b = follower_cut(&upstream, k, half, true);
    let carried = run(
        &mut b,
        replay_before(&frames, upstream[k].start_ts),
        clock_base,
    );
    assert_same(&upstream[k..], &carried);
}

/// Feeds frames without flushing (the stream goes on), with the wall clock of [`run`].
fn feed_open(seg: &mut Segmenter, frames: &[Frame], clock_base: u64, out: &mut Vec<Segment>) {
    for f in frames {
        let elapsed = (f.dts.wrapping_sub(clock_base) & media::PTS_MASK) / 90;
        out.extend(seg.push(f.clone(), timeline_util::EPOCH_MS + elapsed as i64));
        while let Some(s) = seg.pop_ready() {
            out.push(s);
        }
    }
}

/// A source segmenter (an MC cutting its publisher) fed `frames[..cut]`, then a
/// takeover by a standby that replays its last two GOPs of `standby` and goes on.
fn source_takeover(frames: &[Frame], standby: &[Frame], cut: usize) -> Vec<Segment> {
    let clock_base = frames[0].dts;
    let mut b = fresh(SegmenterConfig::default());
    let mut out = Vec::new();
    feed_open(&mut b, &frames[..cut], clock_base, &mut out);
    b.takeover();
    let resume = frames[..cut].iter().map(|f| f.pts).max().expect("frames");
    feed_open(&mut b, replay_before(standby, resume), clock_base, &mut out);
    while let Some(s) = b.flush() {
        out.push(s);
    }
    out
}

#[test]
fn a_standby_publishing_the_same_encoders_frames_takes_over_with_no_discontinuity() {
    // A platform's primary and backup feeds, one encoder's two outputs (OTT-OPS-4): the
    // primary dies mid-GOP; the backup's replay is the very frames already cut, so the
    // segments are the ones an uninterrupted primary gives, byte for byte.
    let frames = Synth::new(900_000).frames(30);
    let reference = run(
        &mut fresh(SegmenterConfig::default()),
        &frames,
        frames[0].dts,
    );
    let out = source_takeover(&frames, &frames, 10 * 25 * 2 + 31);
    assert!(out.iter().all(|s| !s.discontinuous));
    assert_same(&reference, &out);
}

#[test]
fn a_standby_of_another_encoder_takes_over_with_exactly_one_discontinuity() {
    // Two encoders on nearly the same clock: the replayed frames differ from the ones
    // cut, so the backup starts one new period and the sequence goes on.
    let frames = Synth::new(900_000).frames(30);
    let other: Vec<Frame> = frames
        .iter()
        .map(|f| {
            let mut data = f.data.to_vec();
            data.push(0x42);
            Frame {
                data: data.into(),
                ..f.clone()
            }
        })
        .collect();
    let cut = 10 * 25 * 2 + 31;
    let out = source_takeover(&frames, &other, cut);
    assert_eq!(out.iter().filter(|s| s.discontinuous).count(), 1);
    for pair in out.windows(2) {
        assert_eq!(pair[1].msn, pair[0].msn + 1, "the sequence goes on");
    }
}
