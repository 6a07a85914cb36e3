//! TLS client configuration for HTTPS pulls: rustls with the ring provider, trusting
//! either the system's root certificates or the CA certificates of one PEM file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::{ClientConfig, RootCertStore};
use thiserror::Error;

/// Why a TLS client configuration could not be built (a local problem, not the peer's).
#[derive(Debug, Error)]
pub enum TlsConfigError {
    /// The CA file could not be read or is not PEM.
    #[error("cannot read CA file {path}: {reason}")]
    CaFile {
        /// The file given in the input's configuration.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// No usable root certificate was found (empty CA file or no system roots).
    #[error("no trusted root certificates")]
    NoRoots,
    /// rustls refused the protocol configuration.
    #[error("tls configuration: {0}")]
    Rustls(#[from] rustls::Error),
}

/// Builds the client configuration for pulls: roots from `ca_file` if given, else the
/// system's native roots.
///
/// # Errors
/// [`TlsConfigError`] when the CA file is unreadable or yields no certificate, or when
/// no system root could be loaded.
pub fn client_config(ca_file: Option<&Path>) -> Result<Arc<ClientConfig>, TlsConfigError> {
    let mut roots = RootCertStore::empty();
    match ca_file {
        Some(path) => {
            let certs =
                CertificateDer::pem_file_iter(path).map_err(|e| TlsConfigError::CaFile {
                    path: path.to_path_buf(),
                    reason: e.to_string(),
                })?;
            for cert in certs {
                let cert = cert.map_err(|e| TlsConfigError::CaFile {
                    path: path.to_path_buf(),
                    reason: e.to_string(),
                })?;
                roots.add(cert)?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            for error in &found.errors {
                tracing::debug!(error = %error, "skipping unreadable system root");
            }
            // Some system bundles carry certificates webpki cannot parse; skip those.
            let (_added, _ignored) = roots.add_parsable_certificates(found.certs);
        }
    }
    if roots.is_empty() {
        return Err(TlsConfigError::NoRoots);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}
