//! A run of archived segments as a progressive MP4, checked with the real tools: ffmpeg
//! makes an H.264 (with B-frames) + AAC stream, the segmenter cuts it at keyframes as
//! the archive holds it, the two passes write the file, and ffprobe and ffmpeg read it
//! back against the input. ffmpeg and ffprobe are required (scripts/test installs them).

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use dvr::index::Entry;
use media::{Segmenter, SegmenterConfig, StartPoint};
use packaging::archive::progressive::{chunk, plan, ProgressiveError};
use packaging::archive::SegmentSource;

/// The media crate's harness for the fMP4 tests: ffmpeg/ffprobe runners that fail with
/// a clear message when the tools are missing, and temporary directories.
#[path = "../../media/tests/fmp4_util/mod.rs"]
mod fmp4_util;

use fmp4_util::{decode_clean, run, temp_dir};

/// Archived segments held in memory, as the local archive would serve them.
#[derive(Debug)]
struct MemoryArchive {
    key: PathBuf,
    segments: Vec<(Entry, Vec<u8>)>,
}

impl SegmentSource for MemoryArchive {
    fn key(&self) -> &Path {
        &self.key
    }

    fn entry(&self, msn: u64) -> Option<Entry> {
        self.segments
            .iter()
            .find(|(e, _)| e.msn == msn)
            .map(|(e, _)| *e)
    }

    fn around(&self, msn: u64, before: usize) -> Option<(Vec<Entry>, usize)> {
        let at = self.segments.iter().position(|(e, _)| e.msn == msn)?;
        let lo = at.saturating_sub(before);
        let entries = self.segments[lo..=at].iter().map(|(e, _)| *e).collect();
        Some((entries, at - lo))
    }

    fn read(&self, entry: &Entry) -> io::Result<Vec<u8>> {
        self.segments
            .iter()
            .find(|(e, _)| e.msn == entry.msn)
            .map(|(_, bytes)| bytes.clone())
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "segment gone"))
    }

    fn read_head(&self, entry: &Entry, len: usize) -> io::Result<Vec<u8>> {
        let mut bytes = self.read(entry)?;
        bytes.truncate(len);
        Ok(bytes)
    }
}

/// 6 s of H.264 (2 B-frames, a keyframe every 2 s) and AAC at 48 kHz starting 0.3 s
/// after the video (so the file must place one track after the other), as MPEG-TS.
fn make_input(dir: &Path) -> PathBuf {
    let path = dir.join("in.ts");
    let (ok, _, stderr) = run(
        "ffmpeg",
        &[
            "-v",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=320x240:rate=25",
            "-itsoffset",
            "0.3",
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=440:sample_rate=48000",
            "-t",
            "6",
            "-c:v",
            "libx264",
            "-preset",
            "veryfast",
            "-bf",
            "2",
            "-g",
            "50",
            "-keyint_min",
            "50",
            "-sc_threshold",
            "0",
            "-c:a",
            "aac",
            "-b:a",
            "64k",
            "-f",
            "mpegts",
            path.to_str().expect("utf-8 path"),
        ],
    );
    assert!(ok, "ffmpeg making the input: {stderr}");
    path
}

/// The input cut by the segmenter (2 s target: at the keyframes), as an archive.
fn archive(ts: &[u8]) -> MemoryArchive {
    let mut segmenter = Segmenter::new(
        SegmenterConfig {
            target_duration_ms: 2000,
            ..SegmenterConfig::default()
        },
        StartPoint::Fresh {
            min_msn: 0,
            min_discontinuity_seq: 0,
        },
    );
    let mut segments = Vec::new();
    for frame in media::ts::demux_frames(ts) {
        let now = 1_714_564_800_000 + (frame.dts / 90) as i64;
        segments.extend(segmenter.push(frame, now));
        segments.extend(std::iter::from_fn(|| segmenter.pop_ready()));
    }
    segments.extend(std::iter::from_fn(|| segmenter.flush()));
    let mut offset = 0;
    let segments = segments
        .into_iter()
        .map(|s| {
            let entry = Entry {
                msn: s.msn,
                discontinuity_seq: s.discontinuity_seq,
                discontinuous: s.discontinuous,
                start_ms: s.program_date_time_ms,
                duration_ticks: s.duration_ticks,
                file: 0,
                offset,
                size: s.data.len() as u32,
            };
            offset += s.data.len() as u64;
            (entry, s.data.to_vec())
        })
        .collect();
    MemoryArchive {
        key: PathBuf::from("memory"),
        segments,
    }
}

