//! The node's shedding state, one per node and shared by every request as
//! `Arc<Shedder>`: a composition of small parts, each in its own file — the pure
//! [`Policy`], the [`LevelMonitor`], the [`FaultRuleSet`], the [`DevicePauses`], the
//! [`LaneSettings`], the [`LimitTracker`] and the [`ShedMetrics`] — plus the node's
//! experiments, whose shed slices are part of every decision. The shedder reads the
//! clocks and hands the readings to the parts; [`super::overload`] runs its monitor.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use shed::{BackPressure, Bucket, Classifier, RequestFacts};
use tokio::time::Instant;

use super::faults::FaultRuleSet;
use super::lane_settings::LaneSettings;
use super::levels::{LevelMonitor, MonitorSettings};
use super::limit::LimitTracker;
use super::metrics::{Readings, ShedMetrics};
use super::pauses::DevicePauses;
use super::policy::{Decision, Injection, Policy};
use super::settings::{ShedSettings, ShedSettingsError};
use crate::experiments::NodeExperiments;

/// Shedding state of one node (see the module docs).
#[derive(Debug)]
pub struct Shedder {
    enabled: bool,
    policy: Policy,
    levels: LevelMonitor,
    faults: FaultRuleSet,
    pauses: DevicePauses,
    lane: LaneSettings,
    limit: LimitTracker,
    metrics: ShedMetrics,
    experiments: NodeExperiments,
    /// The next request's sequence number (the curve's draw, the pauses' spread).
    sequence: AtomicU64,
    /// The origin of [`Shedder::now`].
    origin: Instant,
}

impl Shedder {
    /// Compiles the settings.
    ///
    /// # Errors
    /// [`ShedSettingsError`] naming the first key that cannot work.
    pub fn new(settings: &ShedSettings) -> Result<Shedder, ShedSettingsError> {
        settings.validate_top()?;
        let section = |section| move |source| ShedSettingsError::Section { section, source };
        let classifier = Classifier::new(&settings.classifier).map_err(section("classifier"))?;
        let back_pressure =
            BackPressure::new(settings.back_pressure.clone()).map_err(section("back_pressure"))?;
        settings.overload.validate().map_err(section("overload"))?;
        settings.control.validate().map_err(section("control"))?;
        settings.cut.validate().map_err(section("cut"))?;
        let limit = LimitTracker::new(settings.limit.clone()).map_err(section("limit"))?;
        Ok(Shedder {
            enabled: settings.enabled,
            policy: Policy::new(classifier, back_pressure),
            levels: LevelMonitor::new(MonitorSettings::of(settings)),
            faults: FaultRuleSet::new(
                settings.fault_rule_cap,
                Duration::from_secs(settings.max_fault_rule_seconds),
            ),
            pauses: DevicePauses::new(
                Duration::from_millis(settings.violator_pause_ms),
                Duration::from_millis(settings.marginal_pause_ms),
            ),
            lane: LaneSettings::new(
                settings.priority_lane,
                settings.lane_threads,
                settings.lane_pinned,
            ),
            limit,
            metrics: ShedMetrics::default(),
            experiments: NodeExperiments::default(),
            sequence: AtomicU64::new(0),
            origin: Instant::now(),
        })
    }

    /// Time since this shedder was created: the time axis of fault-rule expiry, of
    /// the adaptive limit and of the serving probes (tokio's clock, so paused-time
    /// tests control it).
    pub fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    /// Whether the layer sheds at all (`[shedding] enabled`).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Classification and the shed curve.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The overload level (and its override) every decision reads.
    pub fn levels(&self) -> &LevelMonitor {
        &self.levels
    }

    /// The operator's fault-injection rules, on the [`Shedder::now`] axis.
    pub fn faults(&self) -> &FaultRuleSet {
        &self.faults
    }

    /// The device-contract pauses and their count.
    pub fn pauses(&self) -> &DevicePauses {
        &self.pauses
    }

    /// The priority lane's settings and count.
    pub fn lane(&self) -> &LaneSettings {
        &self.lane
    }

    /// The adaptive concurrency limit.
    pub fn limit(&self) -> &LimitTracker {
        &self.limit
    }

    /// The outcome and in-flight counters.
    pub fn metrics(&self) -> &ShedMetrics {
        &self.metrics
    }

    /// The node's continuous shedding experiments (EXP-1): their shed slices are part
    /// of every decision, their KPIs are fed by the layer and `/telemetry`.
    pub fn experiments(&self) -> &NodeExperiments {
        &self.experiments
    }

