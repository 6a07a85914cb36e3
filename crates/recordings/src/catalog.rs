//! The bucket's copy of one archive, attached under the local archive as its remote
//! tier ([`dvr::remote`]): any node then serves a recorded period its disk does not hold
//! (older than its archive, recorded while it was down, or recorded by another node
//! before it joined) from the bucket, through every catch-up route.
//!
//! A refresh lists the archive's objects, takes one per span (the one with the most
//! segments, gap-free first), reads the index of each object it has not read yet, and
//! attaches the entries. Segments are read with one ranged GET each and kept in a
//! byte-bounded cache shared by the node's archives.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::io;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use dvr::remote::RemoteTier;
use dvr::{ArchiveReader, Entry};
use tokio::runtime::Handle;

use crate::key::ObjectKey;
use crate::remote::{RemoteArchive, RemoteError};

/// How long a read from the bucket may take before the segment is answered as missing.
const READ_TIMEOUT: Duration = Duration::from_secs(20);

/// Segments read from the bucket, kept up to a byte budget (oldest out first): the
/// viewers of one catch-up period read the same segments.
#[derive(Debug)]
pub struct SegmentCache {
    budget: usize,
    inner: Mutex<CacheInner>,
}

/// A cached segment: its archive (the bucket prefix: a rung's segments have the source's
/// MSNs and often its object keys), its object, its MSN.
type SegmentKey = (Arc<str>, ObjectKey, u64);

#[derive(Debug, Default)]
struct CacheInner {
    bytes: usize,
    order: VecDeque<SegmentKey>,
    segments: HashMap<SegmentKey, Bytes>,
}

impl SegmentCache {
    /// A cache of at most `budget` bytes.
    pub fn new(budget: usize) -> SegmentCache {
        SegmentCache {
            budget,
            inner: Mutex::new(CacheInner::default()),
        }
    }

    fn get(&self, key: &SegmentKey) -> Option<Bytes> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.segments.get(key).cloned()
    }

    fn put(&self, key: SegmentKey, data: Bytes) {
        if data.len() > self.budget {
            return;
        }
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if inner.segments.contains_key(&key) {
            return;
        }
        while inner.bytes + data.len() > self.budget {
            let Some(old) = inner.order.pop_front() else {
                break;
            };
            if let Some(gone) = inner.segments.remove(&old) {
                inner.bytes -= gone.len();
            }
        }
        inner.bytes += data.len();
        inner.order.push_back(key.clone());
        inner.segments.insert(key, data);
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .bytes
    }
}

/// Reads remote entries of one archive: the object of the entry's span, one ranged GET.
#[derive(Debug)]
struct BucketTier {
    archive: RemoteArchive,
    /// The archive's prefix, naming its segments in the shared cache.
    name: Arc<str>,
    objects: BTreeMap<u32, ObjectKey>,
    cache: Arc<SegmentCache>,
    runtime: Handle,
}

impl RemoteTier for BucketTier {
    fn read(&self, entry: &Entry) -> io::Result<Vec<u8>> {
        let key = *self
            .objects
            .get(&entry.file)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no object for the span"))?;
        let cached = (Arc::clone(&self.name), key, entry.msn);
        if let Some(data) = self.cache.get(&cached) {
            return Ok(data.to_vec());
        }
        // Run the read on the node's runtime and wait here: callers are blocking
        // threads, and a waiting channel works from any thread.
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let archive = self.archive.clone();
        let wanted = *entry;
        self.runtime.spawn(async move {
            let _ = tx.send(archive.segment(&key, &wanted).await);
        });
        let data = rx
            .recv_timeout(READ_TIMEOUT)
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "bucket read timed out"))?
            .map_err(|e| io::Error::other(e.to_string()))?;
        self.cache.put(cached, data.clone());
        Ok(data.to_vec())
    }
}

/// One archive's view of the bucket.
#[derive(Debug)]
pub struct Catalog {
    archive: RemoteArchive,
    chosen: BTreeMap<u32, ObjectKey>,
    indexes: HashMap<ObjectKey, Arc<Vec<Entry>>>,
    /// Objects whose index could not be read or does not match their key.
    skipped: HashSet<ObjectKey>,
}

