//! The uploader against a real S3-compatible server (moto, on loopback): two nodes that
//! recorded the same meeting leave one copy in the bucket, whichever uploads first; a
//! late joiner's partial copy is replaced by the full one; an unreachable bucket stops
//! nothing and loses nothing.

mod support;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use dvr::files::RealFiles;
use dvr::store::SegmentMeta;
use dvr::{Protocol, Store};
use futures_util::TryStreamExt;
use object_store::ObjectStoreExt;
use recordings::key::ObjectKey;
use recordings::{ArchiveSource, Bucket, Credentials, Location, Uploader, UploaderSettings};
use support::s3_server::{Gate, S3Server};

/// Ten-second data files, two-second segments: five segments per file.
const SPAN_MS: i64 = 10_000;
/// The recording starts on a span boundary a while ago, so every file is closed.
const T0: i64 = 1_700_000_000_000;

/// A segment's bytes: the same on every node for the same MSN (the same timeline).
fn segment(msn: u64) -> Vec<u8> {
    (0..1000 + msn as usize * 7)
        .map(|i| (i as u64 * 31 + msn) as u8)
        .collect()
}

fn record(dir: &std::path::Path, msns: std::ops::RangeInclusive<u64>) -> Store {
    let (mut store, _) = Store::open(
        dir,
        Protocol::Ts,
        Arc::new(RealFiles { sync: false }),
        SPAN_MS,
    )
    .expect("archive opens");
    for msn in msns {
        let meta = SegmentMeta {
            msn,
            discontinuity_seq: 0,
            discontinuous: false,
            start_ms: T0 + msn as i64 * 2_000,
            duration_ticks: 180_000,
        };
        store.append(meta, &segment(msn)).expect("append");
    }
    store
}

fn bucket(endpoint: String) -> Bucket {
    let location = Location::parse(
        "s3://recordings/brdyun",
        Some(endpoint),
        None,
        Some(Credentials {
            access_key_id: "test-key".into(),
            secret_access_key: "test-secret".into(),
            session_token: None,
        }),
    )
    .expect("location");
    Bucket::open(&location, None, None).expect("bucket")
}

fn uploader(endpoint: String, node: &str, store: &Store) -> (Arc<Uploader>, Arc<AtomicI64>) {
    let settings = UploaderSettings {
        node: node.into(),
        grace_ms: 0,
        ..UploaderSettings::default()
    };
    let uploader = Uploader::new(bucket(endpoint), settings);
    let hold = Arc::new(AtomicI64::new(i64::MAX));
    uploader.register(ArchiveSource {
        names: vec!["board-meeting".into(), "ts".into()],
        reader: store.reader(),
        hold: Arc::clone(&hold),
        remote_depth_ms: None,
    });
    (uploader, hold)
}

/// Every archive object in the bucket: its key and its bytes.
async fn objects(bucket: &Bucket) -> Vec<(ObjectKey, Bytes)> {
    let metas: Vec<_> = bucket
        .store
        .list(Some(&bucket.prefix))
        .try_collect()
        .await
        .expect("list");
    let mut out = Vec::new();
    for meta in metas {
        let key = ObjectKey::parse(meta.location.filename().unwrap()).expect("an archive key");
        let bytes = bucket
            .store
            .get(&meta.location)
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        out.push((key, bytes));
    }
    out.sort_by_key(|(k, _)| *k);
    out
}

