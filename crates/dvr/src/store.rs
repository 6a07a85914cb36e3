//! An archive on disk: one directory per stream and protocol holding
//!
//! - data files `NNNNNNNNNN.<ext>`, one per time span (default 10 minutes; the number is
//!   the segment start time divided by the span), segments appended back to back;
//! - `index.log`, the append-only index log (see [`crate::log`]).
//!
//! A segment is written in two steps: its bytes at the end of its data file, then its
//! index record at the end of the log, each synced by the [`FileLayer`]. A crash between
//! the two leaves data nothing refers to, which the next open cuts off; a crash inside
//! the log write leaves a torn record, which fails its length or CRC check and is cut
//! off. Either way the segment being written is lost and nothing else.
//!
//! Why files per time span rather than a file per segment: a week of 2-second segments
//! is 302,400 files per stream against 1,008; appends are sequential; a period download
//! reads a few large files; retention removes whole files, which is what gives the disk
//! space back. The price: a byte limit is honoured to within one span of data.

use std::collections::BTreeMap;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use crate::files::FileLayer;
use crate::index::{Entry, Index, IndexError};
use crate::log::{decode_all, Record};
use crate::remote::{merge, RemoteTier, RemoteView};
use crate::retention::Retention;
use crate::{ArchiveRange, Protocol};

/// Name of the index log in an archive directory.
pub const LOG_NAME: &str = "index.log";
/// Default time span of one data file, milliseconds.
pub const DEFAULT_SPAN_MS: i64 = 600_000;

/// What went wrong with the archive on disk.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file operation failed (disk full, permissions, device error): retryable later.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The segment does not follow the archive (its number or time goes back).
    #[error(transparent)]
    Index(#[from] IndexError),
    /// A segment larger than 4 GiB cannot be indexed.
    #[error("segment of {0} bytes is too large")]
    TooLarge(usize),
    /// A directory name of an archive path that is not a plain name (see
    /// [`is_plain_name`]): a stream or rung name that came from a peer or a request.
    #[error("archive directory name {0:?} is not a plain name")]
    BadName(String),
}

/// Whether `name` may be one directory level of an archive path: 1 to 255 bytes, no
/// `/`, `\`, NUL or control character, and no leading dot (so neither `.`, `..` nor a
/// hidden name). Stream and rung names pass; a path smuggled in a name does not.
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && !name.starts_with('.')
        && !name
            .chars()
            .any(|c| c == '/' || c == '\\' || c.is_control())
}

/// The archive directory `root/names[0]/names[1]/…`, refusing any name that is not a
/// plain name: the one way an archive path is made from names, so no name from a peer
/// (an MC's rung) or a request reaches outside `root`.
///
/// # Errors
/// [`StoreError::BadName`] with the first bad name.
pub fn archive_dir(root: &Path, names: &[&str]) -> Result<PathBuf, StoreError> {
    let mut dir = root.to_owned();
    for name in names {
        if !is_plain_name(name) {
            return Err(StoreError::BadName((*name).to_owned()));
        }
        dir.push(name);
    }
    Ok(dir)
}

impl StoreError {
    /// True when the disk itself reported no space left.
    pub fn is_disk_full(&self) -> bool {
        matches!(self, StoreError::Io { source, .. } if source.kind() == io::ErrorKind::StorageFull)
    }
}

fn io_error<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        op,
        path: path.to_owned(),
        source,
    }
}

/// A segment's place on the timeline, as the live pipeline cut it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentMeta {
    /// Media sequence number.
    pub msn: u64,
    /// Discontinuity sequence number.
    pub discontinuity_seq: u64,
    /// Preceded by a discontinuity in the live playlist.
    pub discontinuous: bool,
    /// Program date time, Unix milliseconds.
    pub start_ms: i64,
    /// Duration in 90 kHz ticks.
    pub duration_ticks: u64,
}

/// What opening an archive found and repaired.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Entries in the index after the repair.
    pub entries: usize,
    /// Bytes of torn or corrupt log tail cut off.
    pub torn_log_bytes: u64,
    /// Log records refused on replay (out of order).
    pub bad_records: usize,
    /// Entries dropped because their data file is missing or short.
    pub missing_dropped: usize,
    /// Data files nothing referred to, removed.
    pub orphan_files_removed: usize,
    /// Bytes of unindexed data cut off the end of data files.
    pub orphan_bytes_truncated: u64,
}

