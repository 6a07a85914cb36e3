//! Reading an archive's objects back from the bucket: which objects there are, each
//! object's index (two ranged reads: footer, then index), and one segment (one ranged
//! read). What any node needs to serve a recorded period it does not hold.

use bytes::Bytes;
use dvr::Entry;
use futures_util::TryStreamExt;
use object_store::path::Path as ObjectPath;
use object_store::ObjectStoreExt;

use crate::bucket::Bucket;
use crate::key::ObjectKey;
use crate::object::{decode_footer, decode_index, FOOTER_LEN};

/// Why a read from the bucket failed.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The store answered with an error or could not be reached.
    #[error(transparent)]
    Store(#[from] object_store::Error),
    /// The object is not a readable archive object.
    #[error(transparent)]
    Object(#[from] crate::object::ObjectError),
    /// The object's index does not describe what its key says (another writer's object,
    /// or a damaged one): its segments are not served.
    #[error("object {0} does not hold what its key names")]
    Mismatch(ObjectKey),
}

/// The largest segment an object may index (a 2-second segment at 256 Mbit/s).
pub const MAX_SEGMENT_BYTES: u32 = 64 << 20;
/// Index bytes per segment an object may use (a record is 58 bytes).
const INDEX_BYTES_PER_SEGMENT: u64 = 128;

/// Whether `entries`, read from object `key`, are what the key names: `count` segments
/// of its span, MSNs within its first and last, none larger than [`MAX_SEGMENT_BYTES`].
fn matches_key(entries: &[Entry], key: &ObjectKey) -> bool {
    entries.len() as u64 == key.count
        && entries.first().is_some_and(|e| e.msn == key.first_msn)
        && entries.last().is_some_and(|e| e.msn == key.last_msn)
        && entries
            .iter()
            .all(|e| e.file == key.span && e.size <= MAX_SEGMENT_BYTES)
}

/// One archive object as the bucket lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listed {
    /// Its key.
    pub key: ObjectKey,
    /// Its size, bytes.
    pub size: u64,
    /// When the store last wrote it, Unix ms.
    pub written_ms: i64,
}

/// One archive (`meeting/ts`, `meeting/rungs/720p/ts`) in the bucket.
#[derive(Debug, Clone)]
pub struct RemoteArchive {
    bucket: Bucket,
    prefix: ObjectPath,
}

impl RemoteArchive {
    /// The archive whose directory levels under `data_dir/archive` are `names`.
    pub fn new(bucket: &Bucket, names: &[String]) -> RemoteArchive {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        RemoteArchive {
            prefix: bucket.archive_prefix(&names),
            bucket: bucket.clone(),
        }
    }

    /// The archive's key prefix.
    pub fn prefix(&self) -> &ObjectPath {
        &self.prefix
    }

    fn path(&self, key: &ObjectKey) -> ObjectPath {
        self.prefix.clone().join(key.to_string())
    }

    /// The archive objects directly under the prefix, in key order (other objects are
    /// not the archive's and are skipped).
    ///
    /// # Errors
    /// The listing failed.
    pub async fn objects(&self) -> Result<Vec<ObjectKey>, RemoteError> {
        Ok(self
            .objects_with_sizes()
            .await?
            .into_iter()
            .map(|(key, _)| key)
            .collect())
    }

    /// [`Self::objects`] with each object's size in bytes.
    ///
    /// # Errors
    /// The listing failed.
    pub async fn objects_with_sizes(&self) -> Result<Vec<(ObjectKey, u64)>, RemoteError> {
        Ok(self
            .listed()
            .await?
            .into_iter()
            .map(|o| (o.key, o.size))
            .collect())
    }

    /// The archive objects with their sizes and when the store last wrote them, in key
    /// order.
    ///
    /// # Errors
    /// The listing failed.
    pub async fn listed(&self) -> Result<Vec<Listed>, RemoteError> {
        let metas: Vec<_> = self
            .bucket
            .store
            .list(Some(&self.prefix))
            .try_collect()
            .await?;
        let depth = self.prefix.parts().count() + 1;
        let mut listed: Vec<Listed> = metas
            .iter()
            .filter(|m| m.location.parts().count() == depth)
            .filter_map(|m| {
                Some(Listed {
                    key: ObjectKey::parse(m.location.filename()?)?,
                    size: m.size,
                    written_ms: m.last_modified.timestamp_millis(),
                })
            })
            .collect();
        listed.sort_unstable_by_key(|o| o.key);
        Ok(listed)
    }

    /// One object's index: its segments with their offsets in the object.
    ///
    /// # Errors
    /// The reads failed or the object is not a readable archive object.
    pub async fn index(&self, key: &ObjectKey) -> Result<Vec<Entry>, RemoteError> {
        let path = self.path(key);
        let size = self.bucket.store.head(&path).await?.size;
        let footer_at = size.saturating_sub(FOOTER_LEN as u64);
        let footer = self.bucket.store.get_range(&path, footer_at..size).await?;
        let (offset, len) = decode_footer(&footer, size)?;
        // A footer that claims a huge index is not believed: nothing larger than the
        // key's segments need is read.
        if len > key.count.saturating_mul(INDEX_BYTES_PER_SEGMENT) {
            return Err(RemoteError::Mismatch(*key));
        }
        let index = self
            .bucket
            .store
            .get_range(&path, offset..offset + len)
            .await?;
        let entries = decode_index(&index, offset)?;
        if !matches_key(&entries, key) {
            return Err(RemoteError::Mismatch(*key));
        }
        Ok(entries)
    }

    /// One segment's bytes, as `entry` (from [`Self::index`]) places it.
    ///
    /// # Errors
    /// The read failed.
    pub async fn segment(&self, key: &ObjectKey, entry: &Entry) -> Result<Bytes, RemoteError> {
        let start = entry.offset;
        let end = start + u64::from(entry.size);
        Ok(self
            .bucket
            .store
            .get_range(&self.path(key), start..end)
            .await?)
    }

    /// Removes an object.
    ///
    /// # Errors
    /// The store refused or could not be reached.
    pub async fn remove(&self, key: &ObjectKey) -> Result<(), RemoteError> {
        Ok(self.bucket.store.delete(&self.path(key)).await?)
    }

    /// Puts an object unless its key exists: `Ok(true)` when this call created it,
    /// `Ok(false)` when the key was there (another node put it first).
    ///
    /// # Errors
    /// The store refused or could not be reached.
    pub async fn create(&self, key: &ObjectKey, bytes: Vec<u8>) -> Result<bool, RemoteError> {
        let options = object_store::PutOptions {
            mode: object_store::PutMode::Create,
            ..object_store::PutOptions::default()
        };
        let payload = object_store::PutPayload::from(bytes);
        match self
            .bucket
            .store
            .put_opts(&self.path(key), payload, options)
            .await
        {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
            Err(error) => Err(error.into()),
        }
    }
}
