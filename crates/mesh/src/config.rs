//! How a node joins the domain: its configuration, checked before anything starts,
//! and the errors of the mesh.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ott::Version;

use crate::clock::{Clock, SystemClock};
use crate::codec::SENTINEL_CLUSTER_ID;
use crate::crypto::MIN_SECRET_LEN;
use crate::transport::Links;
use crate::viewkey::{ViewKeyError, ViewKeySchedule, DEFAULT_ROTATION};

/// The minimum compatible version of the domain's default configuration
/// (OTT-GRP-5): the seed's 2.1.0.456.
pub const MIN_COMPATIBLE_VERSION: Version = Version::SEED_MINIMUM;

/// The largest JSON this node may put in gossip across its node announce and all its
/// members: keeps every gossip message well inside one sealed datagram.
pub const MAX_OWN_STATE_BYTES: usize = 32 * 1024;

/// How a node joins the domain.
pub struct MeshConfig {
    /// This node's name, unique in the domain; its gossip id is name + start time.
    pub node_name: String,
    /// The UDP address gossip listens on (`127.0.0.1:0` picks a port).
    pub gossip_listen: SocketAddr,
    /// The address peers reach this node's gossip at; `None` = the bound address
    /// (then `gossip_listen` must not be a wildcard address).
    pub gossip_advertise: Option<SocketAddr>,
    /// Other nodes' gossip addresses, `host:port` (names are resolved and refreshed).
    pub seeds: Vec<String>,
    /// The domain secret: the root of the gossip key and of every view key.
    pub domain_secret: Vec<u8>,
    /// Chitchat's cluster id, a second guard against mixing domains.
    pub cluster_id: String,
    /// Gossip round period; the clock is republished every round.
    pub gossip_interval: Duration,
    /// View key rotation (at least [`crate::MIN_ROTATION_MS`]).
    pub view_key_rotation: Duration,
    /// Phi-accrual threshold: a peer is dead after about `phi_threshold` mean
    /// heartbeat intervals of silence (≈ 2–4 s with the defaults).
    pub phi_threshold: f64,
    /// How long a dead node stays listed (with `alive = false`) before it is
    /// forgotten.
    pub dead_node_retention: Duration,
    /// Members on nodes below this version accept no viewers (OTT-GRP-5).
    pub min_version: Version,
    /// The wall clock; tests inject a skewed one.
    pub clock: Arc<dyn Clock>,
    /// Cut links for tests; the default cuts nothing.
    pub links: Links,
    allow_short_rotation: bool,
}

impl std::fmt::Debug for MeshConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MeshConfig")
            .field("node_name", &self.node_name)
            .field("gossip_listen", &self.gossip_listen)
            .field("gossip_advertise", &self.gossip_advertise)
            .field("seeds", &self.seeds)
            .field("domain_secret", &"<redacted>")
            .field("cluster_id", &self.cluster_id)
            .field("gossip_interval", &self.gossip_interval)
            .field("view_key_rotation", &self.view_key_rotation)
            .field("phi_threshold", &self.phi_threshold)
            .field("dead_node_retention", &self.dead_node_retention)
            .field("min_version", &self.min_version)
            .finish_non_exhaustive()
    }
}

impl MeshConfig {
    /// A configuration with the defaults: 250 ms rounds, 24 h view-key rotation,
    /// phi 16, dead nodes listed for 10 minutes, the system clock.
    pub fn new(
        node_name: impl Into<String>,
        gossip_listen: SocketAddr,
        domain_secret: impl Into<Vec<u8>>,
    ) -> Self {
        Self {
            node_name: node_name.into(),
            gossip_listen,
            gossip_advertise: None,
            seeds: Vec::new(),
            domain_secret: domain_secret.into(),
            cluster_id: "brdyun".into(),
            gossip_interval: Duration::from_millis(250),
            view_key_rotation: DEFAULT_ROTATION,
            phi_threshold: 16.0,
            dead_node_retention: Duration::from_secs(600),
            min_version: MIN_COMPATIBLE_VERSION,
            clock: Arc::new(SystemClock),
            links: Links::default(),
            allow_short_rotation: false,
        }
    }

    /// Allows a view-key rotation shorter than a pass lives, so a test can watch a
    /// rotation happen. Passes may then die before their expiry.
    pub fn with_test_rotation(mut self, rotation: Duration) -> Self {
        self.view_key_rotation = rotation;
        self.allow_short_rotation = true;
        self
    }

    /// Checks the configuration.
    ///
    /// # Errors
    /// [`MeshError::Config`] naming the field and the problem.
    pub fn validate(&self) -> Result<(), MeshError> {
        let bad = |field: &'static str, problem: String| Err(MeshError::Config { field, problem });
        if self.node_name.is_empty() || self.node_name.contains('@') {
            return bad(
                "node_name",
                "must be non-empty and must not contain '@'".into(),
            );
        }
        if self.domain_secret.len() < MIN_SECRET_LEN {
            return bad(
                "domain_secret",
                format!("must be at least {MIN_SECRET_LEN} bytes"),
            );
        }
        if self.cluster_id.is_empty() || self.cluster_id == SENTINEL_CLUSTER_ID {
            return bad("cluster_id", "must be a non-empty name".into());
        }
        if self.gossip_interval < Duration::from_millis(10)
            || self.gossip_interval > Duration::from_secs(10)
        {
            return bad("gossip_interval", "must be between 10 ms and 10 s".into());
        }
        if !(self.phi_threshold.is_finite() && self.phi_threshold >= 1.0) {
            return bad("phi_threshold", "must be a number of at least 1".into());
        }
        if !self.allow_short_rotation {
            if let Err(e @ ViewKeyError::RotationTooShort { .. }) =
                ViewKeySchedule::new(&self.domain_secret, self.view_key_rotation)
            {
                return bad("view_key_rotation", e.to_string());
            }
        }
        if self.gossip_advertise.is_none() && self.gossip_listen.ip().is_unspecified() {
            return bad(
                "gossip_advertise",
                "required when gossip listens on a wildcard address".into(),
            );
        }
        Ok(())
    }
}

/// Why the mesh could not start or take an update.
#[derive(Debug, thiserror::Error)]
pub enum MeshError {
    /// A configuration field is invalid: the operator's to fix.
    #[error("mesh config {field}: {problem}")]
    Config {
        /// The field.
        field: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// The gossip socket could not be bound (address in use, no permission).
    #[error("binding gossip socket {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// Chitchat did not start.
    #[error("starting gossip: {0}")]
    Start(String),
    /// This node's state would not fit in gossip: announce fewer or smaller members.
    #[error("own gossip state is {bytes} bytes, above the {max} byte limit")]
    StateTooLarge {
        /// The size asked for.
        bytes: usize,
        /// [`MAX_OWN_STATE_BYTES`].
        max: usize,
    },
    /// Two members share a stream name.
    #[error("two members announce the stream {0:?}")]
    DuplicateMember(String),
}
