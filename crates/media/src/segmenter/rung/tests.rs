//! The rung cutter's rules, with plain frames and markers.

use super::*;
use crate::timeline::TimelineState;
use crate::Codec;
use bytes::Bytes;

const SECOND: u64 = 90_000;
const FRAME: u64 = 3600;

fn marker(msn: u64, start: u64, duration: u64, video: u32, audio: u32) -> TimelineMarker {
    TimelineMarker {
        state: TimelineState {
            msn,
            anchor_ts: 0,
            anchor_unix_ms: 1_700_000_000_000,
            ..TimelineState::default()
        },
        discontinuous: false,
        keyframe_start: true,
        start_ts: start,
        duration_ticks: duration,
        program_date_time_ms: 1_700_000_000_000 + i64::try_from(start / 90).unwrap_or(0),
        target_duration_ms: 2000,
        video_frames: video,
        audio_frames: audio,
    }
}

fn video(pts: u64, key: bool) -> Frame {
    Frame {
        codec: Codec::H264,
        pts,
        dts: pts,
        keyframe: key,
        data: Bytes::from_static(&[0, 0, 0, 1, 0x65, 0x88]),
    }
}

fn audio(pts: u64) -> Frame {
    Frame {
        codec: Codec::Aac,
        pts,
        dts: pts,
        keyframe: true,
        data: Bytes::from_static(&[0xff, 0xf1, 0x50, 0x80, 0x01, 0x7f, 0xfc, 0x21]),
    }
}

/// The frames of a 2-s segment starting at `start`: 50 video frames (a keyframe
/// first unless `key` is false) and 2 audio frames.
fn frames(start: u64, key: bool) -> Vec<Frame> {
    let mut out: Vec<Frame> = (0..50)
        .map(|i| video(start + i * FRAME, i == 0 && key))
        .collect();
    out.push(audio(start));
    out.push(audio(start + SECOND));
    out
}

#[test]
fn a_rung_takes_the_source_segments_numbers_dates_and_spans() {
    let mut cutter = RungCutter::new();
    let mut out = Vec::new();
    for msn in 0..3 {
        let start = 10 * SECOND + msn * 2 * SECOND;
        out.extend(cutter.source_segment(marker(msn, start, 2 * SECOND, 50, 2)));
        for f in frames(start, true) {
            out.extend(cutter.frame(f));
        }
    }
    assert_eq!(
        out.len(),
        3,
        "each segment is written once its frames are in"
    );
    for (i, rung) in out.iter().enumerate() {
        let msn = i as u64;
        let start = 10 * SECOND + msn * 2 * SECOND;
        assert_eq!(rung.segment.msn, msn);
        assert_eq!(rung.segment.start_ts, start);
        assert_eq!(rung.segment.duration_ticks, 2 * SECOND);
        assert_eq!(
            rung.segment.program_date_time_ms,
            marker(msn, start, 2 * SECOND, 50, 2).program_date_time_ms
        );
        assert!(rung.aligned && !rung.segment.discontinuous);
        let parsed = TimelineMarker::parse(&rung.segment.data[4..188]).expect("marker");
        assert_eq!(parsed, rung.marker, "the bytes carry the rung's marker");
    }
    assert_eq!(cutter.stats().misaligned, 0);
    assert_ne!(
        out[1].marker.state.cc, out[0].marker.state.cc,
        "each segment starts where the previous one's counters ended"
    );
}

#[test]
fn frames_that_come_before_their_source_segment_wait_for_it() {
    let mut cutter = RungCutter::new();
    assert!(cutter
        .source_segment(marker(7, 0, 2 * SECOND, 50, 2))
        .is_empty());
    let mut out = Vec::new();
    for f in frames(0, true).into_iter().chain(frames(2 * SECOND, true)) {
        out.extend(cutter.frame(f));
    }
    assert_eq!(out.len(), 1);
    out.extend(cutter.source_segment(marker(8, 2 * SECOND, 2 * SECOND, 50, 2)));
    assert_eq!(out.len(), 2);
    assert_eq!(out[1].segment.msn, 8);
    assert!(out[1].aligned);
}

