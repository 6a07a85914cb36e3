//! The MC API and the node gate, through the router with no socket (and the store on a
//! real temporary directory); the gate's own tests are in [`gate`].

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use bytes::Bytes;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use server::app::NodeApp;
use tower::ServiceExt;

use super::{router, McSettings, McState};
use server::access::gate::MeetingGate;
use server::metrics::Metrics;
use server::stream::package::{LiveSegment, Package, TrackSummary};
use server::{AppState, NodeIdentity};

pub(super) fn settings(dir: &std::path::Path) -> McSettings {
    McSettings {
        ladder: Vec::new(),
        without_ladder: std::collections::HashSet::new(),
        store_path: dir.join("meetings.json"),
        etcd: None,
        admin_token: Some("admin".into()),
        node_token: Some("nodes".into()),
        min_client_version: Some("2.1.0.456".parse().unwrap()),
        viewer_report_ttl: Duration::from_secs(10),
        viewer_keys: Vec::new(),
        minter: Some(std::sync::Arc::new(
            super::minter::Minter::load_or_create(dir).expect("a minting key"),
        )),
        recordings: None,
    }
}

pub(super) fn node_state() -> AppState {
    let identity = NodeIdentity {
        name: "mc".into(),
        hostname: None,
    };
    AppState::new(identity, Metrics::new(), None)
}

pub(super) fn app(mc: &McState) -> NodeApp {
    router(mc.clone(), node_state())
}

