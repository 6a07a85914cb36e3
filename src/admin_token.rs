//! Secure defaults for the operator API: a node or MC whose HTTP(S) listener is reachable
//! from beyond this machine never runs with an open `/api` (fault rules, input pause,
//! drain, meeting changes). Without a configured `admin_token` it creates one on its
//! first start, keeps it in its data directory (mode 0600) and says where in its log;
//! a later start reads the same file. On loopback only (the demo, tests), no token is
//! needed: nobody else can reach the API.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

/// The file in the data directory that holds a created admin token.
pub const TOKEN_FILE: &str = "admin_token";

/// Random bytes in a created token (64 hex digits).
const TOKEN_BYTES: usize = 32;

/// Where a process's admin token came from, for its start-up log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// The config file's `admin_token`.
    Configured,
    /// Created now in this file.
    Created(PathBuf),
    /// Read from this file, created by an earlier start.
    Kept(PathBuf),
    /// None: every listener is on loopback, the API is open to this machine only.
    LoopbackOnly,
}

/// The admin token a node or MC runs with (`None`: open, loopback only) and where it
/// came from.
///
/// # Errors
/// The token file cannot be read or created, or holds no usable token.
pub fn resolve(
    configured: Option<&str>,
    listeners: &[SocketAddr],
    data_dir: &Path,
) -> anyhow::Result<(Option<String>, TokenSource)> {
    if let Some(token) = configured {
        if token.trim().is_empty() {
            bail!("admin_token is empty: give a token, or remove the key");
        }
        return Ok((Some(token.to_owned()), TokenSource::Configured));
    }
    if listeners.iter().all(|a| a.ip().is_loopback()) {
        return Ok((None, TokenSource::LoopbackOnly));
    }
    let path = data_dir.join(TOKEN_FILE);
    let (token, created) = secret_file(&path)?;
    let source = if created {
        TokenSource::Created(path)
    } else {
        TokenSource::Kept(path)
    };
    Ok((Some(token), source))
}

/// The secret in `path` (at least 16 printable characters), or a new random one
/// written there (owner-only) when the file does not exist; `true` when created.
///
/// # Errors
/// The file cannot be read or created, or holds no usable secret.
pub fn secret_file(path: &Path) -> anyhow::Result<(String, bool)> {
    match std::fs::File::open(path) {
        Ok(mut file) => {
            let mut text = String::new();
            file.read_to_string(&mut text)
                .with_context(|| format!("reading {}", path.display()))?;
            let secret = text.trim();
            if secret.len() < 16 || !secret.bytes().all(|b| b.is_ascii_graphic()) {
                bail!(
                    "{} holds no usable secret (at least 16 printable characters): \
                     fix or delete it",
                    path.display()
                );
            }
            Ok((secret.to_owned(), false))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let secret = random_token()?;
            write_private(path, &secret)?;
            Ok((secret, true))
        }
        Err(e) => Err(e).with_context(|| format!("opening {}", path.display())),
    }
}

/// Logs where the admin token came from (never the token itself).
pub fn log_source(role: &str, source: &TokenSource) {
    match source {
        TokenSource::Configured => tracing::info!(role, "admin API: the configured admin_token"),
        TokenSource::Created(path) => tracing::warn!(
            role,
            path = %path.display(),
            "admin API: this {role} listens beyond loopback and has no admin_token; created \
             one in {} (send it as `Authorization: Bearer <token>`, or set admin_token)",
            path.display()
        ),
        TokenSource::Kept(path) => tracing::info!(
            role,
            path = %path.display(),
            "admin API: the admin token created earlier in {}",
            path.display()
        ),
        TokenSource::LoopbackOnly => tracing::info!(
            role,
            "admin API: open to this machine only (every listener is on loopback, no admin_token)"
        ),
    }
}

/// A new token: random bytes from the kernel, as hex.
fn random_token() -> anyhow::Result<String> {
    let mut bytes = [0u8; TOKEN_BYTES];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("reading /dev/urandom for an admin token")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Writes `token` to a new file that only its owner may read.
fn write_private(path: &Path, token: &str) -> anyhow::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    file.write_all(token.as_bytes())
        .and_then(|()| file.write_all(b"\n"))
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().expect("address")
    }

    #[test]
    fn loopback_needs_no_token_and_a_configured_one_wins() {
        let dir = tempfile::tempdir().expect("dir");
        let local = [addr("127.0.0.1:8080"), addr("[::1]:8443")];
        assert_eq!(
            resolve(None, &local, dir.path()).expect("resolve"),
            (None, TokenSource::LoopbackOnly)
        );
        let public = [addr("0.0.0.0:8080")];
        assert_eq!(
            resolve(Some("tok"), &public, dir.path()).expect("resolve"),
            (Some("tok".into()), TokenSource::Configured)
        );
        assert!(resolve(Some("  "), &public, dir.path()).is_err());
        assert!(!dir.path().join(TOKEN_FILE).exists());
    }

    #[test]
    fn a_public_listener_creates_a_private_token_once_and_keeps_it() {
        let dir = tempfile::tempdir().expect("dir");
        let public = [addr("127.0.0.1:8080"), addr("0.0.0.0:8443")];
        let (first, source) = resolve(None, &public, dir.path()).expect("resolve");
        let path = dir.path().join(TOKEN_FILE);
        assert_eq!(source, TokenSource::Created(path.clone()));
        let first = first.expect("a token");
        assert_eq!(first.len(), 2 * TOKEN_BYTES);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let (again, source) = resolve(None, &public, dir.path()).expect("resolve");
        assert_eq!(again.as_deref(), Some(first.as_str()));
        assert_eq!(source, TokenSource::Kept(path.clone()));
        let (other, _) =
            resolve(None, &public, tempfile::tempdir().expect("dir").path()).expect("resolve");
        assert_ne!(
            other.as_deref(),
            Some(first.as_str()),
            "each node its own token"
        );
        std::fs::write(&path, "short\n").expect("write");
        assert!(resolve(None, &public, dir.path()).is_err());
    }
}
