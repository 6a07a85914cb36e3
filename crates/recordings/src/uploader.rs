//! The uploader: copies every closed archive data file of the node to the bucket, once
//! per group.
//!
//! Every few seconds it looks at each registered archive. A data file is *closed* when a
//! later file has begun or its time span ended more than a grace period ago; a closed
//! file not yet handled is listed against its span's objects ([`crate::key::plan`]): if
//! an object there holds all its segments (another node uploaded the same recording) it
//! is *found*; otherwise it is uploaded with a create-only put, and objects it makes
//! redundant are removed. A put refused because the key appeared meanwhile is *found*
//! too. A failure (bucket unreachable, refused) is counted, shown, and retried at the
//! next look; the local file is held back from retention until its upload is done, so
//! nothing recorded is lost while the bucket is away.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dvr::{ArchiveReader, Entry};
use futures_util::StreamExt;
use serde_json::Value;
use tokio::sync::watch;

use crate::bucket::Bucket;
use crate::catalog::{Catalog, SegmentCache};
use crate::key::{plan, ObjectKey, Plan};
use crate::object;
use crate::remote::RemoteArchive;
use crate::stats::{Outcome, Stats};

/// An archive the uploader copies.
#[derive(Debug, Clone)]
pub struct ArchiveSource {
    /// The archive's directory levels under `data_dir/archive` (`["meeting", "ts"]`):
    /// its key prefix in the bucket.
    pub names: Vec<String>,
    /// The archive.
    pub reader: ArchiveReader,
    /// Start (Unix ms) of the oldest data file not yet in the bucket, `i64::MAX` when
    /// none: the recorder keeps the local archive from there on whatever its depth.
    pub hold: Arc<AtomicI64>,
    /// How long the bucket keeps this archive's objects after their span ended,
    /// milliseconds (`None`: the uploader's `remote_depth_ms`).
    pub remote_depth_ms: Option<i64>,
}

/// How the uploader works.
#[derive(Debug, Clone)]
pub struct UploaderSettings {
    /// This node's name, in the logs of what it uploaded and found.
    pub node: String,
    /// Uploads at once.
    pub concurrency: usize,
    /// How long after its span ends a data file is taken as closed, milliseconds (a
    /// segment that started just before the boundary is still being written).
    pub grace_ms: i64,
    /// How often the archives are looked at.
    pub interval: Duration,
    /// How long the bucket keeps an object after its span ended, milliseconds (`None`:
    /// until someone removes it).
    pub remote_depth_ms: Option<i64>,
    /// How often each archive's objects are listed to serve what the disk lacks.
    pub catalog_interval: Duration,
    /// Bytes of segments read from the bucket kept in memory.
    pub cache_bytes: usize,
}

impl Default for UploaderSettings {
    fn default() -> Self {
        UploaderSettings {
            node: "node".into(),
            concurrency: 2,
            grace_ms: 30_000,
            interval: Duration::from_secs(5),
            remote_depth_ms: None,
            catalog_interval: Duration::from_secs(15),
            cache_bytes: 64 << 20,
        }
    }
}

#[derive(Debug)]
struct Registered {
    /// Tells this registration from an earlier one of the same names.
    id: u64,
    /// When the archive's stream stopped (Unix ms): its last file is then closed, and
    /// the archive leaves the uploader once everything is in the bucket.
    retired_ms: Option<i64>,
    source: ArchiveSource,
    /// Data files already in the bucket (uploaded or found).
    done: BTreeSet<u32>,
    /// The archive's objects, attached under it.
    catalog: Arc<tokio::sync::Mutex<Catalog>>,
}

/// The node's uploader; cheap to share.
#[derive(Debug)]
pub struct Uploader {
    bucket: Bucket,
    settings: UploaderSettings,
    archives: Mutex<Vec<Registered>>,
    next_id: std::sync::atomic::AtomicU64,
    stats: Stats,
    cache: Arc<SegmentCache>,
    recorded: crate::recorded::RecordedCache,
}

