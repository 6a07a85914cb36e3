//! The packager on arbitrary frames (frames come from the network): no panic, and
//! whatever it writes parses back as consistent boxes.

mod fmp4_util;

use bytes::Bytes;
use fmp4_util::*;
use media::fmp4::{
    frames_from_ts, write_init, write_segment, InitConfig, NextDts, PartBuilder, SegmentOptions,
    TimedFrame,
};
use media::{Codec, Frame};
use proptest::prelude::*;

/// Bytes with start codes, parameter-set-like and ADTS-like headers sprinkled in.
fn payload() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        prop_oneof![
            4 => any::<u8>().prop_map(|b| vec![b]),
            1 => Just(vec![0, 0, 1]),
            1 => Just(vec![0, 0, 0, 1, 0x67, 0x64, 0x00, 0x1f]),
            1 => Just(vec![0, 0, 1, 0x68, 0xee]),
            1 => Just(vec![0, 0, 1, 0x40, 0x01, 0x0c]),
            1 => Just(vec![0xff, 0xf1, 0x4c, 0x80, 0x02, 0x1f, 0xfc]),
        ],
        0..40,
    )
    .prop_map(|chunks| chunks.concat())
}

fn timestamp() -> impl Strategy<Value = u64> {
    prop_oneof![
        8 => 0u64..(1 << 40),
        1 => (u64::MAX - 100_000)..=u64::MAX,
    ]
}

fn frame() -> impl Strategy<Value = TimedFrame> {
    (
        prop_oneof![Just(Codec::H264), Just(Codec::H265), Just(Codec::Aac)],
        timestamp(),
        -200_000i64..200_000,
        any::<bool>(),
        payload(),
    )
        .prop_map(|(codec, dts, cto, keyframe, data)| {
            let pts = dts.saturating_add_signed(cto);
            TimedFrame {
                ext_pts: pts,
                ext_dts: dts,
                frame: Frame {
                    codec,
                    pts: pts & media::PTS_MASK,
                    dts: dts & media::PTS_MASK,
                    keyframe,
                    data: Bytes::from(data),
                },
            }
        })
}

/// The fixture's config, so fragments of arbitrary frames are tried with a valid init.
fn fixture_config() -> InitConfig {
    let segments = segments("h264_aac.ts", 1000);
    let frames = frames_from_ts(&segments[0].data, segments[0].start_ts);
    InitConfig::from_frames(frames.iter().map(|t| &t.frame)).expect("fixture config")
}

/// Every fragment's boxes parse, and its sample sizes fill its mdat.
fn check_fragments(out: &[u8]) {
    for (moof, mdat, trafs) in fragments(out) {
        let mut at = mdat.body;
        for t in &trafs {
            assert_eq!(moof.start as i64 + i64::from(t.data_offset), at as i64);
            assert_eq!(t.sizes.len(), t.durations.len());
            at += t.sizes.iter().map(|&s| s as usize).sum::<usize>();
        }
        assert_eq!(at, mdat.end);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn arbitrary_frames_package_without_panic(
        frames in proptest::collection::vec(frame(), 0..30),
        part_ticks in prop_oneof![Just(None), (1u64..200_000).prop_map(Some)],
        next_video in proptest::option::of(timestamp()),
    ) {
        // Configs read from arbitrary frames: an error or an init that parses.
        if let Ok(config) = InitConfig::from_frames(frames.iter().map(|t| &t.frame)) {
            let mut init = Vec::new();
            if write_init(&config, &mut init).is_ok() {
                parse_boxes(&init, 0, init.len());
            }
        }
        let config = fixture_config();
        for config in [config.clone(), config.video_only(), config.audio_only()] {
            let options = SegmentOptions {
                msn: 7,
                part_ticks,
                next_video_dts: next_video,
                ..SegmentOptions::default()
            };
            let mut out = Vec::new();
            if let Ok(parts) = write_segment(&config, &frames, &options, &mut out) {
                prop_assert_eq!(parts.last().map(|p| p.bytes.end), Some(out.len()));
                check_fragments(&out);
            }
            let mut live = PartBuilder::new(config.clone(), 7, part_ticks.unwrap_or(1), None);
            let mut out = Vec::new();
            for f in frames.iter().cloned() {
                if live.push(f, &mut out).is_err() {
                    break;
                }
            }
            let _ = live.finish(NextDts::default(), &mut out);
            check_fragments(&out);
        }
    }
}
