//! Continuous experiments through the router (no socket; EXP-1, EXP-2, FIT-1): a running
//! run sheds its experiment group's slice through the fault-injection path and nobody
//! else's, KPIs come from beacons, CRITICAL outcomes and beacon-less segment requests,
//! bad beacons are refused with a code, and the admin API needs the token.

mod harness;

use axum::body::Body;
use axum::http::{header, Method, StatusCode};
use experiments::{Assigner, Group};
use serde_json::Value;
use server::shed::member_id;
use server::{router, AppState};

use harness::{add_stream, get_with, metric, send, CHROME_UA, TV_UA};

const AUTH: (&str, &str) = ("authorization", "Bearer tok");

/// Everything (0..=99) shed for 10 % of TV members, 10 % of them control.
const DEFINITION: &str = r#"{"id":"tv-all","priorities":{"min":0,"max":99},
  "control_share_bp":1000,"experiment_share_bp":1000,"devices":["smart_tv"],
  "schedule":{"daily_at":"03:00"}}"#;

fn node() -> AppState {
    let state = harness::node(Some("tok"));
    add_stream(&state, 10..13);
    state
}

/// A member name in `group` of the experiment `id` (10 % / 10 % shares).
fn member_in(id: &str, group: Group) -> String {
    let assigner = Assigner::new(id, 1000, 1000);
    (0..10_000)
        .map(|i| format!("viewer-{i}"))
        .find(|name| assigner.group(member_id(name.as_bytes()).expect("named")) == group)
        .expect("10 % of 10 000 names")
}

async fn define_and_start(state: &AppState) -> String {
    let added = send(state, Method::POST, "/api/experiments", &[AUTH], DEFINITION).await;
    assert_eq!(added.status, StatusCode::CREATED, "{:?}", added.body);
    let started = send(
        state,
        Method::POST,
        "/api/experiments/tv-all/start",
        &[AUTH],
        Body::empty(),
    )
    .await;
    assert_eq!(started.status, StatusCode::OK, "{:?}", started.body);
    let run = started.json()["run"].as_str().expect("run id").to_string();
    assert!(run.starts_with("tv-all@"), "{run}");
    run
}

/// The merged KPI counters of the running run, for a group and device.
async fn running_kpis(state: &AppState, group: &str, device: &str) -> Value {
    let status = get_with(state, "/api/experiments", &[AUTH]).await;
    assert_eq!(status.status, StatusCode::OK);
    status.json()["running"][0]["kpis"][group][device].clone()
}

