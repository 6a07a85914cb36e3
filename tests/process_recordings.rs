//! Recordings on object storage with real node processes and a real S3-compatible
//! server (moto): two nodes record the same meeting and the bucket ends with one copy of
//! each closed archive file, the logs saying which node uploaded it and which found it
//! there; the bucket is out of both nodes' reach for a minute mid-meeting and every
//! segment node a's live playlist listed is in the bucket afterwards, byte for byte.

mod common;

#[path = "../crates/recordings/tests/support/s3_server.rs"]
mod s3_server;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::cluster::{Cluster, ADMIN};
use common::recording_nodes::{
    credentials_file, recordings_section, start_recording_node as start_node, BUCKET,
};
use common::{
    http_get_as_node, http_get_json, http_request, parse_media_playlist, parse_pdt, wait_for,
    NodeProcess,
};
use recordings::key::ObjectKey;
use recordings::{Bucket, Credentials, Location, RemoteArchive};
use s3_server::{Gate, S3Server};

const MEETING: &str = "m";
/// The uploader's state on a node.
fn recordings(node: &NodeProcess) -> serde_json::Value {
    let (status, doc) = http_get_json(node.http, "/api/node");
    assert_eq!(status, 200, "{doc}");
    doc["recordings"].clone()
}

/// Segments by MSN, each with the object holding it.
type Stored = BTreeMap<u64, (ObjectKey, Vec<u8>)>;

/// Every segment of the archive in the bucket, with the objects' keys.
fn bucket_segments(endpoint: &str) -> (Vec<ObjectKey>, Stored) {
    let location = Location::parse(
        &format!("s3://{BUCKET}/rec"),
        Some(endpoint.to_owned()),
        None,
        Some(Credentials {
            access_key_id: "test-key".into(),
            secret_access_key: "test-secret".into(),
            session_token: None,
        }),
    )
    .expect("location");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let bucket = Bucket::open(&location, None, None).expect("bucket");
        let archive = RemoteArchive::new(&bucket, &[MEETING.to_owned(), "ts".to_owned()]);
        let keys = archive.objects().await.expect("list");
        let mut segments = BTreeMap::new();
        for key in &keys {
            for entry in archive.index(key).await.expect("index") {
                let bytes = archive.segment(key, &entry).await.expect("segment");
                segments.insert(entry.msn, (*key, bytes.to_vec()));
            }
        }
        (keys, segments)
    })
}

