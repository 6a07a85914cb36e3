//! Remote retention of a meeting's whole recording, by whoever knows the meeting: a
//! node expires what it uploads while it records, but once a meeting has closed no node
//! registers its archives any more, so the MC — which knows every meeting and its
//! retention — removes the objects of its meetings that have outlived it.
//!
//! An object's age is taken from when the store wrote it (the listing's last-modified
//! time): a closed file is uploaded within seconds of its span's end, and a retention is
//! counted in days.

use crate::bucket::Bucket;
use crate::listing::meeting_archives;
use crate::remote::{RemoteArchive, RemoteError};

/// Removes every object of `meeting`'s archives (the source and each rung) written more
/// than `keep_ms` before `now_ms`; returns how many went.
///
/// # Errors
/// A listing failed (objects removed before it stay removed; a failed removal is
/// skipped and tried at the next sweep).
pub async fn expire_meeting(
    bucket: &Bucket,
    meeting: &str,
    keep_ms: i64,
    now_ms: i64,
) -> Result<usize, RemoteError> {
    let mut removed = 0;
    for (_, names) in meeting_archives(bucket, meeting).await? {
        let archive = RemoteArchive::new(bucket, &names);
        for object in archive.listed().await? {
            if object.written_ms.saturating_add(keep_ms) < now_ms
                && archive.remove(&object.key).await.is_ok()
            {
                removed += 1;
            }
        }
    }
    Ok(removed)
}
