//! The router answered in-process (no socket): playlists, segments with HEAD and
//! Range, the relay, errors as JSON with their codes, CORS, metrics, the admin token.

mod harness;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use http_body_util::BodyExt;
use server::stream::package::Package;
use server::{router, AppState};
use tower::ServiceExt;

use harness::{add_stream, get, node, node_at, request, segment, tracks, Answer};
use server::clock::Clock;

fn node_with(segments: std::ops::Range<u64>) -> (AppState, Arc<Package>) {
    let state = node(None);
    let channel = add_stream(&state, segments);
    (state, channel)
}

#[tokio::test]
async fn live_playlists_parse_back_and_list_the_window() {
    let (state, _) = node_with(10..17);
    let Answer {
        status,
        headers,
        body,
    } = request(&state, Method::GET, "/s/mono.m3u8", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        headers[header::CONTENT_TYPE],
        "application/vnd.apple.mpegurl"
    );
    assert_eq!(headers[header::CACHE_CONTROL], "public, max-age=1");
    assert_eq!(headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
    // A whole answer carries no header a script could not read without the list.
    assert!(!headers.contains_key(header::ACCESS_CONTROL_EXPOSE_HEADERS));
    let text = std::str::from_utf8(&body).unwrap();
    assert!(text.contains("#EXT-X-MEDIA-SEQUENCE:12\n"), "{text}");
    assert!(
        text.contains("#EXT-X-PROGRAM-DATE-TIME:2023-11-14T22:13:44.000Z\n"),
        "{text}"
    );
    let m3u8_rs::Playlist::MediaPlaylist(media) = m3u8_rs::parse_playlist_res(&body).unwrap()
    else {
        panic!("not a media playlist")
    };
    assert_eq!(media.media_sequence, 12);
    assert_eq!(media.target_duration, 2);
    let uris: Vec<&str> = media.segments.iter().map(|s| s.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "seg-12.ts",
            "seg-13.ts",
            "seg-14.ts",
            "seg-15.ts",
            "seg-16.ts"
        ]
    );

    let Answer { status, body, .. } = request(&state, Method::GET, "/s/index.m3u8", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let m3u8_rs::Playlist::MasterPlaylist(master) = m3u8_rs::parse_playlist_res(&body).unwrap()
    else {
        panic!("not a master playlist")
    };
    let variant = &master.variants[0];
    assert_eq!(variant.uri, "mono.m3u8");
    assert_eq!(variant.codecs.as_deref(), Some("avc1.64001e,mp4a.40.2"));
    assert_eq!(variant.bandwidth, 7520, "1880 bytes per 2 s");
}

#[tokio::test]
async fn segments_support_head_and_ranges() {
    let (state, _) = node_with(0..3);
    let Answer {
        status,
        headers,
        body,
    } = request(&state, Method::GET, "/s/seg-2.ts", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CONTENT_TYPE], "video/mp2t");
    assert_eq!(
        headers[header::CACHE_CONTROL],
        "public, max-age=86400, immutable"
    );
    assert_eq!(body.len(), 1880);
    assert_eq!(&body[1..9], &2u64.to_be_bytes());

    let Answer {
        status,
        headers,
        body,
    } = request(&state, Method::HEAD, "/s/seg-2.ts", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CONTENT_LENGTH], "1880");
    assert!(body.is_empty());

    let Answer {
        status,
        headers,
        body,
    } = request(
        &state,
        Method::GET,
        "/s/seg-2.ts",
        &[("range", "bytes=188-375")],
    )
    .await;
    assert_eq!(status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(headers[header::CONTENT_RANGE], "bytes 188-375/1880");
    assert_eq!(body.len(), 188);
    // A page's script on another origin may read the range.
    assert!(headers[header::ACCESS_CONTROL_EXPOSE_HEADERS]
        .to_str()
        .is_ok_and(|exposed| exposed.contains("Content-Range")));

    let Answer {
        status, headers, ..
    } = request(
        &state,
        Method::GET,
        "/s/seg-2.ts",
        &[("range", "bytes=5000-")],
    )
    .await;
    assert_eq!(status, StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(headers[header::CONTENT_RANGE], "bytes */1880");
    assert!(headers[header::ACCESS_CONTROL_EXPOSE_HEADERS]
        .to_str()
        .is_ok_and(|exposed| exposed.contains("Content-Range")));
}

#[tokio::test]
async fn errors_are_json_with_their_codes() {
    let (state, _) = node_with(0..3);
    let cases = [
        ("/nope/mono.m3u8", StatusCode::NOT_FOUND, 104_005),
        ("/s/seg-99.ts", StatusCode::NOT_FOUND, 108_002),
        ("/s/..%2F..%2Fetc%2Fpasswd", StatusCode::NOT_FOUND, 108_001),
        ("/s/whatever.txt", StatusCode::NOT_FOUND, 108_001),
        ("/s/seg-1x.ts", StatusCode::NOT_FOUND, 108_001),
        ("/a/b/c/d", StatusCode::NOT_FOUND, 108_001),
        ("/s/mpegts?msn=x", StatusCode::BAD_REQUEST, 108_003),
        ("/s/ll.m3u8", StatusCode::NOT_FOUND, 108_001),
    ];
    for (uri, expected_status, expected_code) in cases {
        let Answer {
            status,
            headers,
            body,
        } = request(&state, Method::GET, uri, &[]).await;
        assert_eq!(status, expected_status, "{uri}");
        assert_eq!(headers[header::CONTENT_TYPE], "application/json", "{uri}");
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(json["code"], expected_code, "{uri}");
        // Every error body is a row of the one code table: its status and fixed message.
        let row = codes::Code::from_number(expected_code).expect("in the code table");
        assert_eq!(row.status(), status.as_u16(), "{uri}");
        assert_eq!(json["message"], row.message(), "{uri}");
    }
    // A stream with no segment yet: the meeting has not started, retry later.
    let empty = Arc::new(Package::new("later", 5, packaging::render::renderer(2000)));
    state.add_stream(empty, None);
    let Answer {
        status,
        headers,
        body,
    } = request(&state, Method::GET, "/later/index.m3u8", &[]).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(headers[header::RETRY_AFTER], "2");
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(json["code"], 103_002);
}

#[tokio::test]
async fn preflight_and_metrics() {
    let (state, _) = node_with(0..3);
    let Answer {
        status, headers, ..
    } = request(
        &state,
        Method::OPTIONS,
        "/s/mono.m3u8",
        &[("origin", "https://x.example")],
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
    assert!(headers[header::ACCESS_CONTROL_ALLOW_HEADERS]
        .to_str()
        .unwrap()
        .contains("Range"));
    request(&state, Method::GET, "/s/seg-1.ts", &[]).await;
    let Answer { status, body, .. } = request(&state, Method::GET, "/metrics", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let text = std::str::from_utf8(&body).unwrap();
    assert!(
        text.contains("brdyun_http_requests_total{kind=\"segment\",status=\"2xx\"} 1"),
        "{text}"
    );
}

#[tokio::test]
async fn the_admin_api_needs_the_token_when_one_is_set() {
    let state = node(Some("tok"));
    let Answer { status, body, .. } = request(&state, Method::GET, "/api/streams", &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(json["code"], 108_004);
    let Answer { status, .. } = request(
        &state,
        Method::GET,
        "/api/streams",
        &[("authorization", "Bearer nope")],
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let Answer { status, body, .. } = request(
        &state,
        Method::GET,
        "/api/node",
        &[("authorization", "Bearer tok")],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(json["name"], "t");
}

#[tokio::test]
async fn the_relay_streams_from_the_asked_segment_then_follows_live() {
    let (state, channel) = node_with(0..3);
    let response = router(state.clone())
        .oneshot(Request::get("/s/mpegts?msn=1").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()[header::CONTENT_TYPE], "video/mp2t");
    let mut body = response.into_body();
    let mut received = Vec::new();
    for _ in 0..2 {
        let frame = body.frame().await.unwrap().unwrap();
        received.push(frame.into_data().unwrap());
    }
    channel.push(segment(3), tracks());
    let frame = tokio::time::timeout(Duration::from_secs(5), body.frame())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    received.push(frame.into_data().unwrap());
    let numbers: Vec<u64> = received
        .iter()
        .map(|c| u64::from_be_bytes(c[1..9].try_into().unwrap()))
        .collect();
    assert_eq!(numbers, [1, 2, 3]);
}

/// The routes date their answers by the node's clock: a manual clock moves `/api/time`
/// and the live window's age in the stream status, and nothing else does.
#[tokio::test]
async fn answers_are_dated_by_the_nodes_clock() {
    // Segment 12 of `segment` ends at 1_700_000_000_000 + 13 × 2000 ms.
    let end_ms = 1_700_000_026_000;
    let clock = Clock::manual(end_ms + 1_000);
    let state = node_at(clock.clone());
    add_stream(&state, 10..13);
    let time = get(&state, "/api/time").await;
    assert_eq!(time.status, StatusCode::OK);
    assert_eq!(time.text(), "2023-11-14T22:13:47.000Z");
    assert_eq!(
        get(&state, "/api/streams/s").await.json()["live_window_age_ms"],
        1_000
    );
    assert!(clock.advance(2_500));
    assert_eq!(
        get(&state, "/api/time").await.text(),
        "2023-11-14T22:13:49.500Z"
    );
    assert_eq!(
        get(&state, "/api/streams/s").await.json()["live_window_age_ms"],
        3_500
    );
}

/// A path segment that is not UTF-8 once decoded, or a query an API cannot read, is
/// refused with a coded JSON body, never the framework's plain text.
#[tokio::test]
async fn unreadable_paths_and_queries_answer_with_a_code() {
    let (state, _) = node_with(0..3);
    for uri in [
        "/s/%FF.m3u8",
        "/%C3%28/index.m3u8",
        "/api/streams/%FF",
        "/api/experiments?history=many",
        "/api/experiments/%FF/start",
    ] {
        let method = if uri.ends_with("/start") {
            Method::POST
        } else {
            Method::GET
        };
        let a = request(&state, method, uri, &[]).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{uri}: {:?}", a.body);
        assert_eq!(a.headers[header::CONTENT_TYPE], "application/json", "{uri}");
        let code = a.json()["code"].as_u64().unwrap_or(0);
        assert_eq!(
            code / 1000,
            108,
            "{uri}: a request error of the code table, got {code}"
        );
    }
}

/// A method a path does not take is refused with the code table's 405 and the methods
/// it does take, on the node's routes and the MC's.
#[tokio::test]
async fn a_wrong_method_is_a_coded_405_with_allow() {
    let (state, _) = node_with(0..3);
    for (method, uri) in [
        (Method::POST, "/s/mono.m3u8"),
        (Method::DELETE, "/api/node"),
    ] {
        let a = request(&state, method, uri, &[]).await;
        assert_eq!(a.status, StatusCode::METHOD_NOT_ALLOWED, "{uri}");
        assert_eq!(a.json()["code"], 108_008, "{uri}");
        assert!(
            a.headers.contains_key(header::ALLOW),
            "{uri}: {:?}",
            a.headers
        );
    }
}
