//! The floor of the HTTP stack the server is built on: hyper's HTTP/1.1 on the tokio
//! runtime answering every request with the same bytes, with no routing, shedding or
//! per-viewer work. `bench/http_floor.py` runs wrk against it, brdyun and nginx serving
//! the same master playlist, to tell the stack's own cost from the server's.
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
