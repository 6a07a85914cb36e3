//! fMP4 packaging cost per second of media against the MPEG-TS mux of the same
//! segments, measured in one run on the demo clip (9.6 s of H.264 + AAC):
//!
//! ```sh
//! cargo run -p media --release --example fmp4_bench
//! ```
//!
//! Rows: the TS mux (`ts::mux::write_segment`, what the segmenter runs per segment),
//! the fMP4 packaging of the same frames as one fragment and as 200 ms LL-HLS parts
//! (whole segment, and frame by frame through `PartBuilder`), and deriving fMP4 from the TS bytes (demux + package), the cost of serving the fMP4
//! archive from a TS archive on request; then what a segment's views need at publish,
//! its frames, read back from its bytes or taken from the segmenter's record.

use std::hint::black_box;
use std::time::{Duration, Instant};

use media::fmp4::{
    frames_from_ts, package_ts_segment, segment_frames, write_segment, InitConfig, NextDts,
    PartBuilder, ProducerTime, SegmentOptions, TimedFrame,
};
use media::ts::{mux, PACKET_SIZE};
use media::{Frame, Segment, Segmenter, SegmenterConfig, StartPoint, TimelineMarker, CLOCK_HZ};

/// How long each row is measured for.
const MEASURE: Duration = Duration::from_secs(2);

fn main() {
    let path = format!(
        "{}/../../assets/demo-meeting.ts",
        env!("CARGO_MANIFEST_DIR")
    );
    let ts = std::fs::read(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    let segments = segment(&ts);
    let media_secs: f64 = segments
        .iter()
        .map(|s| s.duration_ticks as f64 / CLOCK_HZ as f64)
        .sum();
    let prepared: Vec<Prepared> = segments.iter().map(Prepared::new).collect();
    let first = &prepared[0].timed;
    let config = InitConfig::from_frames(first.iter().map(|t| &t.frame)).expect("demo config");
    let ts_bytes: usize = segments.iter().map(|s| s.data.len()).sum();

    println!(
        "demo clip: {} segments, {media_secs:.1} s of media, {} KiB of TS ({:.0} kbit/s)",
        segments.len(),
        ts_bytes / 1024,
        ts_bytes as f64 * 8.0 / media_secs / 1000.0
    );
    println!(
        "{:<34} {:>12} {:>10} {:>8}",
        "path", "us/s media", "MB/s out", "vs TS"
    );
    let ts_row = measure(&prepared, |p| {
        let (bytes, _) = mux::write_segment(&p.marker, &p.frames, None);
        bytes.len()
    });
    report("ts mux (segmenter's write)", ts_row, ts_row, media_secs);
    let whole = measure(&prepared, |p| {
        let mut out = Vec::new();
        write_segment(&config, &p.timed, &p.options(None), &mut out).expect("package");
        out.len()
    });
    report("fmp4 segment (one fragment)", whole, ts_row, media_secs);
    let parts = measure(&prepared, |p| {
        let mut out = Vec::new();
        write_segment(&config, &p.timed, &p.options(Some(18_000)), &mut out).expect("package");
        out.len()
    });
    report("fmp4 segment (200 ms parts)", parts, ts_row, media_secs);
    let live = measure(&prepared, |p| {
        let mut out = Vec::new();
        let mut b = PartBuilder::new(
            config.clone(),
            p.segment.msn,
            18_000,
            p.options(None).producer_time,
        );
        for t in &p.timed {
            b.push(t.clone(), &mut out).expect("part");
        }
        b.finish(NextDts::default(), &mut out).expect("part");
        out.len()
    });
    report("fmp4 live parts (PartBuilder)", live, ts_row, media_secs);
    let derived = measure(&prepared, |p| {
        let mut out = Vec::new();
        package_ts_segment(&config, &p.segment, None, None, &mut out).expect("package");
        out.len()
    });
    report(
        "fmp4 from TS bytes (demux+pack)",
        derived,
        ts_row,
        media_secs,
    );
    // What publishing a segment's views (fMP4 init and sizes, the LL-HLS check) needs:
    // its frames, read back from the bytes or taken from the segmenter's record.
    let frame_bytes = |frames: &[TimedFrame]| frames.iter().map(|t| t.frame.data.len()).sum();
    let read_back = measure(&prepared, |p| {
        frame_bytes(&frames_from_ts(&p.segment.data, p.segment.start_ts))
    });
    report("frames read back (demux)", read_back, ts_row, media_secs);
    let from_record = measure(&prepared, |p| frame_bytes(&segment_frames(&p.record)));
    report("frames from the record", from_record, ts_row, media_secs);
}

/// One segment's inputs, prepared outside the timed loops.
struct Prepared {
    /// The segment as bytes alone (as an archive reads it back).
    segment: Segment,
    /// The segment as the segmenter handed it over (with its frames).
    record: Segment,
    marker: TimelineMarker,
    frames: Vec<Frame>,
    timed: Vec<TimedFrame>,
}

impl Prepared {
    fn new(s: &Segment) -> Self {
        let marker = TimelineMarker::parse(&s.data[4..PACKET_SIZE]).expect("marker packet");
        let timed = frames_from_ts(&s.data, s.start_ts);
        Self {
            segment: Segment::from_marker(&marker, s.data.clone()),
            record: s.clone(),
            marker,
            frames: timed.iter().map(|t| t.frame.clone()).collect(),
            timed,
        }
    }

    fn options(&self, part_ticks: Option<u64>) -> SegmentOptions {
        SegmentOptions {
            msn: self.segment.msn,
            part_ticks,
            next_video_dts: None,
            next_audio_dts: None,
            producer_time: Some(ProducerTime {
                unix_ms: self.segment.program_date_time_ms,
                media_time: self.segment.start_ts,
            }),
        }
    }
}

/// Seconds of CPU per pass over all segments and the bytes written per pass.
#[derive(Clone, Copy)]
struct Row {
    secs_per_pass: f64,
    bytes_per_pass: usize,
}

fn measure(prepared: &[Prepared], f: impl Fn(&Prepared) -> usize) -> Row {
    // Warm up, then whole passes until MEASURE has elapsed.
    let mut bytes_per_pass = 0;
    for p in prepared {
        bytes_per_pass += black_box(f(black_box(p)));
    }
    let start = Instant::now();
    let mut passes = 0u32;
    while start.elapsed() < MEASURE {
        for p in prepared {
            black_box(f(black_box(p)));
        }
        passes += 1;
    }
    Row {
        secs_per_pass: start.elapsed().as_secs_f64() / f64::from(passes),
        bytes_per_pass,
    }
}

fn report(name: &str, row: Row, ts: Row, media_secs: f64) {
    println!(
        "{name:<34} {:>12.1} {:>10.0} {:>7.2}x",
        row.secs_per_pass / media_secs * 1e6,
        row.bytes_per_pass as f64 / row.secs_per_pass / 1e6,
        row.secs_per_pass / ts.secs_per_pass
    );
}

/// The clip cut into 2 s segments by the segmenter.
fn segment(ts: &[u8]) -> Vec<Segment> {
    let frames = media::ts::demux_frames(ts);
    let mut seg = Segmenter::new(
        SegmenterConfig::default(),
        StartPoint::Fresh {
            min_msn: 0,
            min_discontinuity_seq: 0,
        },
    );
    let mut out = Vec::new();
    for f in frames {
        let now = (f.dts / 90) as i64;
        out.extend(seg.push(f, now));
        while let Some(s) = seg.pop_ready() {
            out.push(s);
        }
    }
    while let Some(s) = seg.flush() {
        out.push(s);
    }
    out
}