/// Whether `a` is the better object of a span to read from than `b`.
fn better(a: &ObjectKey, b: &ObjectKey) -> bool {
    (a.is_gapless(), a.count, a.first_msn) > (b.is_gapless(), b.count, b.first_msn)
}

impl Catalog {
    /// The catalog of `archive`, empty until refreshed.
    pub fn new(archive: RemoteArchive) -> Catalog {
        Catalog {
            archive,
            chosen: BTreeMap::new(),
            indexes: HashMap::new(),
            skipped: HashSet::new(),
        }
    }

    /// Lists the bucket and, when its objects changed, attaches their entries under
    /// `reader`. Returns whether anything changed.
    ///
    /// # Errors
    /// The listing or an index read failed; the previous entries stay attached.
    pub async fn refresh(
        &mut self,
        reader: &ArchiveReader,
        cache: &Arc<SegmentCache>,
    ) -> Result<bool, RemoteError> {
        let mut chosen: BTreeMap<u32, ObjectKey> = BTreeMap::new();
        for key in self.archive.objects().await? {
            if self.skipped.contains(&key) {
                continue;
            }
            chosen
                .entry(key.span)
                .and_modify(|held| {
                    if better(&key, held) {
                        *held = key;
                    }
                })
                .or_insert(key);
        }
        if chosen == self.chosen {
            return Ok(false);
        }
        for key in chosen.values() {
            if self.indexes.contains_key(key) {
                continue;
            }
            match self.archive.index(key).await {
                Ok(entries) => {
                    self.indexes.insert(*key, Arc::new(entries));
                }
                // A damaged or foreign object is skipped from then on, not served; the
                // others are.
                Err(error @ (RemoteError::Object(_) | RemoteError::Mismatch(_))) => {
                    tracing::warn!(object = %key, %error, "archive object skipped");
                    self.skipped.insert(*key);
                }
                Err(error) => return Err(error),
            }
        }
        chosen.retain(|_, key| self.indexes.contains_key(key));
        self.indexes
            .retain(|key, _| chosen.get(&key.span) == Some(key));
        let mut entries: Vec<Entry> = chosen
            .values()
            .filter_map(|key| self.indexes.get(key))
            .flat_map(|entries| entries.iter().copied())
            .collect();
        entries.sort_by_key(|e| e.msn);
        entries.dedup_by_key(|e| e.msn);
        let tier = BucketTier {
            archive: self.archive.clone(),
            name: Arc::from(self.archive.prefix().as_ref()),
            objects: chosen.clone(),
            cache: Arc::clone(cache),
            runtime: Handle::current(),
        };
        reader.set_remote(entries, Arc::new(tier));
        self.chosen = chosen;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(first_msn: u64, last_msn: u64, count: u64) -> ObjectKey {
        ObjectKey {
            span: 1,
            first_msn,
            last_msn,
            count,
        }
    }

    #[test]
    fn the_fullest_object_of_a_span_is_read() {
        assert!(better(&key(1, 10, 10), &key(5, 10, 6)));
        assert!(better(&key(5, 10, 6), &key(1, 10, 9)), "gap-free first");
    }

    #[test]
    fn the_cache_keeps_to_its_budget_oldest_out_first() {
        let cache = SegmentCache::new(100);
        let source: Arc<str> = Arc::from("rec/m/ts");
        let at = |msn| (Arc::clone(&source), key(0, 9, 10), msn);
        for msn in 0..5 {
            cache.put(at(msn), Bytes::from(vec![0u8; 40]));
        }
        assert!(cache.bytes() <= 100);
        assert!(cache.get(&at(4)).is_some());
        assert!(cache.get(&at(0)).is_none());
        cache.put(at(9), Bytes::from(vec![0u8; 101]));
        assert!(cache.get(&at(9)).is_none(), "larger than the budget");
    }

    #[test]
    fn a_rung_never_gets_the_source_segment_of_the_same_key() {
        // A rung's objects have the source's keys (the same MSNs and spans).
        let cache = SegmentCache::new(1000);
        cache.put(
            (Arc::from("rec/m/ts"), key(0, 9, 10), 3),
            Bytes::from_static(b"source"),
        );
        let rung = (Arc::from("rec/m/rungs/240p/ts"), key(0, 9, 10), 3);
        assert!(cache.get(&rung).is_none());
    }
}
