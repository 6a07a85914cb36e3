//! The state every route shares, on a node and on an MC: the process's identity, its
//! streams (each channel with its inputs' status), metrics, shedder (and the clock it
//! holds), health and the cap on archive scans; and what is set once at start when
//! configured: the meeting gate, OTT redundancy, logins and, on an MC, its role
//! ([`crate::role`]).

use std::sync::Arc;
use std::time::Instant;

use crate::clock::Clock;
use crate::metrics::Metrics;
use crate::shed::{ShedSettings, Shedder};
use crate::stream::package::Package;

/// Who this node is, as it tells viewers and operators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeIdentity {
    /// The node's name in logs, status and (later) the cluster.
    pub name: String,
    /// The public host name viewers reach this node by, if set (OTT-ADDR-1).
    pub hostname: Option<String>,
}

pub use crate::stream::streams::{StatusSource, StreamEntry};

/// Shared, cheaply clonable application state.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Shared>,
}

struct Shared {
    node: NodeIdentity,
    streams: crate::stream::streams::Streams,
    metrics: Arc<Metrics>,
    admin_token: Option<String>,
    started: Instant,
    clock: Clock,
    shedder: Arc<Shedder>,
    meeting_gate: std::sync::OnceLock<Arc<crate::access::gate::MeetingGate>>,
    role: std::sync::OnceLock<Arc<dyn crate::role::Role>>,
    redundancy: std::sync::OnceLock<Arc<crate::redundancy::Redundancy>>,
    logins: std::sync::OnceLock<Arc<crate::access::logins::Logins>>,
    recordings: std::sync::OnceLock<Arc<recordings::Uploader>>,
    archive_scans: crate::stream::archive_scans::ArchiveScans,
    health: crate::health::Health,
    ingest_listeners: crate::ingest_listeners::IngestListeners,
}

/// Builds an [`AppState`] once, with everything it owns from the start: the node's
/// shedder (the default settings unless given) and its one wall clock (the system's
/// unless given, a test's manual clock), which every route, layer and loop reads.
pub struct AppStateBuilder {
    node: NodeIdentity,
    metrics: Arc<Metrics>,
    admin_token: Option<String>,
    shedder: Option<Arc<Shedder>>,
    clock: Clock,
}

impl AppStateBuilder {
    /// The admin token that protects the operator API.
    #[must_use]
    pub fn admin_token(mut self, token: Option<String>) -> Self {
        self.admin_token = token;
        self
    }

    /// The node's shedder (built from the `[shedding]` config).
    #[must_use]
    pub fn shedder(mut self, shedder: Arc<Shedder>) -> Self {
        self.shedder = Some(shedder);
        self
    }

    /// The node's wall clock.
    #[must_use]
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The state, with the shedder's and the archive scans' metrics registered.
    pub fn build(self) -> AppState {
        let shedder = self.shedder.unwrap_or_else(|| {
            Arc::new(
                Shedder::new(&ShedSettings::default())
                    .expect("the default shed settings are valid"),
            )
        });
        let metrics = self.metrics;
        let for_metrics = Arc::clone(&shedder);
        metrics.register(Box::new(move |out: &mut String| {
            for_metrics.render_metrics(out);
        }));
        let archive_scans = crate::stream::archive_scans::ArchiveScans::default();
        let scans = archive_scans.clone();
        metrics.register(Box::new(move |out: &mut String| scans.render_metrics(out)));
        AppState {
            inner: Arc::new(Shared {
                node: self.node,
                streams: crate::stream::streams::Streams::default(),
                metrics,
                admin_token: self.admin_token,
                started: Instant::now(),
                clock: self.clock,
                shedder,
                meeting_gate: std::sync::OnceLock::new(),
                role: std::sync::OnceLock::new(),
                redundancy: std::sync::OnceLock::new(),
                logins: std::sync::OnceLock::new(),
                recordings: std::sync::OnceLock::new(),
                archive_scans,
                health: crate::health::Health::default(),
                ingest_listeners: crate::ingest_listeners::IngestListeners::default(),
            }),
        }
    }
}

impl AppState {
    /// The builder of a node's state (see [`AppStateBuilder`]).
    pub fn builder(node: NodeIdentity, metrics: Arc<Metrics>) -> AppStateBuilder {
        AppStateBuilder {
            node,
            metrics,
            admin_token: None,
            shedder: None,
            clock: Clock::system(),
        }
    }

    /// State for a node with no streams yet, the default [`ShedSettings`] (no monitor
    /// yet: see [`crate::shed::overload::run_monitor`]) and the system clock.
    pub fn new(node: NodeIdentity, metrics: Arc<Metrics>, admin_token: Option<String>) -> Self {
        Self::builder(node, metrics)
            .admin_token(admin_token)
            .build()
    }

    /// The node's load shedder (the layer, the fault-rule API and the monitor share it).
    pub fn shedder(&self) -> &Arc<Shedder> {
        &self.inner.shedder
    }

    /// The node's one wall clock: every route, layer and loop that dates something
    /// reads it.
    pub fn clock(&self) -> &Clock {
        &self.inner.clock
    }