pub(super) async fn call(
    app: &NodeApp,
    method: Method,
    uri: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
    body: impl Into<Body>,
) -> (StatusCode, Value) {
    let mut request = Request::builder().method(method).uri(uri);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    // The API takes JSON bodies only (108012 otherwise), as a platform's client sends.
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
    {
        request = request.header("content-type", "application/json");
    }
    let response = app
        .clone()
        .oneshot(request.body(body.into()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, value)
}

/// [`call`] as a viewer connected from `peer` (what the node counts viewers by).
async fn call_from(
    app: &NodeApp,
    uri: &str,
    peer: std::net::IpAddr,
    headers: &[(&str, &str)],
) -> (StatusCode, Value) {
    let mut request = Request::builder().uri(uri);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let mut request = request.body(Body::empty()).unwrap();
    server::http::request_context::RequestContext::of_mut(&mut request).connection =
        Some(server::http::request_context::Connection {
            peer: std::net::SocketAddr::new(peer, 40_000),
            secure: false,
            gate: None,
        });
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// A viewer's address by a short name (`a` → 192.0.2.97).
fn peer(name: &str) -> std::net::IpAddr {
    std::net::IpAddr::from([192, 0, 2, name.as_bytes()[0]])
}

pub(super) async fn create(app: &NodeApp, id: &str) -> (StatusCode, Value) {
    call(
        app,
        Method::POST,
        "/api/meetings",
        Some("admin"),
        &[],
        json!({"id": id, "title": "t"}).to_string(),
    )
    .await
}

#[tokio::test]
async fn lifecycle_through_the_api_with_host_and_viewer_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let mc = McState::open(settings(dir.path())).unwrap();
    let app = app(&mc);
    let (status, created) = create(&app, "m1").await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(created["state"], "created");
    let host = created["host_token"].as_str().unwrap().to_owned();
    assert_eq!(host.len(), 32);
    assert_ne!(created["stream_key"], created["host_token"]);

    // A viewer (no token, a wrong token) can read the public view but change nothing.
    let (status, public) = call(
        &app,
        Method::GET,
        "/api/meetings/m1",
        None,
        &[],
        Body::empty(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(public.get("stream_key").is_none());
    for token in [None, Some("viewer"), Some("nodes")] {
        let (status, body) = call(
            &app,
            Method::POST,
            "/api/meetings/m1/start",
            token,
            &[],
            Body::empty(),
        )
        .await;
        assert_eq!(
            (status, body["code"].as_u64()),
            (StatusCode::UNAUTHORIZED, Some(108_004))
        );
    }
    let (status, _) = call(
        &app,
        Method::POST,
        "/api/meetings",
        Some(&host),
        &[],
        json!({"id": "x"}).to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "a host cannot create");

    // The host drives its meeting.
    for (action, field, value) in [
        ("start", "state", json!("live")),
        ("lock", "locked", json!(true)),
        ("unlock", "locked", json!(false)),
    ] {
        let (status, body) = call(
            &app,
            Method::POST,
            &format!("/api/meetings/m1/{action}"),
            Some(&host),
            &[],
            Body::empty(),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{action}: {body}");
        assert_eq!(body[field], value);
    }
    let (status, body) = call(
        &app,
        Method::PUT,
        "/api/meetings/m1/viewer-limit",
        Some(&host),
        &[],
        json!({"viewer_limit": 5}).to_string(),
    )
    .await;
    assert_eq!(
        (status, body["viewer_limit"].as_u64()),
        (StatusCode::OK, Some(5))
    );
    let (_, body) = call(
        &app,
        Method::POST,
        "/api/meetings/m1/close",
        Some(&host),
        &[],
        Body::empty(),
    )
    .await;
    assert_eq!(body["state"], "closed");
    let (status, body) = call(
        &app,
        Method::POST,
        "/api/meetings/m1/start",
        Some(&host),
        &[],
        Body::empty(),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_u64()),
        (StatusCode::GONE, Some(103_003))
    );

    // Unknown meetings and actions.
    let (status, body) = call(
        &app,
        Method::GET,
        "/api/meetings/nope",
        None,
        &[],
        Body::empty(),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_u64()),
        (StatusCode::NOT_FOUND, Some(104_005))
    );
    let (status, body) = call(
        &app,
        Method::POST,
        "/api/meetings/nope/start",
        Some("admin"),
        &[],
        Body::empty(),
    )
    .await;
    assert_eq!(body["code"].as_u64(), Some(104_005), "{status}");
    let (status, _) = call(
        &app,
        Method::POST,
        "/api/meetings/m1/explode",
        Some("admin"),
        &[],
        Body::empty(),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn bad_bodies_get_400_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let mc = McState::open(settings(dir.path())).unwrap();
    let app = app(&mc);
    let huge = format!(r#"{{"id":"big","title":"{}"}}"#, "x".repeat(70 * 1024));
    // The code of the one table, its fixed message, and the field at fault; the
    // parser's text is logged, never sent.
    let cases: [(&str, String, StatusCode, u64, Option<&str>); 5] = [
        (
            "oversized",
            huge,
            StatusCode::PAYLOAD_TOO_LARGE,
            108_005,
            None,
        ),
        (
            "not json",
            "{\"id\":".into(),
            StatusCode::BAD_REQUEST,
            108_007,
            Some("body"),
        ),
        (
            "wrong type",
            r#"{"id": 5}"#.into(),
            StatusCode::BAD_REQUEST,
            108_007,
            Some("body"),
        ),
        (
            "unknown field",
            r#"{"id":"a","owner":"b"}"#.into(),
            StatusCode::BAD_REQUEST,
            108_007,
            Some("body"),
        ),
        (
            "bad id",
            r#"{"id":"../etc"}"#.into(),
            StatusCode::BAD_REQUEST,
            108_007,
            Some("id"),
        ),
    ];
    for (what, body, expected_status, code, field) in cases {
        let (status, answer) = call(
            &app,
            Method::POST,
            "/api/meetings",
            Some("admin"),
            &[],
            body,
        )
        .await;
        assert_eq!(status, expected_status, "{what}");
        assert_eq!(answer["code"], code, "{what}");
        let row = codes::Code::from_number(code as u32).expect("in the table");
        assert_eq!(answer["message"], row.message(), "{what}");
        assert_eq!(answer["field"].as_str(), field, "{what}: {answer}");
    }
}

#[tokio::test]
async fn client_versions_get_102011_on_create_and_16_in_session() {
    let dir = tempfile::tempdir().unwrap();
    let mc = McState::open(settings(dir.path())).unwrap();
    let app = app(&mc);
    let old = [("x-brdyun-client-version", "2.1.0.455")];
    let (status, body) = call(
        &app,
        Method::POST,
        "/api/meetings",
        Some("admin"),
        &old,
        json!({"id": "v"}).to_string(),
    )
    .await;
    assert_eq!(
        (status.as_u16(), body["code"].as_u64()),
        (426, Some(102_011))
    );
    let new = [("x-brdyun-client-version", "2.1.0.456")];
    let (status, _) = call(
        &app,
        Method::POST,
        "/api/meetings",
        Some("admin"),
        &new,
        json!({"id": "v"}).to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, body) = call(
        &app,
        Method::POST,
        "/api/meetings/v/start",
        Some("admin"),
        &old,
        Body::empty(),
    )
    .await;
    assert_eq!((status.as_u16(), body["code"].as_u64()), (426, Some(16)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_of_one_id_have_one_winner() {
    let dir = tempfile::tempdir().unwrap();
    let mc = McState::open(settings(dir.path())).unwrap();
    let app = app(&mc);
    for round in 0..5 {
        let id = format!("race{round}");
        let barrier = Arc::new(tokio::sync::Barrier::new(8));
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let (app, id, barrier) = (app.clone(), id.clone(), Arc::clone(&barrier));
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                create(&app, &id).await
            }));
        }
        let mut winners = Vec::new();
        let mut losers = 0;
        for task in tasks {
            let (status, body) = task.await.unwrap();
            match status {
                StatusCode::CREATED => winners.push(body["host_token"].clone()),
                StatusCode::CONFLICT => {
                    assert_eq!(body["code"], 102_004);
                    losers += 1;
                }
                other => panic!("unexpected {other}: {body}"),
            }
        }
        assert_eq!((winners.len(), losers), (1, 7));
        // The winner's secrets are the ones stored.
        let stored = mc.meetings();
        let meeting = stored
            .get(&meeting::MeetingId::parse(&id).unwrap())
            .unwrap();
        assert_eq!(json!(meeting.host_token), winners[0]);
    }
}

#[tokio::test]
async fn meetings_survive_a_restart_and_a_corrupt_store_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mc = McState::open(settings(dir.path())).unwrap();
        let app = app(&mc);
        create(&app, "keep").await;
        call(
            &app,
            Method::POST,
            "/api/meetings/keep/start",
            Some("admin"),
            &[],
            Body::empty(),
        )
        .await;
        call(
            &app,
            Method::POST,
            "/api/meetings/keep/lock",
            Some("admin"),
            &[],
            Body::empty(),
        )
        .await;
    }
    let mc = McState::open(settings(dir.path())).unwrap();
    let app = app(&mc);
    let (_, body) = call(
        &app,
        Method::GET,
        "/api/meetings/keep",
        Some("admin"),
        &[],
        Body::empty(),
    )
    .await;
    assert_eq!(
        (body["state"].as_str(), body["locked"].as_bool()),
        (Some("live"), Some(true))
    );
    let (status, _) = create(&app, "keep").await;
    assert_eq!(status, StatusCode::CONFLICT);
    std::fs::write(dir.path().join("meetings.json"), b"{not json").unwrap();
    assert!(McState::open(settings(dir.path())).is_err());
}

#[tokio::test]
async fn sync_sums_viewers_across_nodes_and_needs_the_node_token() {
    let dir = tempfile::tempdir().unwrap();
    let mc = McState::open(settings(dir.path())).unwrap();
    let app = app(&mc);
    create(&app, "m").await;
    let (status, _) = call(
        &app,
        Method::GET,
        "/api/nodes/sync?node=a&viewers=m:2",
        None,
        &[],
        Body::empty(),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // The node token travels in a header only: in the URL it would land in access logs.
    let (status, _) = call(
        &app,
        Method::GET,
        "/api/nodes/sync?node=a&viewers=m:2&token=nodes",
        None,
        &[],
        Body::empty(),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    call(
        &app,
        Method::GET,
        "/api/nodes/sync?node=a&viewers=m:2",
        Some("nodes"),
        &[],
        Body::empty(),
    )
    .await;
    let (status, body) = call(
        &app,
        Method::GET,
        "/api/nodes/sync?node=b&viewers=m:3",
        Some("nodes"),
        &[],
        Body::empty(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["meetings"][0]["viewers"], 5);
    assert_eq!(body["min_client_version"], "2.1.0.456");
    let (status, body) = call(
        &app,
        Method::GET,
        "/api/nodes/sync?node=b&viewers=m:x",
        Some("nodes"),
        &[],
        Body::empty(),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_u64()),
        (StatusCode::BAD_REQUEST, Some(108_007))
    );
}

#[tokio::test]
async fn the_openapi_document_parses_and_names_every_route() {
    let dir = tempfile::tempdir().unwrap();
    let mc = McState::open(settings(dir.path())).unwrap();
    let (status, doc) = call(
        &app(&mc),
        Method::GET,
        "/api/openapi.json",
        None,
        &[],
        Body::empty(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(doc["openapi"], "3.0.3");
    for path in [
        "/api/meetings",
        "/api/meetings/{id}",
        "/api/meetings/{id}/{action}",
        "/api/meetings/{id}/viewer-limit",
        "/api/meetings/{id}/viewer-tokens",
        "/api/meetings/{id}/viewers/{viewer}",
        "/api/meetings/{id}/recordings",
        "/api/nodes/sync",
        "/{id}/mpegts",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path}");
    }
}

pub(super) fn live_channel(state: &AppState, name: &str) {
    let channel = Arc::new(Package::new(name, 5, packaging::render::renderer(2000)));
    let segment = LiveSegment {
        msn: 0,
        discontinuity_seq: 0,
        discontinuous: false,
        duration_ticks: 180_000,
        program_date_time_ms: 0,
        data: Bytes::from(vec![0x47u8; 188]),
        ..LiveSegment::default()
    };
    let tracks = TrackSummary {
        codecs: vec!["avc1.64001e".into()],
        resolution: Some((640, 360)),
        frame_rate_milli: Some(25_000),
    };
    channel.push(segment, tracks);
    state.add_stream(channel, None);
}

mod gate;
mod retention;