#[test]
fn a_rung_that_does_not_start_on_the_keyframe_is_misaligned() {
    let mut cutter = RungCutter::new();
    let mut out = cutter.source_segment(marker(0, 0, 2 * SECOND, 50, 2));
    for f in frames(0, true) {
        out.extend(cutter.frame(f));
    }
    out.extend(cutter.source_segment(marker(1, 2 * SECOND, 2 * SECOND, 50, 2)));
    for f in frames(2 * SECOND, false) {
        out.extend(cutter.frame(f));
    }
    assert_eq!(out.len(), 2);
    assert!(out[0].aligned && !out[1].aligned);
    assert!(!out[1].marker.keyframe_start);
    assert_eq!(cutter.stats().misaligned, 1);
}

#[test]
fn the_partial_first_segments_of_a_start_are_skipped_not_reported() {
    let mut cutter = RungCutter::new();
    let mut out = Vec::new();
    for msn in 0..4 {
        let start = msn * 2 * SECOND;
        out.extend(cutter.source_segment(marker(msn, start, 2 * SECOND, 50, 2)));
        // The encoder started mid-segment: the first two begin without a keyframe.
        for f in frames(start, msn >= 2) {
            out.extend(cutter.frame(f));
        }
    }
    let msns: Vec<u64> = out.iter().map(|r| r.segment.msn).collect();
    assert_eq!(msns, vec![2, 3]);
    assert_eq!(cutter.stats().misaligned, 0);
    assert_eq!(cutter.stats().skipped, 2);
}

#[test]
fn an_encoder_that_drops_frames_is_cut_when_later_frames_arrive() {
    let mut cutter = RungCutter::new();
    let mut out = cutter.source_segment(marker(0, 0, 2 * SECOND, 50, 2));
    for f in frames(0, true) {
        out.extend(cutter.frame(f));
    }
    let start = 2 * SECOND;
    out.extend(cutter.source_segment(marker(1, start, 2 * SECOND, 50, 2)));
    out.extend(cutter.source_segment(marker(2, 2 * start, 2 * SECOND, 50, 2)));
    for f in frames(start, true)
        .into_iter()
        .filter(|f| f.pts != start || f.kind() == TrackKind::Audio)
    {
        out.extend(cutter.frame(f));
    }
    assert_eq!(out.len(), 1, "still waiting: nothing beyond the end yet");
    out.extend(cutter.frame(video(2 * start, true)));
    out.extend(cutter.frame(audio(2 * start)));
    assert_eq!(out.len(), 2);
    assert!(!out[1].aligned, "the first keyframe was dropped");
    assert_eq!(cutter.stats().count_mismatch, 1);
}

#[test]
fn a_restarted_encoder_skips_the_lost_span_and_marks_a_discontinuity() {
    let mut cutter = RungCutter::new();
    let mut out = Vec::new();
    out.extend(cutter.source_segment(marker(0, 0, 2 * SECOND, 50, 2)));
    for f in frames(0, true) {
        out.extend(cutter.frame(f));
    }
    // Segment 1 is fed, half encoded, then the encoder dies.
    out.extend(cutter.source_segment(marker(1, 2 * SECOND, 2 * SECOND, 50, 2)));
    for f in frames(2 * SECOND, true).into_iter().take(20) {
        out.extend(cutter.frame(f));
    }
    cutter.restart();
    // The new encoder starts at segment 3.
    out.extend(cutter.source_segment(marker(2, 4 * SECOND, 2 * SECOND, 50, 2)));
    out.extend(cutter.source_segment(marker(3, 6 * SECOND, 2 * SECOND, 50, 2)));
    for f in frames(6 * SECOND, true) {
        out.extend(cutter.frame(f));
    }
    let msns: Vec<u64> = out.iter().map(|r| r.segment.msn).collect();
    assert_eq!(msns, vec![0, 3]);
    assert!(out[1].segment.discontinuous);
    assert_eq!(
        out[1].segment.discontinuity_seq, 1,
        "one ahead of the source's"
    );
    assert_eq!(cutter.stats().skipped, 2);
    assert!(out[1].aligned);
}