/// The writing side of one archive. One writer per archive (the recorder's thread);
/// readers use [`ArchiveReader`]s, which share the index.
#[derive(Debug)]
pub struct Store {
    reader: ArchiveReader,
    files: Arc<dyn FileLayer>,
    log_path: PathBuf,
    log_len: u64,
    /// The indexed end of each data file: the next segment of that file goes there.
    file_ends: BTreeMap<u32, u64>,
    span_ms: i64,
    dead_records: usize,
}

/// Where a segment's bytes are read from.
enum Place {
    /// This disk, at this entry's place.
    Local(Entry),
    /// The remote tier, at this entry's place there.
    Remote(Entry, Arc<dyn RemoteTier>),
}

/// The reading side of an archive: cheap to clone, safe to use from any thread. File
/// paths are made only from the archive directory and numeric file ids, never from
/// request text.
#[derive(Debug, Clone)]
pub struct ArchiveReader {
    dir: Arc<PathBuf>,
    protocol: Protocol,
    span_ms: i64,
    index: Arc<RwLock<Index>>,
    remote: Arc<RwLock<Option<RemoteView>>>,
}

impl ArchiveReader {
    /// Runs `f` with the index queries see, under a read lock (keep it short: the writer
    /// waits): the local index, merged with the remote tier's entries when one is
    /// attached ([`crate::remote`]).
    pub fn with_index<R>(&self, f: impl FnOnce(&Index) -> R) -> R {
        let remote = self.remote.read().unwrap_or_else(PoisonError::into_inner);
        match &*remote {
            Some(view) => f(&view.merged),
            None => self.with_local_index(f),
        }
    }

    /// A reader with nothing on disk, for an archive only a remote tier holds (a closed
    /// meeting's recording read from object storage): every read goes to the tier
    /// [`ArchiveReader::set_remote`] attaches. `key` names it apart from every local
    /// archive (caches of derived facts are keyed by it); no file is made or read under it.
    pub fn detached(key: PathBuf, protocol: Protocol) -> ArchiveReader {
        ArchiveReader {
            dir: Arc::new(key),
            protocol,
            span_ms: DEFAULT_SPAN_MS,
            index: Arc::new(RwLock::new(Index::new())),
            remote: Arc::new(RwLock::new(None)),
        }
    }

    /// Runs `f` with the index of what this disk holds.
    pub fn with_local_index<R>(&self, f: impl FnOnce(&Index) -> R) -> R {
        match self.index.read() {
            Ok(guard) => f(&guard),
            Err(poisoned) => f(&poisoned.into_inner()),
        }
    }

    /// Attaches (or replaces) the remote tier's entries, in MSN order, read by `tier`.
    pub fn set_remote(&self, entries: Vec<Entry>, tier: Arc<dyn RemoteTier>) {
        let mut remote = self.remote.write().unwrap_or_else(PoisonError::into_inner);
        let merged = self.with_local_index(|local| merge(&entries, local));
        *remote = Some(RemoteView {
            entries,
            merged,
            tier,
        });
    }

    /// The extent of the remote tier's entries, when one is attached.
    pub fn remote_range(&self) -> Option<ArchiveRange> {
        let remote = self.remote.read().unwrap_or_else(PoisonError::into_inner);
        let entries = &remote.as_ref()?.entries;
        Some(ArchiveRange {
            from_ms: entries.first()?.start_ms,
            to_ms: entries.last()?.end_ms(),
        })
    }

    /// Keeps the merged index in step after a local append.
    fn local_appended(&self, entry: Entry) {
        let mut remote = self.remote.write().unwrap_or_else(PoisonError::into_inner);
        let Some(view) = remote.as_mut() else {
            return;
        };
        let newer = view.merged.last().is_none_or(|last| last.msn < entry.msn);
        if !newer || view.merged.push(entry).is_ok() {
            return;
        }
        view.merged = self.with_local_index(|local| merge(&view.entries, local));
    }

    /// Keeps the merged index in step after retention dropped the local entries from
    /// `old_first_msn` up to (not including) `new_first_msn`: nothing to do when the
    /// remote tier holds every one of them (they are read from it from now on), else the
    /// merged index is made again without them.
    fn local_trimmed(&self, old_first_msn: u64, new_first_msn: u64) {
        let mut remote = self.remote.write().unwrap_or_else(PoisonError::into_inner);
        let Some(view) = remote.as_mut() else {
            return;
        };
        let from = view
            .merged
            .entries()
            .partition_point(|e| e.msn < old_first_msn);
        let covered = view.merged.entries()[from..]
            .iter()
            .take_while(|e| e.msn < new_first_msn)
            .all(|e| view.entries.binary_search_by_key(&e.msn, |r| r.msn).is_ok());
        if !covered {
            view.merged = self.with_local_index(|local| merge(&view.entries, local));
        }
    }