/// The progressive file of the whole archive, both passes.
fn write_file(archive: &MemoryArchive, path: &Path) -> u64 {
    let msns: Vec<u64> = archive.segments.iter().map(|(e, _)| e.msn).collect();
    let plan = plan(archive, &msns, &|| true).expect("planning the file");
    let mut file = plan.head.to_vec();
    for &msn in &msns {
        file.extend_from_slice(&chunk(archive, &plan, msn).expect("writing a chunk"));
    }
    assert_eq!(file.len() as u64, plan.total_len, "the planned length");
    std::fs::write(path, &file).expect("writing the file");
    plan.total_len
}

/// ffprobe's view: the format's duration and, per stream type, its start time and
/// counted frames. Fails on any ffprobe error.
#[derive(Debug)]
struct Probe {
    duration: f64,
    /// codec_type → (start_time, nb_read_frames)
    streams: BTreeMap<String, (f64, u64)>,
}

fn probe(path: &Path) -> Probe {
    let path = path.to_str().expect("utf-8 path");
    let (ok, stdout, stderr) = run(
        "ffprobe",
        &[
            "-v",
            "error",
            "-count_frames",
            "-show_entries",
            "format=duration:stream=codec_type,start_time,nb_read_frames",
            "-of",
            "flat",
            path,
        ],
    );
    assert!(ok && stderr.trim().is_empty(), "ffprobe {path}: {stderr}");
    let mut duration = None;
    let mut fields: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for line in stdout.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.trim_matches('"').to_string();
        if key == "format.duration" {
            duration = value.parse().ok();
        } else if let Some(rest) = key.strip_prefix("streams.stream.") {
            let (index, field) = rest.split_once('.').expect("index.field");
            fields
                .entry(index.to_string())
                .or_default()
                .insert(field.to_string(), value);
        }
    }
    let streams = fields
        .into_values()
        .map(|f| {
            let number = |k: &str| f.get(k).and_then(|v| v.parse::<f64>().ok());
            (
                f.get("codec_type").cloned().unwrap_or_default(),
                (
                    number("start_time").expect("start_time"),
                    number("nb_read_frames").expect("nb_read_frames") as u64,
                ),
            )
        })
        .collect();
    Probe {
        duration: duration.expect("format duration"),
        streams,
    }
}

/// How many of a file's audio packets have a PTS at or after `from` seconds.
fn audio_packets_from(path: &Path, from: f64) -> u64 {
    let path = path.to_str().expect("utf-8 path");
    let (ok, stdout, stderr) = run(
        "ffprobe",
        &[
            "-v",
            "error",
            "-select_streams",
            "a",
            "-show_entries",
            "packet=pts_time",
            "-of",
            "csv=p=0",
            path,
        ],
    );
    assert!(ok && stderr.trim().is_empty(), "ffprobe {path}: {stderr}");
    stdout
        .lines()
        .filter_map(|l| l.trim().trim_end_matches(',').parse::<f64>().ok())
        .filter(|&pts| pts >= from - 1e-6)
        .count() as u64
}

