//! The shedding layer through the router (no socket): fault-injection rules (FIT-1)
//! scoped to a member and a device, their expiry and admin API, progressive shedding
//! at a forced overload level (SHED-2) with the back-pressure answer (SHED-3), and the
//! metrics.

mod harness;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderMap, Method, StatusCode};
use bytes::Bytes;
use server::shed::{member_id, ShedSettings, Shedder};
use server::AppState;
use shed::{BackPressure, Bucket, OverloadLevel, Priority, RouteKind, RouteRule};

use harness::{add_stream, get_with, node_shedding, send, Answer, CHROME_UA, SEGMENT_BYTES, TV_UA};

fn node_with(settings: &ShedSettings, token: Option<&str>) -> AppState {
    let state = node_shedding(settings, token);
    add_stream(&state, 10..13);
    state
}

/// A telemetry beacon (NON_CRITICAL): `POST /telemetry`, answered 204 when admitted.
async fn beacon(state: &AppState, headers: &[(&str, &str)]) -> Answer {
    send(state, Method::POST, "/telemetry", headers, Body::from("{}")).await
}

async fn post_rule(state: &AppState, json: &str) -> Answer {
    send(
        state,
        Method::POST,
        "/api/fault-rules",
        &[
            ("authorization", "Bearer tok"),
            ("content-type", "application/json"),
        ],
        Body::from(json.to_owned()),
    )
    .await
}

/// SHED-3: the exact back-pressure answer; returns (maxRetries, retryAfterSeconds).
fn assert_shed_answer(a: &Answer) -> (u64, u64) {
    assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(a.headers[header::CONTENT_TYPE], "application/json");
    assert_eq!(a.headers[header::CACHE_CONTROL], "no-store");
    assert_eq!(a.headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
    // A page's script on another origin may read the Retry-After.
    let exposed = a.headers[header::ACCESS_CONTROL_EXPOSE_HEADERS]
        .to_str()
        .expect("ascii");
    assert!(exposed.contains("Retry-After"), "{exposed}");
    let v = a.json();
    let obj = v.as_object().expect("object");
    let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["code", "maxRetries", "retryAfterSeconds"]);
    // The back-pressure code of the one code table, beside the seed's two dials.
    assert_eq!(obj["code"].as_u64(), Some(109_001));
    let retries = obj["maxRetries"].as_u64().expect("integer");
    let after = obj["retryAfterSeconds"].as_u64().expect("integer");
    assert!(after >= 1);
    let header: u64 = a.headers[header::RETRY_AFTER]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("seconds");
    assert_eq!(header, after, "Retry-After matches the body");
    (retries, after)
}

