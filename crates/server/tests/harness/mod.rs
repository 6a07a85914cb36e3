//! The one harness of the server's in-process tests (`tests/*.rs` of this crate): a
//! node's state with a stream in it, the segments, tracks and demo frames that fill
//! it, and requests sent through its router with the whole answer read. A test file
//! takes it with `mod harness;`; the OTT route tests add the mesh fixtures of
//! [`ott_node`].

#![allow(dead_code)]

pub mod ott_node;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use bytes::Bytes;
use http_body_util::BodyExt;
use media::Frame;
use server::clock::Clock;
use server::metrics::Metrics;
use server::shed::{ShedSettings, Shedder};
use server::stream::package::{LiveSegment, Package, TrackSummary};
use server::stream::recorder::Recorder;
use server::{router, AppState, NodeIdentity};
use tower::ServiceExt;

/// A smart TV's User-Agent (the classifier's `smart_tv`).
pub const TV_UA: &str = "Mozilla/5.0 (SMART-TV; Linux; Tizen 6.0) AppleWebKit/537.36 (KHTML, like Gecko) 85.0.4183.93/6.0 TV Safari/537.36";
/// A desktop Chrome's User-Agent (the classifier's `browser`).
pub const CHROME_UA: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36";

/// The demo meeting clip the node's built-in source plays.
pub const DEMO_CLIP: &[u8] = include_bytes!("../../../../assets/demo-meeting.ts");

/// A node's state named `t` with no stream yet, its admin API behind `token` when
/// given, and the default shedding settings.
pub fn node(token: Option<&str>) -> AppState {
    AppState::new(identity("t"), Metrics::new(), token.map(Into::into))
}

/// [`node`] with its own shedding settings.
pub fn node_shedding(settings: &ShedSettings, token: Option<&str>) -> AppState {
    let shedder = Arc::new(Shedder::new(settings).expect("valid shedding settings"));
    AppState::builder(identity("t"), Metrics::new())
        .admin_token(token.map(Into::into))
        .shedder(shedder)
        .build()
}

/// [`node`] whose wall clock is `clock` (a [`Clock::manual`] the test moves).
pub fn node_at(clock: Clock) -> AppState {
    AppState::builder(identity("t"), Metrics::new())
        .clock(clock)
        .build()
}

/// A node's identity with no hostname.
pub fn identity(name: &str) -> NodeIdentity {
    NodeIdentity {
        name: name.into(),
        hostname: None,
    }
}

/// Adds stream `s` (a window of 5, 2-s targets) to `state` with [`segment`]s `msns`.
pub fn add_stream(state: &AppState, msns: std::ops::Range<u64>) -> Arc<Package> {
    let channel = Arc::new(Package::new("s", 5, packaging::render::renderer(2000)));
    for msn in msns {
        channel.push(segment(msn), tracks());
    }
    state.add_stream(Arc::clone(&channel), None);
    channel
}

/// Bytes of a [`segment`]: ten TS packets.
pub const SEGMENT_BYTES: usize = 188 * 10;

/// A 2-s segment of ten TS packets whose bytes 1..9 carry `msn` (so a test can tell
/// which segment it got), dated from 2023-11-14 on, no timeline marker.
pub fn segment(msn: u64) -> LiveSegment {
    ts_segment(msn, 1_700_000_000_000, SEGMENT_BYTES / 188)
}

/// A 2-s segment of `packets` TS packets whose bytes 1..9 carry `msn`, segment 0
/// starting at `t0_ms` and `msn` starting `2 × msn` s later.
pub fn ts_segment(msn: u64, t0_ms: i64, packets: usize) -> LiveSegment {
    let mut data = vec![0x47u8; 188 * packets];
    data[1..9].copy_from_slice(&msn.to_be_bytes());
    LiveSegment {
        msn,
        discontinuity_seq: 0,
        discontinuous: false,
        duration_ticks: 180_000,
        program_date_time_ms: t0_ms + msn as i64 * 2000,
        data: Bytes::from(data),
        ..LiveSegment::default()
    }
}

