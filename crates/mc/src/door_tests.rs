//! The MC's doors, through the router with no socket: forged viewer reports, reports
//! that expire, the store's mode, and the operator API's door (no CORS grant, other
//! origins and non-JSON bodies refused) beside a player's playlist that keeps its grant.

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

use super::tests::{app, call, create, live_channel, node_state, settings};
use super::McState;
use server::app::NodeApp;
use server::clock::Clock;

async fn sync(app: &NodeApp, node: &str, viewers: &str) -> (StatusCode, Value) {
    call(
        app,
        Method::GET,
        &format!("/api/nodes/sync?node={node}&viewers={viewers}"),
        Some("nodes"),
        &[],
        Body::empty(),
    )
    .await
}

fn viewers_of(answer: &Value, id: &str) -> Option<u64> {
    answer["meetings"]
        .as_array()?
        .iter()
        .find(|m| m["id"] == id)?["viewers"]
        .as_u64()
}

async fn limited(app: &NodeApp, id: &str, limit: u32) {
    let (status, _) = call(
        app,
        Method::POST,
        "/api/meetings",
        Some("admin"),
        &[],
        json!({"id": id, "viewer_limit": limit}).to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
}

#[tokio::test]
async fn forged_reports_are_refused_or_capped_and_a_limited_meeting_keeps_admitting() {
    let dir = tempfile::tempdir().unwrap();
    let mc = McState::open(settings(dir.path())).unwrap();
    let app = app(&mc);
    limited(&app, "lim", 20).await;
    let (status, _) = call(
        &app,
        Method::POST,
        "/api/meetings/lim/start",
        Some("admin"),
        &[],
        Body::empty(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    // Without the node token: nothing is counted.
    let (status, body) = call(
        &app,
        Method::GET,
        "/api/nodes/sync?node=evil&viewers=lim:19",
        None,
        &[],
        Body::empty(),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_u64()),
        (StatusCode::UNAUTHORIZED, Some(108_004))
    );
    // Four billion viewers on one node: refused whole, naming the field.
    let (status, body) = sync(&app, "evil", "lim:4000000000").await;
    assert_eq!(
        (status, body["code"].as_u64(), body["field"].as_str()),
        (StatusCode::BAD_REQUEST, Some(108_007), Some("viewers"))
    );
    // Five thousand meetings in one report (more than the 4096 allowed): refused.
    let many: Vec<String> = (0..5_000).map(|i| format!("m{i}:1")).collect();
    let (status, body) = sync(&app, "evil", &many.join(",")).await;
    assert_eq!(
        (status, body["field"].as_str()),
        (StatusCode::BAD_REQUEST, Some("viewers"))
    );
    // Meetings that do not exist count for nothing, and are kept nowhere.
    let (status, _) = sync(&app, "evil", "ghost:900000,ghost2:5").await;
    assert_eq!(status, StatusCode::OK);
    // A node name outside the grammar: refused.
    let (status, body) = sync(&app, "a%2Fb", "lim:1").await;
    assert_eq!(
        (status, body["field"].as_str()),
        (StatusCode::BAD_REQUEST, Some("node"))
    );
    // The real node's report is what counts: the meeting is not full.
    let (status, answer) = sync(&app, "node-a", "lim:3").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(viewers_of(&answer, "lim"), Some(3));
    assert_eq!(
        answer["meetings"].as_array().map(Vec::len),
        Some(1),
        "{answer}"
    );
    // A new viewer on a third node is admitted.
    let view: meeting::MeetingView = serde_json::from_value(answer["meetings"][0].clone()).unwrap();
    assert_eq!(
        meeting::admit_new_viewer(meeting::McLink::Connected, Some(&view), 0, 0, true),
        Ok(())
    );
    // A count above the limit counts as the limit, never beyond it.
    let (_, answer) = sync(&app, "node-b", "lim:500").await;
    assert_eq!(viewers_of(&answer, "lim"), Some(23));
    let store = std::fs::read_to_string(dir.path().join("meetings.json")).unwrap();
    assert!(!store.contains("ghost"), "{store}");
}

#[tokio::test]
async fn a_silent_nodes_report_expires_without_etcd() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::manual(1_000_000);
    let mc = McState::open(settings(dir.path()))
        .unwrap()
        .with_clock(clock.clone());
    let app = app(&mc);
    create(&app, "m").await;
    let (_, answer) = sync(&app, "gone", "m:7").await;
    assert_eq!(viewers_of(&answer, "m"), Some(7));
    // Within the report lifetime (10 s) it counts; past it, it does not.
    clock.advance(9_000);
    let (_, answer) = sync(&app, "other", "").await;
    assert_eq!(viewers_of(&answer, "m"), Some(7));
    clock.advance(2_000);
    let (_, answer) = sync(&app, "other", "").await;
    assert_eq!(viewers_of(&answer, "m"), Some(0));
}

#[cfg(unix)]
#[tokio::test]
async fn the_store_file_with_stream_keys_is_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("meetings.json");
    let mc = McState::open(settings(dir.path())).unwrap();
    let app = app(&mc);
    let (status, _) = create(&app, "first").await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // A file left readable by an older version (or a wide umask) is replaced.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (status, _) = create(&app, "secret").await;
    assert_eq!(status, StatusCode::CREATED);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(std::fs::read_to_string(&path)
        .unwrap()
        .contains("stream_key"));
}