/// One closed data file to upload.
#[derive(Debug, Clone)]
struct Job {
    archive: u64,
    names: Vec<String>,
    reader: ArchiveReader,
    file: u32,
    entries: Vec<Entry>,
}

impl Job {
    fn key(&self) -> Option<ObjectKey> {
        let (first, last) = (self.entries.first()?, self.entries.last()?);
        Some(ObjectKey {
            span: self.file,
            first_msn: first.msn,
            last_msn: last.msn,
            count: self.entries.len() as u64,
        })
    }

    fn bytes(&self) -> u64 {
        self.entries.iter().map(|e| u64::from(e.size)).sum()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Uploader {
    /// An uploader to `bucket`.
    pub fn new(bucket: Bucket, settings: UploaderSettings) -> Arc<Uploader> {
        Arc::new(Uploader {
            stats: Stats::new(&bucket.description),
            cache: Arc::new(SegmentCache::new(settings.cache_bytes)),
            recorded: crate::recorded::RecordedCache::default(),
            bucket,
            settings,
            archives: Mutex::new(Vec::new()),
            next_id: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// The bucket.
    pub fn bucket(&self) -> &Bucket {
        &self.bucket
    }

    /// `meeting`'s recording from the bucket alone, for a meeting no node runs any more
    /// ([`crate::recorded`]); its segments go through the node's segment cache.
    ///
    /// # Errors
    /// Too many recordings are being opened, or the bucket cannot be listed or an
    /// index read ([`crate::recorded::OpenError`]).
    pub async fn recorded(
        &self,
        meeting: &str,
    ) -> Result<Arc<crate::recorded::Recorded>, crate::recorded::OpenError> {
        self.recorded.get(&self.bucket, &self.cache, meeting).await
    }

    /// Adds an archive to copy; its files are held from retention from now on. An
    /// archive of the same names registered before (a stream started again) is replaced.
    pub fn register(&self, source: ArchiveSource) {
        let oldest = source.reader.with_local_index(|i| {
            i.first()
                .map_or(i64::MAX, |e| file_start(e.file, &source.reader))
        });
        source.hold.store(oldest, Ordering::Relaxed);
        let catalog = Catalog::new(RemoteArchive::new(&self.bucket, &source.names));
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut archives = lock(&self.archives);
        archives.retain(|a| a.source.names != source.names);
        archives.push(Registered {
            id,
            retired_ms: None,
            source,
            done: BTreeSet::new(),
            catalog: Arc::new(tokio::sync::Mutex::new(catalog)),
        });
    }

    /// The stream `stream` stopped at `now_ms` (a meeting closed): its archives' last files are
    /// uploaded after [`RETIRE_SETTLE_MS`] (the recorder writes what it still holds),
    /// then the archives leave the uploader.
    pub fn retire(&self, stream: &str, now_ms: i64) {
        for archive in lock(&self.archives).iter_mut() {
            if archive.source.names.first().map(String::as_str) == Some(stream) {
                archive.retired_ms.get_or_insert(now_ms);
            }
        }
    }

    /// How many archives are registered.
    pub fn archives(&self) -> usize {
        lock(&self.archives).len()
    }

    /// Runs until `stop` turns true: a look at every archive each interval.
    pub async fn run(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let mut last_expiry = i64::MIN;
        let mut last_catalog = i64::MIN;
        let catalog_ms =
            i64::try_from(self.settings.catalog_interval.as_millis()).unwrap_or(i64::MAX);
        loop {
            let now = crate::stats::now_ms();
            self.upload_closed(now).await;
            if now.saturating_sub(last_catalog) >= catalog_ms {
                self.refresh_catalogs().await;
                last_catalog = now;
            }
            if now.saturating_sub(last_expiry) >= 60_000 {
                self.expire(now).await;
                last_expiry = now;
            }
            tokio::select! {
                () = tokio::time::sleep(self.settings.interval) => {}
                _ = stop.wait_for(|stopped| *stopped) => return,
            }
        }
    }

    /// Uploads every closed data file not yet in the bucket, at most `concurrency` at
    /// once; returns how many files were handled (uploaded or found).
    pub async fn upload_closed(&self, now_ms: i64) -> usize {
        let jobs = self.closed_jobs(now_ms);
        let queued: u64 = jobs.iter().map(Job::bytes).sum();
        self.stats.set_queue(jobs.len() as u64, queued);
        let results: Vec<(Job, Result<Outcome, String>)> = futures_util::stream::iter(jobs)
            .map(|job| async move {
                let result = self.upload(&job).await;
                (job, result)
            })
            .buffer_unordered(self.settings.concurrency.max(1))
            .collect()
            .await;
        let mut handled = 0;
        for (job, result) in results {
            match result {
                Ok(outcome) => {
                    handled += 1;
                    self.stats.succeeded(outcome, job.bytes());
                    let mut archives = lock(&self.archives);
                    if let Some(archive) = archives.iter_mut().find(|a| a.source.names == job.names)
                    {
                        archive.done.insert(job.file);
                    }
                }
                Err(error) => self.stats.failed(&error),
            }
        }
        self.update_holds();
        let left = self.closed_jobs(now_ms);
        self.stats
            .set_queue(left.len() as u64, left.iter().map(Job::bytes).sum());
        // A retired archive with nothing left to upload is done with.
        lock(&self.archives).retain(|a| {
            a.retired_ms.is_none_or(|at| {
                now_ms.saturating_sub(at) < RETIRE_SETTLE_MS
                    || left.iter().any(|job| job.archive == a.id)
            })
        });
        handled
    }

    /// The closed data files of every archive that are not in the bucket yet.
    fn closed_jobs(&self, now_ms: i64) -> Vec<Job> {
        let mut jobs = Vec::new();
        let mut archives = lock(&self.archives);
        for archive in archives.iter_mut() {
            let reader = &archive.source.reader;
            let span_ms = reader.file_span_ms();
            let grace = self.settings.grace_ms;
            let settled = archive
                .retired_ms
                .is_some_and(|at| now_ms.saturating_sub(at) >= RETIRE_SETTLE_MS);
            reader.with_local_index(|index| {
                let entries = index.entries();
                let Some(newest) = entries.last().map(|e| e.file) else {
                    return;
                };
                // Files retention removed are no longer anyone's business.
                let oldest = entries.first().map_or(0, |e| e.file);
                archive.done.retain(|&f| f >= oldest);
                let mut at = 0;
                while at < entries.len() {
                    let file = entries[at].file;
                    let end = at + entries[at..].partition_point(|e| e.file == file);
                    let ends_ms = (i64::from(file) + 1).saturating_mul(span_ms);
                    let closed =
                        settled || file < newest || ends_ms.saturating_add(grace) <= now_ms;
                    if closed && !archive.done.contains(&file) {
                        jobs.push(Job {
                            archive: archive.id,
                            names: archive.source.names.clone(),
                            reader: reader.clone(),
                            file,
                            entries: entries[at..end].to_vec(),
                        });
                    }
                    at = end;
                }
            });
        }
        jobs
    }

    /// Moves each archive's hold to its oldest data file not yet in the bucket.
    fn update_holds(&self) {
        let archives = lock(&self.archives);
        for archive in archives.iter() {
            let reader = &archive.source.reader;
            let oldest_pending = reader.with_local_index(|index| {
                index
                    .entries()
                    .iter()
                    .map(|e| e.file)
                    .find(|f| !archive.done.contains(f))
            });
            let hold = oldest_pending.map_or(i64::MAX, |f| file_start(f, reader));
            archive.source.hold.store(hold, Ordering::Relaxed);
        }
    }

    async fn upload(&self, job: &Job) -> Result<Outcome, String> {
        let key = job.key().ok_or("an empty data file")?;
        let remote = RemoteArchive::new(&self.bucket, &job.names);
        let node = &self.settings.node;
        let archive = job.names.join("/");
        let existing = remote.objects().await.map_err(|e| e.to_string())?;
        let redundant = match plan(&key, &existing) {
            Plan::Present(there) => {
                tracing::info!(node, archive, span = job.file, object = %there, "recording found in the bucket, not uploaded again");
                return Ok(Outcome::Found);
            }
            Plan::Upload { redundant } => redundant,
        };
        let (first, last) = match (job.entries.first(), job.entries.last()) {
            (Some(f), Some(l)) => (*f, *l),
            _ => return Err("an empty data file".into()),
        };
        let len = (last.offset + u64::from(last.size))
            .checked_sub(first.offset)
            .ok_or("data file index out of order")?;
        let reader = job.reader.clone();
        let file = job.file;
        let data =
            tokio::task::spawn_blocking(move || reader.read_span(file, first.offset, len as usize))
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| format!("reading data file {file}: {e}"))?;
        let (bytes, _) = object::encode(&job.entries, &data, first.offset);
        drop(data);
        if remote
            .create(&key, bytes)
            .await
            .map_err(|e| e.to_string())?
        {
            tracing::info!(node, archive, span = job.file, object = %key, bytes = len, "recording uploaded to the bucket");
        } else {
            tracing::info!(node, archive, span = job.file, object = %key, "recording found in the bucket (another node put it first), not uploaded again");
            return Ok(Outcome::Found);
        }
        for old in redundant {
            match remote.remove(&old).await {
                Ok(()) => {
                    self.stats.removed_redundant();
                    tracing::info!(node, archive, object = %old, covered_by = %key, "partial recording removed from the bucket");
                }
                Err(error) => {
                    tracing::warn!(node, archive, object = %old, %error, "partial recording not removed")
                }
            }
        }
        Ok(Outcome::Uploaded)
    }

    /// Lists every archive's objects and attaches what changed under the local archive;
    /// returns how many archives changed. A failed listing keeps what was attached.
    pub async fn refresh_catalogs(&self) -> usize {
        let archives: Vec<(String, ArchiveReader, Arc<tokio::sync::Mutex<Catalog>>)> =
            lock(&self.archives)
                .iter()
                .map(|a| {
                    let name = a.source.names.join("/");
                    (name, a.source.reader.clone(), Arc::clone(&a.catalog))
                })
                .collect();
        let mut changed = 0;
        for (archive, reader, catalog) in archives {
            match catalog.lock().await.refresh(&reader, &self.cache).await {
                Ok(true) => changed += 1,
                Ok(false) => {}
                Err(error) => {
                    tracing::debug!(archive, %error, "bucket listing failed, the remote tier stays as it was");
                }
            }
        }
        changed
    }

    /// Removes objects whose span ended more than their archive's remote depth ago (the
    /// stream's own, else the uploader's).
    pub async fn expire(&self, now_ms: i64) {
        let archives: Vec<(Vec<String>, i64, i64)> = lock(&self.archives)
            .iter()
            .filter_map(|a| {
                let depth = a.source.remote_depth_ms.or(self.settings.remote_depth_ms)?;
                Some((
                    a.source.names.clone(),
                    a.source.reader.file_span_ms(),
                    depth,
                ))
            })
            .collect();
        for (names, span_ms, depth) in archives {
            let remote = RemoteArchive::new(&self.bucket, &names);
            let Ok(keys) = remote.objects().await else {
                continue;
            };
            for key in keys {
                let ended = (i64::from(key.span) + 1).saturating_mul(span_ms);
                if ended.saturating_add(depth) < now_ms && remote.remove(&key).await.is_ok() {
                    self.stats.removed_expired();
                }
            }
        }
    }

    /// The `"recordings"` object of the node's status, with how many archives it copies
    /// (a closed meeting's leave once their last files are up).
    pub fn status(&self) -> Value {
        let mut status = self.stats.status();
        status["archives"] = Value::from(self.archives());
        status
    }

    /// Appends the `brdyun_recordings_*` metrics.
    pub fn render_metrics(&self, out: &mut String) {
        self.stats.render(out);
    }
}

/// How long after its stream stopped an archive's last file is taken as closed,
/// milliseconds: the recorder writes the segments it still holds.
pub const RETIRE_SETTLE_MS: i64 = 5_000;

fn file_start(file: u32, reader: &ArchiveReader) -> i64 {
    i64::from(file).saturating_mul(reader.file_span_ms())
}