#[test]
fn a_segment_fed_again_after_a_restart_is_not_written_twice() {
    let mut cutter = RungCutter::new();
    let mut out = cutter.source_segment(marker(0, 0, 2 * SECOND, 50, 2));
    for f in frames(0, true) {
        out.extend(cutter.frame(f));
    }
    cutter.restart();
    out.extend(cutter.source_segment(marker(0, 0, 2 * SECOND, 50, 2)));
    for f in frames(0, true) {
        out.extend(cutter.frame(f));
    }
    out.extend(cutter.source_segment(marker(1, 2 * SECOND, 2 * SECOND, 50, 2)));
    for f in frames(2 * SECOND, true) {
        out.extend(cutter.frame(f));
    }
    let msns: Vec<u64> = out.iter().map(|r| r.segment.msn).collect();
    assert_eq!(msns, vec![0, 1]);
    assert!(
        out[1].segment.discontinuous,
        "the new encoder's first segment"
    );
}

#[test]
fn a_rung_sharing_the_sources_audio_carries_it_and_needs_only_its_video() {
    let mut cutter = RungCutter::new();
    let source_audio = vec![audio(0), audio(SECOND)];
    let mut out = cutter.source_segment_sharing(marker(0, 0, 2 * SECOND, 50, 2), source_audio);
    for f in frames(0, true)
        .into_iter()
        .filter(|f| f.kind() == TrackKind::Video)
    {
        out.extend(cutter.frame(f));
    }
    assert_eq!(out.len(), 1, "complete with its last video frame");
    assert_eq!(out[0].marker.audio_frames, 2);
    // The encoder's own audio is ignored; a segment the encoder never made is
    // skipped even though the source's audio is there.
    out.extend(cutter.frame(audio(2 * SECOND)));
    out.extend(cutter.source_segment_sharing(
        marker(1, 2 * SECOND, 2 * SECOND, 50, 2),
        vec![audio(2 * SECOND)],
    ));
    out.extend(cutter.source_segment_sharing(
        marker(2, 4 * SECOND, 2 * SECOND, 50, 2),
        vec![audio(4 * SECOND)],
    ));
    for f in frames(4 * SECOND, true)
        .into_iter()
        .filter(|f| f.kind() == TrackKind::Video)
    {
        out.extend(cutter.frame(f));
    }
    let msns: Vec<u64> = out.iter().map(|r| r.segment.msn).collect();
    assert_eq!(msns, vec![0, 2]);
    assert_eq!(out[1].marker.audio_frames, 1);
    assert!(out[1].segment.discontinuous);
}

#[test]
fn late_frames_are_dropped_and_counted() {
    let mut cutter = RungCutter::new();
    cutter.source_segment(marker(0, 2 * SECOND, 2 * SECOND, 50, 2));
    cutter.frame(video(SECOND, true));
    assert_eq!(cutter.stats().dropped_late, 1);
}

/// 44.1 kHz AAC frames (the test ADTS header's rate) are 2089.8 ticks apart.
const AAC_FRAME: u64 = 1024 * SECOND / 44_100;

/// The language's audio frames from `from` up to `to` (exclusive), back to back.
fn language(from: u64, to: u64) -> Vec<Frame> {
    (0..)
        .map(|i| from + i * 1024 * SECOND / 44_100)
        .take_while(|&pts| pts < to)
        .map(audio)
        .collect()
}