#[tokio::test]
async fn fit_rule_for_one_member_and_device_sheds_only_their_requests_in_range() {
    let state = node_with(&ShedSettings::default(), Some("tok"));
    // FIT-1: NON_CRITICAL and DEGRADED (0..=69) of member alice on smart TVs only.
    let added = post_rule(
        &state,
        r#"{"min_priority":0,"max_priority":69,"devices":["smart_tv"],"members":["alice"],"duration_seconds":60}"#,
    )
    .await;
    assert_eq!(added.status, StatusCode::CREATED);
    let id = added.json()["id"].as_u64().expect("rule id");

    let alice_tv_header = [
        ("x-brdyun-member", "alice"),
        ("x-brdyun-device", "smart_tv"),
    ];
    let alice_tv_ua = [("x-brdyun-member", "alice"), ("user-agent", TV_UA)];
    // Telemetry (NON_CRITICAL) of alice on a TV: shed, whether the device comes from
    // the device header or the User-Agent.
    let first = beacon(&state, &alice_tv_header).await;
    let (retries, _) = assert_shed_answer(&first);
    assert_eq!(retries, 0, "NON_CRITICAL gets no retries");
    assert_shed_answer(&beacon(&state, &alice_tv_ua).await);
    assert_shed_answer(&get_with(&state, "/", &alice_tv_ua).await);

    // Her live segment and playlist (CRITICAL, above the range) still pass.
    assert_eq!(
        get_with(&state, "/s/seg-11.ts", &alice_tv_header)
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        get_with(&state, "/s/mono.m3u8", &alice_tv_ua).await.status,
        StatusCode::OK
    );
    // Another member on a TV, alice on a browser, an anonymous TV: not selected (the
    // beacon sink answers 204).
    let bob_tv = [("x-brdyun-member", "bob"), ("x-brdyun-device", "smart_tv")];
    assert_eq!(beacon(&state, &bob_tv).await.status, StatusCode::NO_CONTENT);
    let alice_browser = [("x-brdyun-member", "alice"), ("user-agent", CHROME_UA)];
    assert_eq!(
        beacon(&state, &alice_browser).await.status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        get_with(&state, "/", &[("user-agent", TV_UA)]).await.status,
        StatusCode::TEMPORARY_REDIRECT
    );

    // Every injection is counted, on the rule and per bucket.
    let list = get_with(
        &state,
        "/api/fault-rules",
        &[("authorization", "Bearer tok")],
    )
    .await;
    assert_eq!(list.status, StatusCode::OK);
    let rules = list.json();
    let rule = &rules["rules"][0];
    assert_eq!(rule["id"].as_u64(), Some(id));
    assert_eq!(rule["injected"].as_u64(), Some(3));
    assert_eq!(rule["devices"], serde_json::json!(["smart_tv"]));
    assert_eq!(rule["members"].as_u64(), Some(1));
    let counts = state.shedder().metrics().counts(Bucket::NonCritical);
    assert_eq!((counts.injected, counts.shed), (3, 0));
    assert_eq!(
        state.shedder().metrics().counts(Bucket::Critical).injected,
        0
    );

    // Removing the rule answers its final counter and stops the injection.
    let removed = send(
        &state,
        Method::DELETE,
        &format!("/api/fault-rules/{id}"),
        &[("authorization", "Bearer tok")],
        Body::empty(),
    )
    .await;
    assert_eq!(removed.status, StatusCode::OK);
    assert_eq!(removed.json()["injected"].as_u64(), Some(3));
    assert_eq!(
        beacon(&state, &alice_tv_header).await.status,
        StatusCode::NO_CONTENT
    );
}

