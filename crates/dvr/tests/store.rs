//! The archive on disk: what survives a crash, what a full disk does, retention's files
//! ("nothing acknowledged is lost": DESIGN.md invariant 6).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use dvr::files::{FileLayer, RealFiles};
use dvr::store::{SegmentMeta, LOG_NAME};
use dvr::{Protocol, Retention, Store};

const T0: i64 = 1_699_999_980_000; // on a 60 s boundary
const SPAN: i64 = 60_000;

fn meta(msn: u64) -> SegmentMeta {
    SegmentMeta {
        msn,
        discontinuity_seq: 3,
        discontinuous: msn == 0,
        start_ms: T0 + msn as i64 * 2000,
        duration_ticks: 180_000,
    }
}

fn data(msn: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| (msn as usize * 31 + i) as u8).collect()
}

fn open(dir: &Path) -> (Store, dvr::Recovery) {
    Store::open(dir, Protocol::Ts, Arc::new(RealFiles::default()), SPAN).unwrap()
}

fn record(store: &mut Store, msns: std::ops::Range<u64>) {
    for msn in msns {
        store
            .append(meta(msn), &data(msn, 1000 + msn as usize))
            .unwrap();
    }
}

fn assert_all_readable(store: &Store) -> Vec<u64> {
    let reader = store.reader();
    let entries = reader.with_index(|i| i.entries().to_vec());
    for e in &entries {
        assert_eq!(
            reader.read(e).unwrap(),
            data(e.msn, 1000 + e.msn as usize),
            "segment {}",
            e.msn
        );
        assert_eq!(e.start_ms, meta(e.msn).start_ms);
    }
    entries.iter().map(|e| e.msn).collect()
}

fn data_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ts"))
        .collect();
    files.sort();
    files
}

#[test]
fn a_reopened_archive_serves_what_was_written() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, recovery) = open(dir.path());
    assert_eq!(recovery.entries, 0);
    record(&mut store, 0..95);
    // 2 s segments in 60 s files: 4 files.
    assert_eq!(data_files(dir.path()).len(), 4);
    drop(store);
    let (store, recovery) = open(dir.path());
    assert_eq!(
        recovery,
        dvr::Recovery {
            entries: 95,
            ..Default::default()
        }
    );
    assert_eq!(assert_all_readable(&store), (0..95).collect::<Vec<_>>());
    assert_eq!(store.newest_msn(), Some(94));
    let msn_17 = store.reader().with_index(|i| *i.by_msn(17).unwrap());
    assert!(!msn_17.discontinuous);
    assert!(store
        .reader()
        .with_index(|i| i.first().unwrap().discontinuous));
}

#[test]
fn a_crash_mid_write_loses_only_the_segment_being_written() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, _) = open(dir.path());
    record(&mut store, 0..20);
    drop(store);
    // The crash: the next segment's data landed, its log record is half written.
    let log = dir.path().join(LOG_NAME);
    let newest_file = data_files(dir.path()).pop().unwrap();
    let mut bytes = std::fs::read(&newest_file).unwrap();
    bytes.extend_from_slice(&data(20, 1020));
    std::fs::write(&newest_file, &bytes).unwrap();
    let mut log_bytes = std::fs::read(&log).unwrap();
    let full_len = log_bytes.len();
    log_bytes.extend_from_slice(&[50, 0, 0, 0, 1, 2, 3, 4, 1, 20]);
    std::fs::write(&log, &log_bytes).unwrap();
    // And a data file of a later span nothing refers to.
    std::fs::write(dir.path().join("0099999999.ts"), b"orphan").unwrap();

    let (mut store, recovery) = open(dir.path());
    assert_eq!(recovery.entries, 20);
    assert_eq!(recovery.torn_log_bytes, 10);
    assert_eq!(recovery.orphan_bytes_truncated, 1020);
    assert_eq!(recovery.orphan_files_removed, 1);
    assert_eq!(std::fs::read(&log).unwrap().len(), full_len);
    assert_eq!(assert_all_readable(&store), (0..20).collect::<Vec<_>>());
    // Recording resumes after the lost segment; the hole is an honest gap.
    record(&mut store, 21..30);
    let gaps: Vec<_> = store.reader().with_index(|i| i.gaps().collect());
    assert_eq!(gaps.len(), 1);
    assert_eq!(gaps[0].from_ms, meta(20).start_ms);
    assert_eq!(gaps[0].to_ms, meta(21).start_ms);
    drop(store);
    let (store, recovery) = open(dir.path());
    assert_eq!(recovery.entries, 29);
    assert_eq!(recovery.torn_log_bytes, 0);
    let msns = assert_all_readable(&store);
    assert_eq!(msns, (0..20).chain(21..30).collect::<Vec<_>>());
}

