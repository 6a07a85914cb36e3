//! Recording throughput of one disk: `streams` writer threads (one per stream, as the
//! recorder runs them) append 4 Mbit/s segments (1 MB every 2 s of media) as fast as the
//! disk takes them, each synced, for a few seconds. The figure is how many real-time
//! 4 Mbit/s streams that disk could record.
//!
//! `cargo run -p dvr --release --example store_bench [streams] [seconds] [dir]`
//! (defaults: 4 streams, 5 s, a temporary directory under $TMPDIR).

use std::sync::Arc;
use std::time::{Duration, Instant};

use dvr::files::RealFiles;
use dvr::store::SegmentMeta;
use dvr::{Protocol, Retention, Store};

const SEGMENT_BYTES: usize = 1_000_000;
const SEGMENT_MS: i64 = 2000;

fn main() {
    let mut args = std::env::args().skip(1);
    let streams: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(4);
    let seconds: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let base = args.next().map_or_else(std::env::temp_dir, Into::into);
    let dir = tempfile::tempdir_in(&base).expect("temporary directory");
    let data = vec![0x47u8; SEGMENT_BYTES];
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let workers: Vec<_> = (0..streams)
        .map(|i| {
            let path = dir.path().join(format!("s{i}"));
            let data = data.clone();
            std::thread::spawn(move || {
                let (mut store, _) =
                    Store::open(&path, Protocol::Ts, Arc::new(RealFiles::default()), 600_000)
                        .expect("open store");
                // Keep the disk from filling: ten minutes of media per stream.
                let retention = Retention {
                    depth_ms: Some(600_000),
                    max_bytes: None,
                };
                let mut msn = 0u64;
                let mut worst = Duration::ZERO;
                while Instant::now() < deadline {
                    let t = Instant::now();
                    let start_ms = 1_700_000_000_000 + msn as i64 * SEGMENT_MS;
                    let meta = SegmentMeta {
                        msn,
                        discontinuity_seq: 0,
                        discontinuous: false,
                        start_ms,
                        duration_ticks: 180_000,
                    };
                    store.append(meta, &data).expect("append");
                    store.retain(&retention, start_ms).expect("retain");
                    worst = worst.max(t.elapsed());
                    msn += 1;
                }
                (msn, worst)
            })
        })
        .collect();
    let mut segments = 0;
    let mut worst = Duration::ZERO;
    for w in workers {
        let (n, slowest) = w.join().expect("worker");
        segments += n;
        worst = worst.max(slowest);
    }
    let elapsed = started.elapsed().as_secs_f64();
    let per_sec = segments as f64 / elapsed;
    println!(
        "{streams} writers, {elapsed:.1} s, dir {}: {segments} segments of 1 MB synced, {:.0} MB/s, slowest append {:.1} ms",
        base.display(),
        per_sec,
        worst.as_secs_f64() * 1e3
    );
    println!(
        "≈ {:.0} real-time 4 Mbit/s streams (one 1 MB segment per 2 s each)",
        per_sec * 2.0
    );
}