    /// Classify, compare with the shed curve, then consult the fault rules and the
    /// running experiments' shed slices, and count the outcome. O(1) and
    /// allocation-free apart from walking the (capped) rules and running experiments,
    /// which only happens while there are any.
    pub fn decide(&self, facts: &RequestFacts) -> Decision {
        self.decide_with(facts, true)
    }

    /// [`Shedder::decide`], with the experiments' shed slices consulted only when
    /// `experiments_apply`: KPI beacons (the experiments' own measurement channel) are
    /// exempt, or an experiment shedding NON_CRITICAL would silence its own group.
    pub fn decide_with(&self, facts: &RequestFacts, experiments_apply: bool) -> Decision {
        let classified = self.policy.classify(facts);
        let seq = self.sequence.fetch_add(1, Ordering::Relaxed);
        let level = self.levels.level();
        self.levels.note_requested(classified.priority);
        let decision = self.policy.decide(facts, classified, level, seq, || {
            // The clock is read only while there are rules.
            let rule = if self.faults.is_empty() {
                None
            } else {
                self.faults
                    .matches(facts, classified.priority, self.now(), seq)
            };
            match rule {
                Some(rule) => Some(Injection::Rule(rule)),
                None => (experiments_apply
                    && self.experiments.shed_hit(facts, classified.priority))
                .then_some(Injection::Experiment),
            }
        });
        self.metrics.record(&decision);
        decision
    }

    /// The longest pause for one breach of the device contract
    /// ([`DevicePauses::pause_for`], spread by the requests seen so far).
    pub fn pause_for(&self, partial: bool) -> Duration {
        self.pauses
            .pause_for(partial, self.sequence.load(Ordering::Relaxed))
    }

    /// Feeds a completed request's latency to the histogram and the adaptive limit.
    pub(crate) fn complete(&self, bucket: Bucket, rtt: Duration, in_flight_at_start: u32) {
        self.metrics.observe(bucket, rtt);
        self.limit.sample(rtt, in_flight_at_start, self.now());
    }

    /// The process was suspended (SIGSTOP, a paused VM) and runs again: the time it
    /// stood still is not overload ([`LimitTracker::resumed`]).
    pub(crate) fn resumed_after_suspension(&self) {
        self.limit.resumed(self.now());
    }

    /// Appends the shedding metrics in the Prometheus text format.
    pub fn render_metrics(&self, out: &mut String) {
        let readings = Readings {
            level: self.levels.level().get(),
            threshold: self.levels.threshold().get(),
            concurrency_limit: self.limit.value(),
            cpu: self.levels.cpu_utilisation(),
            queue_delay: self.levels.queue_delay(),
            forced: self.levels.is_forced(),
            connection_pauses: self.pauses.connection_pauses(),
            laned_connections: self.lane.laned_connections(),
            fault_rules: self.faults.active(self.now()),
        };
        self.metrics.render(&readings, out);
        self.experiments.render_metrics(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shed::{DeviceType, FaultRuleSpec, OverloadLevel, Priority, RouteKind};

    fn telemetry() -> RequestFacts {
        RequestFacts {
            route: RouteKind::Telemetry,
            device: DeviceType::Browser,
            member: None,
            in_playback: false,
        }
    }

    /// The composition counts what the policy decides, with the level and the rules
    /// of its parts (SHED-1, FIT-1).
    #[test]
    fn decisions_read_the_parts_and_are_counted() {
        let shedder = Shedder::new(&ShedSettings::default()).expect("defaults");
        assert!(matches!(shedder.decide(&telemetry()), Decision::Admit(_)));
        shedder.levels().force_level(Some(OverloadLevel::FULL));
        assert!(matches!(
            shedder.decide(&telemetry()),
            Decision::Shed {
                injected_by: None,
                ..
            }
        ));
        shedder.levels().force_level(None);
        let spec = FaultRuleSpec {
            min_priority: Priority::BOTTOM,
            max_priority: Priority::TOP,
            devices: None,
            members: None,
            share: 1.0,
            expires_at: Duration::ZERO,
        };
        let rule = shedder
            .faults()
            .add(spec, Duration::from_secs(60), shedder.now())
            .expect("added");
        assert!(matches!(
            shedder.decide(&telemetry()),
            Decision::Shed { injected_by: Some(r), .. } if r == rule
        ));
        let counts = shedder.metrics().counts(Bucket::NonCritical);
        assert_eq!((counts.admitted, counts.shed, counts.injected), (1, 1, 1));
        let mut text = String::new();
        shedder.render_metrics(&mut text);
        assert!(text.lines().any(|l| l == "brdyun_shed_fault_rules 1"));
    }
}
