//! The DVR recorder of one rendition (a stream's source, or a ladder rung archived beside
//! it on the same timeline): takes every published segment off the live path and
//! archives it on a dedicated thread (DESIGN.md invariant 6).
//!
//! The pipeline hands segments over with [`Recorder::record`], a non-blocking send on a
//! bounded channel: the live path never waits for the disk. When the channel is full
//! (the disk is slower than the stream) the segment is counted as dropped and the archive
//! shows the hole as a gap. The thread writes through [`dvr::Store`], applies retention
//! after every segment (and every few seconds when idle), and on an I/O error (a full
//! disk) logs once, counts, reports it in the status and tries again with the next
//! segment: recording resumes by itself once space returns.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dvr::files::{FileLayer, RealFiles};
use dvr::store::SegmentMeta;
use dvr::{ArchiveReader, Protocol, Recovery, Retention, Store, StoreError};
use serde_json::{json, Value};

use crate::clock::unix_ms;
use packaging::window::LiveSegment;

/// How a stream's archive is kept.
#[derive(Debug, Clone)]
pub struct RecorderSettings {
    /// The stream's archive directory (each protocol in a subdirectory).
    pub dir: PathBuf,
    /// Depth and byte limit.
    pub retention: Retention,
    /// Segments that may wait for the disk before new ones are dropped.
    pub queue: usize,
    /// Time span of one data file, milliseconds.
    pub file_span_ms: i64,
    /// Where writes go (the real file system, or a failing one in tests).
    pub files: Arc<dyn FileLayer>,
}

impl RecorderSettings {
    /// Settings with the real file system, a 64-segment queue and 10-minute files.
    pub fn new(dir: PathBuf, retention: Retention) -> Self {
        Self {
            dir,
            retention,
            queue: 64,
            file_span_ms: dvr::store::DEFAULT_SPAN_MS,
            files: Arc::new(RealFiles::default()),
        }
    }
}

/// Counters and the last error, shared by the thread, the status API and metrics.
#[derive(Debug, Default)]
struct Stats {
    recorded: AtomicU64,
    dropped: AtomicU64,
    errors: AtomicU64,
    refused: AtomicU64,
    retention_dropped: AtomicU64,
    failing: AtomicBool,
    last_error_ms: AtomicI64,
    last_error: Mutex<Option<&'static str>>,
}

/// One stream's recorder: the sending side and the archive's reader.
#[derive(Debug)]
pub struct Recorder {
    stream: String,
    tx: SyncSender<LiveSegment>,
    reader: ArchiveReader,
    retention: Retention,
    recovery: Recovery,
    stats: Arc<Stats>,
    upload_hold: Arc<AtomicI64>,
}

impl Recorder {
    /// Opens (and repairs) the stream's MPEG-TS archive and starts the writer thread.
    /// Blocking: the archive's index log is read here.
    ///
    /// # Errors
    /// The archive directory cannot be created, read or repaired.
    pub fn start(stream: &str, settings: RecorderSettings) -> Result<Arc<Recorder>, StoreError> {
        let dir = settings.dir.join(Protocol::Ts.dir_name());
        let (store, recovery) = Store::open(
            &dir,
            Protocol::Ts,
            Arc::clone(&settings.files),
            settings.file_span_ms,
        )?;
        if recovery
            != (Recovery {
                entries: recovery.entries,
                ..Recovery::default()
            })
        {
            tracing::warn!(
                stream,
                entries = recovery.entries,
                torn_log_bytes = recovery.torn_log_bytes,
                missing_dropped = recovery.missing_dropped,
                orphan_files_removed = recovery.orphan_files_removed,
                orphan_bytes_truncated = recovery.orphan_bytes_truncated,
                "archive repaired at start"
            );
        }
        let (tx, rx) = mpsc::sync_channel(settings.queue.max(1));
        let stats = Arc::new(Stats::default());
        let upload_hold = Arc::new(AtomicI64::new(i64::MAX));
        let recorder = Arc::new(Recorder {
            stream: stream.to_owned(),
            tx,
            reader: store.reader(),
            retention: settings.retention,
            recovery,
            stats: Arc::clone(&stats),
            upload_hold: Arc::clone(&upload_hold),
        });
        let name = stream.to_owned();
        let retention = settings.retention;
        let spawned = std::thread::Builder::new()
            .name(format!("dvr-{stream}"))
            .spawn(move || write_loop(&name, store, retention, &upload_hold, &rx, &stats));
        if let Err(error) = spawned {
            return Err(StoreError::Io {
                op: "starting the recorder thread",
                path: settings.dir,
                source: error,
            });
        }
        Ok(recorder)
    }

