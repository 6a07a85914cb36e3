//! The MC API and the node gate, through the router with no socket (and the store on a
//! real temporary directory).

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

fn view(
    id: &str,
    state: meeting::MeetingState,
    locked: bool,
    limit: Option<u32>,
    viewers: u64,
) -> meeting::MeetingView {
    meeting::MeetingView {
        id: id.into(),
        state,
        locked,
        viewer_limit: limit,
        viewers,
        ladder: Vec::new(),
        private: false,
        removed: Vec::new(),
        waiting: false,
    }
}

#[tokio::test]
async fn the_node_gate_answers_with_meeting_codes() {
    use meeting::MeetingState::*;
    let state = node_state();
    let gate = Arc::new(MeetingGate::new());
    assert!(state.set_meeting_gate(Arc::clone(&gate)));
    live_channel(&state, "own");
    live_channel(&state, "live");
    gate.set_managed("live", true);
    let app = server::router(state.clone());
    let get = |path: &'static str, viewer: &'static str| {
        let app = app.clone();
        async move { call_from(&app, path, peer(viewer), &[]).await }
    };
    // Before the first answer from the MC: 102005; a configured stream passes.
    assert_eq!(get("/live/index.m3u8", "a").await.1["code"], 102_005);
    assert_eq!(get("/own/index.m3u8", "a").await.0, StatusCode::OK);
    gate.failed(meeting::ConnectCause::Refused);
    assert_eq!(get("/new/index.m3u8", "a").await.1["code"], 104_103);
    gate.connected(
        vec![
            view("live", Live, false, Some(2), 1),
            view("soon", Created, false, None, 0),
            view("gone", Closed, false, None, 0),
            view("shut", Live, true, None, 0),
        ],
        Some("2.0".parse().unwrap()),
        std::collections::HashMap::new(),
        &[],
    );
    assert_eq!(get("/soon/index.m3u8", "a").await.1["code"], 103_002);
    assert_eq!(get("/gone/index.m3u8", "a").await.1["code"], 103_003);
    assert_eq!(get("/nope/index.m3u8", "a").await.1["code"], 104_005);
    live_channel(&state, "shut");
    gate.set_managed("shut", true);
    assert_eq!(get("/shut/index.m3u8", "a").await.1["code"], 103_011);
    // Limit 2 with 1 viewer elsewhere: one viewer here fits, the next is refused, the
    // admitted one keeps playing.
    assert_eq!(get("/live/index.m3u8", "a").await.0, StatusCode::OK);
    let (status, body) = get("/live/index.m3u8", "b").await;
    assert_eq!(
        (status, body["code"].as_u64()),
        (StatusCode::SERVICE_UNAVAILABLE, Some(103_006))
    );
    // A DASH (or fMP4 HLS) viewer is admitted and counted like an HLS one.
    let (status, body) = get("/live/index.mpd", "c").await;
    assert_eq!(
        (status, body["code"].as_u64()),
        (StatusCode::SERVICE_UNAVAILABLE, Some(103_006))
    );
    assert_eq!(get("/live/mono.m3u8", "a").await.0, StatusCode::OK);
    assert_eq!(gate.viewer_counts().get("live"), Some(&1));
    // An old client: 102011 to join, 16 inside its session.
    let old = |path: &'static str, viewer: &'static str| {
        let app = app.clone();
        async move {
            call_from(
                &app,
                path,
                peer(viewer),
                &[("x-brdyun-client-version", "1.9")],
            )
            .await
        }
    };
    assert_eq!(old("/live/mono.m3u8", "a").await.1["code"], 16);
    assert_eq!(old("/live/index.m3u8", "z").await.1["code"], 102_011);
    // The MC goes away: the delivered meeting keeps its viewers, others get 102005.
    gate.failed(meeting::ConnectCause::Refused);
    assert_eq!(get("/live/mono.m3u8", "a").await.0, StatusCode::OK);
    assert_eq!(get("/soon/index.m3u8", "a").await.1["code"], 102_005);
    let mut metrics = String::new();
    gate.render_metrics(&mut metrics);
    assert!(
        metrics.contains("brdyun_meeting_refusals_total{code=\"103006\",reason=\"full\"} 2"),
        "{metrics}"
    );
    assert!(
        metrics.contains("code=\"102005\",reason=\"mc_unavailable\"} 2"),
        "{metrics}"
    );
}

