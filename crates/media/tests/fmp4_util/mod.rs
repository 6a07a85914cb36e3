//! Shared by the fMP4 tests: fixtures segmented by the real segmenter, a small ISO BMFF
//! box parser written from the spec (independent of the packager's writer), and
//! ffprobe/ffmpeg runners.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use media::{Frame, Segment, Segmenter, SegmenterConfig, StartPoint};

pub const EPOCH_MS: i64 = 1_714_564_800_000;

pub fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

/// The fixture's frames, demuxed in one piece.
pub fn demux(ts: &[u8]) -> Vec<Frame> {
    media::ts::demux_frames(ts)
}

/// The fixture cut by the segmenter (fresh start, wall clock following the media clock).
pub fn segments(name: &str, target_ms: u32) -> Vec<Segment> {
    let config = SegmenterConfig {
        target_duration_ms: target_ms,
        ..SegmenterConfig::default()
    };
    let mut seg = Segmenter::new(
        config,
        StartPoint::Fresh {
            min_msn: 0,
            min_discontinuity_seq: 0,
        },
    );
    let mut out = Vec::new();
    for f in demux(&fixture(name)) {
        let now = EPOCH_MS + (f.dts / 90) as i64;
        out.extend(seg.push(f, now));
        while let Some(s) = seg.pop_ready() {
            out.push(s);
        }
    }
    while let Some(s) = seg.flush() {
        out.push(s);
    }
    assert!(!out.is_empty(), "{name}: no segments");
    out
}

/// A fresh directory for one test's files.
pub fn temp_dir(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("fmp4-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creating the test directory");
    dir
}

/// Runs a tool; fails the test with a clear message when it is not installed.
pub fn run(tool: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(tool).args(args).output().unwrap_or_else(|e| {
        panic!("{tool} is required by this test (apt-get install ffmpeg): {e}")
    });
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// ffprobe's view of a file's streams: `stream index → key → value`, with frames and
/// packets counted. Panics when ffprobe reports any error.
pub fn probe(path: &str) -> BTreeMap<usize, BTreeMap<String, String>> {
    let (ok, stdout, stderr) = run(
        "ffprobe",
        &[
            "-v",
            "error",
            "-count_frames",
            "-count_packets",
            "-show_entries",
            "stream=index,codec_type,codec_name,width,height,sample_rate,channels,nb_read_frames,nb_read_packets",
            "-of",
            "flat",
            path,
        ],
    );
    assert!(ok && stderr.trim().is_empty(), "ffprobe {path}: {stderr}");
    let mut streams: BTreeMap<usize, BTreeMap<String, String>> = BTreeMap::new();
    for line in stdout.lines() {
        // streams.stream.0.codec_name="h264"
        let Some(rest) = line.strip_prefix("streams.stream.") else {
            continue;
        };
        let (index, kv) = rest.split_once('.').expect("index.key=value");
        let (key, value) = kv.split_once('=').expect("key=value");
        streams
            .entry(index.parse().expect("stream index"))
            .or_default()
            .insert(key.to_string(), value.trim_matches('"').to_string());
    }
    streams
}

/// The stream of a type in a probe result.
pub fn stream<'a>(
    probe: &'a BTreeMap<usize, BTreeMap<String, String>>,
    codec_type: &str,
) -> Option<&'a BTreeMap<String, String>> {
    probe
        .values()
        .find(|s| s.get("codec_type").map(String::as_str) == Some(codec_type))
}

/// Decodes the whole file; panics on any decoder error.
pub fn decode_clean(path: &str) {
    let (ok, _, stderr) = run("ffmpeg", &["-v", "error", "-i", path, "-f", "null", "-"]);
    assert!(
        ok && stderr.trim().is_empty(),
        "ffmpeg decoding {path}: {stderr}"
    );
}

/// One parsed box: its type, where it is, and its children when it is a container.
#[derive(Debug, Clone)]
pub struct Bx {
    pub kind: String,
    /// Offset of the box header in the parsed buffer.
    pub start: usize,
    /// Offset of the body (after size and type).
    pub body: usize,
    /// Offset after the box.
    pub end: usize,
    pub children: Vec<Bx>,
}

/// Bytes of the body that precede child boxes in the containers this parser opens.
fn child_offset(kind: &str) -> Option<usize> {
    match kind {
        "moov" | "trak" | "mdia" | "minf" | "dinf" | "stbl" | "mvex" | "moof" | "traf" => Some(0),
        "dref" | "stsd" => Some(8),
        "avc1" | "hvc1" => Some(78),
        "mp4a" => Some(28),
        _ => None,
    }
}

/// Parses the boxes in `data[from..to]`; panics on a size that does not fit (the test
/// then fails with the offset).
pub fn parse_boxes(data: &[u8], from: usize, to: usize) -> Vec<Bx> {
    let mut boxes = Vec::new();
    let mut at = from;
    while at < to {
        assert!(at + 8 <= to, "box header past the end at {at}");
        let size = u32::from_be_bytes(data[at..at + 4].try_into().unwrap()) as usize;
        let kind = String::from_utf8_lossy(&data[at + 4..at + 8]).into_owned();
        assert!(
            size >= 8 && at + size <= to,
            "box {kind} at {at} has size {size}, parent ends at {to}"
        );
        let children = child_offset(&kind)
            .map(|o| parse_boxes(data, at + 8 + o, at + size))
            .unwrap_or_default();
        boxes.push(Bx {
            kind,
            start: at,
            body: at + 8,
            end: at + size,
            children,
        });
        at += size;
    }
    boxes
}

