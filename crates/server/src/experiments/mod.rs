//! Continuous shedding experiments on a node (EXP-1, EXP-2, FIT-1): the I/O edge of the
//! pure `experiments` crate.
//!
//! [`NodeExperiments`] holds the node's [`Experiments`] state machine behind a lock and
//! publishes its [`experiments::ShedSet`] as a [`snapshot::Published`] whenever the
//! generation moves. Data flow:
//!
//! - **Shedding.** [`crate::shed::Shedder::decide`] asks [`NodeExperiments::shed_hit`]
//!   after the fault rules: a request of an experiment-group member inside a running
//!   run's slice is answered like a FIT rule hit (same 503, counted as injected, and
//!   per run in `brdyun_experiment_shed_requests_total`). No experiment running costs
//!   one atomic load; otherwise the snapshot is read lock-free (see [`snapshot`]).
//! - **KPIs.** The shedding layer asks [`NodeExperiments::observe`] whether the request's
//!   member is in a group of a running run (lock-free); only those requests go on to the
//!   session table ([`sessions`]): CRITICAL request outcomes, and for players that name
//!   no session (no beacons) starts and stalls inferred from segment requests.
//!   `POST /telemetry` beacons ([`beacon`]) go the same way. Every event goes to
//!   [`Experiments::record`].
//! - **Time.** The node calls [`NodeExperiments::tick`] every second with the wall
//!   clock; it starts and ends runs, logs events and raises alerts (log at warn, the
//!   `brdyun_experiment_alerts_total` counter and the Experiments page).
//! - **Cluster.** [`NodeExperiments::local_report`] is served at
//!   `GET /api/experiments/report`; the node pulls its peers' and feeds
//!   [`NodeExperiments::apply_report`] ([`peers`]).

pub mod beacon;
pub mod peer_auth;
pub mod peers;
pub mod sessions;
pub mod snapshot;

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::http::{HeaderMap, HeaderName};
use experiments::{
    Alert, CommandError, DefinitionError, ExperimentDefinition, ExperimentEvent, Experiments,
    ExperimentsConfig, KpiEvent, NodeReport, StallDetectorConfig,
};
use serde::Serialize;
use shed::{DeviceType, MemberId, Priority, RequestFacts, RouteKind};

use self::sessions::{Observation, SessionLimits, Sessions};
use self::snapshot::{Published, RunCounters, SnapshotCell, EVENT_KINDS};
use shed::member_id;

/// Names the player's playback session (the id its beacons carry). A player that sends
/// it promises beacons for that session, so no start or stall is inferred for it.
pub const SESSION_HEADER: HeaderName = HeaderName::from_static("x-brdyun-session");

/// Where players send KPI beacons: the experiments' measurement channel, shed under
/// overload like any telemetry (NON_CRITICAL) but never for an experiment, so that an
/// experiment shedding NON_CRITICAL still hears its experiment group. `POST /telemetry`
/// accepts the same beacons (and logs) and is shed like any request.
pub const KPI_BEACON_PATH: &str = "/telemetry/kpi";

/// Runs whose metrics are kept after they end (the newest finished ones).
const KEPT_RUNS: usize = 32;

/// Alerts the page shows (newest kept).
const KEPT_ALERTS: usize = 50;

/// An alert as the page and the admin API show it.
#[derive(Debug, Clone, Serialize)]
pub struct AlertEntry {
    /// When it was raised, ms since the epoch.
    pub at_ms: u64,
    /// The alert.
    #[serde(flatten)]
    pub alert: Alert,
}

/// An observed request: a member in a group of a running run, with the session its
/// KPI events count for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observed {
    key: u64,
    member: MemberId,
    device: DeviceType,
    /// The player named its session: it sends beacons, nothing is inferred.
    beacons: bool,
}