/// Made-up member names count as nobody: a viewer is the address the node saw. Every
/// door of a meeting's media checks the lock and the limit, and a meeting's relay takes
/// the node credential.
#[tokio::test]
async fn the_node_gate_counts_what_it_observed_at_every_door() {
    use meeting::MeetingState::Live;
    let state = node_state();
    let gate = Arc::new(MeetingGate::new());
    gate.set_node_token("node-secret".into());
    assert!(state.set_meeting_gate(Arc::clone(&gate)));
    for id in ["live", "shut"] {
        live_channel(&state, id);
        gate.set_managed(id, true);
    }
    gate.connected(
        vec![
            view("live", Live, false, Some(2), 0),
            view("shut", Live, true, None, 0),
        ],
        None,
        std::collections::HashMap::new(),
        &[],
    );
    let app = server::router(state.clone());
    // One client, twenty invented member ids: one viewer, and the limit of 2 still
    // admits a second real viewer.
    for n in 0..20 {
        let member = format!("fake-{n}");
        let (status, _) = call_from(
            &app,
            "/live/index.m3u8",
            peer("m"),
            &[("x-brdyun-member", member.as_str())],
        )
        .await;
        assert_eq!(status, StatusCode::OK, "fake member {n}");
    }
    assert_eq!(gate.viewer_counts().get("live"), Some(&1));
    assert_eq!(
        call_from(&app, "/live/index.m3u8", peer("r"), &[]).await.0,
        StatusCode::OK
    );
    // The meeting is full now: a third address is refused at every door, the playlist
    // as a segment or a catch-up playlist.
    for path in [
        "/live/index.m3u8",
        "/live/seg-0.ts",
        "/live/timeshift_rel-0.m3u8",
        "/live/index-0-now.m3u8",
    ] {
        let (status, body) = call_from(&app, path, peer("x"), &[]).await;
        assert_eq!(
            (status, body["code"].as_u64()),
            (StatusCode::SERVICE_UNAVAILABLE, Some(103_006)),
            "{path}"
        );
    }
    // The admitted viewers keep their segments.
    assert_eq!(
        call_from(&app, "/live/seg-0.ts", peer("r"), &[]).await.0,
        StatusCode::OK
    );
    // A locked meeting: its segments and catch-up are as closed as its playlist.
    for path in [
        "/shut/index.m3u8",
        "/shut/seg-0.ts",
        "/shut/timeshift_rel-0.m3u8",
    ] {
        let (_, body) = call_from(&app, path, peer("y"), &[]).await;
        assert_eq!(body["code"].as_u64(), Some(103_011), "{path}");
    }
    // The relay is for nodes: without the node token (or with another) it is refused,
    // locked meeting or not; with it, served.
    for headers in [vec![], vec![("authorization", "Bearer guess")]] {
        let (status, body) = call_from(&app, "/live/mpegts", peer("z"), &headers).await;
        assert_eq!(
            (status, body["code"].as_u64()),
            (StatusCode::FORBIDDEN, Some(113_001)),
            "{headers:?}"
        );
    }
    let app_relay = app.clone();
    let response = tokio::time::timeout(std::time::Duration::from_secs(5), async move {
        let mut request = Request::builder()
            .uri("/live/mpegts")
            .header("authorization", "Bearer node-secret")
            .body(Body::empty())
            .unwrap();
        server::http::request_context::RequestContext::of_mut(&mut request).connection =
            Some(server::http::request_context::Connection {
                peer: std::net::SocketAddr::new(peer("n"), 40_000),
                secure: false,
                gate: None,
            });
        app_relay.oneshot(request).await.unwrap()
    })
    .await
    .expect("the relay answers");
    assert_eq!(response.status(), StatusCode::OK);
}

/// A node without a node token (its MC on loopback, trusted) serves a meeting's relay
/// to a caller on its own machine only, never to the network.
#[tokio::test]
async fn without_a_node_token_a_meetings_relay_is_for_this_machine_only() {
    use meeting::MeetingState::Live;
    let state = node_state();
    let gate = Arc::new(MeetingGate::new());
    assert!(state.set_meeting_gate(Arc::clone(&gate)));
    live_channel(&state, "live");
    gate.set_managed("live", true);
    gate.connected(
        vec![view("live", Live, false, None, 0)],
        None,
        std::collections::HashMap::new(),
        &[],
    );
    let app = server::router(state.clone());
    let (status, body) = call_from(&app, "/live/mpegts", peer("z"), &[]).await;
    assert_eq!(
        (status, body["code"].as_u64()),
        (StatusCode::FORBIDDEN, Some(113_001))
    );
    let mut request = Request::builder()
        .uri("/live/mpegts")
        .body(Body::empty())
        .unwrap();
    server::http::request_context::RequestContext::of_mut(&mut request).connection =
        Some(server::http::request_context::Connection {
            peer: std::net::SocketAddr::from(([127, 0, 0, 1], 40_000)),
            secure: false,
            gate: None,
        });
    let response = tokio::time::timeout(std::time::Duration::from_secs(5), app.oneshot(request))
        .await
        .expect("the relay answers")
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}