/// One request through `app`: status, headers and the JSON body (`Null` if not JSON).
async fn raw(
    app: &NodeApp,
    method: Method,
    uri: &str,
    headers: &[(&str, &str)],
    body: &'static str,
) -> (StatusCode, axum::http::HeaderMap, Value) {
    let mut request = Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = app
        .clone()
        .oneshot(request.body(Body::from(body)).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        headers,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn the_operator_api_grants_no_origin_and_refuses_other_origins_and_non_json() {
    let dir = tempfile::tempdir().unwrap();
    let mut open = settings(dir.path());
    // The case the door matters most for: an MC trusted on loopback, without a token.
    open.admin_token = None;
    let mc = McState::open(open).unwrap();
    let app = app(&mc);
    let host = ("host", "127.0.0.1:9000");
    let body = r#"{"id":"x"}"#;
    // A page elsewhere posts a "simple" cross-origin request: no preflight needed.
    let (status, headers, doc) = raw(
        &app,
        Method::POST,
        "/api/meetings",
        &[
            host,
            ("origin", "http://evil.example"),
            ("content-type", "text/plain"),
        ],
        body,
    )
    .await;
    assert_eq!(
        (status, doc["code"].as_u64()),
        (StatusCode::FORBIDDEN, Some(108_013))
    );
    assert!(headers.get(header::ACCESS_CONTROL_ALLOW_ORIGIN).is_none());
    // Without an Origin (not a browser), the body must still be JSON.
    let (status, _, doc) = raw(
        &app,
        Method::POST,
        "/api/meetings",
        &[host, ("content-type", "text/plain")],
        body,
    )
    .await;
    assert_eq!(
        (status, doc["code"].as_u64()),
        (StatusCode::UNSUPPORTED_MEDIA_TYPE, Some(108_012))
    );
    let (status, _, _) = raw(&app, Method::POST, "/api/meetings", &[host], body).await;
    assert_eq!(
        status,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "no content type at all"
    );
    assert!(mc.meetings().is_empty(), "nothing was created");
    // The operator's own page (same origin) with JSON: created; the answer (stream key,
    // host token) carries no CORS grant.
    let (status, headers, doc) = raw(
        &app,
        Method::POST,
        "/api/meetings",
        &[
            host,
            ("origin", "http://127.0.0.1:9000"),
            ("content-type", "application/json"),
        ],
        body,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{doc}");
    assert!(headers.get(header::ACCESS_CONTROL_ALLOW_ORIGIN).is_none());
    // A body-less action needs no content type; a cross-origin one is refused.
    let (status, _, _) = raw(&app, Method::POST, "/api/meetings/x/start", &[host], "").await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, _) = raw(
        &app,
        Method::POST,
        "/api/meetings/x/close",
        &[host, ("origin", "http://evil.example")],
        "",
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // The preflight of an operator route grants nothing.
    let (_, headers, _) = raw(
        &app,
        Method::OPTIONS,
        "/api/meetings/x/unlock",
        &[host, ("origin", "http://evil.example")],
        "",
    )
    .await;
    for name in [
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        header::ACCESS_CONTROL_ALLOW_METHODS,
        header::ACCESS_CONTROL_ALLOW_HEADERS,
    ] {
        assert!(headers.get(&name).is_none(), "{name}");
    }
    for path in ["/api/meetings", "/api/meetings/x", "/api/streams"] {
        let (_, headers, _) = raw(&app, Method::GET, path, &[host], "").await;
        assert!(
            headers.get(header::ACCESS_CONTROL_ALLOW_ORIGIN).is_none(),
            "{path}"
        );
    }
}

#[tokio::test]
async fn a_players_playlist_and_preflight_keep_their_cors_grant() {
    let state = node_state();
    live_channel(&state, "own");
    let app = server::router(state);
    let origin = ("origin", "https://player.example");
    let (status, headers, _) = raw(&app, Method::GET, "/own/index.m3u8", &[origin], "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
    let (status, headers, _) = raw(&app, Method::OPTIONS, "/own/index.m3u8", &[origin], "").await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
    assert!(headers.get(header::ACCESS_CONTROL_ALLOW_METHODS).is_some());
    // The DASH clock is a player's too.
    let (_, headers, _) = raw(&app, Method::GET, "/api/time", &[origin], "").await;
    assert_eq!(headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
    // The node's operator routes: no grant, and another origin is refused.
    let (status, headers, doc) = raw(
        &app,
        Method::POST,
        "/api/streams/own/pause",
        &[("host", "n:8080"), origin],
        "",
    )
    .await;
    assert_eq!(
        (status, doc["code"].as_u64()),
        (StatusCode::FORBIDDEN, Some(108_013))
    );
    assert!(headers.get(header::ACCESS_CONTROL_ALLOW_ORIGIN).is_none());
}

/// A node reads the MC's streams under the rule it syncs by: with the node token (or
/// the admin's), and, on an MC without a node token (loopback, `trust_loopback`),
/// without one — even when the MC has an admin token.
#[test]
fn the_streams_are_read_under_the_sync_rule() {
    use axum::http::HeaderMap;
    let bearer = |token: &str| {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            format!("Bearer {token}").parse().unwrap(),
        );
        headers
    };
    let dir = tempfile::tempdir().unwrap();
    let guarded = McState::open(settings(dir.path())).unwrap();
    assert!(super::api::may_read_stream(&guarded, &bearer("nodes")));
    assert!(super::api::may_read_stream(&guarded, &bearer("admin")));
    assert!(!super::api::may_read_stream(&guarded, &bearer("guess")));
    assert!(!super::api::may_read_stream(&guarded, &HeaderMap::new()));
    let other = tempfile::tempdir().unwrap();
    let mut loopback = settings(other.path());
    loopback.node_token = None;
    let loopback = McState::open(loopback).unwrap();
    assert!(super::api::may_read_stream(&loopback, &HeaderMap::new()));
}
