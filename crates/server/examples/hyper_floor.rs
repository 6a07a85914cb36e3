//! The floor of the HTTP stack the server is built on: hyper's HTTP/1.1 on the tokio
//! runtime answering every request with the same bytes, with no routing, shedding or
//! per-viewer work. With `FLOOR_SERVER=1` in the environment the same answer comes from
//! an axum router on the node's own serving threads ([`server::http::serve::serve_on_threads`]:
//! a current-thread runtime per core on `SO_REUSEPORT` listeners, the connection path
//! of every node). `bench/http_floor.py` runs wrk against both, brdyun and nginx serving
//! the same master playlist, to tell the stack's own cost from the server's.
//! `FLOOR_SPIN_NS=N` (with `FLOOR_SERVER=1`) spins N ns of CPU in every answer: how the
//! system time per request grows with the user time spent on it (`bench/HISTORY.md`).
//!
//! `cargo run -p server --release --example hyper_floor -- 127.0.0.1:8098 BODY_FILE`

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8098".into());
    let body = match args.next() {
        Some(path) => Bytes::from(std::fs::read(path)?),
        None => Bytes::from_static(b"#EXTM3U\n"),
    };
    if std::env::var_os("FLOOR_SERVER").is_some() {
        let listeners = server::http::serve::bind_reuseport(addr.parse().expect("an address"), 2)?;
        println!("listening on {}", listeners.local_addr());
        let spin = std::env::var("FLOOR_SPIN_NS")
            .ok()
            .and_then(|v| v.parse::<u128>().ok())
            .unwrap_or(0);
        let app = axum::Router::new().fallback(move || {
            let body = body.clone();
            async move {
                let start = std::time::Instant::now();
                while start.elapsed().as_nanos() < spin {
                    std::hint::spin_loop();
                }
                (
                    [
                        ("content-type", "application/vnd.apple.mpegurl"),
                        ("cache-control", "no-store"),
                    ],
                    body,
                )
            }
        });
        let (_stop, stopped) = tokio::sync::watch::channel(false);
        server::http::serve::serve_on_threads(listeners, app, None, stopped, None, None, None)?
            .await;
        return Ok(());
    }
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on {}", listener.local_addr()?);
    loop {
        let (stream, _) = listener.accept().await?;
        let body = body.clone();
        tokio::spawn(async move {
            let service = service_fn(move |_request| {
                let body = body.clone();
                async move {
                    Ok::<_, Infallible>(
                        hyper::Response::builder()
                            .header("content-type", "application/vnd.apple.mpegurl")
                            .header("cache-control", "no-store")
                            .body(Full::new(body))
                            .expect("a static response"),
                    )
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