#[test]
fn two_nodes_keep_one_copy_and_a_cut_bucket_loses_nothing() {
    let server = S3Server::start();
    server.create_bucket(BUCKET);
    let gate = Gate::new(server.addr);
    let dir = tempfile::tempdir().expect("tempdir");
    let credentials = credentials_file(dir.path());
    // The MC reads the same bucket for its recordings API.
    let cluster = Cluster::mc()
        .sections(&format!(
            "[[meeting]]\nid = \"{MEETING}\"\nstart = true\ninputs = [\"builtin://meeting\"]\n{}",
            recordings_section(&server.endpoint(), &credentials)
        ))
        // Short live windows: a node that joins later gets only the last seconds from
        // the MC, so an older period can come from the bucket alone.
        .defaults(Some("segment_duration = 1\nwindow = 4\n"))
        .node(|node| node.stream = Some("segment_duration = 1\nwindow = 4\n".to_owned()))
        .dvr("dvr = { enabled = true, depth = \"1h\", file_span = \"4s\" }")
        .start();
    // Both nodes reach the bucket through the gate.
    let a = start_node(
        &cluster,
        "a",
        &recordings_section(&gate.endpoint(), &credentials),
    );
    let b = start_node(
        &cluster,
        "b",
        &recordings_section(&gate.endpoint(), &credentials),
    );

    // Node a's live playlist, watched for 80 s: every segment listed, with its bytes.
    // The gate is shut from 8 s to 68 s: the bucket is down for a minute for both.
    let mut seen: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    let mut first_pdt_ms = None;
    let start = Instant::now();
    let mut shut = false;
    while start.elapsed() < Duration::from_secs(80) {
        let elapsed = start.elapsed();
        let should_shut = elapsed >= Duration::from_secs(8) && elapsed < Duration::from_secs(68);
        if should_shut != shut {
            gate.set_open(!should_shut);
            shut = should_shut;
        }
        let (status, _, body) = http_get_as_node(a.http, &format!("/{MEETING}/mono.m3u8"));
        if status == 200 {
            for entry in parse_media_playlist(&String::from_utf8_lossy(&body)) {
                if seen.contains_key(&entry.msn) {
                    continue;
                }
                let (status, _, data) =
                    http_get_as_node(a.http, &format!("/{MEETING}/{}", entry.uri));
                if status == 200 {
                    first_pdt_ms.get_or_insert(parse_pdt(&entry.program_date_time));
                    seen.insert(entry.msn, data);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(400));
    }
    assert!(seen.len() >= 25, "{} segments seen", seen.len());
    for node in [&a, &b] {
        let while_cut = recordings(node);
        assert!(
            while_cut["failed_uploads"].as_u64().unwrap_or(0) >= 1,
            "the cut was noticed: {while_cut}"
        );
    }

    // Both nodes catch up: nothing queued, the bucket reachable.
    wait_for(
        "both uploaders to catch up",
        Duration::from_secs(60),
        || {
            let (ra, rb) = (recordings(&a), recordings(&b));
            (ra["queued"]["files"] == 0 && rb["queued"]["files"] == 0 && ra["state"] == "ok")
                .then_some(())
        },
    );
    // One object per data file span (a late starter's partial copy gives way).
    let (keys, stored) = wait_for("one object per span", Duration::from_secs(30), || {
        let (keys, stored) = bucket_segments(&server.endpoint());
        let mut spans: Vec<u32> = keys.iter().map(|k| k.span).collect();
        spans.dedup();
        (spans.len() == keys.len()).then_some((keys, stored))
    });
    assert!(keys.len() >= 6, "{keys:?}");
    // Every segment node a listed live, in a span now closed, is in the bucket as served.
    let newest_closed = keys.iter().map(|k| k.last_msn).max().expect("objects");
    let mut compared = 0;
    for (msn, bytes) in seen.range(..=newest_closed) {
        let (key, stored) = stored
            .get(msn)
            .unwrap_or_else(|| panic!("segment {msn} listed live is not in the bucket"));
        assert_eq!(
            stored, bytes,
            "segment {msn} in {key} differs from the live one"
        );
        compared += 1;
    }
    assert!(compared >= 20, "{compared} segments compared");

    // Which node uploaded and which found it there, in their logs and their counters.
    let (ra, rb) = (recordings(&a), recordings(&b));
    let files = |r: &serde_json::Value, what: &str| r[what]["files"].as_u64().unwrap_or(0);
    assert_eq!(
        files(&ra, "uploaded") + files(&rb, "uploaded"),
        keys.len() as u64
            + ra["removed"]["redundant"].as_u64().unwrap_or(0)
            + rb["removed"]["redundant"].as_u64().unwrap_or(0),
        "a: {ra}\nb: {rb}"
    );
    assert!(
        files(&ra, "deduplicated") + files(&rb, "deduplicated") >= 1,
        "a: {ra}\nb: {rb}"
    );
    let logs: String = [&a, &b]
        .iter()
        .map(|n| std::fs::read_to_string(&n.log).unwrap_or_default())
        .collect();
    assert!(logs.contains("recording uploaded to the bucket"));
    assert!(logs.contains("recording found in the bucket"));
    let log_a = std::fs::read_to_string(&a.log).unwrap_or_default();
    assert!(
        log_a.contains("recordings upload failed"),
        "node a logged the cut"
    );
    assert!(
        log_a.contains("uploads resumed"),
        "node a logged the return"
    );
    assert!(!logs.contains("test-secret"), "a secret in the logs");

    // A node that joins now, with nothing of the period on its disk, serves it from the
    // bucket: the catch-up playlist and every segment, as node a served them live.
    let c = start_node(
        &cluster,
        "c",
        &recordings_section(&server.endpoint(), &credentials),
    );
    let from = first_pdt_ms.expect("a PDT") / 1000 + 1;
    let catch_up = format!("/{MEETING}/mono-{from}-20.m3u8");
    let listed = wait_for(
        "node c's catch-up from the bucket",
        Duration::from_secs(40),
        || {
            let (status, _, body) = http_get_as_node(c.http, &catch_up);
            let entries = parse_media_playlist(&String::from_utf8_lossy(&body));
            (status == 200 && entries.len() >= 15).then_some(entries)
        },
    );
    let dvr = http_get_json(c.http, &format!("/api/streams/{MEETING}")).1["dvr"].clone();
    let local_from = dvr["local"]["ts"]["from_ms"]
        .as_i64()
        .expect("a local range");
    assert!(dvr["remote"]["ts"]["from_ms"].as_i64().is_some(), "{dvr}");
    assert!(
        local_from > (from + 20) * 1000,
        "the period is not on c's disk: {dvr}"
    );
    for entry in &listed {
        let (status, _, data) = http_get_as_node(c.http, &format!("/{MEETING}/{}", entry.uri));
        assert_eq!(status, 200, "{}", entry.uri);
        if let Some(live) = seen.get(&entry.msn) {
            assert_eq!(&data, live, "segment {} from the bucket differs", entry.msn);
        }
    }

    // The MC lists the meeting's recordings from the bucket: the source rendition, its
    // objects and bytes, and periods whose catch-up URLs node c plays.
    let (status, doc) = http_request(
        cluster.mc.http,
        "GET",
        &format!("/api/meetings/{MEETING}/recordings"),
        &[ADMIN],
        "",
    );
    assert_eq!(status, 200, "{doc}");
    let source = &doc["renditions"][0];
    assert_eq!(source["rendition"], "source", "{doc}");
    assert!(
        source["objects"].as_u64().unwrap_or(0) as usize >= keys.len(),
        "{doc}"
    );
    assert!(source["bytes"].as_u64().unwrap_or(0) > 0, "{doc}");
    let periods = source["periods"].as_array().expect("periods");
    assert!(!periods.is_empty(), "{doc}");
    let first = &periods[0];
    assert!(first["to_ms"].as_i64() > first["from_ms"].as_i64(), "{doc}");
    let hls = first["urls"]["hls"].as_str().expect("an HLS URL");
    let (status, _, body) = http_get_as_node(c.http, hls);
    assert_eq!(status, 200, "{hls}");
    assert!(String::from_utf8_lossy(&body).contains("#EXTM3U"));
    // Without a token the listing is refused.
    let (status, _) = http_request(
        cluster.mc.http,
        "GET",
        &format!("/api/meetings/{MEETING}/recordings"),
        &[],
        "",
    );
    assert_eq!(status, 401);
}
