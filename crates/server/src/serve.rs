//! Serving the router on a listener, over plain HTTP or HTTPS (rustls), with
//! graceful shutdown: `run(listener, app, tls, shutdown)`.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use thiserror::Error;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt as _;

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

/// Builds a TLS acceptor from PEM files (a certificate chain and its private key).
///
/// # Errors
/// A [`TlsError`] naming the file and the problem.
pub fn tls_acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, TlsError> {
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
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Serves `app` on `listener` until `shutdown` resolves, then stops accepting and
/// lets open connections finish for a short grace period.
pub async fn run(
    listener: TcpListener,
    app: Router,
    tls: Option<TlsAcceptor>,
    shutdown: impl Future<Output = ()>,
) {
    let (closing_tx, closing_rx) = tokio::sync::watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(pair) => pair,
            Err(error) => {
                // EMFILE and friends: back off instead of spinning.
                tracing::warn!(%error, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let tls = tls.clone();
        let mut closing = closing_rx.clone();
        connections.spawn(async move {
            let service =
                TowerToHyperService::new(app.into_service::<hyper::body::Incoming>().map_request(
                    move |mut request: hyper::Request<hyper::body::Incoming>| {
                        request
                            .extensions_mut()
                            .insert(axum::extract::ConnectInfo(peer));
                        request
                    },
                ));
            match tls {
                Some(acceptor) => {
                    match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(stream))
                        .await
                    {
                        Ok(Ok(stream)) => {
                            serve_connection(TokioIo::new(stream), service, &mut closing).await
                        }
                        Ok(Err(error)) => tracing::debug!(%peer, %error, "tls handshake failed"),
                        Err(_) => tracing::debug!(%peer, "tls handshake timed out"),
                    }
                }
                None => serve_connection(TokioIo::new(stream), service, &mut closing).await,
            }
        });
        // Reap finished connection tasks so the set does not grow without bound.
        while connections.try_join_next().is_some() {}
    }
    let _ = closing_tx.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    connections.abort_all();
}

/// Serves one connection until it ends or the server closes, then finishes in-flight
/// requests gracefully.
async fn serve_connection<I, S>(io: I, service: S, closing: &mut tokio::sync::watch::Receiver<bool>)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    S: hyper::service::Service<
            hyper::Request<hyper::body::Incoming>,
            Response = hyper::Response<axum::body::Body>,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    // HTTP/1.1 only (TLS offers ALPN http/1.1): no protocol sniffing on every connection.
    let connection = hyper::server::conn::http1::Builder::new().serve_connection(io, service);
    tokio::pin!(connection);
    let closed = async {
        let _ = closing.wait_for(|c| *c).await;
    };
    tokio::select! {
        _ = connection.as_mut() => {}
        () = closed => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
}
