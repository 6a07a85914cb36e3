//! The RTMPS publish listener of a node or an MC: RTMP inside TLS, so a stream key does
//! not cross the internet in clear text. The certificate is handled as HTTPS's is
//! ([`super::tls::NodeTls`]: checked against the host name publishers use, reloaded on
//! SIGHUP); stream keys, caps and deadlines are the RTMP listener's.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::tls::NodeTls;

/// What an RTMPS listener is started with.
pub(crate) struct RtmpsListener<'a> {
    /// The listen address.
    pub addr: SocketAddr,
    /// The config key of the address (`node.rtmps`, `mc.rtmps`), for messages; the
    /// limits are read from `{key minus the s}_limits`.
    pub key: &'static str,
    /// The PEM certificate chain and private key.
    pub cert: PathBuf,
    /// See [`RtmpsListener::cert`].
    pub tls_key: PathBuf,
    /// The DNS names publishers reach the listener by; the certificate is checked
    /// against them (none: no check).
    pub names: Vec<String>,
    /// The caps and deadlines (shared with the plain RTMP listener's settings).
    pub settings: &'a crate::config::RtmpLimitsConfig,
}

/// Loads the certificate, binds the address and accepts RTMPS publishers, each
/// authorized by `authorizer`; the counters go to the metrics of `state` as
/// `brdyun_rtmps_…` and to its ingest listeners (`/api/node`).
/// Returns the bound address.
///
/// # Errors
/// The certificate cannot be read, a setting is out of range, or the address cannot
/// be bound (the message names the config key).
pub(crate) async fn start_rtmps(
    listener: RtmpsListener<'_>,
    authorizer: Arc<dyn ingest::publish::PublishAuthorizer>,
    state: &server::state::AppState,
    shutdown: &watch::Receiver<bool>,
    tasks: &mut JoinSet<()>,
) -> anyhow::Result<SocketAddr> {
    let RtmpsListener {
        addr,
        key,
        cert,
        tls_key,
        names,
        settings,
    } = listener;
    let limits_key = format!("{}_limits", key.trim_end_matches('s'));
    let limits = settings.limits(&limits_key)?;
    let tls = NodeTls::load_for("rtmps", &cert, &tls_key, names)
        .with_context(|| format!("loading the {key} certificate"))?;
    tls.reload_on_sighup(shutdown.clone(), tasks);
    let acceptor = tls.store.plain_acceptor()?;
    let socket = TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {key} {addr}"))?;
    let bound = socket.local_addr()?;
    let stats = Arc::new(ingest::rtmp::RtmpStats::default());
    server::ingest_view::register_rtmp_listener(state.metrics(), "rtmps", Arc::clone(&stats));
    state
        .ingest_listeners()
        .add_rtmp("rtmps", bound, Arc::clone(&stats));
    tasks.spawn(ingest::rtmp::serve_tls_with_stats(
        socket,
        acceptor,
        authorizer,
        limits,
        stats,
        super::shutdown::until(shutdown.clone()),
    ));
    Ok(bound)
}