#[test]
fn an_audio_rendition_is_cut_on_the_source_spans_by_its_own_audio() {
    let mut cutter = RungCutter::audio_rendition();
    let mut out = Vec::new();
    for msn in 0..3 {
        let start = 10 * SECOND + msn * 2 * SECOND;
        // The floor's counts (50 pictures, 94 audio frames) do not bind the language.
        out.extend(cutter.source_segment(marker(msn, start, 2 * SECOND, 50, 94)));
        // A rendition's video, if its source has any, is ignored.
        out.extend(cutter.frame(video(start, true)));
    }
    for f in language(10 * SECOND, 16 * SECOND + AAC_FRAME) {
        out.extend(cutter.frame(f));
    }
    let msns: Vec<u64> = out.iter().map(|r| r.segment.msn).collect();
    assert_eq!(msns, vec![0, 1, 2], "each written once a later frame came");
    for rung in &out {
        let start = rung.segment.start_ts;
        assert!(rung.aligned && !rung.segment.discontinuous);
        assert_eq!(rung.segment.duration_ticks, 2 * SECOND);
        assert_eq!(rung.marker.video_frames, 0);
        assert_eq!(
            rung.marker.state.tracks.video, None,
            "audio alone in the PMT"
        );
        let frames = crate::ts::demux_frames(&rung.segment.data);
        assert!(frames.iter().all(|f| f.kind() == TrackKind::Audio));
        assert_eq!(frames.len() as u32, rung.marker.audio_frames);
        let first = frames.iter().map(|f| f.pts).min().unwrap();
        assert!(
            first >= start && first < start + AAC_FRAME,
            "{first} vs {start}"
        );
        let last = frames.iter().map(|f| f.pts).max().unwrap();
        assert!(last < start + 2 * SECOND);
    }
    let stats = cutter.stats();
    assert_eq!((stats.misaligned, stats.count_mismatch), (0, 0));
}

#[test]
fn a_language_that_stops_gets_silent_segments_on_the_sources_numbers() {
    let mut cutter = RungCutter::audio_rendition();
    let mut out = Vec::new();
    for msn in 0..4 {
        let start = msn * 2 * SECOND;
        out.extend(cutter.source_segment(marker(msn, start, 2 * SECOND, 50, 94)));
        // The interpreter is silent (no frames) for the third segment's span.
        if msn != 2 {
            for f in language(start, start + 2 * SECOND) {
                out.extend(cutter.frame(f));
            }
        }
    }
    out.extend(cutter.frame(audio(8 * SECOND + AAC_FRAME)));
    let msns: Vec<u64> = out.iter().map(|r| r.segment.msn).collect();
    assert_eq!(msns, vec![0, 1, 2, 3], "no MSN skipped");
    // The span without frames is silence over the whole span, on the audio's grid, in
    // the language's own configuration.
    let silent = crate::codec::aac_silence::silent_adts_frame(&audio(0).data).unwrap();
    let frames = crate::ts::demux_frames(&out[2].segment.data);
    assert_eq!(frames.len(), 87, "2 s of 1,024-sample frames at 44.1 kHz");
    assert_eq!(out[2].marker.audio_frames, 87);
    assert!(frames.iter().all(|f| f.data[..] == silent[..]));
    assert_eq!(frames[0].pts, 4 * SECOND);
    assert!(frames.iter().all(|f| f.pts < 6 * SECOND));
    assert!(out[3].marker.audio_frames > 0);
    // The source's discontinuities, no other.
    assert!(out.iter().all(|r| !r.segment.discontinuous));
    assert!(out.iter().all(|r| r.marker.state.discontinuity_seq == 0));
    assert_eq!(cutter.stats().gaps, 1);
}

#[test]
fn an_audio_rendition_that_starts_mid_segment_is_settled_not_misreported() {
    let mut cutter = RungCutter::audio_rendition();
    let mut out = Vec::new();
    for msn in 0..3 {
        out.extend(cutter.source_segment(marker(msn, msn * 2 * SECOND, 2 * SECOND, 50, 94)));
    }
    // The feed comes half a second into the first segment.
    for f in language(SECOND / 2, 6 * SECOND + AAC_FRAME) {
        out.extend(cutter.frame(f));
    }
    let msns: Vec<u64> = out.iter().map(|r| r.segment.msn).collect();
    assert_eq!(msns, vec![1, 2]);
    assert_eq!(cutter.stats().misaligned, 0);
}

