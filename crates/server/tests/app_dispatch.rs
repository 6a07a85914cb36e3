//! The node's application answers a stream file exactly as its router does: the direct
//! dispatch of `GET /{stream}/{file}` and `/{stream}/{rung}/{file}`
//! (`server::app::Dispatch`) against the router with the same layers on every route,
//! for good, missing, percent-encoded and malformed paths and other methods.

mod harness;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Request};
use server::http::edge::EdgeLayer;
use server::http::shed_layer::ShedLayer;
use tower::ServiceExt;

/// Status, sorted headers and body. A `Content-Length` equal to the body's length is
/// left out: the router writes it into the answer, hyper writes the same one on the
/// wire from the body's exact size when the answer has none.
async fn read(response: axum::response::Response) -> (u16, Vec<(String, String)>, bytes::Bytes) {
    let answer = harness::read_answer(response).await;
    let mut headers: Vec<(String, String)> = answer
        .headers
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("?").to_owned()))
        .filter(|(k, v)| k != "content-length" || *v != answer.body.len().to_string())
        .collect();
    headers.sort();
    (answer.status.as_u16(), headers, answer.body)
}

#[tokio::test]
async fn a_stream_file_is_answered_as_the_router_answers_it() {
    let state = harness::node(None);
    harness::add_stream(&state, 0..5);
    let layered_router = || {
        server::routes::routes(state.clone())
            .layer(ShedLayer::new(
                Arc::clone(state.shedder()),
                state.clock().clone(),
            ))
            .layer(EdgeLayer::new(Arc::clone(state.metrics())))
    };
    let paths = [
        "/s/index.m3u8",
        "/s/mono.m3u8",
        "/s/seg-3.ts",
        "/s/seg-99.ts",
        "/s/nothing.bin",
        "/%73/mono.m3u8",
        "/s/seg%2D3.ts",
        "/s/%FF.ts",
        "/%FF/mono.m3u8",
        "/s/low/mono.m3u8",
        "/s/main/mono.m3u8",
        "/missing/index.m3u8",
        "/s/a/b/c",
        "/s/",
        "/s//mono.m3u8",
        "/s/mono.m3u8?x=%FF",
        "/player",
        "/nope",
    ];
    let methods = [Method::GET, Method::HEAD, Method::POST, Method::OPTIONS];
    for path in paths {
        for method in methods.clone() {
            let request = || {
                Request::builder()
                    .method(method.clone())
                    .uri(path)
                    .header("user-agent", harness::CHROME_UA)
                    .body(Body::empty())
                    .expect("request")
            };
            let direct = read(
                server::router(state.clone())
                    .oneshot(request())
                    .await
                    .expect("infallible"),
            )
            .await;
            let mut routed = read(
                layered_router()
                    .oneshot(request())
                    .await
                    .expect("infallible"),
            )
            .await;
            if method == Method::OPTIONS {
                // The preflight is the edge's answer either way; layered on each route,
                // the route's method table also adds its `Allow` to it.
                routed.1.retain(|(k, _)| k != "allow");
            }
            assert_eq!(direct, routed, "{method} {path}");
        }
    }
}
