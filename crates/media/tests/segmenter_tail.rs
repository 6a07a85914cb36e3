//! A track that ends first (docs/timeline.md, "A track that ends first"; OTT-OPS-4):
//! an input that stops just after a keyframe with its audio behind the video, as
//! ffmpeg's MPEG-TS muxer sends it, must not leave a last segment of video with no
//! audio under it (hls.js stops loading there). The segmenter continues the audio with
//! silent AAC frames to the video's end, deterministically, and a follower writes the
//! same bytes.

use media::codec::aac::{adts_frame_ranges, AudioSpecificConfig};
use media::codec::aac_silence::silent_adts_frame;
use media::segmenter::Placed;
use media::ts::demux_frames;
use media::{Frame, Segment, Segmenter, SegmenterConfig, TrackKind};

mod timeline_util;

use timeline_util::*;

/// Audio arrives this far behind the video of the same timestamp (0.3 s).
const AUDIO_LAG: u64 = 27_000;

/// The audio frames of a segment's bytes as (PTS, ADTS frame) and its video PTSs.
fn tracks(segment: &Segment) -> (Vec<(u64, Vec<u8>)>, Vec<u64>) {
    let mut audio = Vec::new();
    let mut video = Vec::new();
    for f in demux_frames(&segment.data) {
        match f.kind() {
            TrackKind::Audio => {
                for (k, r) in adts_frame_ranges(&f.data).into_iter().enumerate() {
                    audio.push((f.pts + k as u64 * AAC_FRAME, f.data[r].to_vec()));
                }
            }
            TrackKind::Video => video.push(f.pts),
        }
    }
    (audio, video)
}

/// Audio covers every segment from its start to its end, with no hole.
fn assert_audio_covers(segments: &[Segment]) {
    for s in segments {
        let (audio, _) = tracks(s);
        let end = s.start_ts + s.duration_ticks;
        let first = audio.first().map(|a| a.0);
        assert!(
            first.is_some_and(|p| p <= s.start_ts + AAC_FRAME),
            "msn {}: audio starts at {first:?}, the segment at {}",
            s.msn,
            s.start_ts
        );
        for w in audio.windows(2) {
            assert_eq!(
                w[1].0 - w[0].0,
                AAC_FRAME,
                "msn {}: a hole in the audio",
                s.msn
            );
        }
        let last = audio.last().map_or(0, |a| a.0 + AAC_FRAME);
        assert!(
            last >= end,
            "msn {}: audio ends at {last}, the segment at {end}",
            s.msn
        );
    }
}

#[test]
fn input_ending_after_a_keyframe_ends_with_silence_under_the_video() {
    let start = 900_000;
    // Keyframes every second, target 2 s: cuts at 2 s and 4 s; the input ends four
    // frames after the 4-s keyframe, with the audio 0.3 s behind.
    let frames = cut_source(start, 105, AUDIO_LAG);
    let mut seg = fresh(SegmenterConfig::default());
    let out = run(&mut seg, &frames, start);
    assert_eq!(out.len(), 3, "{out:?}");
    let last = &out[2];
    assert_eq!(last.start_ts, start + 100 * FRAME);
    assert_eq!(last.duration_ticks, 5 * FRAME, "the video's end, as before");
    let (audio, video) = tracks(last);
    assert_eq!(video.len(), 5);
    // 18 000 ticks of video from 360 000: the audio's 1920-tick grid puts frames at
    // +960 … +16 320, nine of them, the last straddling the end as audio frames
    // straddle every cut (the one at -960 belongs to the segment before).
    assert_eq!(audio.len(), 9);
    assert_eq!(audio[0].0, last.start_ts + 960);
    let silent = silent_adts_frame(&adts(0)).expect("stereo AAC-LC");
    assert!(audio.iter().all(|(_, data)| *data == silent));
    assert_eq!(
        AudioSpecificConfig::from_adts(&silent).ok(),
        AudioSpecificConfig::from_adts(&adts(0)).ok(),
        "silence in the stream's own configuration"
    );
    // The segment before loses its last 0.3 s of audio too: silence fills it, on the
    // audio's own sample grid.
    let (before, _) = tracks(&out[1]);
    let real = before.iter().filter(|(_, d)| *d != silent).count();
    assert!(
        real > 0 && real < before.len(),
        "{real} of {}",
        before.len()
    );
    assert_audio_covers(&out);
    assert!(seg.stats().silence_filled >= 10, "{:?}", seg.stats());

    // Deterministic: another node given the same input cuts the same bytes, and a
    // follower of the relay writes them too.
    let again = run(&mut fresh(SegmenterConfig::default()), &frames, start);
    assert_same(&out, &again);
    let (followed, _) = relay(&concat(&out), 1316);
    assert_same(&out, &followed);
}

#[test]
fn a_switch_fills_the_old_input_only_and_places_the_silence_for_the_relay() {
    let start = 900_000;
    let mut seg = fresh(SegmenterConfig::default());
    seg.keep_placements(true);
    let mut out = run_open(&mut seg, &cut_source(start, 104, AUDIO_LAG), start);
    // Another encoder takes over: a new period from its first keyframe.
    seg.discontinuity();
    while let Some(s) = seg.pop_ready() {
        out.push(s);
    }
    let placed = seg.take_placed();
    let sealed = out.len();
    assert_eq!(sealed, 3, "{out:?}");
    assert_audio_covers(&out);
    let silent = silent_adts_frame(&adts(0)).expect("stereo AAC-LC");
    let last = &out[2];
    let silent_placed = placed
        .iter()
        .filter(|p| matches!(p, Placed::Frame(msn, f) if *msn == last.msn && f.data == silent))
        .count();
    assert_eq!(
        silent_placed,
        tracks(last).0.len(),
        "the live relay is sent every silent frame of the segment"
    );
    let fills = seg.stats().silence_filled;
    out.extend(run(
        &mut seg,
        &cut_source(7_000_000, 60, AUDIO_LAG),
        7_000_000,
    ));
    assert!(out[sealed].discontinuous);
    // The new input ends with its audio behind too; nothing of the old input's
    // audio reaches its period.
    assert!(seg.stats().silence_filled > fills);
    assert_audio_covers(&out[sealed..]);
}

#[test]
fn audio_that_reaches_the_end_gets_no_silence() {
    let start = 900_000;
    let mut s = Synth::new(start);
    s.bframes = false;
    let out = run(&mut fresh(SegmenterConfig::default()), &s.frames(7), start);
    let mut seg = fresh(SegmenterConfig::default());
    let again = run(&mut seg, &s.frames(7), start);
    assert_same(&out, &again);
    assert_eq!(seg.stats().silence_filled, 0, "{:?}", seg.stats());
}

/// Feeds frames without flushing.
fn run_open(seg: &mut Segmenter, frames: &[Frame], clock_base: u64) -> Vec<Segment> {
    let mut out = Vec::new();
    for f in frames {
        let elapsed = (f.dts - clock_base) / 90;
        if let Some(s) = seg.push(f.clone(), EPOCH_MS + elapsed as i64) {
            out.push(s);
        }
        while let Some(s) = seg.pop_ready() {
            out.push(s);
        }
    }
    out
}