#[tokio::test(start_paused = true)]
async fn fit_rule_expires_after_its_duration() {
    let state = node_with(&ShedSettings::default(), Some("tok"));
    let added = post_rule(&state, r#"{"max_priority":29,"duration_seconds":10}"#).await;
    assert_eq!(added.status, StatusCode::CREATED);
    assert_shed_answer(&beacon(&state, &[]).await);

    tokio::time::advance(Duration::from_secs(4)).await;
    let list = get_with(
        &state,
        "/api/fault-rules",
        &[("authorization", "Bearer tok")],
    )
    .await;
    let remaining = list.json()["rules"][0]["remaining_seconds"]
        .as_f64()
        .expect("remaining");
    assert!((remaining - 6.0).abs() < 0.01, "{remaining}");
    assert_shed_answer(&beacon(&state, &[]).await);

    tokio::time::advance(Duration::from_secs(6)).await;
    assert_eq!(beacon(&state, &[]).await.status, StatusCode::NO_CONTENT);
    let list = get_with(
        &state,
        "/api/fault-rules",
        &[("authorization", "Bearer tok")],
    )
    .await;
    assert_eq!(list.json()["rules"], serde_json::json!([]));
}

#[tokio::test]
async fn fault_rule_api_validates_fields_authenticates_and_caps() {
    let settings = ShedSettings {
        fault_rule_cap: 2,
        ..ShedSettings::default()
    };
    let state = node_with(&settings, Some("tok"));

    let anonymous = send(
        &state,
        Method::POST,
        "/api/fault-rules",
        &[],
        Body::from("{}"),
    )
    .await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    let anonymous = get_with(
        &state,
        "/api/fault-rules",
        &[("authorization", "Bearer nope")],
    )
    .await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);

    for (body, field) in [
        ("not json", "body"),
        ("[1]", "body"),
        (r#"{"duration_seconds":10,"colour":"red"}"#, "colour"),
        (
            r#"{"min_priority":150,"duration_seconds":10}"#,
            "min_priority",
        ),
        (
            r#"{"max_priority":-1,"duration_seconds":10}"#,
            "max_priority",
        ),
        (
            r#"{"min_priority":50,"max_priority":40,"duration_seconds":10}"#,
            "min_priority",
        ),
        (r#"{"devices":["fridge"],"duration_seconds":10}"#, "devices"),
        (r#"{"devices":"smart_tv","duration_seconds":10}"#, "devices"),
        (r#"{"devices":[],"duration_seconds":10}"#, "devices"),
        (r#"{"members":[""],"duration_seconds":10}"#, "members"),
        (r#"{"members":[],"duration_seconds":10}"#, "members"),
        (r#"{"share":1.5,"duration_seconds":10}"#, "share"),
        (r#"{"share":"half","duration_seconds":10}"#, "share"),
        (r#"{"share":0.5}"#, "duration_seconds"),
        (r#"{"duration_seconds":0}"#, "duration_seconds"),
        (r#"{"duration_seconds":100000000}"#, "duration_seconds"),
    ] {
        let a = post_rule(&state, body).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{body}");
        let v = a.json();
        // The fault-rule family's code, its fixed message, and the field at fault.
        assert_eq!(v["code"].as_u64(), Some(107_001), "{body}");
        assert_eq!(v["message"], "the fault rule is invalid", "{body}");
        assert_eq!(v["field"], field, "{body}");
    }

    // A body beyond the API's limit is the request family's coded 413, not axum's
    // plain text.
    let huge = format!(
        r#"{{"duration_seconds":10,"pad":"{}"}}"#,
        "x".repeat(server::http::extract::MAX_API_BODY)
    );
    let a = post_rule(&state, &huge).await;
    assert_eq!(a.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(a.headers[header::CONTENT_TYPE], "application/json");
    assert_eq!(a.json()["code"].as_u64(), Some(108_005));

    let first = post_rule(&state, r#"{"share":0,"duration_seconds":60}"#).await;
    assert_eq!(first.status, StatusCode::CREATED);
    let second = post_rule(&state, r#"{"share":0,"duration_seconds":60}"#).await;
    assert_eq!(second.status, StatusCode::CREATED);
    let full = post_rule(&state, r#"{"share":0,"duration_seconds":60}"#).await;
    assert_eq!(full.status, StatusCode::CONFLICT);
    assert_eq!(full.json()["code"].as_u64(), Some(107_003));

    let auth = [("authorization", "Bearer tok")];
    let missing = send(
        &state,
        Method::DELETE,
        "/api/fault-rules/999",
        &auth,
        Body::empty(),
    )
    .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.json()["code"].as_u64(), Some(107_002));
    let junk = send(
        &state,
        Method::DELETE,
        "/api/fault-rules/x1",
        &auth,
        Body::empty(),
    )
    .await;
    assert_eq!(junk.status, StatusCode::BAD_REQUEST);
    let id = first.json()["id"].as_u64().expect("id");
    let removed = send(
        &state,
        Method::DELETE,
        &format!("/api/fault-rules/{id}"),
        &auth,
        Body::empty(),
    )
    .await;
    assert_eq!(removed.status, StatusCode::OK);
    let again = post_rule(&state, r#"{"share":0,"duration_seconds":60}"#).await;
    assert_eq!(again.status, StatusCode::CREATED, "a slot is free again");
    // Share 0 selects nobody: requests pass.
    assert_eq!(beacon(&state, &[]).await.status, StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn at_forced_high_overload_low_buckets_are_shed_and_segments_still_pass() {
    let mut settings = ShedSettings::default();
    // Configure the "other" routes (here `/`, the redirect to the player) as DEGRADED,
    // which also shows the `[shedding.classifier]` table at work.
    settings.classifier.routes.insert(
        RouteKind::Other,
        RouteRule {
            bucket: Bucket::Degraded,
            score: 45,
        },
    );
    let state = node_with(&settings, None);
    let browser = [("x-brdyun-device", "browser")];
    assert_eq!(
        get_with(&state, "/", &browser).await.status,
        StatusCode::TEMPORARY_REDIRECT
    );

    // Level 0.9: threshold floor(99 · 0.729) = 72, above every DEGRADED score.
    state
        .shedder()
        .levels()
        .force_level(Some(OverloadLevel::new(0.9)));
    let telemetry = beacon(&state, &browser).await;
    let (nc_retries, nc_wait) = assert_shed_answer(&telemetry);
    let degraded = get_with(&state, "/", &browser).await;
    let (dg_retries, dg_wait) = assert_shed_answer(&degraded);
    assert!(
        dg_retries >= nc_retries && dg_wait <= nc_wait,
        "higher priority retries sooner"
    );
    assert_eq!(nc_retries, 0);
    // CRITICAL: a viewer's segments and playlists, and starting a playback, pass.
    let seg = get_with(&state, "/s/seg-12.ts", &browser).await;
    assert_eq!(seg.status, StatusCode::OK);
    assert_eq!(seg.body.len(), SEGMENT_BYTES);
    assert_eq!(
        get_with(&state, "/s/mono.m3u8", &browser).await.status,
        StatusCode::OK
    );
    assert_eq!(
        get_with(&state, "/s/index.m3u8", &browser).await.status,
        StatusCode::OK
    );

    // A shed request's body is never read.
    let polled = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&polled);
    let body = Body::from_stream(futures_util::stream::poll_fn(move |_| {
        flag.store(true, Ordering::SeqCst);
        std::task::Poll::Ready(None::<Result<Bytes, std::io::Error>>)
    }));
    let posted = send(&state, Method::POST, "/telemetry", &browser, body).await;
    assert_shed_answer(&posted);
    assert!(
        !polled.load(Ordering::SeqCst),
        "the shed request's body was polled"
    );

    // Metrics show the counts, the level and the threshold.
    let metrics = get_with(&state, "/metrics", &browser).await;
    assert_eq!(metrics.status, StatusCode::OK);
    let text = std::str::from_utf8(&metrics.body).expect("utf-8");
    for line in [
        "brdyun_shed_requests_total{bucket=\"non_critical\",outcome=\"shed\"} 2\n",
        "brdyun_shed_requests_total{bucket=\"degraded\",outcome=\"shed\"} 1\n",
        "brdyun_shed_requests_total{bucket=\"degraded\",outcome=\"admitted\"} 1\n",
        "brdyun_shed_requests_total{bucket=\"critical\",outcome=\"admitted\"} 4\n",
        "brdyun_shed_requests_total{bucket=\"critical\",outcome=\"shed\"} 0\n",
        "brdyun_shed_overload_level 0.9\n",
        "brdyun_shed_threshold 72\n",
        "brdyun_shed_level_forced 1\n",
        "brdyun_shed_in_flight 1\n",
        "brdyun_shed_concurrency_limit 200\n",
        "brdyun_shed_request_duration_seconds_count{bucket=\"critical\"} 3\n",
        "brdyun_http_requests_total{kind=\"other\",status=\"5xx\"} 3\n",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }

    // Back to the measured level (0: no monitor runs here): nothing is shed.
    state.shedder().levels().force_level(None);
    assert_eq!(
        beacon(&state, &browser).await.status,
        StatusCode::NO_CONTENT
    );
}

#[tokio::test]
async fn an_injected_answer_is_the_same_as_a_real_shed() {
    let state = node_with(&ShedSettings::default(), Some("tok"));
    let member = [("x-brdyun-member", "carol"), ("x-brdyun-device", "android")];
    // Telemetry 20 + android 2 + identified member 2.
    let priority = Priority::new(24).expect("in range");
    let seed = member_id(b"carol").expect("named").0;
    let bp = BackPressure::default();

    // A real shed at level 0.7 (threshold 33).
    let level = OverloadLevel::new(0.7);
    state.shedder().levels().force_level(Some(level));
    let real = beacon(&state, &member).await;
    assert_shed_answer(&real);
    assert_eq!(
        real.body.as_ref(),
        bp.answer(priority, level, seed).json().as_bytes()
    );
    state.shedder().levels().force_level(None);
    assert_eq!(beacon(&state, &member).await.status, StatusCode::NO_CONTENT);

    // The same request shed by a rule at level 0: the same answer for that level,
    // with the same headers.
    let added = post_rule(
        &state,
        r#"{"members":["carol"],"max_priority":29,"duration_seconds":5}"#,
    )
    .await;
    assert_eq!(added.status, StatusCode::CREATED);
    let injected = beacon(&state, &member).await;
    assert_shed_answer(&injected);
    assert_eq!(
        state
            .shedder()
            .metrics()
            .counts(Bucket::NonCritical)
            .injected,
        1
    );
    assert_eq!(
        state.shedder().metrics().counts(Bucket::NonCritical).shed,
        1
    );
    let advice = bp.answer(priority, OverloadLevel::ZERO, seed);
    assert_eq!(injected.body.as_ref(), advice.json().as_bytes());
    let names = |h: &HeaderMap| {
        let mut n: Vec<String> = h.keys().map(|k| k.as_str().to_owned()).collect();
        n.sort();
        n
    };
    assert_eq!(names(&injected.headers), names(&real.headers));
    for h in [
        header::CONTENT_TYPE,
        header::CACHE_CONTROL,
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
    ] {
        assert_eq!(injected.headers[&h], real.headers[&h]);
    }
}

#[tokio::test]
async fn browsers_may_send_the_shedding_headers_cross_origin() {
    let state = node_with(&ShedSettings::default(), None);
    let preflight = send(
        &state,
        Method::OPTIONS,
        "/s/mono.m3u8",
        &[
            ("origin", "https://example.com"),
            ("access-control-request-method", "GET"),
            ("access-control-request-headers", "x-brdyun-member"),
        ],
        Body::empty(),
    )
    .await;
    assert_eq!(preflight.status, StatusCode::NO_CONTENT);
    let allowed = preflight.headers[header::ACCESS_CONTROL_ALLOW_HEADERS]
        .to_str()
        .expect("ascii")
        .to_ascii_lowercase();
    for h in ["x-brdyun-device", "x-brdyun-member", "x-brdyun-playback"] {
        assert!(allowed.contains(h), "{allowed}");
    }
}

#[tokio::test]
async fn disabled_shedding_passes_everything() {
    let settings = ShedSettings {
        enabled: false,
        ..ShedSettings::default()
    };
    let state = node_with(&settings, None);
    state
        .shedder()
        .levels()
        .force_level(Some(OverloadLevel::FULL));
    assert_eq!(beacon(&state, &[]).await.status, StatusCode::NO_CONTENT);
    assert_eq!(
        get_with(&state, "/", &[]).await.status,
        StatusCode::TEMPORARY_REDIRECT
    );
}

#[test]
fn shedding_section_parses_from_toml_with_defaults_and_named_errors() {
    let settings: ShedSettings = toml::from_str(
        "fault_rule_cap = 4\n[classifier.devices]\nsmart_tv = 9\n[back_pressure]\nmax_retries = 3\n",
    )
    .expect("valid toml");
    assert_eq!(settings.fault_rule_cap, 4);
    assert!(settings.enabled);
    assert_eq!(settings.tick_ms, 20);
    assert!(Shedder::new(&settings).is_ok());
    assert_eq!(
        toml::from_str::<ShedSettings>("").expect("empty"),
        ShedSettings::default()
    );
    assert!(toml::from_str::<ShedSettings>("enabeld = true").is_err());
    // [cut] keys left out take the cut controller's defaults, not [control]'s.
    let cut: ShedSettings =
        toml::from_str("level_source = \"cut\"\n[cut]\ncpu_target = 0.95\ncpu_low = 0.9\n")
            .expect("valid toml");
    assert_eq!(
        cut.cut,
        shed::LevelControlConfig {
            cpu_target: 0.95,
            cpu_low: 0.9,
            ..shed::LevelControlConfig::cut_default()
        }
    );
    assert!(toml::from_str::<ShedSettings>("[cut]\nrise = 1.0\n").is_err());

    let bad: ShedSettings =
        toml::from_str("[overload]\ncpu_low = 0.9\ncpu_high = 0.5\n").expect("valid toml");
    let err = Shedder::new(&bad).expect_err("unordered marks");
    assert!(
        err.to_string().starts_with("shedding.overload.cpu_high:"),
        "{err}"
    );
    let bad = ShedSettings {
        fault_rule_cap: 0,
        ..ShedSettings::default()
    };
    let err = Shedder::new(&bad).expect_err("zero cap");
    assert!(
        err.to_string().starts_with("shedding.fault_rule_cap:"),
        "{err}"
    );
}

/// FIT-1 without locking the operator out: a rule over every priority sheds viewers,
/// status reads and beacons, but never the fault-rule, experiments and pause APIs or
/// the operator screens, so the operator can always remove it.
#[tokio::test]
async fn a_rule_over_every_priority_never_sheds_operator_control() {
    let state = node_with(&ShedSettings::default(), Some("tok"));
    let added = post_rule(
        &state,
        r#"{"min_priority":0,"max_priority":99,"duration_seconds":60}"#,
    )
    .await;
    assert_eq!(added.status, StatusCode::CREATED);
    let id = added.json()["id"].as_u64().expect("rule id");
    let auth = [("authorization", "Bearer tok")];
    for viewer in ["/s/seg-11.ts", "/s/mono.m3u8", "/s/index.m3u8", "/player"] {
        assert_shed_answer(&get_with(&state, viewer, &[]).await);
    }
    // An operator route's shed answer is the same answer, without a CORS grant.
    let api = get_with(&state, "/api/streams", &auth).await;
    assert_eq!(api.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(api.json()["code"], 109_001);
    assert!(api
        .headers
        .get(header::ACCESS_CONTROL_ALLOW_ORIGIN)
        .is_none());
    assert_shed_answer(&beacon(&state, &[]).await);

    assert_eq!(
        get_with(&state, "/api/fault-rules", &auth).await.status,
        StatusCode::OK
    );
    assert_eq!(
        get_with(&state, "/api/experiments", &auth).await.status,
        StatusCode::OK
    );
    assert_eq!(
        get_with(&state, "/metrics", &[]).await.status,
        StatusCode::OK
    );
    assert_eq!(
        get_with(&state, "/backups", &[]).await.status,
        StatusCode::OK
    );
    assert_eq!(
        get_with(&state, "/experiments", &[]).await.status,
        StatusCode::OK
    );
    let paused = send(
        &state,
        Method::POST,
        "/api/streams/s/pause",
        &auth,
        Body::empty(),
    )
    .await;
    assert_eq!(paused.status, StatusCode::OK);
    let resumed = send(
        &state,
        Method::POST,
        "/api/streams/s/resume",
        &auth,
        Body::empty(),
    )
    .await;
    assert_eq!(resumed.status, StatusCode::OK);

    let removed = send(
        &state,
        Method::DELETE,
        &format!("/api/fault-rules/{id}"),
        &auth,
        Body::empty(),
    )
    .await;
    assert_eq!(removed.status, StatusCode::OK);
    assert_eq!(
        get_with(&state, "/s/seg-11.ts", &[]).await.status,
        StatusCode::OK
    );
    assert_eq!(
        state.shedder().metrics().counts(Bucket::Critical).injected,
        4
    );
}

/// SHED-1 on a stock node: catch-up playlists, archived segments, archive downloads
/// and the node's and streams' status count as DEGRADED; live playback as CRITICAL; beacons as
/// NON_CRITICAL (`brdyun_shed_requests_total`).
#[tokio::test]
async fn catch_up_and_status_count_as_degraded_on_a_stock_node() {
    let state = node_with(&ShedSettings::default(), None);
    let degraded = [
        "/s/index-1700000000-30.m3u8",
        "/s/index-1700000000-now.m3u8",
        "/s/timeshift_rel-60.m3u8",
        "/s/fmp4-1700000000-30.m3u8",
        "/s/index-1700000000-30.mpd",
        "/s/dvr-11.ts",
        "/s/dvr-11-v.m4s",
        "/s/archive-1700000000-3600.ts",
        "/api/streams",
        "/api/streams/s",
        "/api/node",
    ];
    for path in degraded {
        get_with(&state, path, &[]).await;
    }
    for path in ["/s/index.m3u8", "/s/mono.m3u8", "/s/seg-11.ts"] {
        let _ = get_with(&state, path, &[]).await;
    }
    beacon(&state, &[]).await;
    assert_eq!(
        state.shedder().metrics().counts(Bucket::Degraded).admitted,
        degraded.len() as u64
    );
    let metrics = get_with(&state, "/metrics", &[]).await;
    let text = String::from_utf8_lossy(&metrics.body);
    assert!(
        text.contains(&format!(
            "brdyun_shed_requests_total{{bucket=\"degraded\",outcome=\"admitted\"}} {}",
            degraded.len()
        )),
        "{text}"
    );
    assert!(
        text.contains("brdyun_shed_requests_total{bucket=\"non_critical\",outcome=\"admitted\"} 1")
    );
    // The three live requests and the scrape (operator observability, CRITICAL).
    assert_eq!(
        state.shedder().metrics().counts(Bucket::Critical).admitted,
        4
    );
}
