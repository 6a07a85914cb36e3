//! Wiring a node into its mesh domain (`[ott]`): the mesh is started, and a loop
//! every gossip round publishes this node's announce (addresses, load, thresholds)
//! and members (from its live channels), hands the mesh's snapshot and view keys to
//! the HTTP side ([`server::redundancy`]), and once a second advances alerts 70/78/79
//! and sends their changes to the webhook.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use server::redundancy::load::NetLoad;
use server::redundancy::{Membership, MeshView, Redundancy, RedundancySettings};
use server::AppState;
use tokio::sync::watch;
use tokio::task::JoinSet;

pub use crate::config::OttConfig;

/// How often the node republishes its state and refreshes the HTTP side's view.
const ROUND: Duration = Duration::from_millis(250);
/// How often alerts are advanced.
const ALERT_TICK: Duration = Duration::from_secs(1);
/// How long a webhook delivery may take.
const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(5);

/// The first brdyun release whose nodes speak this mesh protocol: the default minimum
/// compatible version of a domain (OTT-GRP-5); `[ott] min_version` raises it.
pub const FIRST_OTT_VERSION: ott::Version = ott::Version::new(0, 1, 0, 0);

/// This build's version, as the mesh compares it (OTT-GRP-5).
pub fn own_version() -> ott::Version {
    env!("CARGO_PKG_VERSION")
        .parse()
        .unwrap_or(ott::Version::new(0, 0, 0, 0))
}

/// The group membership a stream config asks for: `backup_group` names the group
/// (default: the stream's own name), `ott_backup = true` offers this node's member as
/// a backup ("can substitute"). Neither key: not in a group.
pub fn membership(
    name: &str,
    ott_backup: Option<bool>,
    backup_group: Option<&str>,
) -> Option<Membership> {
    if ott_backup.is_none() && backup_group.is_none() {
        return None;
    }
    Some(Membership {
        group: backup_group.unwrap_or(name).to_owned(),
        can_substitute: ott_backup.unwrap_or(false),
    })
}

/// Creates the node's redundancy state and puts it on `state`, before streams start
/// (they register their memberships with it).
pub fn attach(state: &AppState) -> Arc<Redundancy> {
    let redundancy = Arc::new(Redundancy::new(RedundancySettings::default()));
    state.set_redundancy(Arc::clone(&redundancy));
    redundancy
}

/// What the loop needs besides the mesh.
pub struct OttRuntime {
    /// The node's routes and channels.
    pub state: AppState,
    /// The node's redundancy state (from [`attach`]).
    pub redundancy: Arc<Redundancy>,
    /// The node's shedder (its CPU reading is the announced CPU load).
    pub shedder: Arc<server::shed::Shedder>,
    /// The HTTPS certificate is not issued for the node's names (see
    /// [`crate::node::tls`]): announced so no HTTPS viewer is sent here.
    pub certificate_mismatch: Arc<std::sync::atomic::AtomicBool>,
}

/// Joins the mesh and spawns the loop into `tasks`; returns the bound gossip address.
///
/// # Errors
/// The mesh cannot start (bad secret, gossip port taken) or no address can be
/// announced.
pub async fn start(
    config: &OttConfig,
    node: &crate::config::NodeConfig,
    http: SocketAddr,
    https: Option<SocketAddr>,
    runtime: OttRuntime,
    shutdown: watch::Receiver<bool>,
    tasks: &mut JoinSet<()>,
) -> anyhow::Result<SocketAddr> {
    let addresses = crate::config::ott::announced(config, node.hostname.as_deref(), http, https)?;
    let _ = runtime
        .redundancy
        .peer_key
        .set(server::experiments::peer_auth::PeerKey::derive(
            config.domain_secret.as_bytes(),
        ));
    let mut mesh_config = mesh::MeshConfig::new(
        node.name.clone(),
        config.gossip,
        config.domain_secret.as_bytes().to_vec(),
    );
    mesh_config.gossip_advertise = config.gossip_advertise;
    mesh_config.seeds = config.seeds.clone();
    mesh_config.view_key_rotation =
        Duration::from_secs_f64(config.view_key_rotation_hours * 3600.0);
    mesh_config.min_version = match &config.min_version {
        Some(v) => v
            .parse()
            .map_err(|e| anyhow::anyhow!("ott.min_version: {e}"))?,
        None => FIRST_OTT_VERSION,
    };
    let handle = mesh::Mesh::start(mesh_config)
        .await
        .context("joining the mesh domain ([ott])")?;
    let gossip = handle.gossip_addr();
    let announce = mesh::NodeAnnounce {
        version: own_version(),
        hostname: node.hostname.clone(),
        addresses,
        load: ott::Load::default(),
        thresholds: ott::Thresholds {
            cpu_error_percent: config.cpu_error_percent,
            net_error_percent: config.net_error_percent,
            backup_session_limit: config.backup_session_limit,
        },
        draining: false,
        certificate_mismatch: false,
    };
    let net = NetLoad::new(config.net_capacity_mbps.saturating_mul(1_000_000));
    tracing::info!(%gossip, seeds = ?config.seeds, "joined the mesh domain");
    tasks.spawn(run(
        handle,
        announce,
        net,
        runtime,
        config.alert_webhook.clone(),
        node.name.clone(),
        shutdown,
    ));
    Ok(gossip)
}

