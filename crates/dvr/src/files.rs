//! The file layer every archive write goes through. The real one writes at explicit
//! offsets (never "the current position", so a failed write cannot shift the next one)
//! and syncs data before returning; tests put a failing one in its place to play a
//! full or broken disk.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Writes, truncations and removals of archive files.
pub trait FileLayer: Send + Sync + std::fmt::Debug {
    /// Writes `data` at `offset` of `path` (created when missing) and makes it durable.
    ///
    /// # Errors
    /// Any I/O error (disk full, permission, device error).
    fn write_at(&self, path: &Path, offset: u64, data: &[u8]) -> io::Result<()>;

    /// Cuts `path` to `len` bytes (used to drop a torn tail).
    ///
    /// # Errors
    /// Any I/O error.
    fn set_len(&self, path: &Path, len: u64) -> io::Result<()>;

    /// Removes `path`; a file that is already gone is not an error.
    ///
    /// # Errors
    /// Any other I/O error.
    fn remove(&self, path: &Path) -> io::Result<()>;

    /// Replaces `path` with `data` atomically (temporary file, sync, rename).
    ///
    /// # Errors
    /// Any I/O error; `path` is then unchanged.
    fn replace(&self, path: &Path, data: &[u8]) -> io::Result<()>;
}

/// The real file system.
///
/// Durability: with `sync` on (the default) every write is followed by `fdatasync`, so a
/// segment and then its index record are on disk before the next segment is taken; a
/// power cut loses at most the segment being written. With `sync` off the page cache
/// decides (a process crash still loses nothing written; a power cut may).
#[derive(Debug, Clone, Copy)]
pub struct RealFiles {
    /// Sync data after every write.
    pub sync: bool,
}

impl Default for RealFiles {
    fn default() -> Self {
        Self { sync: true }
    }
}

impl FileLayer for RealFiles {
    fn write_at(&self, path: &Path, offset: u64, data: &[u8]) -> io::Result<()> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
        file.write_all_at(data, offset)?;
        if self.sync {
            file.sync_data()?;
        }
        Ok(())
    }

    fn set_len(&self, path: &Path, len: u64) -> io::Result<()> {
        let file = OpenOptions::new().write(true).open(path)?;
        file.set_len(len)?;
        if self.sync {
            file.sync_all()?;
        }
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    fn replace(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        let tmp = path.with_extension("tmp");
        {
            let file = File::create(&tmp)?;
            file.write_all_at(data, 0)?;
            if self.sync {
                file.sync_all()?;
            }
        }
        std::fs::rename(&tmp, path)?;
        if self.sync {
            if let Some(dir) = path.parent() {
                File::open(dir)?.sync_all()?;
            }
        }
        Ok(())
    }
}