/// Every segment of the bucket's objects is the recorded one, byte for byte, and the
/// objects together hold exactly `msns`.
fn assert_holds(objects: &[(ObjectKey, Bytes)], msns: std::ops::RangeInclusive<u64>) {
    let mut seen = Vec::new();
    for (_, bytes) in objects {
        for entry in recordings::object::decode(bytes).expect("a readable object") {
            let at = entry.offset as usize;
            assert_eq!(
                &bytes[at..at + entry.size as usize],
                &segment(entry.msn)[..]
            );
            seen.push(entry.msn);
        }
    }
    seen.sort_unstable();
    assert_eq!(seen, msns.collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_that_recorded_the_same_meeting_leave_one_copy() {
    let server = S3Server::start();
    server.create_bucket("recordings");
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    // 30 segments: files 0..=5 of the span numbering after T0, the last one still
    // being written for a node whose clock says so; here every file is long closed.
    let a = record(dirs[0].path(), 1..=30);
    let b = record(dirs[1].path(), 1..=30);
    let (up_a, hold_a) = uploader(server.endpoint(), "node-a", &a);
    let (up_b, _) = uploader(server.endpoint(), "node-b", &b);
    let now = T0 + 3_600_000;

    let handled_a = up_a.upload_closed(now).await;
    let handled_b = up_b.upload_closed(now).await;
    assert!(handled_a >= 6, "node a handled {handled_a} files");
    assert_eq!(handled_a, handled_b);
    let (sa, sb) = (up_a.status(), up_b.status());
    assert_eq!(sa["uploaded"]["files"], handled_a as u64);
    assert_eq!(sa["deduplicated"]["files"], 0);
    assert_eq!(sb["uploaded"]["files"], 0, "{sb}");
    assert_eq!(sb["deduplicated"]["files"], handled_b as u64);
    assert_eq!(sb["deduplicated"]["bytes"], sa["uploaded"]["bytes"]);
    assert_eq!(
        hold_a.load(Ordering::Relaxed),
        i64::MAX,
        "nothing left to hold"
    );

    let all = objects(up_a.bucket()).await;
    assert_eq!(all.len(), handled_a, "one object per data file");
    assert_holds(&all, 1..=30);

    // Looking again uploads nothing and finds nothing new.
    assert_eq!(up_a.upload_closed(now).await, 0);
    assert_eq!(objects(up_a.bucket()).await.len(), handled_a);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_joiners_partial_copy_gives_way_to_the_full_one() {
    let server = S3Server::start();
    server.create_bucket("recordings");
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let full = record(dirs[0].path(), 1..=12);
    // Joined at MSN 8: its first file holds 8..=9 of the full node's 5..=9.
    let late = record(dirs[1].path(), 8..=12);
    let (up_full, _) = uploader(server.endpoint(), "node-full", &full);
    let (up_late, _) = uploader(server.endpoint(), "node-late", &late);
    let now = T0 + 3_600_000;

    up_late.upload_closed(now).await;
    up_full.upload_closed(now).await;
    let all = objects(up_full.bucket()).await;
    assert_holds(&all, 1..=12);
    assert!(all.iter().all(|(k, _)| k.is_gapless()));
    assert_eq!(
        up_full.status()["removed"]["redundant"],
        1,
        "{}",
        up_full.status()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_bucket_holds_the_local_files_and_uploads_catch_up() {
    let server = S3Server::start();
    server.create_bucket("recordings");
    let gate = Gate::new(server.addr);
    let dir = tempfile::tempdir().unwrap();
    let store = record(dir.path(), 1..=10);
    let (up, hold) = uploader(gate.endpoint(), "node-a", &store);
    let now = T0 + 3_600_000;

    gate.set_open(false);
    assert_eq!(up.upload_closed(now).await, 0);
    let status = up.status();
    assert_eq!(status["state"], "failing", "{status}");
    assert!(status["failed_uploads"].as_u64().unwrap() >= 1);
    assert!(status["queued"]["files"].as_u64().unwrap() >= 2, "{status}");
    assert!(status["last_error"]["message"].is_string());
    // The oldest file not in the bucket is held from local retention.
    assert_eq!(hold.load(Ordering::Relaxed), T0 / SPAN_MS * SPAN_MS);

    gate.set_open(true);
    assert!(up.upload_closed(now).await >= 2);
    let status = up.status();
    assert_eq!(status["state"], "ok", "{status}");
    assert_eq!(status["queued"]["files"], 0);
    assert_eq!(hold.load(Ordering::Relaxed), i64::MAX);
    assert_holds(&objects(up.bucket()).await, 1..=10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_without_the_period_serves_it_from_the_bucket() {
    let server = S3Server::start();
    server.create_bucket("recordings");
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let recorded = record(dirs[0].path(), 1..=20);
    let (up, _) = uploader(server.endpoint(), "node-a", &recorded);
    let now = T0 + 3_600_000;
    assert!(up.upload_closed(now).await >= 4);

    // Node c joined at MSN 18: its disk holds 18..=20 only.
    let joined = record(dirs[1].path(), 18..=20);
    let (up_c, _) = uploader(server.endpoint(), "node-c", &joined);
    let reader = joined.reader();
    assert_eq!(reader.with_index(|i| i.len()), 3);
    assert_eq!(up_c.refresh_catalogs().await, 1);
    assert_eq!(up_c.refresh_catalogs().await, 0, "nothing changed");
    let entries = reader.with_index(|i| i.query(T0, T0 + 60_000).entries.to_vec());
    let msns: Vec<u64> = entries.iter().map(|e| e.msn).collect();
    assert_eq!(msns, (1..=20).collect::<Vec<_>>());
    assert_eq!(
        reader.with_local_index(|i| i.len()),
        3,
        "the disk is unchanged"
    );
    let remote = reader.remote_range().expect("a remote range");
    assert_eq!(remote.from_ms, T0 + 2_000);
    // Every segment reads back as recorded, from the bucket or the disk.
    for entry in entries {
        let reader = reader.clone();
        let data = tokio::task::spawn_blocking(move || reader.read(&entry))
            .await
            .unwrap()
            .expect("read");
        assert_eq!(data, segment(entry.msn), "msn {}", entry.msn);
    }
    // Appends go on as before and show in the merged index.
    let mut joined = joined;
    let meta = SegmentMeta {
        msn: 21,
        discontinuity_seq: 0,
        discontinuous: false,
        start_ms: T0 + 42_000,
        duration_ticks: 180_000,
    };
    joined.append(meta, &segment(21)).unwrap();
    assert_eq!(reader.with_local_index(|i| i.len()), 4);
    assert_eq!(
        reader.with_index(|i| (i.len(), i.last().map(|e| e.msn))),
        (21, Some(21))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_streams_last_file_goes_up_and_its_archive_leaves() {
    let server = S3Server::start();
    server.create_bucket("recordings");
    let dir = tempfile::tempdir().unwrap();
    // 1..=7: files of 1..=4 and 5..=7, the second still open by its span.
    let store = record(dir.path(), 1..=7);
    let settings = UploaderSettings {
        node: "node-a".into(),
        grace_ms: 3_600_000,
        ..UploaderSettings::default()
    };
    let up = Uploader::new(bucket(server.endpoint()), settings);
    let source = || ArchiveSource {
        names: vec!["board-meeting".into(), "ts".into()],
        reader: store.reader(),
        hold: Arc::new(AtomicI64::new(i64::MAX)),
        remote_depth_ms: None,
    };
    up.register(source());
    // Registered again (the stream started again): one archive, not two.
    up.register(source());
    assert_eq!(up.archives(), 1);
    let now = T0 + 30_000;
    assert_eq!(up.upload_closed(now).await, 1, "the open file waits");
    up.retire("board-meeting", now);
    assert_eq!(
        up.upload_closed(now + 1_000).await,
        0,
        "the recorder may still write"
    );
    assert_eq!(up.archives(), 1);
    assert_eq!(
        up.upload_closed(now + 6_000).await,
        1,
        "the last file goes up"
    );
    assert_eq!(up.archives(), 0, "then the archive leaves");
    assert_holds(&objects(up.bucket()).await, 1..=7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_archive_is_kept_as_long_as_its_own_depth_says() {
    let server = S3Server::start();
    server.create_bucket("recordings");
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let stores = [
        record(dirs[0].path(), 1..=10),
        record(dirs[1].path(), 1..=10),
    ];
    let up = Uploader::new(
        bucket(server.endpoint()),
        UploaderSettings {
            grace_ms: 0,
            ..UploaderSettings::default()
        },
    );
    for (name, store, depth) in [
        ("short", &stores[0], Some(60_000)),
        ("kept", &stores[1], None),
    ] {
        up.register(ArchiveSource {
            names: vec![name.into(), "ts".into()],
            reader: store.reader(),
            hold: Arc::new(AtomicI64::new(i64::MAX)),
            remote_depth_ms: depth,
        });
    }
    let now = T0 + 3_600_000;
    assert!(up.upload_closed(now).await >= 4);
    up.expire(now).await;
    let left = |name: &str| {
        let archive =
            recordings::RemoteArchive::new(up.bucket(), &[name.to_owned(), "ts".to_owned()]);
        async move { archive.objects().await.unwrap().len() }
    };
    assert_eq!(left("short").await, 0, "an hour old, past its minute");
    assert!(left("kept").await >= 2, "no depth: kept");
    assert!(up.status()["removed"]["expired"].as_u64().unwrap() >= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_meetings_recording_is_opened_from_the_bucket_and_expires_by_its_age() {
    let server = S3Server::start();
    server.create_bucket("recordings");
    let dir = tempfile::tempdir().unwrap();
    let store = record(dir.path(), 1..=30);
    let (up, _) = uploader(server.endpoint(), "node-a", &store);
    // Its interpretation into Spanish, recorded beside it.
    let spanish = record(&dir.path().join("spa"), 1..=30);
    up.register(ArchiveSource {
        names: ["board-meeting", "languages", "audio-spa", "ts"]
            .map(String::from)
            .to_vec(),
        reader: spanish.reader(),
        hold: Arc::new(AtomicI64::new(i64::MAX)),
        remote_depth_ms: None,
    });
    let handled = up.upload_closed(T0 + 3_600_000).await;
    assert!(handled >= 12);
    // Any node opens the recording from the bucket alone: every segment, read back.
    let recorded = up.recorded("board-meeting").await.expect("opened");
    let source = recorded.source().expect("the source rendition");
    assert_eq!(source.with_index(|i| i.len()), 30);
    let names: Vec<(&str, bool)> = recorded
        .renditions
        .iter()
        .map(|r| (r.rendition.as_str(), r.is_language()))
        .collect();
    assert_eq!(names, [("source", false), ("audio-spa", true)]);
    assert_eq!(
        recorded
            .rendition("audio-spa")
            .map(|r| r.with_index(|i| i.len())),
        Some(30)
    );
    let entry = source.with_index(|i| *i.by_msn(7).expect("msn 7"));
    let reader = source.clone();
    let data = tokio::task::spawn_blocking(move || reader.read(&entry))
        .await
        .expect("join")
        .expect("read");
    assert_eq!(data, segment(7));
    assert!(up
        .recorded("nobody")
        .await
        .expect("opened")
        .renditions
        .is_empty());
    // The store's own write times date the objects: none is a day old yet.
    let bucket = up.bucket().clone();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64;
    let day = 86_400_000;
    let expire = |at| recordings::expiry::expire_meeting(&bucket, "board-meeting", day, at);
    assert_eq!(expire(now).await.expect("swept"), 0);
    // The languages' objects expire with the rest.
    assert_eq!(expire(now + 2 * day).await.expect("swept"), handled);
    assert!(objects(&bucket).await.is_empty());
}