/// The session key of a request or beacon: the session id's hash when there is one,
/// else member and device.
pub fn session_key(session: Option<&[u8]>, member: MemberId, device: DeviceType) -> u64 {
    match session.and_then(member_id) {
        Some(id) => id.0,
        None => member.0 ^ (device as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15),
    }
}

struct Inner {
    exp: Experiments,
    published_generation: u64,
    /// Counters of running and recently finished runs, oldest first.
    runs: VecDeque<Arc<RunCounters>>,
    alerts: VecDeque<AlertEntry>,
    alert_counts: BTreeMap<(String, &'static str), u64>,
}

/// The experiments of one node (see the module docs).
pub struct NodeExperiments {
    inner: Mutex<Inner>,
    published: SnapshotCell,
    sessions: Mutex<Sessions>,
    /// Segment duration assumed by the stall inference, ms.
    segment_ms: AtomicU64,
}

impl std::fmt::Debug for NodeExperiments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeExperiments")
            .field("running", &self.published.is_active())
            .finish_non_exhaustive()
    }
}

impl Default for NodeExperiments {
    fn default() -> Self {
        Self::new(ExperimentsConfig::default())
    }
}

impl NodeExperiments {
    /// No definitions yet (add them with [`NodeExperiments::set_definitions`] or the API).
    pub fn new(config: ExperimentsConfig) -> Self {
        let exp = Experiments::new(Vec::new(), config).expect("no definitions are valid");
        NodeExperiments {
            inner: Mutex::new(Inner {
                published_generation: exp.generation(),
                exp,
                runs: VecDeque::new(),
                alerts: VecDeque::new(),
                alert_counts: BTreeMap::new(),
            }),
            published: SnapshotCell::default(),
            sessions: Mutex::new(Sessions::new(
                SessionLimits::default(),
                StallDetectorConfig::default(),
            )),
            segment_ms: AtomicU64::new(2_000),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_sessions(&self) -> MutexGuard<'_, Sessions> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The segment duration the stall inference assumes (the node's target duration):
    /// a longer assumption misses stalls rather than inventing them.
    pub fn set_segment_ms(&self, ms: u64) {
        self.segment_ms.store(ms.max(1), Ordering::Relaxed);
    }

    /// Replaces every definition (the node's `[[experiment]]` config).
    ///
    /// # Errors
    /// The first invalid definition; nothing changes then.
    pub fn set_definitions(
        &self,
        definitions: Vec<ExperimentDefinition>,
        now_ms: u64,
    ) -> Result<Vec<ExperimentEvent>, DefinitionError> {
        let mut inner = self.lock();
        let events = inner.exp.set_definitions(definitions, now_ms)?;
        self.after(&mut inner, &events, now_ms);
        Ok(events)
    }

    /// Adds a definition or replaces the one with its id; `true` when it replaced one.
    ///
    /// # Errors
    /// The definition is invalid.
    pub fn upsert(&self, def: ExperimentDefinition, now_ms: u64) -> Result<bool, DefinitionError> {
        let mut inner = self.lock();
        let mut defs: Vec<ExperimentDefinition> = inner.exp.definitions().cloned().collect();
        let replaced = match defs.iter_mut().find(|d| d.id == def.id) {
            Some(slot) => {
                *slot = def;
                true
            }
            None => {
                defs.push(def);
                false
            }
        };
        let events = inner.exp.set_definitions(defs, now_ms)?;
        self.after(&mut inner, &events, now_ms);
        Ok(replaced)
    }

    /// Removes a definition, aborting its run.
    ///
    /// # Errors
    /// [`CommandError::UnknownExperiment`].
    pub fn remove(&self, id: &str, now_ms: u64) -> Result<(), CommandError> {
        let mut inner = self.lock();
        let defs: Vec<ExperimentDefinition> = inner.exp.definitions().cloned().collect();
        if !defs.iter().any(|d| d.id == id) {
            return Err(CommandError::UnknownExperiment(id.to_string()));
        }
        let kept = defs.into_iter().filter(|d| d.id != id).collect();
        let events = inner
            .exp
            .set_definitions(kept, now_ms)
            .expect("a subset of valid definitions is valid");
        self.after(&mut inner, &events, now_ms);
        Ok(())
    }

    /// Starts a run of `id` now, outside its schedule.
    ///
    /// # Errors
    /// Unknown, disabled or already running.
    pub fn start_now(&self, id: &str, now_ms: u64) -> Result<ExperimentEvent, CommandError> {
        let mut inner = self.lock();
        let event = inner.exp.start_now(id, now_ms)?;
        self.after(&mut inner, std::slice::from_ref(&event), now_ms);
        Ok(event)
    }

    /// Advances the state machine to `now_ms` (wall clock, ms since the epoch): starts,
    /// ends and judges runs, raises alerts, forgets idle sessions. Call it every second.
    pub fn tick(&self, now_ms: u64) -> Vec<ExperimentEvent> {
        let events = {
            let mut inner = self.lock();
            let events = inner.exp.tick(now_ms);
            self.after(&mut inner, &events, now_ms);
            events
        };
        self.lock_sessions().expire(now_ms);
        events
    }

    /// Republishes the shed set when it changed, logs the events and books alerts.
    fn after(&self, inner: &mut Inner, events: &[ExperimentEvent], now_ms: u64) {
        for event in events {
            match event {
                ExperimentEvent::Started { run, ends_at_ms } => {
                    tracing::info!(run = %run, ends_at_ms, "experiment run started");
                }
                ExperimentEvent::Finished { run, outcome, hurt } => {
                    let hurt: Vec<&str> = hurt.iter().map(|d| d.as_str()).collect();
                    tracing::info!(run = %run, ?outcome, hurt = ?hurt, "experiment run finished");
                }
                ExperimentEvent::Alert(alert) => {
                    tracing::warn!(
                        experiment = %alert.experiment,
                        run = %alert.run,
                        device = alert.device.as_str(),
                        previous = ?alert.previous,
                        kpis = alert.kpis.len(),
                        "experiment found a regression: shedding hurts this device type"
                    );
                    *inner
                        .alert_counts
                        .entry((alert.experiment.clone(), alert.device.as_str()))
                        .or_default() += 1;
                    if inner.alerts.len() >= KEPT_ALERTS {
                        inner.alerts.pop_front();
                    }
                    inner.alerts.push_back(AlertEntry {
                        at_ms: now_ms,
                        alert: alert.clone(),
                    });
                }
            }
        }
        if inner.exp.generation() == inner.published_generation {
            return;
        }
        inner.published_generation = inner.exp.generation();
        let set = inner.exp.shed_set().clone();
        let mut counters = Vec::with_capacity(set.entries().len());
        for entry in set.entries() {
            let found = inner.runs.iter().find(|c| c.run == entry.run).cloned();
            let c = found.unwrap_or_else(|| {
                let c = Arc::new(RunCounters::new(&entry.run));
                inner.runs.push_back(Arc::clone(&c));
                c
            });
            counters.push(c);
        }
        // Keep the running runs and the newest finished ones.
        while inner.runs.len() > KEPT_RUNS + counters.len() {
            let Some(pos) = inner
                .runs
                .iter()
                .position(|c| !counters.iter().any(|r| Arc::ptr_eq(r, c)))
            else {
                break;
            };
            inner.runs.remove(pos);
        }
        self.published.publish(Published { set, counters });
    }

    /// Whether a request is in a running run's experiment-group slice; counts it for
    /// the run when it is. Lock-free; one atomic load while no run is in progress.
    pub fn shed_hit(&self, facts: &RequestFacts, priority: Priority) -> bool {
        if !self.published.is_active() || facts.member.is_none() {
            return false;
        }
        let published = self.published.current();
        match published.shed_index(facts, priority) {
            Some(i) => {
                if let Some(c) = published.counters.get(i) {
                    c.count_shed(facts.device);
                }
                true
            }
            None => false,
        }
    }

    /// Whether any run is in progress (one atomic load).
    pub fn is_running(&self) -> bool {
        self.published.is_active()
    }

    /// Whether the member is in a group of a running run (its KPIs count); lock-free.
    pub fn is_observed(&self, member: MemberId, device: DeviceType) -> bool {
        self.published.is_active() && self.published.current().is_observed(member, device)
    }

    /// The observation handle of a request whose member is in a group of a running
    /// run, `None` for everyone else (decided without a lock).
    pub fn observe(&self, facts: &RequestFacts, headers: &HeaderMap) -> Option<Observed> {
        let member = facts.member?;
        if !self.is_observed(member, facts.device) {
            return None;
        }
        let session = headers
            .get(&SESSION_HEADER)
            .map(|v| v.as_bytes())
            .filter(|s| !s.is_empty() && s.len() <= beacon::MAX_ID_BYTES);
        Some(Observed {
            key: session_key(session, member, facts.device),
            member,
            device: facts.device,
            beacons: session.is_some(),
        })
    }

    /// An observed request was admitted: a beacon-less player's master playlist starts
    /// a start attempt, its segments feed the stall inference.
    pub fn request_admitted(&self, o: Observed, route: RouteKind, path: &str, now_ms: u64) {
        if o.beacons {
            return;
        }
        let events = match route {
            RouteKind::PlaybackStart => {
                self.lock_sessions()
                    .playback_requested(o.key, o.member, o.device, now_ms);
                return;
            }
            RouteKind::LiveSegment => {
                let Some(sequence) = segment_sequence(path) else {
                    return;
                };
                let duration = self.segment_ms.load(Ordering::Relaxed);
                self.lock_sessions()
                    .segment_requested(o.key, o.member, o.device, sequence, duration, now_ms)
            }
            _ => return,
        };
        for event in events {
            self.record(o.member, o.device, event);
        }
    }

    /// An observed CRITICAL request was answered (`failed`: shed or 5xx).
    pub fn critical_answered(&self, o: Observed, failed: bool, now_ms: u64) {
        let event = self
            .lock_sessions()
            .critical_request(o.key, o.member, o.device, failed, now_ms);
        if let Some(event) = event {
            self.record(o.member, o.device, event);
        }
    }

    /// A player's beacon; `true` when it counted for a running run.
    pub fn beacon(
        &self,
        session: &str,
        member: MemberId,
        device: DeviceType,
        observation: Observation,
        now_ms: u64,
    ) -> bool {
        if !self.is_observed(member, device) {
            return false;
        }
        let key = session_key(Some(session.as_bytes()), member, device);
        let event = self
            .lock_sessions()
            .observe(key, member, device, observation, now_ms);
        event.is_some_and(|e| self.record(member, device, e))
    }

    /// Counts a KPI event in the state machine and the per-run metrics.
    fn record(&self, member: MemberId, device: DeviceType, event: KpiEvent) -> bool {
        let published = self.published.current();
        for (entry, counters) in published.set.entries().iter().zip(&published.counters) {
            if entry.devices.contains(device) {
                counters.count_event(entry.assigner.group(member), device, &event);
            }
        }
        self.lock().exp.record(member, device, event)
    }

    /// This node's counters of the runs in progress (`GET /api/experiments/report`).
    pub fn local_report(&self) -> NodeReport {
        self.lock().exp.local_report()
    }

    /// Takes in a peer's report (its latest replaces its previous).
    pub fn apply_report(&self, node: &str, report: NodeReport) {
        self.lock().exp.apply_report(node, report);
    }

    /// Everything the admin API and the Experiments page show: the state machine's
    /// status with the newest `history` runs, plus the recent alerts (newest first).
    pub fn status_json(&self, now_ms: u64, history: usize) -> serde_json::Value {
        let inner = self.lock();
        let mut value = serde_json::to_value(inner.exp.status(now_ms, history))
            .unwrap_or_else(|_| serde_json::json!({}));
        let alerts: Vec<&AlertEntry> = inner.alerts.iter().rev().collect();
        if let serde_json::Value::Object(map) = &mut value {
            map.insert(
                "alerts".to_string(),
                serde_json::to_value(alerts).unwrap_or_default(),
            );
        }
        value
    }

    /// Sessions tracked for KPIs now.
    pub fn sessions(&self) -> usize {
        self.lock_sessions().len()
    }

    /// Appends the experiment metrics in the Prometheus text format.
    pub fn render_metrics(&self, out: &mut String) {
        let inner = self.lock();
        let running = self.published.current().set.entries().len();
        let _ = writeln!(
            out,
            "# HELP brdyun_experiments_running Experiment runs in progress.\n# TYPE brdyun_experiments_running gauge\nbrdyun_experiments_running {running}"
        );
        out.push_str("# HELP brdyun_experiment_shed_requests_total Experiment-group requests shed through the fault-injection path, by run and device.\n");
        out.push_str("# TYPE brdyun_experiment_shed_requests_total counter\n");
        for c in &inner.runs {
            for device in DeviceType::ALL {
                let n = c.shed(device);
                if n > 0 {
                    let _ = writeln!(
                        out,
                        "brdyun_experiment_shed_requests_total{{experiment=\"{}\",run=\"{}\",device=\"{}\"}} {n}",
                        c.experiment(),
                        c.run,
                        device.as_str()
                    );
                }
            }
        }
        out.push_str("# HELP brdyun_experiment_events_total KPI events counted on this node, by run, group, device and kind.\n");
        out.push_str("# TYPE brdyun_experiment_events_total counter\n");
        for c in &inner.runs {
            for (g, group) in ["control", "experiment"].into_iter().enumerate() {
                for (k, kind) in EVENT_KINDS.into_iter().enumerate() {
                    for device in DeviceType::ALL {
                        let n = c.events(g, k, device);
                        if n > 0 {
                            let _ = writeln!(
                                out,
                                "brdyun_experiment_events_total{{experiment=\"{}\",run=\"{}\",group=\"{group}\",device=\"{}\",kind=\"{kind}\"}} {n}",
                                c.experiment(),
                                c.run,
                                device.as_str()
                            );
                        }
                    }
                }
            }
        }
        out.push_str("# HELP brdyun_experiment_alerts_total Regression alerts: a device type turned to deviation.\n");
        out.push_str("# TYPE brdyun_experiment_alerts_total counter\n");
        for ((experiment, device), n) in &inner.alert_counts {
            let _ = writeln!(
                out,
                "brdyun_experiment_alerts_total{{experiment=\"{experiment}\",device=\"{device}\"}} {n}"
            );
        }
    }
}

/// The media sequence number of a segment path (`/{stream}/seg-{n}.ts`).
fn segment_sequence(path: &str) -> Option<u64> {
    let file = path.rsplit('/').next()?;
    file.strip_prefix("seg-")?.strip_suffix(".ts")?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_sequences_parse() {
        assert_eq!(segment_sequence("/s/seg-42.ts"), Some(42));
        assert_eq!(segment_sequence("/s/index.m3u8"), None);
        assert_eq!(segment_sequence("/s/seg-x.ts"), None);
    }

    #[test]
    fn session_keys_separate_sessions_and_devices() {
        let m = MemberId(5);
        let a = session_key(Some(b"s1"), m, DeviceType::Browser);
        assert_eq!(
            a,
            session_key(Some(b"s1"), MemberId(6), DeviceType::SmartTv)
        );
        assert_ne!(a, session_key(Some(b"s2"), m, DeviceType::Browser));
        assert_ne!(
            session_key(None, m, DeviceType::Browser),
            session_key(None, m, DeviceType::SmartTv)
        );
    }
}
