//! The head parsed back by a reader written from the spec: box order, the sample
//! tables' contents, the edit lists, and chunk offsets that point at the bytes pass 2
//! writes.

use bytes::Bytes;

use super::head::mdat_header;
use super::{write_chunks, SampleTables};
use crate::fmp4::{InitConfig, TimedFrame};
use crate::{Codec, Frame};

// libx264 baseline 640x360 SPS (also in codec::h264's tests).
const SPS_640: [u8; 25] = [
    0x67, 0x42, 0xc0, 0x1e, 0xd9, 0x00, 0xa0, 0x2f, 0xf9, 0x70, 0x11, 0x00, 0x00, 0x03, 0x00, 0x01,
    0x00, 0x00, 0x03, 0x00, 0x32, 0x0f, 0x16, 0x2e, 0x48,
];
/// One ADTS frame, AAC-LC 48 kHz stereo, two payload bytes.
const ADTS: [u8; 9] = [0xff, 0xf1, 0x4c, 0x80, 0x01, 0x3f, 0xfc, 0xaa, 0xbb];

fn video(dts: u64, pts: u64, key: bool) -> TimedFrame {
    let mut data = vec![0, 0, 0, 1, 0x09, 0xf0];
    if key {
        data.extend_from_slice(&[0, 0, 0, 1]);
        data.extend_from_slice(&SPS_640);
        data.extend_from_slice(&[0, 0, 0, 1, 0x68, 0xce, 0x38, 0x80]);
    }
    data.extend_from_slice(&[0, 0, 1, if key { 0x65 } else { 0x41 }, 0x11, 0x22]);
    timed(Codec::H264, dts, pts, key, data)
}

fn audio(dts: u64) -> TimedFrame {
    timed(Codec::Aac, dts, dts, true, ADTS.to_vec())
}

fn timed(codec: Codec, dts: u64, pts: u64, keyframe: bool, data: Vec<u8>) -> TimedFrame {
    TimedFrame {
        ext_pts: pts,
        ext_dts: dts,
        frame: Frame {
            codec,
            pts,
            dts,
            keyframe,
            data: Bytes::from(data),
        },
    }
}

/// A segment of 4 video frames (I P B B: presentation 2 frames after decode) from
/// `dts`, and 8 audio frames from `dts - 1000`.
fn segment(dts: u64) -> Vec<TimedFrame> {
    let mut frames = Vec::new();
    for (i, cto) in [7200, 14_400, 3600, 3600].into_iter().enumerate() {
        let d = dts + 3600 * i as u64;
        frames.push(video(d, d + cto, i == 0));
    }
    frames.extend((0..8).map(|i| audio(dts - 1000 + 1920 * i)));
    frames
}

/// A parsed box: type, body range.
#[derive(Debug, Clone, Copy)]
struct Bx {
    kind: [u8; 4],
    body: usize,
    end: usize,
}

fn u32_at(data: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(data[at..at + 4].try_into().unwrap())
}

fn u64_at(data: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(data[at..at + 8].try_into().unwrap())
}

/// The boxes directly in `data[from..to]` (64-bit sizes read too).
fn boxes(data: &[u8], from: usize, to: usize) -> Vec<Bx> {
    let mut out = Vec::new();
    let mut at = from;
    while at < to {
        let size = u32_at(data, at) as usize;
        let kind: [u8; 4] = data[at + 4..at + 8].try_into().unwrap();
        let (size, header) = if size == 1 {
            (u64_at(data, at + 8) as usize, 16)
        } else {
            (size, 8)
        };
        assert!(size >= header && at + size <= to, "box at {at}");
        out.push(Bx {
            kind,
            body: at + header,
            end: at + size,
        });
        at += size;
    }
    out
}

/// The one box of `kind` in `parent`.
fn child(data: &[u8], parent: Bx, kind: &[u8; 4]) -> Bx {
    let found: Vec<Bx> = boxes(data, parent.body, parent.end)
        .into_iter()
        .filter(|b| &b.kind == kind)
        .collect();
    assert_eq!(found.len(), 1, "{} in {}", show(kind), show(&parent.kind));
    found[0]
}

fn has_child(data: &[u8], parent: Bx, kind: &[u8; 4]) -> bool {
    boxes(data, parent.body, parent.end)
        .iter()
        .any(|b| &b.kind == kind)
}

fn show(kind: &[u8; 4]) -> String {
    String::from_utf8_lossy(kind).into_owned()
}

/// A track's tables read back.
#[derive(Debug)]
struct Read {
    track_id: u32,
    tkhd_duration: u64,
    mdhd_duration: u64,
    /// (segment duration, media time) of each `elst` entry.
    edits: Vec<(u64, i64)>,
    durations: Vec<u32>,
    /// None without a `ctts`; (version, offsets) with one.
    offsets: Option<(u8, Vec<i32>)>,
    sync: Option<Vec<u32>>,
    sizes: Vec<u32>,
    /// Samples per chunk, one per chunk.
    chunk_samples: Vec<u32>,
    chunk_offsets: Vec<u64>,
}

