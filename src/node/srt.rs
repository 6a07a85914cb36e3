//! Starting an SRT publish listener (the MC's `mc.srt`, a node's `node.srt`) beside
//! the RTMP one, with the same authorizer: the registry of live meetings and keys.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use ingest::srt::{SrtServer, SrtStats};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::config::{RtmpLimitsConfig, SrtOptionsConfig};

/// What an SRT listener is started from.
pub(crate) struct SrtListener<'a> {
    /// The UDP address to bind.
    pub addr: SocketAddr,
    /// The config key of the address, for messages (`mc.srt`).
    pub key: &'a str,
    /// Latency and encryption.
    pub options: &'a SrtOptionsConfig,
    /// The caps and deadlines (`rtmp_limits`, counted on their own).
    pub limits: &'a RtmpLimitsConfig,
}

/// Binds the listener and serves it until shutdown, its counters and links in `stats`
/// (which the status API and `/metrics` read); returns the bound address.
///
/// # Errors
/// A setting out of range, or the address cannot be bound.
pub(crate) fn start_srt(
    listener: SrtListener<'_>,
    authorizer: Arc<dyn ingest::publish::PublishAuthorizer>,
    stats: Arc<SrtStats>,
    shutdown: &watch::Receiver<bool>,
    tasks: &mut JoinSet<()>,
) -> anyhow::Result<SocketAddr> {
    let key = listener.key;
    let section = key.split('.').next().unwrap_or(key);
    let config = listener.options.listener(
        listener.addr,
        listener.limits,
        &format!("{key}_options"),
        &format!("{section}.rtmp_limits"),
    )?;
    let server =
        SrtServer::bind(config).with_context(|| format!("binding {key} {}", listener.addr))?;
    let bound = server.local_addr();
    tasks.spawn(server.serve(authorizer, stats, super::shutdown::until(shutdown.clone())));
    Ok(bound)
}