    /// Hands a published segment to the writer without waiting; a full queue drops it
    /// (counted, and a gap in the archive).
    pub fn record(&self, segment: &LiveSegment) {
        // The disk takes the bytes; the frames they were written from stay behind.
        let segment = LiveSegment {
            frames: std::sync::Arc::from(Vec::new()),
            ..segment.clone()
        };
        match self.tx.try_send(segment) {
            Ok(()) => {}
            Err(TrySendError::Full(segment)) => {
                let dropped = self.stats.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                if dropped.is_power_of_two() {
                    tracing::warn!(stream = %self.stream, msn = segment.msn, dropped, "archive queue full, segment not recorded");
                }
            }
            Err(TrySendError::Disconnected(_)) => {
                self.stats.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Start (Unix ms) of the oldest data file not yet on object storage (`i64::MAX`:
    /// none): retention by depth keeps everything from there, so an unreachable bucket
    /// loses no recording. The recordings uploader moves it.
    pub fn upload_hold(&self) -> Arc<AtomicI64> {
        Arc::clone(&self.upload_hold)
    }

    /// The archive, for the catch-up routes.
    pub fn reader(&self) -> &ArchiveReader {
        &self.reader
    }

    /// The newest archived MSN: the live numbering continues after it on a restart.
    pub fn newest(&self) -> Option<(u64, u64)> {
        self.reader
            .with_local_index(|i| i.last().map(|e| (e.msn, e.discontinuity_seq)))
    }

    /// The `"dvr"` object of `/api/streams/{name}`: ranges and gaps per protocol, bytes,
    /// segments, counters and the last error.
    pub fn status(&self) -> Value {
        let (range, gaps) = self
            .reader
            .with_index(|i| (i.range(), i.gaps().collect::<Vec<_>>()));
        let (local, bytes, segments) = self
            .reader
            .with_local_index(|i| (i.range(), i.bytes(), i.len()));
        let s = &self.stats;
        let last_error = match s.last_error.lock() {
            Ok(guard) => *guard,
            Err(poisoned) => *poisoned.into_inner(),
        };
        json!({
            "ranges": { "ts": range.map(|r| vec![r]).unwrap_or_default() },
            "gaps": { "ts": gaps },
            "local": { "ts": local },
            "remote": { "ts": self.reader.remote_range() },
            "bytes": bytes,
            "segments": segments,
            "recording": !s.failing.load(Ordering::Relaxed),
            "retention": {
                "depth_seconds": self.retention.depth_ms.map(|ms| ms / 1000),
                "max_bytes": self.retention.max_bytes,
            },
            "counters": {
                "recorded": s.recorded.load(Ordering::Relaxed),
                "dropped": s.dropped.load(Ordering::Relaxed),
                "refused": s.refused.load(Ordering::Relaxed),
                "retention_dropped": s.retention_dropped.load(Ordering::Relaxed),
            },
            "errors": s.errors.load(Ordering::Relaxed),
            "last_error": last_error.map(|kind| json!({
                "kind": kind,
                "at_ms": s.last_error_ms.load(Ordering::Relaxed),
            })),
            "recovered_at_start": {
                "torn_log_bytes": self.recovery.torn_log_bytes,
                "missing_dropped": self.recovery.missing_dropped,
                "orphan_files_removed": self.recovery.orphan_files_removed,
                "orphan_bytes_truncated": self.recovery.orphan_bytes_truncated,
            },
        })
    }

    /// Registers the archive's metrics (`brdyun_dvr_*{stream=…}`).
    pub fn register_metrics(self: &Arc<Self>, metrics: &crate::metrics::Metrics) {
        let recorder = Arc::clone(self);
        let stream = crate::metrics::label(&self.stream);
        metrics.register(Box::new(move |out: &mut String| {
            use std::fmt::Write as _;
            let s = &recorder.stats;
            let (bytes, segments) = recorder.reader.with_local_index(|i| (i.bytes(), i.len()));
            for (name, value) in [
                (
                    "segments_recorded_total",
                    s.recorded.load(Ordering::Relaxed),
                ),
                ("segments_dropped_total", s.dropped.load(Ordering::Relaxed)),
                ("segments_refused_total", s.refused.load(Ordering::Relaxed)),
                ("write_errors_total", s.errors.load(Ordering::Relaxed)),
                ("archive_bytes", bytes),
                ("archive_segments", segments as u64),
                ("recording", u64::from(!s.failing.load(Ordering::Relaxed))),
            ] {
                let _ = writeln!(out, "brdyun_dvr_{name}{{stream=\"{stream}\"}} {value}");
            }
        }));
    }
}

/// How long the writer waits for a segment before running retention anyway.
const IDLE_TICK: Duration = Duration::from_secs(5);

fn write_loop(
    stream: &str,
    mut store: Store,
    retention: Retention,
    upload_hold: &AtomicI64,
    rx: &mpsc::Receiver<LiveSegment>,
    stats: &Stats,
) {
    loop {
        match rx.recv_timeout(IDLE_TICK) {
            Ok(segment) => {
                let meta = SegmentMeta {
                    msn: segment.msn,
                    discontinuity_seq: segment.discontinuity_seq,
                    discontinuous: segment.discontinuous,
                    start_ms: segment.program_date_time_ms,
                    duration_ticks: segment.duration_ticks,
                };
                match store.append(meta, &segment.data) {
                    Ok(_) => {
                        stats.recorded.fetch_add(1, Ordering::Relaxed);
                        if stats.failing.swap(false, Ordering::Relaxed) {
                            tracing::info!(stream, msn = segment.msn, "archive recording resumed");
                        }
                    }
                    Err(StoreError::Index(error)) => {
                        let refused = stats.refused.fetch_add(1, Ordering::Relaxed) + 1;
                        if refused.is_power_of_two() {
                            tracing::warn!(stream, %error, refused, "segment does not follow the archive, not archived");
                        }
                    }
                    Err(error) => failed(stream, stats, &error),
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        match store.retain(
            &retention,
            retention_now(&retention, upload_hold, unix_ms()),
        ) {
            Ok(dropped) => {
                stats
                    .retention_dropped
                    .fetch_add(dropped as u64, Ordering::Relaxed);
            }
            Err(error) => failed(stream, stats, &error),
        }
    }
}

/// The time retention by depth is applied at: now, or earlier when files still waiting
/// for object storage would otherwise go (their start plus the depth).
fn retention_now(retention: &Retention, upload_hold: &AtomicI64, now_ms: i64) -> i64 {
    let hold = upload_hold.load(Ordering::Relaxed);
    match retention.depth_ms {
        Some(depth) if hold != i64::MAX => {
            now_ms.min(hold.saturating_add(i64::try_from(depth).unwrap_or(i64::MAX)))
        }
        _ => now_ms,
    }
}

fn failed(stream: &str, stats: &Stats, error: &StoreError) {
    stats.errors.fetch_add(1, Ordering::Relaxed);
    stats.last_error_ms.store(unix_ms(), Ordering::Relaxed);
    let kind = if error.is_disk_full() {
        "disk_full"
    } else {
        "io_error"
    };
    match stats.last_error.lock() {
        Ok(mut guard) => *guard = Some(kind),
        Err(poisoned) => *poisoned.into_inner() = Some(kind),
    }
    if !stats.failing.swap(true, Ordering::Relaxed) {
        tracing::warn!(stream, %error, kind, "archive write failed, live delivery continues, retrying with the next segment");
    }
}