#[test]
fn a_lost_language_is_written_as_silence_a_few_segments_behind() {
    let mut cutter = RungCutter::audio_rendition();
    let mut out = Vec::new();
    out.extend(cutter.source_segment(marker(0, 0, 2 * SECOND, 50, 94)));
    for f in language(0, 2 * SECOND + AAC_FRAME) {
        out.extend(cutter.frame(f));
    }
    // The feed is lost: no frame comes any more; the video goes on.
    for msn in 1..10 {
        out.extend(cutter.source_segment(marker(msn, msn * 2 * SECOND, 2 * SECOND, 50, 94)));
    }
    let msns: Vec<u64> = out.iter().map(|r| r.segment.msn).collect();
    assert_eq!(msns, (0..=6).collect::<Vec<u64>>(), "at most 3 spans wait");
    // (The frame past the first span, which completed it, is the second's.)
    let silent = crate::codec::aac_silence::silent_adts_frame(&audio(0).data).unwrap();
    for rung in &out[2..] {
        let frames = crate::ts::demux_frames(&rung.segment.data);
        assert_eq!(frames.len() as u32, rung.marker.audio_frames);
        assert!(!frames.is_empty() && frames.iter().all(|f| f.data[..] == silent[..]));
    }
}

#[test]
fn a_feed_that_goes_and_comes_within_a_span_is_padded_with_silence_to_its_edges() {
    let mut cutter = RungCutter::audio_rendition();
    let mut out = Vec::new();
    // The interpreter speaks through the first span and half the second, is away, and
    // comes back half a second into the fourth.
    let speech = [
        (0, 2 * SECOND),
        (2 * SECOND, 3 * SECOND),
        (0, 0),
        (6 * SECOND + SECOND / 2, 8 * SECOND + AAC_FRAME),
    ];
    for (msn, (from, to)) in speech.into_iter().enumerate() {
        let msn = msn as u64;
        out.extend(cutter.source_segment(marker(msn, msn * 2 * SECOND, 2 * SECOND, 50, 94)));
        for f in language(from, to) {
            out.extend(cutter.frame(f));
        }
    }
    out.extend(cutter.flush());
    let msns: Vec<u64> = out.iter().map(|r| r.segment.msn).collect();
    assert_eq!(msns, vec![0, 1, 2, 3]);
    let silent = crate::codec::aac_silence::silent_adts_frame(&audio(0).data).unwrap();
    for rung in &out {
        let start = rung.segment.start_ts;
        let end = start + 2 * SECOND;
        let mut frames = crate::ts::demux_frames(&rung.segment.data);
        frames.sort_by_key(|f| f.pts);
        assert_eq!(frames.len() as u32, rung.marker.audio_frames);
        // From the span's start to its end, no hole of a frame.
        assert!(
            frames[0].pts < start + AAC_FRAME,
            "msn {}",
            rung.segment.msn
        );
        assert!(
            frames.last().unwrap().pts + 2 * AAC_FRAME > end,
            "msn {}",
            rung.segment.msn
        );
        for pair in frames.windows(2) {
            let step = pair[1].pts - pair[0].pts;
            assert!(
                step + 1 >= AAC_FRAME && step <= AAC_FRAME + 1,
                "msn {}: {step}",
                rung.segment.msn
            );
        }
        let quiet = frames.iter().filter(|f| f.data[..] == silent[..]).count();
        match rung.segment.msn {
            0 => assert_eq!(quiet, 0),
            // Half a span of speech, then silence; then silence; then half a second of it.
            1 | 3 => assert!(quiet > 15 && quiet < frames.len() - 15, "{quiet}"),
            _ => assert_eq!(quiet, frames.len()),
        }
    }
}