/// The file's top-level box types, walked by their sizes (64-bit ones too).
fn top_level_boxes(bytes: &[u8]) -> Vec<String> {
    let mut kinds = Vec::new();
    let mut at = 0usize;
    while at + 8 <= bytes.len() {
        let size = u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as u64;
        let size = if size == 1 {
            u64::from_be_bytes(bytes[at + 8..at + 16].try_into().expect("8 bytes"))
        } else {
            size
        };
        kinds.push(String::from_utf8_lossy(&bytes[at + 4..at + 8]).into_owned());
        assert!(size >= 8, "box of size {size} at {at}");
        at += size as usize;
    }
    assert_eq!(at, bytes.len(), "the boxes fill the file");
    kinds
}

#[test]
fn a_run_as_progressive_mp4_reads_like_its_input() {
    let dir = temp_dir("progressive-ffmpeg");
    let input = make_input(&dir);
    let archive = archive(&std::fs::read(&input).expect("reading the input"));
    assert!(
        archive.segments.len() >= 3,
        "{} segments",
        archive.segments.len()
    );
    let output = dir.join("out.mp4");
    let len = write_file(&archive, &output);

    let bytes = std::fs::read(&output).expect("reading the output");
    assert_eq!(bytes.len() as u64, len);
    assert_eq!(
        top_level_boxes(&bytes),
        ["ftyp", "moov", "mdat"],
        "moov first"
    );

    let want = probe(&input);
    let got = probe(&output);
    assert!(
        (got.duration - want.duration).abs() <= 0.1,
        "duration {} vs the input's {}",
        got.duration,
        want.duration
    );
    let frame = 1.0 / 25.0;
    let (want_video, want_audio) = (&want.streams["video"], &want.streams["audio"]);
    let (got_video, got_audio) = (&got.streams["video"], &got.streams["audio"]);
    let want_offset = want_video.0 - want_audio.0;
    let got_offset = got_video.0 - got_audio.0;
    assert!(
        (got_offset - want_offset).abs() <= frame,
        "A/V start offset {got_offset} vs the input's {want_offset} ({got:?}, {want:?})"
    );
    assert_eq!(got_video.1, want_video.1, "video frames");
    // The archive holds the audio from the first segment's start (the first picture's
    // PTS) on: an AAC frame of the input before it was never archived.
    let archived_audio = audio_packets_from(&input, want_video.0);
    assert!(
        want_audio.1 - archived_audio <= 1,
        "{archived_audio} archived of {}",
        want_audio.1
    );
    assert_eq!(got_audio.1, archived_audio, "audio frames");

    decode_clean(output.to_str().expect("utf-8 path"));
}

#[test]
fn a_changed_segment_fails_its_chunk_and_a_split_run_is_refused() {
    let dir = temp_dir("progressive-changed");
    let input = make_input(&dir);
    let mut archive = archive(&std::fs::read(&input).expect("reading the input"));
    let msns: Vec<u64> = archive.segments.iter().map(|(e, _)| e.msn).collect();
    let planned = plan(&archive, &msns, &|| true).expect("planning the file");
    assert_eq!(
        planned.segments.iter().map(|&(m, _)| m).collect::<Vec<_>>(),
        msns
    );
    let other = archive.segments[2].1.clone();
    archive.segments[1].1 = other;
    assert!(matches!(
        chunk(&archive, &planned, msns[1]),
        Err(ProgressiveError::Changed { msn, .. }) if msn == msns[1]
    ));
    assert!(matches!(
        chunk(&archive, &planned, 999),
        Err(ProgressiveError::NotPlanned(999))
    ));
    archive.segments[2].0.discontinuous = true;
    assert!(matches!(
        plan(&archive, &msns, &|| true),
        Err(ProgressiveError::NotOneRun)
    ));
    assert!(matches!(
        plan(&archive, &[], &|| true),
        Err(ProgressiveError::NoSegments)
    ));
    // A plan nobody waits for stops before its next segment.
    archive.segments[2].0.discontinuous = false;
    assert!(matches!(
        plan(&archive, &msns, &|| false),
        Err(ProgressiveError::Abandoned)
    ));
}
