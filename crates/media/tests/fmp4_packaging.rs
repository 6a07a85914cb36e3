//! fMP4/CMAF packaging against ffmpeg-made fixtures: the real demuxer and segmenter cut
//! them, the packager writes init + segments, and ffprobe/ffmpeg read them back. The
//! fMP4 timeline is checked against the TS segments' (same cut points, same decode
//! times), and the box structure is read back by the spec with a test-side parser.

mod fmp4_util;

use fmp4_util::*;
use media::fmp4::{
    frames_from_ts, package_ts_segment, write_init, InitConfig, NextDts, Part, AUDIO_TRACK_ID,
    VIDEO_TRACK_ID,
};
use media::{Segment, TrackKind};

/// Target of the test segments: one GOP of the fixtures.
const TARGET_MS: u32 = 1000;

/// Init and segments of a fixture, with the config and each segment's parts.
struct Packaged {
    segments: Vec<Segment>,
    config: InitConfig,
    init: Vec<u8>,
    media: Vec<Vec<u8>>,
    parts: Vec<Vec<Part>>,
}

fn package(
    name: &str,
    config_of: impl Fn(InitConfig) -> InitConfig,
    part_ms: Option<u64>,
) -> Packaged {
    let segments = segments(name, TARGET_MS);
    let first = frames_from_ts(&segments[0].data, segments[0].start_ts);
    let config = config_of(
        InitConfig::from_frames(first.iter().map(|t| &t.frame))
            .expect("config from the first segment"),
    );
    let mut init = Vec::new();
    write_init(&config, &mut init).expect("init");
    let mut media = Vec::new();
    let mut parts = Vec::new();
    for (i, s) in segments.iter().enumerate() {
        let mut out = Vec::new();
        let next = segments.get(i + 1).map(NextDts::of_segment);
        parts.push(
            package_ts_segment(&config, s, next, part_ms.map(|ms| ms * 90), &mut out)
                .expect("segment"),
        );
        media.push(out);
    }
    Packaged {
        segments,
        config,
        init,
        media,
        parts,
    }
}

/// Writes init.mp4, seg-N.m4s, cat.mp4 (init + segments) and cat.ts; returns the paths
/// of cat.mp4 and cat.ts.
fn write_files(test: &str, p: &Packaged) -> (String, String) {
    let dir = temp_dir(test);
    std::fs::write(dir.join("init.mp4"), &p.init).unwrap();
    let mut cat = p.init.clone();
    let mut ts = Vec::new();
    for (i, (m, s)) in p.media.iter().zip(&p.segments).enumerate() {
        std::fs::write(dir.join(format!("seg-{i}.m4s")), m).unwrap();
        cat.extend_from_slice(m);
        ts.extend_from_slice(&s.data);
    }
    let mp4 = dir.join("cat.mp4");
    let ts_path = dir.join("cat.ts");
    std::fs::write(&mp4, &cat).unwrap();
    std::fs::write(&ts_path, &ts).unwrap();
    (
        mp4.to_string_lossy().into_owned(),
        ts_path.to_string_lossy().into_owned(),
    )
}