#[test]
fn corruption_and_missing_files_are_dropped_from_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, _) = open(dir.path());
    record(&mut store, 0..90);
    drop(store);
    // The oldest data file disappears (an operator, a failing disk).
    let files = data_files(dir.path());
    std::fs::remove_file(&files[0]).unwrap();
    // A bit flips in the record of segment 70: it and everything after it go.
    let log = dir.path().join(LOG_NAME);
    let mut log_bytes = std::fs::read(&log).unwrap();
    let record_len = log_bytes.len() / 90;
    log_bytes[70 * record_len + 12] ^= 0x40;
    std::fs::write(&log, &log_bytes).unwrap();

    let (store, recovery) = open(dir.path());
    assert_eq!(recovery.missing_dropped, 30, "{recovery:?}");
    assert_eq!(recovery.torn_log_bytes, 20 * record_len as u64);
    // The data of 70..90 is now unindexed and cut off the file.
    assert!(recovery.orphan_bytes_truncated > 0);
    assert_eq!(assert_all_readable(&store), (30..70).collect::<Vec<_>>());
    drop(store);
    let (_, again) = open(dir.path());
    assert_eq!(
        again,
        dvr::Recovery {
            entries: 40,
            ..Default::default()
        }
    );
}

#[test]
fn retention_removes_whole_files_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, _) = open(dir.path());
    record(&mut store, 0..90);
    let policy = Retention {
        depth_ms: Some(100_000),
        max_bytes: None,
    };
    let now = meta(89).start_ms + 2000;
    let dropped = store.retain(&policy, now).unwrap();
    assert_eq!(dropped, 40);
    // Segments 0..40 ended more than 100 s ago; the file of 0..30 goes, the file of
    // 30..60 stays (40..60 are still in it).
    let first = store.reader().with_index(|i| *i.first().unwrap());
    assert_eq!(first.msn, 40);
    assert_eq!(data_files(dir.path()).len(), 2);
    drop(store);
    let (store, recovery) = open(dir.path());
    assert_eq!(recovery.entries, 50);
    assert_eq!(assert_all_readable(&store), (40..90).collect::<Vec<_>>());
}

/// A file layer that runs out of space after `quota` bytes, like a full disk; removing
/// a file gives its bytes back.
#[derive(Debug)]
struct SmallDisk {
    quota: u64,
    used: AtomicU64,
}

impl SmallDisk {
    fn file_len(path: &Path) -> u64 {
        std::fs::metadata(path).map_or(0, |m| m.len())
    }
}

impl FileLayer for SmallDisk {
    fn write_at(&self, path: &Path, offset: u64, data: &[u8]) -> io::Result<()> {
        let grow = (offset + data.len() as u64).saturating_sub(Self::file_len(path));
        if self.used.load(Ordering::SeqCst) + grow > self.quota {
            return Err(io::Error::new(io::ErrorKind::StorageFull, "no space left"));
        }
        self.used.fetch_add(grow, Ordering::SeqCst);
        RealFiles::default().write_at(path, offset, data)
    }
    fn set_len(&self, path: &Path, len: u64) -> io::Result<()> {
        let shrink = Self::file_len(path).saturating_sub(len);
        self.used.fetch_sub(shrink, Ordering::SeqCst);
        RealFiles::default().set_len(path, len)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        let len = Self::file_len(path);
        RealFiles::default().remove(path)?;
        self.used.fetch_sub(len, Ordering::SeqCst);
        Ok(())
    }
    fn replace(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        RealFiles::default().replace(path, data)
    }
}