/// H.264 + AAC, 640×360 at 25 fps.
pub fn tracks() -> TrackSummary {
    TrackSummary {
        codecs: vec!["avc1.64001e".into(), "mp4a.40.2".into()],
        resolution: Some((640, 360)),
        frame_rate_milli: Some(25_000),
    }
}

/// Every frame of the demo clip, in order.
pub fn demo_frames() -> Vec<Frame> {
    media::ts::demux_frames(DEMO_CLIP)
}

/// Polls `done` until it holds, for at most 10 s, yielding to the runtime between
/// looks (for state that tasks on this runtime change).
pub async fn yield_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::task::yield_now().await;
    }
}

/// Waits (at most 10 s) until `recorder` has written `count` segments to disk: its
/// writer is a thread of its own, so this sleeps between looks.
pub fn wait_recorded(recorder: &Recorder, count: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while recorder.status()["counters"]["recorded"].as_u64() < Some(count) {
        assert!(Instant::now() < deadline, "{}", recorder.status());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// An answer of the router, read whole.
#[derive(Debug)]
pub struct Answer {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The whole body.
    pub body: Bytes,
}

impl Answer {
    /// The body as JSON (panics when it is not).
    pub fn json(&self) -> serde_json::Value {
        json(&self.body)
    }

    /// The body as text (panics when it is not UTF-8).
    pub fn text(&self) -> &str {
        as_text(&self.body)
    }
}

/// Sends `request` through the node's router and reads the whole answer.
pub async fn answer(state: &AppState, request: Request<Body>) -> Answer {
    let response = router(state.clone())
        .oneshot(request)
        .await
        .expect("the router is infallible");
    read_answer(response).await
}

/// Reads a response whole.
pub async fn read_answer(response: axum::response::Response) -> Answer {
    let status = response.status();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("the body")
        .to_bytes();
    Answer {
        status,
        headers,
        body,
    }
}

/// `method uri` with `headers` and `body` (sent as `application/json` unless `headers`
/// name a content type: the operator APIs take nothing else).
pub async fn send(
    state: &AppState,
    method: Method,
    uri: &str,
    headers: &[(&str, &str)],
    body: impl Into<Body>,
) -> Answer {
    let mut request = Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
    {
        request = request.header("content-type", "application/json");
    }
    answer(state, request.body(body.into()).expect("a valid request")).await
}

/// `method uri` with `headers` and no body.
pub async fn request(
    state: &AppState,
    method: Method,
    uri: &str,
    headers: &[(&str, &str)],
) -> Answer {
    send(state, method, uri, headers, Body::empty()).await
}

/// `GET uri`.
pub async fn get(state: &AppState, uri: &str) -> Answer {
    request(state, Method::GET, uri, &[]).await
}

/// `GET uri` with `headers`.
pub async fn get_with(state: &AppState, uri: &str, headers: &[(&str, &str)]) -> Answer {
    request(state, Method::GET, uri, headers).await
}

/// `GET uri`, which must answer 200 with `content_type`; its body.
pub async fn get_ok(state: &AppState, uri: &str, content_type: &str) -> Bytes {
    let a = get(state, uri).await;
    assert_eq!(a.status, StatusCode::OK, "{uri}: {:?}", a.body);
    assert_eq!(
        a.headers[axum::http::header::CONTENT_TYPE],
        content_type,
        "{uri}"
    );
    a.body
}

/// The value of the first metrics line starting with `prefix`.
pub fn metric(text: &str, prefix: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|v| v.trim().parse().ok())
}

/// `body` as text (panics when it is not UTF-8).
pub fn as_text(body: &[u8]) -> &str {
    std::str::from_utf8(body).expect("a UTF-8 body")
}

/// `body` parsed as JSON (panics when it is not).
pub fn json(body: &[u8]) -> serde_json::Value {
    serde_json::from_slice(body).expect("a JSON body")
}

/// A media playlist parsed back (panics when it is not one).
pub fn media_playlist(body: &[u8]) -> m3u8_rs::MediaPlaylist {
    match m3u8_rs::parse_playlist_res(body) {
        Ok(m3u8_rs::Playlist::MediaPlaylist(p)) => p,
        other => panic!("not a media playlist: {other:?}"),
    }
}
