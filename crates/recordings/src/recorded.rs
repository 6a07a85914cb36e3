//! A recording read from the bucket alone: what a node serves of a meeting that no
//! longer runs anywhere (closed, its streams gone from every node), on any node with the
//! store, whether or not it ever recorded that meeting.
//!
//! Each rendition the bucket holds (the source and every rung) becomes an
//! [`ArchiveReader`] with nothing on disk and the bucket's objects attached as its
//! remote tier ([`crate::catalog`]), so the catch-up routes read it as they read a live
//! archive. Opening one lists the bucket and reads one index per object: the result is
//! kept a few seconds ([`FRESH`]) and shared by every request of that meeting meanwhile;
//! requests arriving while it opens wait for the same opening.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use dvr::{ArchiveReader, Protocol};
use tokio::sync::OnceCell;

use crate::bucket::Bucket;
use crate::catalog::{Catalog, SegmentCache};
use crate::listing::{meeting_archives, SOURCE};
use crate::remote::{RemoteArchive, RemoteError};

/// How long an opened recording is served before the bucket is listed again (the last
/// files of a meeting that just closed arrive within seconds).
pub const FRESH: Duration = Duration::from_secs(10);

/// Most recordings held open at once; the oldest opened goes first.
const MAX_HELD: usize = 16;

/// One rendition of a recording.
#[derive(Debug)]
pub struct RecordedRendition {
    /// [`SOURCE`], or the rung's name.
    pub rendition: String,
    /// Its archive, every segment in the bucket.
    pub reader: ArchiveReader,
}

/// A meeting's recording as the bucket holds it.
#[derive(Debug, Default)]
pub struct Recorded {
    /// The renditions with at least one segment: the source first, then the rungs by name.
    pub renditions: Vec<RecordedRendition>,
}

impl Recorded {
    /// The source rendition's archive.
    pub fn source(&self) -> Option<&ArchiveReader> {
        self.rendition(SOURCE)
    }

    /// The archive of rendition `name` ([`SOURCE`] or a rung).
    pub fn rendition(&self, name: &str) -> Option<&ArchiveReader> {
        self.renditions
            .iter()
            .find(|r| r.rendition == name)
            .map(|r| &r.reader)
    }
}

/// An opening of one meeting's recording, shared by the requests that need it.
#[derive(Debug)]
struct Slot {
    opened: Instant,
    cell: Arc<OnceCell<Arc<Recorded>>>,
}

/// The recordings opened lately, by meeting.
#[derive(Debug, Default)]
pub struct RecordedCache {
    slots: Mutex<HashMap<String, Slot>>,
}

impl RecordedCache {
    /// `meeting`'s recording, opened at most [`FRESH`] ago (opened now otherwise).
    ///
    /// # Errors
    /// The bucket's listing or an index read failed (nothing is kept: the next request
    /// tries again).
    pub async fn get(
        &self,
        bucket: &Bucket,
        cache: &Arc<SegmentCache>,
        meeting: &str,
    ) -> Result<Arc<Recorded>, RemoteError> {
        let cell = {
            let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
            slots.retain(|_, slot| slot.opened.elapsed() < FRESH);
            if !slots.contains_key(meeting) && slots.len() >= MAX_HELD {
                let oldest = slots
                    .iter()
                    .min_by_key(|(_, slot)| slot.opened)
                    .map(|(name, _)| name.clone());
                if let Some(oldest) = oldest {
                    slots.remove(&oldest);
                }
            }
            let slot = slots.entry(meeting.to_owned()).or_insert_with(|| Slot {
                opened: Instant::now(),
                cell: Arc::new(OnceCell::new()),
            });
            Arc::clone(&slot.cell)
        };
        cell.get_or_try_init(|| open(bucket, cache, meeting))
            .await
            .cloned()
    }
}

/// Lists `meeting`'s archives in the bucket and attaches each under a reader of its own.
async fn open(
    bucket: &Bucket,
    cache: &Arc<SegmentCache>,
    meeting: &str,
) -> Result<Arc<Recorded>, RemoteError> {
    let mut renditions = Vec::new();
    for (rendition, names) in meeting_archives(bucket, meeting).await? {
        let key = PathBuf::from(format!("recorded:{}", names.join("/")));
        let reader = ArchiveReader::detached(key, Protocol::Ts);
        let mut catalog = Catalog::new(RemoteArchive::new(bucket, &names));
        catalog.refresh(&reader, cache).await?;
        if reader.remote_range().is_some() {
            renditions.push(RecordedRendition { rendition, reader });
        }
    }
    Ok(Arc::new(Recorded { renditions }))
}
