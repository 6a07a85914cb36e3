//! A second tier under an archive: segments another store holds (object storage) that
//! this disk does not — older than the local archive, or in its gaps. The reader then
//! answers from the *merged* index: local entries where the disk has them, remote ones
//! elsewhere, so every catch-up query works unchanged over both.
//!
//! A remote entry's `file` and `offset` say where it is in the remote store (its tier
//! knows how to read them); a local entry always wins over a remote one of the same MSN.

use std::fmt;
use std::io;
use std::sync::Arc;

use crate::index::{Entry, Index};

/// Reads the bytes of remote entries. Blocking: called off the async path (catch-up
/// routes read archived segments on blocking threads).
pub trait RemoteTier: Send + Sync + fmt::Debug {
    /// The bytes of one remote entry.
    ///
    /// # Errors
    /// The store could not be read (unreachable, object gone).
    fn read(&self, entry: &Entry) -> io::Result<Vec<u8>>;
}

/// The remote entries attached to an archive, and the merged index queries see.
#[derive(Debug)]
pub(crate) struct RemoteView {
    pub(crate) entries: Vec<Entry>,
    pub(crate) merged: Index,
    pub(crate) tier: Arc<dyn RemoteTier>,
}

/// Merges `remote` (in MSN order) under `local`: every local entry, and every remote
/// entry whose MSN the disk does not hold and that keeps the index in order.
pub fn merge(remote: &[Entry], local: &Index) -> Index {
    let mut merged = Index::new();
    let mut remote = remote.iter().peekable();
    for entry in local.entries() {
        while let Some(r) = remote.next_if(|r| r.msn < entry.msn) {
            let _ = merged.push(*r);
        }
        remote.next_if(|r| r.msn == entry.msn);
        // A local entry that does not follow the remote ones before it (clocks that
        // disagree) still goes in: the disk is the authority.
        if merged.push(*entry).is_err() {
            merged = rebuilt_without_tail(merged, entry);
        }
    }
    for r in remote {
        let _ = merged.push(*r);
    }
    merged
}

/// `merged` without the remote entries that keep `entry` from following it, then
/// `entry`.
fn rebuilt_without_tail(merged: Index, entry: &Entry) -> Index {
    let mut kept = Index::new();
    for e in merged.entries() {
        if e.msn < entry.msn && e.start_ms <= entry.start_ms {
            let _ = kept.push(*e);
        }
    }
    let _ = kept.push(*entry);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(msn: u64, file: u32) -> Entry {
        Entry {
            msn,
            discontinuity_seq: 0,
            discontinuous: false,
            start_ms: msn as i64 * 2_000,
            duration_ticks: 180_000,
            file,
            offset: msn * 10,
            size: 10,
        }
    }

    fn index(entries: &[Entry]) -> Index {
        let mut index = Index::new();
        for e in entries {
            index.push(*e).unwrap();
        }
        index
    }

    #[test]
    fn remote_entries_fill_what_the_disk_lacks_and_the_disk_wins() {
        // The disk holds 10..=12 and 20..=21 (a restart in between); the bucket 1..=20.
        let local = index(&[
            entry(10, 0),
            entry(11, 0),
            entry(12, 0),
            entry(20, 1),
            entry(21, 1),
        ]);
        let remote: Vec<Entry> = (1..=20).map(|m| entry(m, 900)).collect();
        let merged = merge(&remote, &local);
        let msns: Vec<u64> = merged.entries().iter().map(|e| e.msn).collect();
        assert_eq!(msns, (1..=21).collect::<Vec<_>>());
        for e in merged.entries() {
            let local_one = local.by_msn(e.msn);
            assert_eq!(e.file == 900, local_one.is_none(), "msn {}", e.msn);
        }
        // Without remote entries the merge is the local index.
        assert_eq!(merge(&[], &local).entries(), local.entries());
    }
}