    /// Where segment `entry.msn` is read from now: the disk when it holds that MSN (the
    /// same bytes, on the same timeline), else the remote tier's entry of that MSN.
    /// Entries are found again by MSN, so one read after retention or a catalog change
    /// still reads the right bytes.
    fn place(&self, entry: &Entry) -> Option<Place> {
        if let Some(local) = self.with_local_index(|l| l.by_msn(entry.msn).copied()) {
            return Some(Place::Local(local));
        }
        let remote = self.remote.read().unwrap_or_else(PoisonError::into_inner);
        let view = remote.as_ref()?;
        let at = view
            .entries
            .binary_search_by_key(&entry.msn, |e| e.msn)
            .ok()?;
        Some(Place::Remote(view.entries[at], Arc::clone(&view.tier)))
    }

    fn with_index_mut<R>(&self, f: impl FnOnce(&mut Index) -> R) -> R {
        match self.index.write() {
            Ok(mut guard) => f(&mut guard),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }

    /// The archive's protocol.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// The archive directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The time span of one data file, milliseconds: data file `n` holds the segments
    /// that start in `[n × span, (n + 1) × span)`.
    pub fn file_span_ms(&self) -> i64 {
        self.span_ms
    }

    /// Reads `len` bytes at `offset` of data file `file`: a whole closed file's
    /// segments, for the copy kept on object storage.
    ///
    /// # Errors
    /// The data file is gone (retention ran meanwhile), short or unreadable.
    pub fn read_span(&self, file: u32, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let file = std::fs::File::open(self.data_path(file))?;
        let mut data = vec![0u8; len];
        file.read_exact_at(&mut data, offset)?;
        Ok(data)
    }

    /// The path of data file `file`.
    pub fn data_path(&self, file: u32) -> PathBuf {
        self.dir.join(data_file_name(file, self.protocol))
    }

    /// Reads one archived segment, from the disk or the remote tier. Blocking.
    ///
    /// # Errors
    /// The data file is gone (retention ran meanwhile) or unreadable, or the remote
    /// store cannot be read.
    pub fn read(&self, entry: &Entry) -> io::Result<Vec<u8>> {
        let entry = match self.place(entry) {
            Some(Place::Local(local)) => local,
            Some(Place::Remote(remote, tier)) => return tier.read(&remote),
            None => {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    "segment not archived",
                ))
            }
        };
        let file = std::fs::File::open(self.data_path(entry.file))?;
        let mut data = vec![0u8; entry.size as usize];
        file.read_exact_at(&mut data, entry.offset)?;
        Ok(data)
    }

    /// Reads the first `len` bytes of one archived segment (all of it when shorter):
    /// what a reader of the segment's head (its marker, its caption block) needs.
    ///
    /// # Errors
    /// The data file is gone (retention ran meanwhile) or unreadable.
    pub fn read_head(&self, entry: &Entry, len: usize) -> io::Result<Vec<u8>> {
        let entry = match self.place(entry) {
            Some(Place::Local(local)) => local,
            Some(Place::Remote(remote, tier)) => {
                let mut data = tier.read(&remote)?;
                data.truncate(len);
                return Ok(data);
            }
            None => {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    "segment not archived",
                ))
            }
        };
        let file = std::fs::File::open(self.data_path(entry.file))?;
        let mut data = vec![0u8; len.min(entry.size as usize)];
        file.read_exact_at(&mut data, entry.offset)?;
        Ok(data)
    }
}

fn extension(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Ts => "ts",
        Protocol::Fmp4 => "m4s",
    }
}

fn data_file_name(file: u32, protocol: Protocol) -> String {
    format!("{file:010}.{}", extension(protocol))
}