struct Expect {
    video: Option<(&'static str, &'static str, &'static str)>,
    audio: Option<(&'static str, &'static str)>,
}

/// ffprobe reads cat.mp4 without error, with the expected codecs, size and rate, and as
/// many video frames and audio packets as the TS segments hold; ffmpeg decodes it cleanly.
fn check_with_ffmpeg(test: &str, name: &str, expect: Expect, part_ms: Option<u64>) {
    let p = package(name, |c| c, part_ms);
    let (mp4, ts) = write_files(test, &p);
    let got = probe(&mp4);
    let reference = probe(&ts);
    assert_eq!(
        got.len(),
        usize::from(expect.video.is_some()) + usize::from(expect.audio.is_some())
    );
    if let Some((codec, width, height)) = expect.video {
        let v = stream(&got, "video").expect("a video stream");
        assert_eq!(v["codec_name"], codec);
        assert_eq!((v["width"].as_str(), v["height"].as_str()), (width, height));
        let r = stream(&reference, "video").expect("video in the ts");
        assert_eq!(v["nb_read_frames"], r["nb_read_frames"], "video frames");
        assert_eq!(v["nb_read_packets"], r["nb_read_packets"], "video packets");
        assert!(v["nb_read_frames"].parse::<u32>().unwrap() >= 45);
    }
    if let Some((codec, rate)) = expect.audio {
        let a = stream(&got, "audio").expect("an audio stream");
        assert_eq!(a["codec_name"], codec);
        assert_eq!(a["sample_rate"], rate);
        assert_eq!(a["channels"], "2");
        let r = stream(&reference, "audio").expect("audio in the ts");
        assert_eq!(a["nb_read_packets"], r["nb_read_packets"], "audio packets");
        assert!(a["nb_read_packets"].parse::<u32>().unwrap() >= 80);
    }
    decode_clean(&mp4);
}

#[test]
fn h264_aac_reads_and_decodes() {
    check_with_ffmpeg(
        "h264-aac",
        "h264_aac.ts",
        Expect {
            video: Some(("h264", "320", "180")),
            audio: Some(("aac", "48000")),
        },
        None,
    );
}

#[test]
fn h265_aac_reads_and_decodes() {
    check_with_ffmpeg(
        "h265-aac",
        "h265_aac.ts",
        Expect {
            video: Some(("hevc", "320", "180")),
            audio: Some(("aac", "44100")),
        },
        None,
    );
}

#[test]
fn audio_only_reads_and_decodes() {
    check_with_ffmpeg(
        "aac-only",
        "aac_only.ts",
        Expect {
            video: None,
            audio: Some(("aac", "48000")),
        },
        None,
    );
}

#[test]
fn video_only_reads_and_decodes() {
    check_with_ffmpeg(
        "h264-only",
        "h264_only.ts",
        Expect {
            video: Some(("h264", "320", "180")),
            audio: None,
        },
        None,
    );
}

#[test]
fn segments_written_as_parts_read_and_decode() {
    check_with_ffmpeg(
        "h264-aac-parts",
        "h264_aac.ts",
        Expect {
            video: Some(("h264", "320", "180")),
            audio: Some(("aac", "48000")),
        },
        Some(200),
    );
}

/// The decode times of a TS segment's first frame of each kind, read with the demuxer
/// (the fixtures start far from a 33-bit wrap, so the raw DTS is the extended one).
fn ts_first_dts(segment: &Segment, kind: TrackKind) -> Option<u64> {
    demux(&segment.data)
        .into_iter()
        .find(|f| f.kind() == kind)
        .map(|f| f.dts)
}

#[test]
fn fmp4_timeline_equals_the_ts_timeline() {
    for name in ["h264_aac.ts", "h265_aac.ts", "aac_only.ts", "h264_only.ts"] {
        let p = package(name, |c| c, None);
        assert!(p.segments.len() >= 2, "{name}: several segments");
        for (i, (s, m)) in p.segments.iter().zip(&p.media).enumerate() {
            let frags = fragments(m);
            assert_eq!(frags.len(), 1, "{name} #{i}: one fragment without parts");
            let trafs = &frags[0].2;
            for (kind, id) in [
                (TrackKind::Video, VIDEO_TRACK_ID),
                (TrackKind::Audio, AUDIO_TRACK_ID),
            ] {
                let traf = trafs.iter().find(|t| t.track_id == id);
                let first = ts_first_dts(s, kind);
                assert_eq!(traf.is_some(), first.is_some(), "{name} #{i} {kind:?}");
                let (Some(traf), Some(first)) = (traf, first) else {
                    continue;
                };
                assert_eq!(traf.base_decode_time, first, "{name} #{i} {kind:?} tfdt");
                let total: u64 = traf.durations.iter().map(|&d| u64::from(d)).sum();
                match (kind, p.segments.get(i + 1)) {
                    // The video track lasts exactly the TS segment's duration.
                    (TrackKind::Video, _) => {
                        assert_eq!(total, s.duration_ticks, "{name} #{i} video duration")
                    }
                    // Audio ends where the next segment's audio starts.
                    (TrackKind::Audio, Some(next)) => {
                        let next_first =
                            ts_first_dts(next, kind).expect("audio in the next segment");
                        assert_eq!(first + total, next_first, "{name} #{i} audio duration");
                    }
                    (TrackKind::Audio, None) => {}
                }
            }
            if let Some(next) = p.segments.get(i + 1) {
                assert_eq!(
                    s.start_ts + s.duration_ticks,
                    next.start_ts,
                    "segments telescope"
                );
                assert_eq!(
                    NextDts::of_segment(next),
                    NextDts {
                        video: ts_first_dts(next, TrackKind::Video),
                        audio: ts_first_dts(next, TrackKind::Audio),
                    }
                );
            }
            // Without the next segment (live, as soon as the segment is cut): video
            // still ends exactly, audio within one tick (44.1 kHz frames are 2089.8 ticks).
            let mut alone = Vec::new();
            package_ts_segment(&p.config, s, None, None, &mut alone).expect("segment");
            let (_, _, alone_trafs) = &fragments(&alone)[0];
            for (t, with_next) in alone_trafs.iter().zip(trafs) {
                assert_eq!(t.base_decode_time, with_next.base_decode_time);
                let (a, b): (u64, u64) = (
                    t.durations.iter().map(|&d| u64::from(d)).sum(),
                    with_next.durations.iter().map(|&d| u64::from(d)).sum(),
                );
                let slack = if t.track_id == VIDEO_TRACK_ID { 0 } else { 1 };
                assert!(
                    a.abs_diff(b) <= slack,
                    "{name} #{i} track {}: {a} vs {b}",
                    t.track_id
                );
            }
        }
    }
}

const H264_AAC_INIT: &str = "\
ftyp
moov
  mvhd
  trak
    tkhd
    mdia
      mdhd
      hdlr
      minf
        vmhd
        dinf
          dref
            url 
        stbl
          stsd
            avc1
              avcC
          stts
          stsc
          stco
          stsz
  trak
    tkhd
    mdia
      mdhd
      hdlr
      minf
        smhd
        dinf
          dref
            url 
        stbl
          stsd
            mp4a
              esds
          stts
          stsc
          stco
          stsz
  mvex
    trex
    trex
";

#[test]
fn init_segments_have_the_golden_structure() {
    let p = package("h264_aac.ts", |c| c, None);
    let boxes = parse_boxes(&p.init, 0, p.init.len());
    assert_eq!(outline(&boxes), H264_AAC_INIT);
    let init = &p.init;
    // ftyp: iso6, muxed so no cmfc.
    assert_eq!(&init[8..12], b"iso6");
    assert!(!init[..boxes[0].end].windows(4).any(|w| w == b"cmfc"));
    // tkhd of the video track: ID 1, 320x180 in 16.16.
    let tkhd = find_all(&boxes, "tkhd");
    assert_eq!(u32_at(init, tkhd[0].body + 12), VIDEO_TRACK_ID);
    assert_eq!(u32_at(init, tkhd[0].end - 8), 320 << 16);
    assert_eq!(u32_at(init, tkhd[0].end - 4), 180 << 16);
    assert_eq!(u32_at(init, tkhd[1].body + 12), AUDIO_TRACK_ID);
    // mdhd timescale 90 kHz on both tracks.
    for mdhd in find_all(&boxes, "mdhd") {
        assert_eq!(u32_at(init, mdhd.body + 12), 90_000);
    }
    // avcC: version 1, High profile (100), 4-byte lengths, one SPS, and the high-profile
    // tail (chroma 4:2:0, 8-bit).
    let avcc = find_all(&boxes, "avcC")[0];
    let b = &init[avcc.body..avcc.end];
    assert_eq!((b[0], b[1], b[4], b[5]), (1, 100, 0xff, 0xe1));
    assert_eq!(&b[b.len() - 4..], &[0xfd, 0xf8, 0xf8, 0]);
    let video = p.config.video.as_ref().unwrap();
    assert_eq!(&b[8..8 + video.sps[0].len()], &video.sps[0][..]);
    // mp4a: 2 channels, 48 kHz; esds carries AAC-LC 48 kHz stereo (0x11 0x90).
    let mp4a = find_all(&boxes, "mp4a")[0];
    assert_eq!(u32_at(init, mp4a.body + 16) >> 16, 2);
    assert_eq!(u32_at(init, mp4a.body + 24) >> 16, 48_000);
    let esds = find_all(&boxes, "esds")[0];
    assert!(init[esds.body..esds.end]
        .windows(4)
        .any(|w| w == [0x05, 0x02, 0x11, 0x90]));

    // H.265: hvc1 with hvcC holding complete VPS, SPS and PPS arrays; 44.1 kHz audio.
    let p = package("h265_aac.ts", |c| c, None);
    let boxes = parse_boxes(&p.init, 0, p.init.len());
    assert_eq!(
        outline(&boxes),
        H264_AAC_INIT
            .replace("avc1", "hvc1")
            .replace("avcC", "hvcC")
    );
    let hvcc = find_all(&boxes, "hvcC")[0];
    let b = &p.init[hvcc.body..hvcc.end];
    assert_eq!(b[0], 1, "configurationVersion");
    assert_eq!(b[1] & 0x1f, 1, "Main profile");
    assert_eq!(b[21] & 0x03, 3, "4-byte NAL lengths");
    assert_eq!(b[22], 3, "three arrays");
    assert_eq!(b[23], 0x80 | 32, "complete VPS array");
    let esds = find_all(&boxes, "esds")[0];
    assert!(p.init[esds.body..esds.end]
        .windows(4)
        .any(|w| w == [0x05, 0x02, 0x12, 0x10]));

    // Audio-only: one trak, one trex, CMAF brand.
    let p = package("aac_only.ts", |c| c, None);
    let boxes = parse_boxes(&p.init, 0, p.init.len());
    assert_eq!(find_all(&boxes, "trak").len(), 1);
    assert_eq!(find_all(&boxes, "trex").len(), 1);
    assert!(find_all(&boxes, "avc1").is_empty());
    assert!(p.init[..boxes[0].end].windows(4).any(|w| w == b"cmfc"));
}

#[test]
fn media_segments_have_the_golden_structure_and_consistent_offsets() {
    let p = package("h264_aac.ts", |c| c, None);
    let m = &p.media[1];
    let boxes = parse_boxes(m, 0, m.len());
    assert_eq!(
        outline(&boxes),
        "styp\nprft\nmoof\n  mfhd\n  traf\n    tfhd\n    tfdt\n    trun\n  traf\n    tfhd\n    tfdt\n    trun\nmdat\n"
    );
    // prft maps the segment start to its program date-time.
    let s = &p.segments[1];
    let prft = &boxes[1];
    assert_eq!(m[prft.body], 1, "prft version 1");
    assert_eq!(u32_at(m, prft.body + 4), VIDEO_TRACK_ID);
    let ntp_secs = u32_at(m, prft.body + 8) as i64;
    assert_eq!(
        ntp_secs - 2_208_988_800,
        s.program_date_time_ms.div_euclid(1000)
    );
    assert_eq!(u64_at(m, prft.body + 16), s.start_ts);
    // mfhd: sequence number from the MSN.
    let mfhd = &boxes[2].children[0];
    assert_eq!(
        u32_at(m, mfhd.body + 4),
        media::fmp4::sequence_number(s.msn, 0)
    );

    for (i, m) in p.media.iter().enumerate() {
        for (moof, mdat, trafs) in fragments(m) {
            // The first track's data starts at the mdat body, the tracks follow each
            // other, and the sample sizes fill the mdat exactly.
            let mut expected = mdat.body;
            for t in &trafs {
                assert_eq!(moof.start + t.data_offset as usize, expected, "segment {i}");
                expected += t.sizes.iter().map(|&s| s as usize).sum::<usize>();
            }
            assert_eq!(expected, mdat.end, "segment {i}: sizes fill the mdat");
            let video = trafs.iter().find(|t| t.track_id == VIDEO_TRACK_ID).unwrap();
            // Every segment starts with a sync sample; GOP 25: exactly one per segment here.
            assert_eq!(video.flags[0], 0x0200_0000, "segment {i}");
            let syncs = video
                .flags
                .iter()
                .filter(|&&f| f & 0x0001_0000 == 0)
                .count();
            let keyframes = demux(&p.segments[i].data)
                .iter()
                .filter(|f| f.keyframe && f.kind() == TrackKind::Video)
                .count();
            assert_eq!(syncs, keyframes, "segment {i}");
            // B-frames: composition offsets present and equal to PTS - DTS.
            let ts_offsets: Vec<i32> = demux(&p.segments[i].data)
                .iter()
                .filter(|f| f.kind() == TrackKind::Video)
                .map(|f| (f.pts as i64 - f.dts as i64) as i32)
                .collect();
            assert_eq!(video.composition_offsets, ts_offsets, "segment {i}");
            assert!(
                ts_offsets.iter().any(|&o| o > 3600),
                "the fixture has B-frames"
            );
            let audio = trafs.iter().find(|t| t.track_id == AUDIO_TRACK_ID).unwrap();
            assert!(audio.flags.iter().all(|&f| f == 0x0200_0000));
            assert!(audio.composition_offsets.is_empty());
            // Video samples are length-prefixed NAL units that fill each sample exactly.
            let mut at = mdat.body;
            for &size in &video.sizes {
                let end = at + size as usize;
                while at < end {
                    let len = u32_at(m, at) as usize;
                    assert!(
                        len > 0 && at + 4 + len <= end,
                        "segment {i}: nal length {len}"
                    );
                    let nal_type = m[at + 4] & 0x1f;
                    assert!(![7, 8, 9].contains(&nal_type), "no SPS/PPS/AUD in band");
                    at += 4 + len;
                }
                assert_eq!(at, end);
            }
        }
    }
}

#[test]
fn parts_cut_on_the_grid_and_concatenate_to_the_segment() {
    let p = package("h264_aac.ts", |c| c, Some(200));
    let whole = package("h264_aac.ts", |c| c, None);
    for (i, (parts, m)) in p.parts.iter().zip(&p.media).enumerate() {
        assert!(parts.len() >= 4, "segment {i}: {} parts", parts.len());
        assert_eq!(parts[0].bytes.start, 0);
        assert_eq!(parts.last().unwrap().bytes.end, m.len());
        let frags = fragments(m);
        assert_eq!(frags.len(), parts.len());
        let origin = parts[0].first_dts;
        for (k, (part, (_, _, trafs))) in parts.iter().zip(&frags).enumerate() {
            if k > 0 {
                assert_eq!(parts[k - 1].bytes.end, part.bytes.start);
                assert_eq!(
                    parts[k - 1].first_dts + parts[k - 1].duration_ticks,
                    part.first_dts
                );
                // The part starts at the first frame past a 200 ms grid line.
                let index = (part.first_dts - origin) / 18_000;
                let prev_last = part.first_dts - 3_600;
                assert!(
                    (prev_last - origin) / 18_000 < index,
                    "part {k} starts late"
                );
            }
            assert!(part.duration_ticks <= 18_000 + 3_600);
            let video = trafs.iter().find(|t| t.track_id == VIDEO_TRACK_ID).unwrap();
            assert_eq!(video.base_decode_time, part.first_dts);
            assert_eq!(part.independent, video.flags[0] == 0x0200_0000, "part {k}");
        }
        assert!(parts[0].independent);
        // Same samples as the segment written whole: the trun entries concatenate.
        let whole_frags = fragments(&whole.media[i]);
        let (_, _, whole_trafs) = &whole_frags[0];
        for id in [VIDEO_TRACK_ID, AUDIO_TRACK_ID] {
            let joined: Vec<(u32, u32)> = frags
                .iter()
                .flat_map(|(_, _, t)| {
                    t.iter()
                        .filter(|t| t.track_id == id)
                        .cloned()
                        .collect::<Vec<_>>()
                })
                .flat_map(|t| t.durations.into_iter().zip(t.sizes))
                .collect();
            let single = whole_trafs.iter().find(|t| t.track_id == id).unwrap();
            let single: Vec<(u32, u32)> = single
                .durations
                .iter()
                .copied()
                .zip(single.sizes.iter().copied())
                .collect();
            assert_eq!(joined, single, "segment {i} track {id}");
        }
    }
}

#[test]
fn packaging_is_deterministic() {
    for name in ["h264_aac.ts", "h265_aac.ts"] {
        let a = package(name, |c| c, Some(500));
        let b = package(name, |c| c, Some(500));
        assert_eq!(a.init, b.init, "{name}");
        assert_eq!(a.media, b.media, "{name}");
        assert_eq!(a.parts, b.parts, "{name}");
    }
}

#[test]
fn split_tracks_make_single_track_cmaf_files() {
    for (test, split) in [
        (
            "split-video",
            InitConfig::video_only as fn(&InitConfig) -> InitConfig,
        ),
        ("split-audio", InitConfig::audio_only),
    ] {
        let p = package("h264_aac.ts", |c| split(&c), None);
        assert_eq!(p.config.track_count(), 1);
        assert!(p.init[..32].windows(4).any(|w| w == b"cmfc"));
        for m in &p.media {
            assert!(m[..24].windows(4).any(|w| w == b"cmfs"));
            assert_eq!(fragments(m)[0].2.len(), 1, "one traf");
        }
        let (mp4, _) = write_files(test, &p);
        let got = probe(&mp4);
        assert_eq!(got.len(), 1, "{test}");
        decode_clean(&mp4);
    }
}
