//! Secure defaults for the operator API and the MC's node API: a node or MC never runs
//! with an open `/api` (fault rules, input pause, drain, meeting changes) or an open
//! `/api/nodes/sync` unless told to. Without a configured `admin_token` (an MC: also
//! `node_token`) it creates one on its first start, keeps it in its data directory
//! (mode 0600) and says where in its log; a later start reads the same file.
//!
//! Trust is a setting, never inferred from a bind address: only `trust_loopback = true`
//! (the demo sets it) with every listener on loopback leaves a token unset, and then
//! the API still refuses browsers' cross-origin calls (see `server::routes::auth`). A node
//! bound to 127.0.0.1 behind a reverse proxy is reachable from anywhere.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

/// The file in the data directory that holds a created admin token.
pub const TOKEN_FILE: &str = "admin_token";
/// The file in an MC's data directory that holds a created node token.
pub const NODE_TOKEN_FILE: &str = "node_token";

/// The shortest configured token: a token is a password an attacker may guess at the
/// rate the API answers, so a short one is refused at config load.
pub const MIN_TOKEN_LEN: usize = 24;

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
    /// None: every listener is on loopback and `trust_loopback` is set, the API is open
    /// to this machine only.
    LoopbackOnly,
}

/// Checks a configured token (`key` names it in the error): at least
/// [`MIN_TOKEN_LEN`] printable characters, no spaces.
///
/// # Errors
/// The token is too short or has a space or control character.
pub fn check_configured(key: &str, token: &str) -> anyhow::Result<()> {
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        bail!("{key} must be printable ASCII without spaces");
    }
    if token.len() < MIN_TOKEN_LEN {
        bail!(
            "{key} is {} characters: use at least {MIN_TOKEN_LEN} (e.g. `openssl rand -hex 32`), \
             or remove it and one is created in the data directory",
            token.len()
        );
    }
    Ok(())
}

/// The admin token a node or MC runs with (`None`: open, loopback only) and where it
/// came from.
///
/// # Errors
/// The configured token is unusable, or the token file cannot be read or created, or
/// holds no usable token.
pub fn resolve(
    configured: Option<&str>,
    listeners: &[SocketAddr],
    trust_loopback: bool,
    data_dir: &Path,
) -> anyhow::Result<(Option<String>, TokenSource)> {
    resolve_in(
        "admin_token",
        TOKEN_FILE,
        configured,
        listeners,
        trust_loopback,
        data_dir,
    )
}

/// The node token an MC runs with (`None`: any caller may sync, loopback only), as
/// [`resolve`] finds the admin token, in `data_dir/node_token`.
///
/// # Errors
/// As [`resolve`].
pub fn resolve_node_token(
    configured: Option<&str>,
    listeners: &[SocketAddr],
    trust_loopback: bool,
    data_dir: &Path,
) -> anyhow::Result<(Option<String>, TokenSource)> {
    resolve_in(
        "node_token",
        NODE_TOKEN_FILE,
        configured,
        listeners,
        trust_loopback,
        data_dir,
    )
}

fn resolve_in(
    key: &str,
    file: &str,
    configured: Option<&str>,
    listeners: &[SocketAddr],
    trust_loopback: bool,
    data_dir: &Path,
) -> anyhow::Result<(Option<String>, TokenSource)> {
    if let Some(token) = configured {
        check_configured(key, token)?;
        return Ok((Some(token.to_owned()), TokenSource::Configured));
    }
    if trust_loopback && listeners.iter().all(|a| a.ip().is_loopback()) {
        return Ok((None, TokenSource::LoopbackOnly));
    }
    let path = data_dir.join(file);
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
    log_token(role, "admin_token", "admin API", source);
}

/// Logs where an MC's node token came from (never the token itself).
pub fn log_node_token_source(source: &TokenSource) {
    log_token("mc", "node_token", "node sync", source);
}

