//! The demo's RTMPS certificate: self-signed for `localhost` and 127.0.0.1, made at
//! every start with rcgen (no `openssl` on the machine needed), written beside the
//! MC's data. Publishers must be told not to verify it, or be given it as their CA.

use std::path::{Path, PathBuf};

use anyhow::Context;

/// Makes a fresh self-signed certificate and key in `dir` (`rtmps-cert.pem`,
/// `rtmps-key.pem`, the key readable by this user only); returns their paths.
///
/// # Errors
/// The key cannot be made or the files cannot be written.
pub fn self_signed(dir: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let made = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
        .context("making the demo's rtmps certificate")?;
    let cert = cert_path(dir);
    let key = dir.join("rtmps-key.pem");
    std::fs::write(&cert, made.cert.pem())
        .with_context(|| format!("writing {}", cert.display()))?;
    write_private(&key, made.key_pair.serialize_pem().as_bytes())
        .with_context(|| format!("writing {}", key.display()))?;
    Ok((cert, key))
}

/// Where [`self_signed`] writes the certificate in `dir`.
pub fn cert_path(dir: &Path) -> PathBuf {
    dir.join("rtmps-cert.pem")
}

fn write_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)?.write_all(contents)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_certificate_loads_and_covers_localhost_and_the_loopback_address() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = super::self_signed(dir.path()).unwrap();
        let store = server::http::tls::CertificateStore::load(&cert, &key).unwrap();
        assert!(store.covers("localhost"));
        assert!(store.covers("127.0.0.1"));
        assert!(!store.covers("example.net"));
    }
}
