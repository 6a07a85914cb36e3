//! A meeting's recording retention: its own `recording_depth_days` (checked at creation,
//! handed to nodes in the sync), else the MC's default; the MC's sweep removes what is
//! past it, closed meetings' included, from a real store directory.

use axum::body::Body;
use axum::http::{Method, StatusCode};
use serde_json::json;

use super::{app, call, settings};
use crate::recordings::sweep;
use crate::McState;

const DAY_MS: i64 = 86_400_000;

/// Writes one archive object of `meeting` into the store directory `root`, as a node's
/// upload would (its content does not matter to retention).
fn put_object(bucket: &recordings::Bucket, root: &std::path::Path, meeting: &str) {
    let key = recordings::key::ObjectKey {
        span: 1,
        first_msn: 1,
        last_msn: 2,
        count: 2,
    };
    let prefix = bucket.archive_prefix(&[meeting, "ts"]);
    let dir = root.join(prefix.as_ref());
    std::fs::create_dir_all(&dir).expect("archive dir");
    std::fs::write(dir.join(key.to_string()), b"object").expect("object");
}

fn objects(root: &std::path::Path, meeting: &str) -> usize {
    std::fs::read_dir(root.join(meeting).join("ts")).map_or(0, Iterator::count)
}

#[tokio::test]
async fn each_meeting_keeps_its_recording_as_long_as_it_says_then_the_mc_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    std::fs::create_dir_all(&root).unwrap();
    let location =
        recordings::Location::parse(&format!("file://{}", root.display()), None, None, None)
            .expect("a store directory");
    let bucket = recordings::Bucket::open(&location, None, None).expect("the store");
    let mut settings = settings(dir.path());
    settings.recordings = Some(bucket.clone());
    let mc = McState::open(settings).unwrap();
    let app = app(&mc);
    // Out of range: refused with the field named.
    let (status, body) = call(
        &app,
        Method::POST,
        "/api/meetings",
        Some("admin"),
        &[],
        json!({"id": "never", "recording_depth_days": 0}).to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["field"], "recording_depth_days", "{body}");
    let (status, body) = call(
        &app,
        Method::POST,
        "/api/meetings",
        Some("admin"),
        &[],
        json!({"id": "short", "recording_depth_days": 1}).to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["recording_depth_days"], 1);
    super::create(&app, "plain").await;
    // Nodes learn the meeting's retention in the sync.
    let (_, sync) = call(
        &app,
        Method::GET,
        "/api/nodes/sync?node=a",
        Some("nodes"),
        &[],
        Body::empty(),
    )
    .await;
    let views = sync["meetings"].as_array().expect("meetings");
    let short = views.iter().find(|v| v["id"] == "short").expect("short");
    assert_eq!(short["recording_depth_days"], 1, "{sync}");
    let plain = views.iter().find(|v| v["id"] == "plain").expect("plain");
    assert!(plain.get("recording_depth_days").is_none(), "{sync}");

    // The meeting with a day closes; two days on its recording goes, the other's stays
    // (no default) until a default covers it.
    let (status, _) = call(
        &app,
        Method::POST,
        "/api/meetings/short/close",
        Some("admin"),
        &[],
        Body::empty(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    put_object(&bucket, &root, "short");
    put_object(&bucket, &root, "plain");
    let now = mc.clock().unix_ms();
    assert_eq!(sweep(&mc, None, now).await, 0, "nothing is old yet");
    assert_eq!(sweep(&mc, None, now + 2 * DAY_MS).await, 1);
    assert_eq!((objects(&root, "short"), objects(&root, "plain")), (0, 1));
    assert_eq!(sweep(&mc, Some(3 * DAY_MS), now + 2 * DAY_MS).await, 0);
    assert_eq!(sweep(&mc, Some(DAY_MS), now + 2 * DAY_MS).await, 1);
    assert_eq!(objects(&root, "plain"), 0);
}