async fn run(
    handle: mesh::MeshHandle,
    mut announce: mesh::NodeAnnounce,
    mut net: NetLoad,
    runtime: OttRuntime,
    webhook: Option<String>,
    node_name: String,
    mut shutdown: watch::Receiver<bool>,
) {
    let OttRuntime {
        state,
        redundancy,
        shedder,
        certificate_mismatch,
    } = runtime;
    let mut round = tokio::time::interval(ROUND);
    round.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_alert_tick = tokio::time::Instant::now();
    // Each round's publishing fails alike while the mesh is unusable: logged once per
    // change, with reminders.
    let (mut node_publish, mut members_publish) =
        (flap_log::FlapLog::default(), flap_log::FlapLog::default());
    loop {
        tokio::select! {
            _ = round.tick() => {}
            _ = shutdown.wait_for(|s| *s) => break,
        }
        let now = server::clock::unix_ms();
        announce.load = ott::Load {
            cpu_percent: (shedder.levels().cpu_utilisation() * 100.0)
                .clamp(0.0, 100.0)
                .round() as u8,
            net_percent: net.sample(),
            backup_sessions: redundancy.sessions.count(),
        };
        announce.draining = redundancy.drain.is_draining();
        announce.certificate_mismatch =
            certificate_mismatch.load(std::sync::atomic::Ordering::Relaxed);
        redundancy.observe_viewers(state.stream_table(), now);
        let published = handle.set_node(announce.clone()).await;
        crate::logging::attempt(
            &mut node_publish,
            "publishing the node's state to the mesh",
            &published,
        );
        let members = redundancy.own_members(state.stream_table(), handle.node_id(), now);
        let published = handle.set_members(members).await;
        crate::logging::attempt(
            &mut members_publish,
            "publishing the node's members to the mesh",
            &published,
        );
        let transport = handle.transport_counters();
        redundancy
            .gossip
            .record(server::redundancy::gossip_counters::GossipCount {
                sent: transport.sent,
                received: transport.received,
                rejected: transport.rejected,
                undecodable: transport.undecodable,
                oversized: transport.oversized,
            });
        redundancy.update_view(MeshView::new(
            (*handle.snapshot()).clone(),
            Arc::new(handle.key_ring()),
            now,
        ));
        if last_alert_tick.elapsed() >= ALERT_TICK {
            last_alert_tick = tokio::time::Instant::now();
            let changes = redundancy.tick_alerts(state.stream_table(), now);
            if let (Some(url), false) = (&webhook, changes.is_empty()) {
                let body = server::redundancy::alerts::alertmanager_body(&changes, &node_name);
                let url = url.clone();
                tokio::spawn(async move {
                    if let Err(error) =
                        server::redundancy::alerts::post_webhook(&url, body, WEBHOOK_TIMEOUT).await
                    {
                        tracing::warn!(%error, "alert webhook delivery failed");
                    }
                });
            }
        }
    }
    handle.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn membership_from_stream_keys() {
        assert_eq!(membership("s", None, None), None);
        let offered = membership("s", Some(true), None).unwrap();
        assert_eq!(offered.group, "s");
        assert!(offered.can_substitute);
        let named = membership("s", None, Some("g")).unwrap();
        assert_eq!(named.group, "g");
        assert!(!named.can_substitute);
    }

    #[test]
    fn the_build_version_parses() {
        assert_ne!(own_version(), ott::Version::new(0, 0, 0, 0));
    }
}
