//! Index benchmark: a week-long index (302,400 two-second segments), a range query and
//! a 1-hour catch-up playlist over it, and what the index costs per archived hour.
//!
//! `cargo run -p dvr --release --example index_bench`
//! Goals: query < 1 ms, 1-hour playlist < 5 ms.

use std::hint::black_box;
use std::time::{Duration, Instant};

use dvr::index::{Entry, Index};
use dvr::log::Record;
use dvr::playlist;
use media::hls::PlaylistType;

const SEGMENTS: u64 = 302_400;
const T0: i64 = 1_700_000_000_000;

fn entry(msn: u64) -> Entry {
    let start_ms = T0 + msn as i64 * 2000;
    Entry {
        msn,
        discontinuity_seq: 0,
        discontinuous: false,
        start_ms,
        duration_ticks: 180_000,
        file: u32::try_from(start_ms / 600_000).unwrap_or(u32::MAX),
        offset: (msn % 300) * 1_000_000,
        size: 1_000_000,
    }
}

fn per_iteration(iterations: u32, mut f: impl FnMut(u32)) -> Duration {
    let start = Instant::now();
    for i in 0..iterations {
        f(i);
    }
    start.elapsed() / iterations
}

fn main() {
    let start = Instant::now();
    let mut index = Index::new();
    for msn in 0..SEGMENTS {
        // A gap every day, as a restart would leave.
        if msn % 43_200 == 43_199 {
            continue;
        }
        index.push(entry(msn)).expect("in order");
    }
    let build = start.elapsed();
    println!(
        "built a week-long index: {} entries, {} gaps, in {:.1} ms",
        index.len(),
        index.gaps().len(),
        build.as_secs_f64() * 1e3
    );

    let hour_ms = 3_600_000i64;
    let week_ms = SEGMENTS as i64 * 2000;
    let query = per_iteration(10_000, |i| {
        let from = T0 + (i64::from(i) * 7_919_000) % (week_ms - hour_ms);
        black_box(index.query(black_box(from), from + hour_ms).entries.len());
    });
    println!(
        "range query (1 hour, random place): {:.2} µs (goal < 1 ms)",
        query.as_secs_f64() * 1e6
    );
    let ranges = per_iteration(10_000, |_| {
        black_box(index.range());
        black_box(index.gaps().count());
    });
    println!(
        "archive range + gaps (status): {:.2} µs",
        ranges.as_secs_f64() * 1e6
    );

    let render = per_iteration(500, |i| {
        let from = T0 + (i64::from(i) * 7_919_000) % (week_ms - hour_ms);
        let slice = index.query(from, from + hour_ms);
        let text = playlist::render(slice, PlaylistType::Vod, 2, true, |e| {
            format!("archive/{}.ts", e.msn)
        });
        black_box(text.bytes.len());
    });
    let sample = playlist::render(
        index.query(T0, T0 + hour_ms),
        PlaylistType::Vod,
        2,
        true,
        |e| format!("archive/{}.ts", e.msn),
    );
    println!(
        "1-hour VOD playlist render (1,800 segments, {} bytes): {:.3} ms (goal < 5 ms)",
        sample.bytes.len(),
        render.as_secs_f64() * 1e3
    );

    let record = Record::Segment(entry(1)).encode().len();
    let per_hour = 1800;
    println!(
        "index per archived hour of 2 s segments: {} B on disk ({per_hour} records of {record} B), {} B in memory ({} B per entry)",
        per_hour * record,
        per_hour * (std::mem::size_of::<Entry>() + 8),
        std::mem::size_of::<Entry>() + 8
    );
    println!(
        "index of the week: {:.1} MiB on disk, {:.1} MiB in memory",
        (SEGMENTS as usize * record) as f64 / 1048576.0,
        (SEGMENTS as usize * (std::mem::size_of::<Entry>() + 8)) as f64 / 1048576.0
    );
}