#[tokio::test]
async fn only_the_experiment_group_is_shed_through_the_fit_path() {
    let state = node();
    let exp = member_in("tv-all", Group::Experiment);
    let control = member_in("tv-all", Group::Control);
    let neither = member_in("tv-all", Group::Neither);
    fn tv(m: &str) -> [(&'static str, &str); 2] {
        [("user-agent", TV_UA), ("x-brdyun-member", m)]
    }
    let seg = "/s/seg-11.ts";

    // Before the run nobody is shed.
    assert_eq!(
        get_with(&state, seg, &tv(&exp)).await.status,
        StatusCode::OK
    );
    let run = define_and_start(&state).await;

    // The experiment group's TV requests get the back-pressure answer of a FIT rule.
    let shed = get_with(&state, seg, &tv(&exp)).await;
    assert_eq!(shed.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(shed.headers[header::CACHE_CONTROL], "no-store");
    let advice = shed.json();
    let after = advice["retryAfterSeconds"].as_u64().expect("seconds");
    assert!(advice["maxRetries"].is_u64(), "{advice}");
    assert_eq!(
        shed.headers[header::RETRY_AFTER].to_str().expect("ascii"),
        after.to_string()
    );
    // Control, members of neither group, the same member on a browser (out of scope)
    // and anonymous viewers are untouched.
    assert_eq!(
        get_with(&state, seg, &tv(&control)).await.status,
        StatusCode::OK
    );
    assert_eq!(
        get_with(&state, seg, &tv(&neither)).await.status,
        StatusCode::OK
    );
    let browser = [("user-agent", CHROME_UA), ("x-brdyun-member", exp.as_str())];
    assert_eq!(get_with(&state, seg, &browser).await.status, StatusCode::OK);
    assert_eq!(
        get_with(&state, seg, &[("user-agent", TV_UA)]).await.status,
        StatusCode::OK
    );

    // Counted as injected, and per run with its label.
    let metrics = get_with(&state, "/metrics", &[]).await;
    let text = String::from_utf8_lossy(&metrics.body).into_owned();
    assert_eq!(
        metric(
            &text,
            "brdyun_shed_requests_total{bucket=\"critical\",outcome=\"injected\"} "
        ),
        Some(1),
        "{text}"
    );
    let per_run = format!(
        "brdyun_experiment_shed_requests_total{{experiment=\"tv-all\",run=\"{run}\",device=\"smart_tv\"}} "
    );
    assert_eq!(metric(&text, &per_run), Some(1), "{text}");
    assert_eq!(metric(&text, "brdyun_experiments_running "), Some(1));
    // The shed CRITICAL request is the experiment group's failed CRITICAL request.
    let failures = format!(
        "brdyun_experiment_events_total{{experiment=\"tv-all\",run=\"{run}\",group=\"experiment\",device=\"smart_tv\",kind=\"critical_failures\"}} "
    );
    assert_eq!(metric(&text, &failures), Some(1), "{text}");
    let e = running_kpis(&state, "experiment", "smart_tv").await;
    assert_eq!(
        (
            e["critical_requests"].as_u64(),
            e["critical_failed"].as_u64()
        ),
        (Some(1), Some(1))
    );
    let c = running_kpis(&state, "control", "smart_tv").await;
    assert_eq!(
        (
            c["critical_requests"].as_u64(),
            c["critical_failed"].as_u64()
        ),
        (Some(1), Some(0))
    );

    // Telemetry of the experiment group is in the slice too, but KPI beacons are the
    // experiments' measurement channel: never shed for an experiment.
    let beacon = format!(r#"{{"session":"e9","member":"{exp}","event":"start","ttff_ms":900}}"#);
    let shed = send(
        &state,
        Method::POST,
        "/telemetry",
        &tv(&exp),
        beacon.clone(),
    )
    .await;
    assert_eq!(shed.status, StatusCode::SERVICE_UNAVAILABLE);
    let kpi = send(&state, Method::POST, "/telemetry/kpi", &tv(&exp), beacon).await;
    assert_eq!(kpi.status, StatusCode::NO_CONTENT);
    let e = running_kpis(&state, "experiment", "smart_tv").await;
    assert_eq!(e["start_attempts"], 1, "{e}");

    // Removing the definition ends the run and the shedding.
    let removed = send(
        &state,
        Method::DELETE,
        "/api/experiments/tv-all",
        &[AUTH],
        Body::empty(),
    )
    .await;
    assert_eq!(removed.status, StatusCode::OK);
    assert_eq!(
        get_with(&state, seg, &tv(&exp)).await.status,
        StatusCode::OK
    );
    let status = get_with(&state, "/api/experiments", &[AUTH]).await.json();
    assert_eq!(status["running"].as_array().map(Vec::len), Some(0));
    assert_eq!(status["history"][0]["id"], run.as_str());
    assert_eq!(
        status["history"][0]["outcome"]["reason"],
        "definition_removed"
    );
}

#[tokio::test]
async fn beacons_and_beaconless_segments_become_kpis() {
    let state = node();
    let control = member_in("tv-all", Group::Control);
    let exp = member_in("tv-all", Group::Experiment);
    let neither = member_in("tv-all", Group::Neither);
    define_and_start(&state).await;
    let post = |body: String| {
        let state = state.clone();
        async move {
            send(
                &state,
                Method::POST,
                "/telemetry",
                &[("user-agent", TV_UA)],
                body,
            )
            .await
        }
    };
    let start = |m: &str, session: &str| {
        format!(r#"{{"session":"{session}","member":"{m}","event":"start","ttff_ms":1500}}"#)
    };
    // A start, repeated (counted once), a stall; a member of neither group is ignored.
    for body in [
        start(&control, "c1"),
        start(&control, "c1"),
        format!(r#"{{"session":"c1","member":"{control}","event":"stall"}}"#),
        start(&neither, "n1"),
    ] {
        assert_eq!(post(body).await.status, StatusCode::NO_CONTENT);
    }
    // The device may be named in the body; the member in the header.
    let failed = send(
        &state,
        Method::POST,
        "/telemetry",
        &[("x-brdyun-member", exp.as_str())],
        r#"{"session":"e1","device":"smart_tv","event":"start_failed"}"#,
    )
    .await;
    assert_eq!(failed.status, StatusCode::NO_CONTENT);
    let c = running_kpis(&state, "control", "smart_tv").await;
    assert_eq!(c["start_attempts"], 1, "{c}");
    assert_eq!(c["sessions_with_stall"], 1, "{c}");
    let ttffs: u64 = c["ttff_ms"]
        .as_array()
        .map(|bins| bins.iter().filter_map(Value::as_u64).sum())
        .unwrap_or(0);
    assert_eq!(ttffs, 1, "one time to first frame: {c}");
    let e = running_kpis(&state, "experiment", "smart_tv").await;
    assert_eq!(
        (e["start_attempts"].as_u64(), e["start_failures"].as_u64()),
        (Some(1), Some(1))
    );

    // A TV that sends no beacons (no session header): the master playlist and its first
    // segment are a start; a segment 10 s late with 4 s of buffer is a stall.
    let quiet = (0..10_000)
        .map(|i| format!("quiet-{i}"))
        .find(|n| {
            Assigner::new("tv-all", 1000, 1000).group(member_id(n.as_bytes()).expect("named"))
                == Group::Control
        })
        .expect("a control name");
    let tv = [("user-agent", TV_UA), ("x-brdyun-member", quiet.as_str())];
    assert_eq!(
        get_with(&state, "/s/index.m3u8", &tv).await.status,
        StatusCode::OK
    );
    assert_eq!(
        get_with(&state, "/s/seg-10.ts", &tv).await.status,
        StatusCode::OK
    );
    let c = running_kpis(&state, "control", "smart_tv").await;
    assert_eq!(c["start_attempts"], 2, "inferred start: {c}");
    // Two CRITICAL requests answered: the master playlist and the segment.
    assert_eq!(
        (
            c["critical_requests"].as_u64(),
            c["critical_failed"].as_u64()
        ),
        (Some(2), Some(0)),
        "{c}"
    );
}

#[tokio::test]
async fn bad_beacons_are_refused_with_a_code() {
    let state = node();
    for (body, status, code) in [
        ("not json", StatusCode::BAD_REQUEST, 106_001),
        (r#"{"event":"stall"}"#, StatusCode::BAD_REQUEST, 106_001),
        (
            r#"{"session":"s","event":"start","ttff_ms":"fast"}"#,
            StatusCode::BAD_REQUEST,
            106_001,
        ),
    ] {
        let a = send(&state, Method::POST, "/telemetry", &[], body).await;
        assert_eq!(a.status, status, "{body}");
        assert_eq!(a.json()["code"], code, "{body}");
        assert!(
            a.json()["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{body}"
        );
    }
    let big = format!(
        r#"{{"session":"s","event":"stall","pad":"{}"}}"#,
        "x".repeat(5000)
    );
    let a = send(&state, Method::POST, "/telemetry", &[], big).await;
    assert_eq!(a.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(a.json()["code"], 106_002);
    // Logs and heartbeats are still welcome.
    for body in ["{}", r#"{"event":"heartbeat","bufferSeconds":8.1}"#] {
        let a = send(&state, Method::POST, "/telemetry", &[], body).await;
        assert_eq!(a.status, StatusCode::NO_CONTENT, "{body}");
    }
}

#[tokio::test]
async fn the_admin_api_needs_the_token_and_names_bad_fields() {
    let state = node();
    for (method, uri) in [
        (Method::GET, "/api/experiments"),
        (Method::POST, "/api/experiments"),
        (Method::DELETE, "/api/experiments/tv-all"),
        (Method::POST, "/api/experiments/tv-all/start"),
        (Method::GET, "/api/experiments/report"),
    ] {
        let a = send(&state, method.clone(), uri, &[], DEFINITION).await;
        assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{method} {uri}");
    }
    let bad = DEFINITION.replace("1000,\"devices", "5000,\"devices");
    let a = send(&state, Method::POST, "/api/experiments", &[AUTH], bad).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert_eq!(a.json()["code"], 106_010);
    // The fixed message of the code, and the value at fault named in `field`.
    assert_eq!(a.json()["message"], "the experiment definition is invalid");
    let field = a.json()["field"].as_str().unwrap_or_default().to_string();
    assert!(field.contains("experiment_share_bp"), "{field}");
    let a = send(&state, Method::POST, "/api/experiments", &[AUTH], "{").await;
    assert_eq!(
        (a.status, a.json()["code"].clone()),
        (StatusCode::BAD_REQUEST, Value::from(106_010))
    );

    let a = send(
        &state,
        Method::POST,
        "/api/experiments",
        &[AUTH],
        DEFINITION,
    )
    .await;
    assert_eq!(a.status, StatusCode::CREATED);
    let a = send(
        &state,
        Method::POST,
        "/api/experiments",
        &[AUTH],
        DEFINITION,
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "replaced");
    assert_eq!(a.json()["replaced"], true);
    let status = get_with(&state, "/api/experiments", &[AUTH]).await.json();
    assert_eq!(status["node"], "t");
    assert_eq!(status["experiments"][0]["definition"]["id"], "tv-all");
    assert_eq!(
        status["experiments"][0]["definition"]["duration_minutes"],
        45
    );
    assert!(status["experiments"][0]["next_run_ms"].is_u64());

    let start = |id: &'static str| {
        let state = state.clone();
        async move {
            send(
                &state,
                Method::POST,
                &format!("/api/experiments/{id}/start"),
                &[AUTH],
                Body::empty(),
            )
            .await
        }
    };
    let a = start("nope").await;
    assert_eq!(
        (a.status, a.json()["code"].clone()),
        (StatusCode::NOT_FOUND, Value::from(106_011))
    );
    assert_eq!(start("tv-all").await.status, StatusCode::OK);
    let a = start("tv-all").await;
    assert_eq!(
        (a.status, a.json()["code"].clone()),
        (StatusCode::CONFLICT, Value::from(106_012))
    );

    let report = get_with(&state, "/api/experiments/report", &[AUTH]).await;
    assert_eq!(report.status, StatusCode::OK);
    let runs = report.json()["runs"].clone();
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");

    let page = get_with(&state, "/experiments", &[]).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(String::from_utf8_lossy(&page.body).contains("/api/experiments"));

    let del = |id: &'static str| {
        let state = state.clone();
        async move {
            send(
                &state,
                Method::DELETE,
                &format!("/api/experiments/{id}"),
                &[AUTH],
                Body::empty(),
            )
            .await
        }
    };
    assert_eq!(del("tv-all").await.status, StatusCode::OK);
    assert_eq!(del("tv-all").await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn peer_reports_merge_into_the_running_run() {
    let a = node();
    let b = node();
    define_and_start(&a).await;
    // The same run on b (a run id is the definition and its start).
    let run = a.shedder().experiments().local_report().runs[0].0.clone();
    let start_ms: u64 = run
        .rsplit('@')
        .next()
        .and_then(|s| s.parse().ok())
        .expect("start");
    let def = experiments::ExperimentDefinition::from_json(DEFINITION).expect("valid");
    b.shedder()
        .experiments()
        .upsert(def, start_ms)
        .expect("valid");
    b.shedder()
        .experiments()
        .start_now("tv-all", start_ms)
        .expect("starts");
    let control = member_in("tv-all", Group::Control);
    let body = format!(
        r#"{{"session":"b1","member":"{control}","device":"smart_tv","event":"start_failed"}}"#
    );
    assert_eq!(
        send(&b, Method::POST, "/telemetry", &[], body).await.status,
        StatusCode::NO_CONTENT
    );
    let report = get_with(&b, "/api/experiments/report", &[AUTH]).await;
    let report: experiments::NodeReport = serde_json::from_slice(&report.body).expect("report");
    a.shedder()
        .experiments()
        .apply_report("node-b", report.clone());
    a.shedder().experiments().apply_report("node-b", report);
    let c = running_kpis(&a, "control", "smart_tv").await;
    assert_eq!(c["start_failures"], 1, "merged once: {c}");
    let status = get_with(&a, "/api/experiments", &[AUTH]).await.json();
    assert_eq!(status["running"][0]["nodes"][0], "node-b");
}

#[tokio::test]
async fn a_peer_report_is_pulled_over_http_signed_with_the_domains_peer_key() {
    use server::experiments::peer_auth::PeerKey;
    let b = node();
    let redundancy = std::sync::Arc::new(server::redundancy::Redundancy::new(
        server::redundancy::RedundancySettings::default(),
    ));
    let _ = redundancy
        .peer_key
        .set(PeerKey::derive(b"the domain secret of these tests"));
    assert!(b.set_redundancy(redundancy));
    define_and_start(&b).await;
    let control = member_in("tv-all", Group::Control);
    let body = format!(
        r#"{{"session":"b1","member":"{control}","device":"smart_tv","event":"start","ttff_ms":700}}"#
    );
    assert_eq!(
        send(&b, Method::POST, "/telemetry", &[], body).await.status,
        StatusCode::NO_CONTENT
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(server::run(listener, router(b.clone()), None, async {
        let _ = stopped.await;
    }));
    let base = format!("http://{addr}");
    let timeout = std::time::Duration::from_secs(5);
    use server::experiments::peers::{fetch_report, PeerError};
    let now_s = server::clock::unix_ms() / 1000;
    let domain = PeerKey::derive(b"the domain secret of these tests");
    let report = fetch_report(&base, &domain, now_s, timeout)
        .await
        .expect("report");
    assert_eq!(report.runs.len(), 1);
    let kpis = &report.runs[0].1;
    assert_eq!(
        kpis.control.get(shed::DeviceType::SmartTv).start_attempts,
        1
    );
    // Another domain's key, or a signature from long ago, opens nothing: the admin
    // token is never what a peer sends.
    let stranger = PeerKey::derive(b"another domain's secret, same size");
    assert_eq!(
        fetch_report(&base, &stranger, now_s, timeout).await,
        Err(PeerError::Status(401))
    );
    assert_eq!(
        fetch_report(&base, &domain, now_s - 3_600, timeout).await,
        Err(PeerError::Status(401))
    );
    assert_eq!(
        fetch_report("https://example.invalid", &domain, now_s, timeout).await,
        Err(PeerError::BadUrl)
    );
    let _ = stop.send(());
    let _ = served.await;
}
