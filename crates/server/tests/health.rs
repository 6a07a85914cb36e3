//! `/healthz` and `/readyz` through a node's whole application (edge, shedding layer,
//! router): answered without a token, never shed even at full overload, and `/readyz`
//! says why a node is not ready with coded reasons.

mod harness;

use std::sync::Arc;

use axum::http::StatusCode;
use server::stream::package::Package;
use shed::OverloadLevel;

use harness::{add_stream, get, node};

#[tokio::test]
async fn probes_answer_at_full_overload_while_the_rest_is_shed() {
    let state = node(Some("a-token-of-at-least-24-characters"));
    add_stream(&state, 0..3);
    state
        .shedder()
        .levels()
        .force_level(Some(OverloadLevel::FULL));
    let shed = get(&state, "/s/index.m3u8").await;
    assert_eq!(shed.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(shed.json()["code"], 109_001, "{}", shed.text());
    for _ in 0..50 {
        let health = get(&state, "/healthz").await;
        assert_eq!(health.status, StatusCode::OK, "{}", health.text());
        assert_eq!(health.headers["cache-control"], "no-store");
        let ready = get(&state, "/readyz").await;
        assert_eq!(ready.status, StatusCode::OK, "{}", ready.text());
        assert_eq!(ready.json()["ready"], true);
    }
}

#[tokio::test]
async fn readyz_names_a_starting_stream_and_the_shutdown() {
    let state = node(None);
    // A configured stream with no segment yet.
    state.add_stream(
        Arc::new(Package::new("s", 5, packaging::render::renderer(2000))),
        None,
    );
    let ready = get(&state, "/readyz").await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(ready.headers["cache-control"], "no-store");
    assert_eq!(ready.headers["retry-after"], "1");
    let body = ready.json();
    assert_eq!(body["code"], 115_001, "{body}");
    assert_eq!(body["reasons"][0]["code"], 115_013, "{body}");
    assert_eq!(body["reasons"][0]["field"], "s", "{body}");
    // Liveness is not readiness: the process serves.
    assert_eq!(get(&state, "/healthz").await.status, StatusCode::OK);

    state.health().begin_shutdown();
    let body = get(&state, "/readyz").await.json();
    let codes: Vec<u64> = body["reasons"]
        .as_array()
        .expect("reasons")
        .iter()
        .filter_map(|r| r["code"].as_u64())
        .collect();
    assert_eq!(codes, [115_010, 115_013], "{body}");
}