/// The tree as indented type names, one per line.
pub fn outline(boxes: &[Bx]) -> String {
    fn walk(b: &[Bx], depth: usize, out: &mut String) {
        for x in b {
            out.push_str(&"  ".repeat(depth));
            out.push_str(&x.kind);
            out.push('\n');
            walk(&x.children, depth + 1, out);
        }
    }
    let mut s = String::new();
    walk(boxes, 0, &mut s);
    s
}

/// Every box of a type, depth first.
pub fn find_all<'a>(boxes: &'a [Bx], kind: &str) -> Vec<&'a Bx> {
    let mut out = Vec::new();
    for b in boxes {
        if b.kind == kind {
            out.push(b);
        }
        out.extend(find_all(&b.children, kind));
    }
    out
}

pub fn u32_at(data: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(data[at..at + 4].try_into().unwrap())
}

pub fn u64_at(data: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(data[at..at + 8].try_into().unwrap())
}

/// A `traf` read back: track ID, base decode time and the `trun` samples.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Traf {
    pub track_id: u32,
    pub base_decode_time: u64,
    pub data_offset: i32,
    pub durations: Vec<u32>,
    pub sizes: Vec<u32>,
    /// Per-sample flags (or tfhd's default when the trun has none).
    pub flags: Vec<u32>,
    pub composition_offsets: Vec<i32>,
}

/// Reads one `traf` (tfhd default-base-is-moof, tfdt, one trun) by the spec's fields.
pub fn read_traf(data: &[u8], traf: &Bx) -> Traf {
    let tfhd = traf
        .children
        .iter()
        .find(|b| b.kind == "tfhd")
        .expect("tfhd");
    let tfhd_flags = u32_at(data, tfhd.body) & 0xff_ffff;
    assert!(tfhd_flags & 0x02_0000 != 0, "default-base-is-moof");
    let track_id = u32_at(data, tfhd.body + 4);
    let mut at = tfhd.body + 8;
    for (flag, len) in [(0x01, 8), (0x02, 4), (0x08, 4), (0x10, 4)] {
        if tfhd_flags & flag != 0 {
            at += len;
        }
    }
    let default_flags = (tfhd_flags & 0x20 != 0).then(|| u32_at(data, at));
    let tfdt = traf
        .children
        .iter()
        .find(|b| b.kind == "tfdt")
        .expect("tfdt");
    let base_decode_time = if data[tfdt.body] == 1 {
        u64_at(data, tfdt.body + 4)
    } else {
        u64::from(u32_at(data, tfdt.body + 4))
    };
    let trun = traf
        .children
        .iter()
        .find(|b| b.kind == "trun")
        .expect("trun");
    let version = data[trun.body];
    let flags = u32_at(data, trun.body) & 0xff_ffff;
    let count = u32_at(data, trun.body + 4) as usize;
    let mut at = trun.body + 8;
    let mut data_offset = 0;
    if flags & 0x01 != 0 {
        data_offset = u32_at(data, at) as i32;
        at += 4;
    }
    if flags & 0x04 != 0 {
        at += 4;
    }
    let mut t = Traf {
        track_id,
        base_decode_time,
        data_offset,
        durations: Vec::new(),
        sizes: Vec::new(),
        flags: Vec::new(),
        composition_offsets: Vec::new(),
    };
    for _ in 0..count {
        if flags & 0x100 != 0 {
            t.durations.push(u32_at(data, at));
            at += 4;
        }
        if flags & 0x200 != 0 {
            t.sizes.push(u32_at(data, at));
            at += 4;
        }
        if flags & 0x400 != 0 {
            t.flags.push(u32_at(data, at));
            at += 4;
        } else if let Some(d) = default_flags {
            t.flags.push(d);
        }
        if flags & 0x800 != 0 {
            // Signed in version 1; version 0 offsets below 2^31 read the same.
            assert!(version <= 1, "trun version {version}");
            t.composition_offsets.push(u32_at(data, at) as i32);
            at += 4;
        }
    }
    assert_eq!(at, trun.end, "trun fields fill the box");
    t
}

/// Every fragment (moof, mdat) in a buffer with its trafs.
pub fn fragments(data: &[u8]) -> Vec<(Bx, Bx, Vec<Traf>)> {
    let boxes = parse_boxes(data, 0, data.len());
    let mut out = Vec::new();
    for (i, b) in boxes.iter().enumerate() {
        if b.kind == "moof" {
            let mdat = boxes
                .get(i + 1)
                .filter(|m| m.kind == "mdat")
                .expect("mdat after moof");
            let trafs = b
                .children
                .iter()
                .filter(|c| c.kind == "traf")
                .map(|t| read_traf(data, t))
                .collect();
            out.push((b.clone(), mdat.clone(), trafs));
        }
    }
    out
}

/// Packets of one stream type (`v` or `a`), counted from ffprobe's packet list.
///
/// One type at a time: ffmpeg 5's dash demuxer, reading both adaptation sets, stops at
/// the end of the video and drops the audio packets after it (and `-count_packets`
/// misses one more).
pub fn packet_count(path: &str, select: &str) -> usize {
    let (ok, stdout, stderr) = run(
        "ffprobe",
        &[
            "-v",
            "error",
            "-select_streams",
            select,
            "-show_entries",
            "packet=pts",
            "-of",
            "csv=p=0",
            path,
        ],
    );
    assert!(ok && stderr.trim().is_empty(), "ffprobe {path}: {stderr}");
    stdout.lines().filter(|l| !l.trim().is_empty()).count()
}
