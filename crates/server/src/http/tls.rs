//! The node's HTTPS certificate: loaded from PEM files, offered with ALPN `h2` and
//! `http/1.1`, replaced in place when the files change (an operator renews a
//! certificate and sends SIGHUP: new handshakes get the new one, open connections keep
//! theirs, nothing restarts), and checked against the host names viewers will use
//! (OTT-ADDR-3): a certificate not issued for the node's `hostname` would make every
//! HTTPS viewer sent there fail.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use thiserror::Error;
use tokio_rustls::TlsAcceptor;

/// Why the TLS configuration could not be loaded.
#[derive(Debug, Error)]
pub enum TlsError {
    /// The certificate file could not be read or holds no certificate.
    #[error("reading certificate {path}: {reason}")]
    Certificate {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// The key file could not be read or holds no private key.
    #[error("reading private key {path}: {reason}")]
    Key {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// rustls refused the pair (e.g. the key does not match the certificate).
    #[error("tls configuration: {0}")]
    Config(#[from] rustls::Error),
}

/// The certificate and key a node serves HTTPS with, replaceable while it runs.
#[derive(Debug)]
pub struct CertificateStore {
    cert_path: PathBuf,
    key_path: PathBuf,
    provider: Arc<rustls::crypto::CryptoProvider>,
    current: RwLock<Arc<CertifiedKey>>,
}

impl CertificateStore {
    /// Loads the PEM certificate chain and private key.
    ///
    /// # Errors
    /// A [`TlsError`] naming the file and the problem (a key that does not match the
    /// certificate included).
    pub fn load(cert: &Path, key: &Path) -> Result<Arc<Self>, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let current = read_pair(cert, key, &provider)?;
        Ok(Arc::new(Self {
            cert_path: cert.to_owned(),
            key_path: key.to_owned(),
            provider,
            current: RwLock::new(Arc::new(current)),
        }))
    }

    /// Reads the files again and, when they hold a valid pair, serves it from the next
    /// handshake on; on any error the pair in use stays.
    ///
    /// # Errors
    /// The [`TlsError`] of the new files.
    pub fn reload(&self) -> Result<(), TlsError> {
        let fresh = read_pair(&self.cert_path, &self.key_path, &self.provider)?;
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(fresh);
        Ok(())
    }

    /// An acceptor serving the current pair, HTTP/2 first by ALPN (Apple's players
    /// need it for low-latency HLS), HTTP/1.1 for the rest.
    ///
    /// # Errors
    /// rustls refuses the protocol versions (not with its defaults).
    pub fn acceptor(self: &Arc<Self>) -> Result<TlsAcceptor, TlsError> {
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::clone(&self.provider))
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_cert_resolver(Arc::clone(self) as Arc<dyn ResolvesServerCert>);
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(TlsAcceptor::from(Arc::new(config)))
    }

    /// An acceptor serving the current pair with no ALPN protocol: for RTMPS, whose
    /// publishers (ffmpeg, OBS, meeting platforms) offer none.
    ///
    /// # Errors
    /// rustls refuses the protocol versions (not with its defaults).
    pub fn plain_acceptor(self: &Arc<Self>) -> Result<TlsAcceptor, TlsError> {
        let config = rustls::ServerConfig::builder_with_provider(Arc::clone(&self.provider))
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_cert_resolver(Arc::clone(self) as Arc<dyn ResolvesServerCert>);
        Ok(TlsAcceptor::from(Arc::new(config)))
    }

    /// Whether the certificate in use is issued for `host` (a DNS name, by its subject
    /// alternative names, wildcards included; or an IP address).
    pub fn covers(&self, host: &str) -> bool {
        let current = Arc::clone(&self.current.read().unwrap_or_else(|e| e.into_inner()));
        covers(&current.cert[0], host)
    }

    /// The certificate file, for log lines.
    pub fn cert_path(&self) -> &Path {
        &self.cert_path
    }
}

impl ResolvesServerCert for CertificateStore {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(
            &self.current.read().unwrap_or_else(|e| e.into_inner()),
        ))
    }
}

/// Whether the end-entity certificate `cert` is issued for `host`.
pub fn covers(cert: &CertificateDer<'_>, host: &str) -> bool {
    let Ok(name) = ServerName::try_from(host) else {
        return false;
    };
    webpki::EndEntityCert::try_from(cert)
        .and_then(|end_entity| end_entity.verify_is_valid_for_subject_name(&name))
        .is_ok()
}

/// Builds a TLS acceptor from PEM files (a certificate chain and its private key) that
/// cannot be reloaded: see [`CertificateStore`] for one that can.
///
/// # Errors
/// A [`TlsError`] naming the file and the problem.
pub fn tls_acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, TlsError> {
    CertificateStore::load(cert, key)?.acceptor()
}

fn read_pair(
    cert: &Path,
    key: &Path,
    provider: &rustls::crypto::CryptoProvider,
) -> Result<CertifiedKey, TlsError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|iter| iter.collect::<Result<Vec<_>, _>>())
        .map_err(|e| TlsError::Certificate {
            path: cert.display().to_string(),
            reason: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Certificate {
            path: cert.display().to_string(),
            reason: "no certificate found".into(),
        });
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| TlsError::Key {
        path: key.display().to_string(),
        reason: e.to_string(),
    })?;
    let pair = CertifiedKey::new(certs, provider.key_provider.load_private_key(key)?);
    match pair.keys_match() {
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => {
            Ok(pair)
        }
        Err(e) => Err(e.into()),
    }
}
