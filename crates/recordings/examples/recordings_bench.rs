//! What the recordings tier costs and gives, against a real S3-compatible server (moto,
//! started here on loopback; `pip install 'moto[server]'`):
//!
//! - upload throughput and the node's CPU per GB uploaded (the first node of a group),
//!   and the same for the other nodes, which find every file there;
//! - bytes stored for N nodes of a group: N local copies, one in the bucket;
//! - catch-up from the bucket for a node that has none of the period: the time to attach
//!   the bucket's objects, then segment reads from the bucket against the same reads
//!   from a local disk, in the same run.
//!
//! `cargo run --release -p recordings --example recordings_bench [-- MINUTES MBPS NODES]`
//! (default 10 minutes of a 3 Mbit/s meeting, 3 nodes). Prints one JSON object.

use std::sync::atomic::AtomicI64;
use std::sync::Arc;
use std::time::Instant;

use dvr::files::RealFiles;
use dvr::store::SegmentMeta;
use dvr::{Protocol, Store};
use recordings::{
    ArchiveSource, Bucket, Credentials, Location, RemoteArchive, Uploader, UploaderSettings,
};

#[path = "../tests/support/s3_server.rs"]
mod s3_server;
use s3_server::S3Server;

const SEGMENT_MS: i64 = 2_000;
const SPAN_MS: i64 = 300_000;

/// CPU seconds this process has used (user + system), from /proc/self/stat.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

fn segment(msn: u64, size: usize) -> Vec<u8> {
    (0..size)
        .map(|i| (i as u64 ^ msn.wrapping_mul(0x9e37)) as u8)
        .collect()
}

fn record(dir: &std::path::Path, segments: u64, size: usize, t0: i64) -> Store {
    let (mut store, _) = Store::open(
        dir,
        Protocol::Ts,
        Arc::new(RealFiles { sync: false }),
        SPAN_MS,
    )
    .expect("open");
    for msn in 1..=segments {
        let meta = SegmentMeta {
            msn,
            discontinuity_seq: 0,
            discontinuous: false,
            start_ms: t0 + msn as i64 * SEGMENT_MS,
            duration_ticks: 180_000,
        };
        store.append(meta, &segment(msn, size)).expect("append");
    }
    store
}

fn uploader(bucket: &Bucket, node: &str, store: &Store) -> Arc<Uploader> {
    let settings = UploaderSettings {
        node: node.into(),
        grace_ms: 0,
        ..UploaderSettings::default()
    };
    let uploader = Uploader::new(bucket.clone(), settings);
    uploader.register(ArchiveSource {
        names: vec!["meeting".into(), "ts".into()],
        reader: store.reader(),
        hold: Arc::new(AtomicI64::new(i64::MAX)),
        remote_depth_ms: None,
    });
    uploader
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1]
}