/// Expands (count, value) runs read at `at`.
fn runs(data: &[u8], at: usize) -> Vec<(u32, u32)> {
    (0..u32_at(data, at) as usize)
        .map(|i| (u32_at(data, at + 4 + 8 * i), u32_at(data, at + 8 + 8 * i)))
        .collect()
}

fn expand(runs: &[(u32, u32)]) -> Vec<u32> {
    runs.iter()
        .flat_map(|&(n, v)| std::iter::repeat_n(v, n as usize))
        .collect()
}

fn read_trak(data: &[u8], trak: Bx) -> Read {
    let tkhd = child(data, trak, b"tkhd");
    assert_eq!(data[tkhd.body], 0, "tkhd version 0");
    let edits = if has_child(data, trak, b"edts") {
        let elst = child(data, child(data, trak, b"edts"), b"elst");
        assert_eq!(data[elst.body], 0, "elst version 0");
        (0..u32_at(data, elst.body + 4) as usize)
            .map(|i| {
                let at = elst.body + 8 + 12 * i;
                assert_eq!(u32_at(data, at + 8), 0x0001_0000, "rate 1");
                (
                    u64::from(u32_at(data, at)),
                    i64::from(u32_at(data, at + 4) as i32),
                )
            })
            .collect()
    } else {
        Vec::new()
    };
    let mdia = child(data, trak, b"mdia");
    let mdhd = child(data, mdia, b"mdhd");
    assert_eq!(u32_at(data, mdhd.body + 12), 90_000, "timescale");
    let stbl = child(data, child(data, mdia, b"minf"), b"stbl");
    let stsd = child(data, stbl, b"stsd");
    assert_eq!(u32_at(data, stsd.body + 4), 1, "one sample entry");
    let stts = child(data, stbl, b"stts");
    let offsets = has_child(data, stbl, b"ctts").then(|| {
        let ctts = child(data, stbl, b"ctts");
        let values = expand(&runs(data, ctts.body + 4));
        (
            data[ctts.body],
            values.into_iter().map(|v| v as i32).collect(),
        )
    });
    let sync = has_child(data, stbl, b"stss").then(|| {
        let stss = child(data, stbl, b"stss");
        (0..u32_at(data, stss.body + 4) as usize)
            .map(|i| u32_at(data, stss.body + 8 + 4 * i))
            .collect()
    });
    let stsz = child(data, stbl, b"stsz");
    assert_eq!(u32_at(data, stsz.body + 4), 0, "sizes listed");
    let sizes = (0..u32_at(data, stsz.body + 8) as usize)
        .map(|i| u32_at(data, stsz.body + 12 + 4 * i))
        .collect::<Vec<_>>();
    let co64 = child(data, stbl, b"co64");
    let chunk_offsets: Vec<u64> = (0..u32_at(data, co64.body + 4) as usize)
        .map(|i| u64_at(data, co64.body + 8 + 8 * i))
        .collect();
    let stsc = child(data, stbl, b"stsc");
    let entries: Vec<(u32, u32)> = (0..u32_at(data, stsc.body + 4) as usize)
        .map(|i| {
            let at = stsc.body + 8 + 12 * i;
            assert_eq!(u32_at(data, at + 8), 1, "sample description 1");
            (u32_at(data, at), u32_at(data, at + 4))
        })
        .collect();
    let chunk_samples = (1..=chunk_offsets.len() as u32)
        .map(|chunk| {
            entries
                .iter()
                .rev()
                .find(|(first, _)| *first <= chunk)
                .expect("stsc covers chunk 1")
                .1
        })
        .collect();
    Read {
        track_id: u32_at(data, tkhd.body + 12),
        tkhd_duration: u64::from(u32_at(data, tkhd.body + 20)),
        mdhd_duration: u64::from(u32_at(data, mdhd.body + 16)),
        edits,
        durations: expand(&runs(data, stts.body + 4)),
        offsets,
        sync,
        sizes,
        chunk_samples,
        chunk_offsets,
    }
}

/// The whole file of `segments` written in two passes, and its tracks read back.
fn write_file(config: &InitConfig, segments: &[Vec<TimedFrame>]) -> (Vec<u8>, Vec<Read>) {
    let mut tables = SampleTables::new(config);
    for frames in segments {
        tables.push_segment(frames).unwrap();
    }
    let head = tables.finish().unwrap();
    assert_eq!(head.segment_lens.len(), segments.len());
    let mut file = head.bytes.clone();
    for (frames, &expected) in segments.iter().zip(&head.segment_lens) {
        assert_eq!(write_chunks(config, frames, &mut file), expected);
    }
    assert_eq!(file.len() as u64, head.total_len);
    let top = boxes(&file, 0, file.len());
    let kinds: Vec<String> = top.iter().map(|b| show(&b.kind)).collect();
    assert_eq!(kinds, ["ftyp", "moov", "mdat"]);
    assert_eq!(
        top[2].body,
        head.bytes.len(),
        "the head ends at the samples"
    );
    let traks = boxes(&file, top[1].body, top[1].end)
        .into_iter()
        .filter(|b| &b.kind == b"trak")
        .map(|t| read_trak(&file, t))
        .collect();
    (file, traks)
}

