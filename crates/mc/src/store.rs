//! The MC's embedded store: every meeting in one JSON file, replaced atomically
//! (write a temporary file, fsync it, rename it over the old one, fsync the directory).
//! The file holds secrets (stream keys, host tokens): it is only ever created with
//! mode 0600.
//!
//! Why a JSON file and not an embedded database: an MC holds at most
//! [`meeting::meeting::MAX_MEETINGS`] small records that change a few times per
//! meeting; one atomic rename gives crash safety without a new dependency, and the file
//! is readable by an operator. Every change is written before it is acknowledged, under
//! the same lock that serializes changes — which is also what makes concurrent creates
//! of one id produce exactly one winner.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use meeting::{MeetingError, Meetings};
use thiserror::Error;

/// Why the store could not be opened or written.
#[derive(Debug, Error)]
pub enum StoreError {
    /// The file exists but cannot be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The store file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a valid store (refusing to start beats losing meetings).
    #[error("{path} is not a valid meeting store: {reason}")]
    Corrupt {
        /// The store file.
        path: PathBuf,
        /// The parser's message.
        reason: String,
    },
    /// The shared store (etcd) cannot be reached: nothing was changed.
    #[error("meeting store unavailable: {0}")]
    Unavailable(String),
    /// The new state could not be written; nothing was changed.
    #[error("writing {path}: {source}")]
    Write {
        /// The store file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Why a change to the meetings failed.
#[derive(Debug, Error)]
pub enum ChangeError {
    /// The meeting refused (exists, closed, …).
    #[error(transparent)]
    Meeting(#[from] MeetingError),
    /// The store could not be written (the change was not made).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The meetings, in memory and on disk.
#[derive(Debug)]
pub struct Store {
    path: PathBuf,
    current: Mutex<Arc<Meetings>>,
}

impl Store {
    /// Opens (or starts) the store at `path`.
    ///
    /// # Errors
    /// The file exists but cannot be read or parsed.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Ok(Self {
            path: path.to_owned(),
            current: Mutex::new(Arc::new(read_file(path)?)),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Arc<Meetings>> {
        // The guarded value is only ever replaced whole: a panic cannot leave it torn.
        self.current.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The meetings now.
    pub fn snapshot(&self) -> Arc<Meetings> {
        Arc::clone(&self.lock())
    }

    /// Applies `change` to a copy, writes the copy, then makes it current. Changes are
    /// serialized; a failed change or write leaves everything as it was.
    ///
    /// # Errors
    /// The change's own refusal, or the write failure.
    pub fn change<T>(
        &self,
        mut change: impl FnMut(&mut Meetings) -> Result<T, MeetingError>,
    ) -> Result<(T, Arc<Meetings>), ChangeError> {
        let mut current = self.lock();
        let mut next = Meetings::clone(&current);
        let out = change(&mut next)?;
        self.write(&next)?;
        let next = Arc::new(next);
        *current = Arc::clone(&next);
        Ok((out, next))
    }

    fn write(&self, meetings: &Meetings) -> Result<(), StoreError> {
        write_file(&self.path, meetings)
    }
}

/// The meetings in the file at `path` (none when it does not exist).
///
/// # Errors
/// The file exists but cannot be read or parsed.
pub fn read_file(path: &Path) -> Result<Meetings, StoreError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
            path: path.to_owned(),
            reason: e.to_string(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Meetings::new()),
        Err(source) => Err(StoreError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Writes `meetings` to `path` atomically: a temporary file created owner-only (mode
/// 0600: it holds stream keys and host tokens), fsynced, renamed over the old one, and
/// the directory fsynced.
///
/// # Errors
/// [`StoreError::Write`] when any step fails; the old file is then untouched.
pub fn write_file(path: &Path, meetings: &Meetings) -> Result<(), StoreError> {
    write_secret_json(path, meetings)
}

/// Writes `value` as JSON to `path` atomically and owner-only (mode 0600): a temporary
/// file created 0600, fsynced, renamed over the old one, and the directory fsynced.
/// For every file of the MC that holds secrets (meetings, session keys).
///
/// # Errors
/// [`StoreError::Write`] when any step fails; the old file is then untouched.
pub fn write_secret_json(path: &Path, value: &impl serde::Serialize) -> Result<(), StoreError> {
    let error = |source| StoreError::Write {
        path: path.to_owned(),
        source,
    };
    let bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| error(std::io::Error::other(e.to_string())))?;
    let tmp = path.with_extension("json.tmp");
    // Created owner-only, so no moment exists when another user could read it.
    let _ = std::fs::remove_file(&tmp);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&tmp).map_err(error)?;
    file.write_all(&bytes).map_err(error)?;
    file.sync_all().map_err(error)?;
    drop(file);
    std::fs::rename(&tmp, path).map_err(error)?;
    if let Some(dir) = path.parent() {
        // Make the rename itself durable; some filesystems refuse to sync a
        // directory, which is not worth failing the change for.
        if let Ok(dir) = std::fs::File::open(dir) {
            let _ = dir.sync_all();
        }
    }
    Ok(())
}

/// A fresh 128-bit secret as 32 hex digits, from the OS's random source.
pub fn random_secret() -> String {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    let from_os = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if from_os.is_err() {
        // No /dev/urandom (not Linux/Unix): std's per-instance random SipHash keys.
        use std::hash::{BuildHasher, Hasher};
        for chunk in bytes.chunks_mut(8) {
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_u64(0);
            for (b, h) in chunk.iter_mut().zip(hasher.finish().to_le_bytes()) {
                *b = h;
            }
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
