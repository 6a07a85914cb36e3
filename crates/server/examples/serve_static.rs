//! Serves one synthetic live stream from memory, for load tests of the HTTP path alone
//! (no ingest): `cargo run -p server --release --example serve_static -- 127.0.0.1:8099`,
//! then e.g. `wrk -c16 -d10s http://127.0.0.1:8099/s/mono.m3u8`.

use std::sync::Arc;

use bytes::Bytes;
use server::metrics::Metrics;
use server::stream::package::{LiveSegment, Package, TrackSummary};
use server::{AppState, NodeIdentity};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8099".into());
    let state = AppState::new(
        NodeIdentity {
            name: "bench".into(),
            hostname: None,
        },
        Metrics::new(),
        None,
    );
    let channel = Arc::new(Package::new("s", 30, packaging::render::renderer(2000)));
    let tracks = TrackSummary {
        codecs: vec!["avc1.64001f".into(), "mp4a.40.2".into()],
        resolution: Some((1280, 720)),
        frame_rate_milli: Some(25_000),
    };
    for msn in 1000..1030u64 {
        channel.push(
            LiveSegment {
                msn,
                discontinuity_seq: 0,
                discontinuous: false,
                duration_ticks: 180_000,
                program_date_time_ms: 1_700_000_000_000 + msn as i64 * 2000,
                data: Bytes::from(vec![0x47; 188 * 4255]),
                ..LiveSegment::default()
            },
            tracks.clone(),
        );
    }
    state.add_stream(channel, None);
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!(
        "serving http://{}/s/mono.m3u8 and /s/seg-1029.ts",
        listener.local_addr()?
    );
    server::run(
        listener,
        server::router(state),
        None,
        std::future::pending(),
    )
    .await;
    Ok(())
}
