//! The node gate (the node side of meetings) answering with the meeting codes and
//! counting what it observed, and a meeting's relay without a node token.

use super::*;

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
        recording_depth_days: None,
        languages: Vec::new(),
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