fn log_token(role: &str, key: &str, what: &str, source: &TokenSource) {
    match source {
        TokenSource::Configured => tracing::info!(role, "{what}: the configured {key}"),
        TokenSource::Created(path) => tracing::warn!(
            role,
            path = %path.display(),
            "{what}: this {role} has no {key} and does not trust loopback; created one in {} \
             (send it as `Authorization: Bearer <token>`, or set {key})",
            path.display()
        ),
        TokenSource::Kept(path) => tracing::info!(
            role,
            path = %path.display(),
            "{what}: the {key} created earlier in {}",
            path.display()
        ),
        TokenSource::LoopbackOnly => tracing::info!(
            role,
            "{what}: open to this machine only (trust_loopback, every listener on loopback, no {key})"
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

    const GOOD: &str = "a-configured-token-of-24+";

    #[test]
    fn only_trusted_loopback_goes_without_a_token_and_a_configured_one_wins() {
        let dir = tempfile::tempdir().expect("dir");
        let local = [addr("127.0.0.1:8080"), addr("[::1]:8443")];
        assert_eq!(
            resolve(None, &local, true, dir.path()).expect("resolve"),
            (None, TokenSource::LoopbackOnly)
        );
        let public = [addr("0.0.0.0:8080")];
        assert_eq!(
            resolve(Some(GOOD), &public, false, dir.path()).expect("resolve"),
            (Some(GOOD.into()), TokenSource::Configured)
        );
        assert!(!dir.path().join(TOKEN_FILE).exists());
        // Trust is a setting: loopback without it gets a token like any listener.
        let (token, source) = resolve(None, &local, false, dir.path()).expect("resolve");
        assert_eq!(source, TokenSource::Created(dir.path().join(TOKEN_FILE)));
        assert_eq!(token.map(|t| t.len()), Some(2 * TOKEN_BYTES));
        // And a public listener is never trusted.
        let (token, _) = resolve(None, &public, true, dir.path()).expect("resolve");
        assert!(token.is_some());
    }

    #[test]
    fn a_short_or_blank_configured_token_is_refused_with_why() {
        let dir = tempfile::tempdir().expect("dir");
        let public = [addr("0.0.0.0:8080")];
        for bad in [
            "",
            "  ",
            "x",
            "admin-secret",
            &"y".repeat(MIN_TOKEN_LEN - 1),
        ] {
            let error = resolve(Some(bad), &public, false, dir.path()).expect_err(bad);
            assert!(format!("{error:#}").contains("admin_token"), "{error:#}");
        }
        let error = check_configured("node_token", "short").expect_err("short");
        assert!(
            format!("{error:#}").contains("at least 24"),
            "the error says why: {error:#}"
        );
        assert!(check_configured("admin_token", "has a space in it, 24+ chars").is_err());
        assert!(check_configured("admin_token", &"z".repeat(MIN_TOKEN_LEN)).is_ok());
    }

    #[test]
    fn an_mc_without_a_node_token_creates_one_beside_the_admin_token() {
        let dir = tempfile::tempdir().expect("dir");
        let public = [addr("0.0.0.0:9000")];
        let (node, source) = resolve_node_token(None, &public, false, dir.path()).expect("resolve");
        let path = dir.path().join(NODE_TOKEN_FILE);
        assert_eq!(source, TokenSource::Created(path.clone()));
        let (admin, _) = resolve(None, &public, false, dir.path()).expect("resolve");
        assert_ne!(node, admin, "one key per job");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let (again, source) =
            resolve_node_token(None, &public, false, dir.path()).expect("resolve");
        assert_eq!((again, source), (node, TokenSource::Kept(path)));
    }

    #[test]
    fn a_public_listener_creates_a_private_token_once_and_keeps_it() {
        let dir = tempfile::tempdir().expect("dir");
        let public = [addr("127.0.0.1:8080"), addr("0.0.0.0:8443")];
        let (first, source) = resolve(None, &public, true, dir.path()).expect("resolve");
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
        let (again, source) = resolve(None, &public, true, dir.path()).expect("resolve");
        assert_eq!(again.as_deref(), Some(first.as_str()));
        assert_eq!(source, TokenSource::Kept(path.clone()));
        let (other, _) = resolve(
            None,
            &public,
            true,
            tempfile::tempdir().expect("dir").path(),
        )
        .expect("resolve");
        assert_ne!(
            other.as_deref(),
            Some(first.as_str()),
            "each node its own token"
        );
        std::fs::write(&path, "short\n").expect("write");
        assert!(resolve(None, &public, true, dir.path()).is_err());
    }
}
