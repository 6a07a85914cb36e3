//! Fuzzes the source-mode segmenter with arbitrary timestamps, flags and wall clocks:
//! every segment it writes lasts at most the longest-segment bound, and no date runs
//! more than `MAX_DATE_AHEAD_MS` ahead of the wall clock the frames came with.
//!
//! Each 16-byte record is one frame: DTS (5 bytes), PTS offset or raw PTS (5 bytes),
//! wall-clock step in ms (2 bytes), flags (keyframe, audio, raw PTS), padding.

#![no_main]

use libfuzzer_sys::fuzz_target;
use media::segmenter::MAX_DATE_AHEAD_MS;
use media::{Codec, Frame, Segmenter, SegmenterConfig, StartPoint, PTS_MASK};

fn u40(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |v, &x| v << 8 | u64::from(x))
}

fuzz_target!(|data: &[u8]| {
    let config = SegmenterConfig::default();
    let fresh = StartPoint::Fresh {
        min_msn: 0,
        min_discontinuity_seq: 0,
    };
    let mut segmenter = Segmenter::new(config, fresh);
    let mut now = 1_700_000_000_000i64;
    let mut out = Vec::new();
    for record in data.chunks_exact(16) {
        let dts = u40(&record[0..5]) & PTS_MASK;
        let flags = record[12];
        let pts = if flags & 4 != 0 {
            u40(&record[5..10]) & PTS_MASK
        } else {
            (dts + u40(&record[5..10]) % 400_000) & PTS_MASK
        };
        now += i64::from(u16::from_be_bytes([record[10], record[11]]));
        let audio = flags & 2 != 0;
        let frame = Frame {
            codec: if audio { Codec::Aac } else { Codec::H264 },
            pts,
            dts: if audio { pts } else { dts },
            keyframe: audio || flags & 1 != 0,
            data: vec![0, 0, 0, 1, 0x65, 0x88, 0x84].into(),
        };
        out.extend(segmenter.push(frame, now).map(|s| (s, now)));
        while let Some(s) = segmenter.pop_ready() {
            out.push((s, now));
        }
    }
    while let Some(s) = segmenter.flush() {
        out.push((s, now));
    }
    for (segment, at) in out {
        assert!(segment.duration_ticks <= config.longest_segment_ticks());
        assert!(segment.program_date_time_ms <= at + MAX_DATE_AHEAD_MS);
    }
});
