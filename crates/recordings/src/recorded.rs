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

/// Most recordings being opened at once, whatever their meetings: an opening lists the
/// bucket and reads an index per object, so names cycled faster than they are held
/// cannot multiply the bucket's work.
const MAX_OPENING: usize = 2;

/// Why a recording is not there to serve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// As many recordings are being opened as the node allows: try again shortly.
    #[error("too many recordings being opened")]
    Busy,
    /// The bucket could not be listed or an index read (its error, cut to its code);
    /// kept [`FRESH`] like an opened recording, so a failing store is not asked again by
    /// every request.
    #[error("recordings store: {0}")]
    Store(String),
}

/// One rendition of a recording.
#[derive(Debug)]
pub struct RecordedRendition {
    /// [`SOURCE`], a rung's name, or an audio language's (`audio-{code}`).
    pub rendition: String,
    /// Its archive, every segment in the bucket.
    pub reader: ArchiveReader,
}

impl RecordedRendition {
    /// Whether it is an audio language's, not a variant of the ladder.
    pub fn is_language(&self) -> bool {
        crate::listing::is_language_name(&self.rendition)
    }
}

/// A meeting's recording as the bucket holds it.
#[derive(Debug, Default)]
pub struct Recorded {
    /// The renditions with at least one segment: the source first, then the rungs by
    /// name, then the audio languages.
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
    cell: Arc<OnceCell<Result<Arc<Recorded>, OpenError>>>,
}

/// The recordings opened lately, by meeting.
#[derive(Debug)]
pub struct RecordedCache {
    slots: Mutex<HashMap<String, Slot>>,
    opening: tokio::sync::Semaphore,
}

impl Default for RecordedCache {
    fn default() -> Self {
        RecordedCache {
            slots: Mutex::new(HashMap::new()),
            opening: tokio::sync::Semaphore::new(MAX_OPENING),
        }
    }
}

impl RecordedCache {
    /// `meeting`'s recording, opened at most [`FRESH`] ago (opened now otherwise).
    ///
    /// # Errors
    /// [`OpenError::Busy`] when [`MAX_OPENING`] openings run already (nothing kept: the
    /// next request tries again); [`OpenError::Store`] when the bucket failed (kept
    /// [`FRESH`]).
    pub async fn get(
        &self,
        bucket: &Bucket,
        cache: &Arc<SegmentCache>,
        meeting: &str,
    ) -> Result<Arc<Recorded>, OpenError> {
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
        let opened = cell
            .get_or_init(|| async {
                let Ok(_permit) = self.opening.try_acquire() else {
                    return Err(OpenError::Busy);
                };
                open(bucket, cache, meeting)
                    .await
                    .map_err(|e| OpenError::Store(crate::stats::brief(&e.to_string())))
            })
            .await
            .clone();
        if matches!(opened, Err(OpenError::Busy)) {
            let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
            if slots
                .get(meeting)
                .is_some_and(|slot| Arc::ptr_eq(&slot.cell, &cell))
            {
                slots.remove(meeting);
            }
        }
        opened
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