    /// The node's cap on archive scans (transcripts, catch-up probes): the expensive
    /// reads anyone may ask for.
    pub fn archive_scans(&self) -> &crate::stream::archive_scans::ArchiveScans {
        &self.inner.archive_scans
    }

    /// The process's health state: its shutdown flag and readiness verdict (`/readyz`).
    pub fn health(&self) -> &crate::health::Health {
        &self.inner.health
    }

    /// The process's RTMP, RTMPS and SRT listeners, as `/api/node` shows them.
    pub fn ingest_listeners(&self) -> &crate::ingest_listeners::IngestListeners {
        &self.inner.ingest_listeners
    }

    /// The node's table of streams, for the parts that need nothing else of the node.
    pub fn stream_table(&self) -> &crate::stream::streams::Streams {
        &self.inner.streams
    }

    /// This node's identity.
    pub fn node(&self) -> &NodeIdentity {
        &self.inner.node
    }

    /// The metrics registry.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.inner.metrics
    }

    /// The admin token, when the admin API is protected.
    pub fn admin_token(&self) -> Option<&str> {
        self.inner.admin_token.as_deref()
    }

    /// How long the node has been up.
    pub fn uptime(&self) -> std::time::Duration {
        self.inner.started.elapsed()
    }

    /// Adds (or replaces) a stream.
    pub fn add_stream(&self, channel: Arc<Package>, inputs: Option<StatusSource>) {
        self.inner.streams.add(channel, inputs);
    }

    /// Removes a stream (a meeting closed); its viewers get the meeting's code from then on.
    pub fn remove_stream(&self, name: &str) -> Option<StreamEntry> {
        self.inner.streams.remove(name)
    }

    /// Puts the node's streams behind its MC's meeting rules (set once, by a node with
    /// an `[mc]` section); returns false if a gate was already set.
    pub fn set_meeting_gate(&self, gate: Arc<crate::access::gate::MeetingGate>) -> bool {
        self.inner.meeting_gate.set(gate).is_ok()
    }

    /// The meeting gate, when this node's streams are meetings of an MC.
    pub fn meeting_gate(&self) -> Option<&Arc<crate::access::gate::MeetingGate>> {
        self.inner.meeting_gate.get()
    }

    /// Gives the process its role (set once, by the MC's router): its rules for the
    /// streams' files and its part of readiness. Returns false if one was already set.
    pub fn set_role(&self, role: Arc<dyn crate::role::Role>) -> bool {
        self.inner.role.set(role).is_ok()
    }

    /// The process's role, on an MC.
    pub fn role(&self) -> Option<&Arc<dyn crate::role::Role>> {
        self.inner.role.get()
    }

    /// Makes the node part of an OTT domain (set once, by a node with an `[ott]`
    /// section) and registers its metrics; returns false if it already was.
    pub fn set_redundancy(&self, redundancy: Arc<crate::redundancy::Redundancy>) -> bool {
        let for_metrics = Arc::clone(&redundancy);
        if self.inner.redundancy.set(redundancy).is_err() {
            return false;
        }
        for_metrics.register_metrics(&self.inner.metrics);
        true
    }

    /// The node's OTT redundancy, when it belongs to a mesh domain.
    pub fn redundancy(&self) -> Option<&Arc<crate::redundancy::Redundancy>> {
        self.inner.redundancy.get()
    }

    /// Sets the node's logins (once); returns false if they were already set.
    pub fn set_logins(&self, logins: Arc<crate::access::logins::Logins>) -> bool {
        self.inner.logins.set(logins).is_ok()
    }

    /// The node's logins, when it has any (OTT-GRP-6).
    pub fn logins(&self) -> Option<&Arc<crate::access::logins::Logins>> {
        self.inner.logins.get()
    }

    /// Gives the node its recordings uploader (set once, by a node whose archive goes to
    /// object storage) and registers its metrics; returns false if one was already set.
    pub fn set_recordings(&self, uploader: Arc<recordings::Uploader>) -> bool {
        let for_metrics = Arc::clone(&uploader);
        if self.inner.recordings.set(uploader).is_err() {
            return false;
        }
        for (name, kind, help) in recordings::stats::METRIC_FAMILIES {
            self.inner.metrics.describe(name, kind, help);
        }
        self.inner
            .metrics
            .register(Box::new(move |out: &mut String| {
                for_metrics.render_metrics(out);
            }));
        true
    }

    /// The node's recordings uploader, when its archive goes to object storage.
    pub fn recordings(&self) -> Option<&Arc<recordings::Uploader>> {
        self.inner.recordings.get()
    }

    /// The stream of that name.
    pub fn stream(&self, name: &str) -> Option<StreamEntry> {
        self.inner.streams.get(name)
    }

    /// The live channel of that name: the hot path's lookup, which (unlike
    /// [`AppState::stream`]) does not clone the status source.
    pub fn channel(&self, name: &str) -> Option<Arc<Package>> {
        self.inner.streams.channel(name)
    }

    /// All streams, by name.
    pub fn streams(&self) -> Vec<StreamEntry> {
        self.inner.streams.all()
    }
}