/// Where each sample's bytes are, by the chunk tables.
fn sample_ranges(track: &Read) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut sizes = track.sizes.iter();
    for (&offset, &count) in track.chunk_offsets.iter().zip(&track.chunk_samples) {
        let mut at = offset as usize;
        for _ in 0..count {
            let size = *sizes.next().expect("as many sizes as chunked samples") as usize;
            out.push((at, at + size));
            at += size;
        }
    }
    assert!(sizes.next().is_none(), "every sample is in a chunk");
    out
}

fn av_config() -> InitConfig {
    let first = segment(10_000);
    InitConfig::from_frames(first.iter().map(|t| &t.frame)).unwrap()
}

#[test]
fn tables_index_the_samples_pass_two_writes() {
    let config = av_config();
    let segments = [segment(10_000), Vec::new(), segment(10_000 + 4 * 3600)];
    let (file, tracks) = write_file(&config, &segments);
    let [video, audio] = &tracks[..] else {
        panic!("two tracks: {tracks:?}")
    };
    assert_eq!((video.track_id, audio.track_id), (1, 2));

    assert_eq!(video.durations, [3600; 8]);
    assert_eq!(
        video.offsets,
        Some((0, [7200, 14_400, 3600, 3600].repeat(2)))
    );
    assert_eq!(video.sync.as_deref(), Some(&[1, 5][..]));
    assert_eq!(video.sizes, [7; 8], "AUD and parameter sets dropped");
    assert_eq!(video.chunk_samples, [4, 4]);
    // Audio's DTS jump between segments (8 frames of 1920 cover 15 360 ticks of the
    // 14 400 between them) is what its durations say; its last repeats the one before.
    let mut audio_durations = vec![1920; 7];
    audio_durations.push(14_400 - 7 * 1920);
    audio_durations.extend([1920; 8]);
    assert_eq!(audio.durations, audio_durations);
    assert_eq!(audio.offsets, None, "no ctts without offsets");
    assert_eq!(audio.sync, None, "every audio sample is a sync sample");
    assert_eq!(audio.sizes, [2; 16], "ADTS headers stripped");
    assert_eq!(audio.chunk_samples, [8, 8]);

    // Chunks in segment order, video before audio, and the bytes where they point.
    let v = sample_ranges(video);
    let a = sample_ranges(audio);
    assert!(v[3].1 == a[0].0 && a[7].1 == v[4].0 && v[7].1 == a[8].0);
    assert_eq!(a[15].1, file.len());
    for (start, end) in v {
        assert_eq!(u32_at(&file, start) as usize, end - start - 4, "NAL length");
    }
    for (start, end) in a {
        assert_eq!(&file[start..end], &[0xaa, 0xbb]);
    }

    // Audio starts first (PTS 9000); video presents its first picture (PTS 17 200) from
    // composition time 7200, 8200 ticks into the file.
    assert!(audio.edits.is_empty(), "audio starts the file");
    assert_eq!(audio.mdhd_duration, audio.tkhd_duration);
    assert_eq!(
        audio.mdhd_duration,
        audio.durations.iter().map(|&d| u64::from(d)).sum()
    );
    assert_eq!(video.edits, [(8200, -1), (8 * 3600, 7200)]);
    assert_eq!(video.mdhd_duration, 8 * 3600);
    assert_eq!(video.tkhd_duration, 8200 + 8 * 3600);
}

#[test]
fn negative_offsets_take_ctts_version_1_and_no_edit_goes_before_the_media() {
    let config = av_config();
    let frames = [video(7200, 3600, true), video(10_800, 14_400, false)];
    let (_, tracks) = write_file(&config, &[frames.to_vec()]);
    assert_eq!(
        tracks.len(),
        1,
        "a configured track without samples is left out"
    );
    assert_eq!(tracks[0].offsets, Some((1, vec![-3600, 3600])));
    assert!(tracks[0].edits.is_empty());
}

#[test]
fn frames_of_other_tracks_are_ignored() {
    let config = av_config().audio_only();
    let (_, tracks) = write_file(&config, &[segment(10_000)]);
    assert_eq!(tracks.len(), 1);
    assert_eq!(tracks[0].track_id, 2);
    assert_eq!(tracks[0].sizes.len(), 8);
    let mut tables = SampleTables::new(&config);
    assert_eq!(tables.push_segment(&[video(0, 0, true)]), Ok(0));
    assert_eq!(tables.finish(), Err(crate::fmp4::Fmp4Error::Empty));
}

#[test]
fn a_large_mdat_takes_the_64_bit_size() {
    let mut small = Vec::new();
    mdat_header(&mut small, 100);
    assert_eq!(small, [0, 0, 0, 108, b'm', b'd', b'a', b't']);
    let mut large = Vec::new();
    let payload = u64::from(u32::MAX);
    mdat_header(&mut large, payload);
    assert_eq!(&large[..8], &[0, 0, 0, 1, b'm', b'd', b'a', b't']);
    assert_eq!(u64_at(&large, 8), payload + 16);
}