fn parse_data_file_name(name: &str, protocol: Protocol) -> Option<u32> {
    let digits = name.strip_suffix(extension(protocol))?.strip_suffix('.')?;
    if digits.len() != 10 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

impl Store {
    /// Opens (or creates) the archive in `dir`, repairing what a crash left behind:
    /// a torn log tail is cut, entries whose data is missing are dropped, unindexed data
    /// is truncated or removed, and the log is rewritten compact.
    ///
    /// `span_ms` is the time span of one data file (clamped to at least one second).
    ///
    /// # Errors
    /// The directory cannot be created or listed, or a repair cannot be written.
    pub fn open(
        dir: &Path,
        protocol: Protocol,
        files: Arc<dyn FileLayer>,
        span_ms: i64,
    ) -> Result<(Store, Recovery), StoreError> {
        std::fs::create_dir_all(dir).map_err(io_error("creating archive directory", dir))?;
        let log_path = dir.join(LOG_NAME);
        let mut recovery = Recovery::default();
        let log_bytes = match std::fs::read(&log_path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io_error("reading index log", &log_path)(e)),
        };
        let (records, valid) = decode_all(&log_bytes);
        recovery.torn_log_bytes = (log_bytes.len() - valid) as u64;
        drop(log_bytes);

        // Replay into a plain list first: entries may still have to go from the middle.
        let mut entries: Vec<Entry> = Vec::with_capacity(records.len());
        let mut trims = 0usize;
        for record in records {
            match record {
                Record::Segment(entry) => {
                    let fits = entries
                        .last()
                        .is_none_or(|l| entry.msn > l.msn && entry.start_ms >= l.start_ms);
                    if fits {
                        entries.push(entry);
                    } else {
                        recovery.bad_records += 1;
                    }
                }
                Record::Trim { first_kept_msn } => {
                    trims += 1;
                    let cut = entries.partition_point(|e| e.msn < first_kept_msn);
                    entries.drain(..cut);
                }
            }
        }

        // The data files present, with their sizes.
        let mut on_disk: BTreeMap<u32, u64> = BTreeMap::new();
        let listing = std::fs::read_dir(dir).map_err(io_error("listing archive", dir))?;
        for item in listing.flatten() {
            let name = item.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some(file) = parse_data_file_name(name, protocol) {
                let len = item.metadata().map(|m| m.len()).unwrap_or(0);
                on_disk.insert(file, len);
            } else if name.ends_with(".tmp") {
                files_remove(&*files, &item.path())?;
            }
        }
        let before = entries.len();
        entries.retain(|e| {
            on_disk
                .get(&e.file)
                .is_some_and(|&len| e.offset.saturating_add(u64::from(e.size)) <= len)
        });
        recovery.missing_dropped = before - entries.len();

        let mut file_ends: BTreeMap<u32, u64> = BTreeMap::new();
        for e in &entries {
            let end = e.offset + u64::from(e.size);
            let slot = file_ends.entry(e.file).or_insert(0);
            *slot = (*slot).max(end);
        }
        let span_ms = span_ms.max(1000);
        let reader = ArchiveReader {
            dir: Arc::new(dir.to_owned()),
            protocol,
            span_ms,
            index: Arc::new(RwLock::new(Index::new())),
            remote: Arc::new(RwLock::new(None)),
        };
        for (&file, &len) in &on_disk {
            let path = reader.data_path(file);
            match file_ends.get(&file) {
                None => {
                    files_remove(&*files, &path)?;
                    recovery.orphan_files_removed += 1;
                }
                Some(&end) if len > end => {
                    files
                        .set_len(&path, end)
                        .map_err(io_error("truncating data file", &path))?;
                    recovery.orphan_bytes_truncated += len - end;
                }
                Some(_) => {}
            }
        }

        let rewrite = trims > 0
            || recovery.torn_log_bytes > 0
            || recovery.bad_records > 0
            || recovery.missing_dropped > 0;
        let mut index = Index::new();
        for e in &entries {
            index.push(*e)?;
        }
        recovery.entries = index.len();
        let log_len = if rewrite || valid == 0 {
            let compact = encode_entries(index.entries());
            files
                .replace(&log_path, &compact)
                .map_err(io_error("rewriting index log", &log_path))?;
            compact.len() as u64
        } else {
            valid as u64
        };
        reader.with_index_mut(|slot| *slot = index);
        let store = Store {
            reader,
            files,
            log_path,
            log_len,
            file_ends,
            span_ms,
            dead_records: 0,
        };
        Ok((store, recovery))
    }

    /// A reader sharing this archive's index.
    pub fn reader(&self) -> ArchiveReader {
        self.reader.clone()
    }

    /// The newest archived MSN (the live numbering continues after it).
    pub fn newest_msn(&self) -> Option<u64> {
        self.reader.with_local_index(|i| i.last().map(|e| e.msn))
    }

    /// The data file a segment starting at `start_ms` belongs to.
    pub fn file_of(&self, start_ms: i64) -> u32 {
        u32::try_from(start_ms.max(0) / self.span_ms).unwrap_or(u32::MAX)
    }

    /// Archives one segment: data, then index record, then the in-memory index.
    ///
    /// # Errors
    /// The segment does not follow the archive ([`StoreError::Index`]), is too large, or
    /// a write failed ([`StoreError::Io`]; nothing is indexed, the next append retries
    /// at the same place).
    pub fn append(&mut self, meta: SegmentMeta, data: &[u8]) -> Result<Entry, StoreError> {
        let size = u32::try_from(data.len()).map_err(|_| StoreError::TooLarge(data.len()))?;
        let file = self.file_of(meta.start_ms);
        let offset = self.file_ends.get(&file).copied().unwrap_or(0);
        let entry = Entry {
            msn: meta.msn,
            discontinuity_seq: meta.discontinuity_seq,
            discontinuous: meta.discontinuous,
            start_ms: meta.start_ms,
            duration_ticks: meta.duration_ticks,
            file,
            offset,
            size,
        };
        // Refuse before writing anything.
        self.reader.with_local_index(|index| {
            let mut probe = Index::new();
            if let Some(last) = index.last() {
                probe.push(*last)?;
            }
            probe.push(entry)
        })?;
        let path = self.reader.data_path(file);
        self.files
            .write_at(&path, offset, data)
            .map_err(io_error("writing segment", &path))?;
        let record = Record::Segment(entry).encode();
        self.files
            .write_at(&self.log_path, self.log_len, &record)
            .map_err(io_error("writing index log", &self.log_path))?;
        self.log_len += record.len() as u64;
        self.file_ends.insert(file, offset + u64::from(size));
        self.reader.with_index_mut(|index| index.push(entry))?;
        self.reader.local_appended(entry);
        Ok(entry)
    }

    /// Applies the retention policy at `now_ms`: drops entries, records the trim in the
    /// log, removes data files nothing refers to any more, and compacts the log when
    /// most of it is dead. Returns how many entries were dropped.
    ///
    /// # Errors
    /// The trim record or a removal failed; the in-memory index is trimmed anyway (a
    /// restart re-applies the policy to whatever the log still lists).
    pub fn retain(&mut self, policy: &Retention, now_ms: i64) -> Result<usize, StoreError> {
        let (dropped, old_first, first) = self.reader.with_index_mut(|index| {
            let old_first = index.first().map_or(0, |e| e.msn);
            let dropped = index.retain(policy, now_ms);
            (dropped, old_first, index.first().map(|e| (e.msn, e.file)))
        });
        if dropped == 0 {
            return Ok(0);
        }
        self.reader
            .local_trimmed(old_first, first.map_or(u64::MAX, |(msn, _)| msn));
        self.dead_records += dropped;
        let first_file = first.map_or(u32::MAX, |(_, file)| file);
        let gone: Vec<u32> = self
            .file_ends
            .range(..first_file)
            .map(|(&f, _)| f)
            .collect();
        let mut result = Ok(dropped);
        for file in gone {
            let path = self.reader.data_path(file);
            match self.files.remove(&path) {
                Ok(()) => {
                    self.file_ends.remove(&file);
                }
                Err(e) => result = Err(io_error("removing data file", &path)(e)),
            }
        }
        let live = self.reader.with_local_index(Index::len);
        if self.dead_records > 4096 && self.dead_records > live {
            let compact = self
                .reader
                .with_local_index(|i| encode_entries(i.entries()));
            self.files
                .replace(&self.log_path, &compact)
                .map_err(io_error("compacting index log", &self.log_path))?;
            self.log_len = compact.len() as u64;
            self.dead_records = 0;
        } else {
            // An emptied index keeps nothing written so far.
            let first_kept_msn = first.map_or(u64::MAX, |(msn, _)| msn);
            let record = Record::Trim { first_kept_msn }.encode();
            self.files
                .write_at(&self.log_path, self.log_len, &record)
                .map_err(io_error("writing index log", &self.log_path))?;
            self.log_len += record.len() as u64;
        }
        result
    }
}

fn files_remove(files: &dyn FileLayer, path: &Path) -> Result<(), StoreError> {
    files
        .remove(path)
        .map_err(io_error("removing orphan file", path))
}

fn encode_entries(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len() * 58);
    for e in entries {
        out.extend_from_slice(&Record::Segment(*e).encode());
    }
    out
}