/// Records into `store` until the disk is full, frees space with a byte limit, and
/// checks that recording resumes and the archive stays consistent across a reopen.
fn fill_free_resume(
    dir: &Path,
    mut store: Store,
    segment_len: usize,
    limit: u64,
    files: Arc<dyn FileLayer>,
) {
    let seg = |msn: u64| -> Vec<u8> { vec![(msn % 251) as u8; segment_len] };
    let mut msn = 0;
    let full = loop {
        match store.append(meta(msn), &seg(msn)) {
            Ok(_) => msn += 1,
            Err(e) => break e,
        }
        assert!(msn < 10_000, "the disk never filled");
    };
    assert!(full.is_disk_full(), "{full}");
    let archived = store.reader().with_index(|i| i.len());
    assert_eq!(archived as u64, msn, "a failed write is not indexed");
    // Live goes on: later segments keep failing without corrupting anything.
    for later in msn + 1..msn + 3 {
        assert!(store.append(meta(later), &seg(later)).is_err());
    }
    // Space returns: retention by bytes removes the oldest files.
    let policy = Retention {
        depth_ms: None,
        max_bytes: Some(limit),
    };
    assert!(store.retain(&policy, 0).unwrap() > 0);
    let resumed_at = msn + 3;
    for m in resumed_at..resumed_at + 5 {
        store.append(meta(m), &seg(m)).unwrap();
        store.retain(&policy, 0).unwrap();
    }
    let reader = store.reader();
    let gaps: Vec<_> = reader.with_index(|i| i.gaps().collect());
    assert_eq!(
        gaps.len(),
        1,
        "the failed segments are one honest gap: {gaps:?}"
    );
    assert_eq!(gaps[0].from_ms, meta(msn).start_ms);
    assert_eq!(gaps[0].to_ms, meta(resumed_at).start_ms);
    drop(store);
    let (store, recovery) = Store::open(dir, Protocol::Ts, files, SPAN).unwrap();
    assert_eq!(recovery.missing_dropped, 0, "{recovery:?}");
    let reader = store.reader();
    for e in reader.with_index(|i| i.entries().to_vec()) {
        assert_eq!(reader.read(&e).unwrap(), seg(e.msn));
    }
    assert_eq!(store.newest_msn(), Some(resumed_at + 4));
}

#[test]
fn a_full_disk_stops_recording_without_damage_and_recording_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let files: Arc<dyn FileLayer> = Arc::new(SmallDisk {
        quota: 400_000,
        used: AtomicU64::new(0),
    });
    let (store, _) = Store::open(dir.path(), Protocol::Ts, Arc::clone(&files), SPAN).unwrap();
    fill_free_resume(dir.path(), store, 10_000, 200_000, files);
}

/// Unmounts the tmpfs when the test ends, whatever happens.
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// The same on a real 2 MiB tmpfs when the test may mount one (root); elsewhere the
/// injected small disk above stands in and this test says so on stderr.
#[test]
fn a_real_small_filesystem_fills_up_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=2m", "tmpfs"])
        .arg(dir.path())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("cannot mount a tmpfs here (not root?): covered by the injected small disk");
        return;
    }
    let _mount = Mount(dir.path().to_owned());
    let files: Arc<dyn FileLayer> = Arc::new(RealFiles::default());
    let (store, _) = Store::open(dir.path(), Protocol::Ts, Arc::clone(&files), SPAN).unwrap();
    fill_free_resume(dir.path(), store, 50_000, 1_000_000, files);
}

#[test]
fn an_archive_directory_is_made_of_plain_names_only() {
    let root = Path::new("/data/archive");
    let dir = dvr::store::archive_dir(root, &["meeting-1", "rungs", "240p"]).expect("plain");
    assert_eq!(dir, Path::new("/data/archive/meeting-1/rungs/240p"));
    for bad in [
        "../../tmp/x",
        "..",
        ".",
        ".hidden",
        "a/b",
        "a\\b",
        "",
        "nul\0byte",
        "line\nbreak",
        "/abs",
    ] {
        match dvr::store::archive_dir(root, &["meeting-1", "rungs", bad]) {
            Err(dvr::StoreError::BadName(name)) => assert_eq!(name, bad),
            other => panic!("{bad:?} gave {other:?}"),
        }
    }
    assert!(!dvr::store::is_plain_name(&"x".repeat(256)));
}

proptest::proptest! {
    /// Whatever names are asked for, an archive directory that is made stays under its
    /// root: no component climbs out, none is hidden, and the root is its prefix.
    #[test]
    fn an_archive_directory_never_leaves_its_root(
        names in proptest::collection::vec("[./\\\\a-z0-9\\x00-\\x1f-]{0,8}", 1..5)
    ) {
        let root = Path::new("/data/archive");
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        if let Ok(dir) = dvr::store::archive_dir(root, &names) {
            proptest::prop_assert!(dir.starts_with(root));
            let below = dir.strip_prefix(root).expect("under the root");
            proptest::prop_assert_eq!(below.components().count(), names.len());
            for part in below.components() {
                let std::path::Component::Normal(part) = part else {
                    return Err(proptest::test_runner::TestCaseError::fail(format!("{part:?}")));
                };
                proptest::prop_assert!(!part.to_string_lossy().starts_with('.'));
            }
        }
    }
}