fn main() {
    let args: Vec<f64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let minutes = args.first().copied().unwrap_or(10.0);
    let mbps = args.get(1).copied().unwrap_or(3.0);
    let nodes = args.get(2).copied().unwrap_or(3.0) as usize;
    let size = (mbps * 1e6 / 8.0 * SEGMENT_MS as f64 / 1000.0) as usize;
    let segments = (minutes * 60_000.0 / SEGMENT_MS as f64) as u64;
    let t0 = 1_700_000_000_000 / SPAN_MS * SPAN_MS;
    let now = t0 + 86_400_000;

    let server = S3Server::start();
    server.create_bucket("bench");
    let endpoint = server.endpoint();
    let location = Location::parse(
        "s3://bench/rec",
        Some(endpoint),
        None,
        Some(Credentials {
            access_key_id: "bench".into(),
            secret_access_key: "bench-secret".into(),
            session_token: None,
        }),
    )
    .expect("location");
    let bucket = Bucket::open(&location, None, None).expect("bucket");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");

    let dirs: Vec<tempfile::TempDir> = (0..=nodes).map(|_| tempfile::tempdir().unwrap()).collect();
    let stores: Vec<Store> = dirs[..nodes]
        .iter()
        .map(|d| record(d.path(), segments, size, t0))
        .collect();
    let local_bytes: u64 = stores
        .iter()
        .map(|s| s.reader().with_local_index(|i| i.bytes()))
        .sum();

    let mut uploads = Vec::new();
    for (i, store) in stores.iter().enumerate() {
        let up = uploader(&bucket, &format!("node-{i}"), store);
        let (cpu, wall) = (cpu_seconds(), Instant::now());
        let handled = runtime.block_on(up.upload_closed(now));
        let (cpu, wall) = (cpu_seconds() - cpu, wall.elapsed().as_secs_f64());
        let status = up.status();
        let bytes = status["uploaded"]["bytes"].as_u64().unwrap_or(0)
            + status["deduplicated"]["bytes"].as_u64().unwrap_or(0);
        uploads.push(serde_json::json!({
            "node": i,
            "files": handled,
            "uploaded_bytes": status["uploaded"]["bytes"],
            "deduplicated_bytes": status["deduplicated"]["bytes"],
            "seconds": wall,
            "mb_per_second": bytes as f64 / 1e6 / wall,
            "cpu_seconds_per_gb": cpu / (bytes as f64 / 1e9),
        }));
    }
    let archive = RemoteArchive::new(&bucket, &["meeting".to_owned(), "ts".to_owned()]);
    let bucket_bytes: u64 = runtime.block_on(async {
        let mut total = 0;
        for key in archive.objects().await.expect("list") {
            total += archive
                .index(&key)
                .await
                .expect("index")
                .iter()
                .map(|e| u64::from(e.size))
                .sum::<u64>();
        }
        total
    });

    // A node with none of the period: attach the bucket, then read segments from it.
    let joined = record(dirs[nodes].path(), 0, size, t0);
    let up = uploader(&bucket, "joined", &joined);
    let attach = Instant::now();
    runtime.block_on(up.refresh_catalogs());
    let attach_ms = attach.elapsed().as_secs_f64() * 1000.0;
    let remote_reader = joined.reader();
    let local_reader = stores[0].reader();
    let sample: Vec<u64> = (1..=segments)
        .step_by((segments as usize / 40).max(1))
        .collect();
    let time_reads = |reader: &dvr::ArchiveReader| -> Vec<f64> {
        let mut times: Vec<f64> = sample
            .iter()
            .map(|&msn| {
                let entry = reader.with_index(|i| *i.by_msn(msn).expect("msn"));
                let reader = reader.clone();
                let start = Instant::now();
                let data = runtime
                    .block_on(runtime.spawn_blocking(move || reader.read(&entry)))
                    .expect("join")
                    .expect("read");
                assert_eq!(data.len(), size);
                start.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        times.sort_by(f64::total_cmp);
        times
    };
    let bucket_reads = time_reads(&remote_reader);
    let local_reads = time_reads(&local_reader);
    // The meeting closed: any node opens its recording from the bucket alone.
    let open = Instant::now();
    let recorded = runtime
        .block_on(up.recorded("meeting"))
        .expect("open the recording");
    let open_ms = open.elapsed().as_secs_f64() * 1000.0;
    let recorded_segments = recorded
        .source()
        .map_or(0, |reader| reader.with_index(|i| i.len()));
    assert_eq!(
        recorded_segments as u64, segments,
        "every segment in the recording"
    );
    let summary = serde_json::json!({
        "meeting_minutes": minutes,
        "mbit_per_second": mbps,
        "nodes": nodes,
        "segment_bytes": size,
        "uploads": uploads,
        "stored": {
            "local_bytes_all_nodes": local_bytes,
            "bucket_bytes": bucket_bytes,
            "copies_before": nodes,
            "copies_after": bucket_bytes as f64 / (local_bytes as f64 / nodes as f64),
        },
        "catch_up": {
            "attach_ms": attach_ms,
            "segment_read_ms_bucket": { "p50": percentile(&bucket_reads, 0.5), "p95": percentile(&bucket_reads, 0.95) },
            "segment_read_ms_local": { "p50": percentile(&local_reads, 0.5), "p95": percentile(&local_reads, 0.95) },
        },
        "closed_meeting": { "open_ms": open_ms, "segments": recorded_segments },
    });
    println!(
        "{}",
        serde_json::to_string_pretty(&summary).unwrap_or_default()
    );
}
