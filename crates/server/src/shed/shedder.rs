//! The node's shedding state: compiled policy, live overload level, fault rules and the
//! counters behind the metrics. One per node, shared by every request as `Arc<Shedder>`.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::sync::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use shed::{
    AdaptiveLimit, Advice, BackPressure, Bucket, Classified, Classifier, FaultError, FaultRule,
    FaultRuleSpec, FaultRules, LevelControlConfig, OverloadConfig, OverloadLevel, Priority,
    PrioritySet, RequestFacts, RuleId, ShedCurve,
};
use tokio::time::Instant;

use super::settings::{CpuSource, LanePriority, LevelSource, ShedSettings, ShedSettingsError};
use crate::clock::Clock;
use crate::experiments::NodeExperiments;
use crate::metrics::Histogram;

/// `forced_bits` value meaning "no override".
const NOT_FORCED: u64 = u64::MAX;

/// What the layer does with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Serve it.
    Admit(Classified),
    /// Answer the back-pressure 503 with this advice.
    Shed {
        /// The request's bucket and priority.
        classified: Classified,
        /// The retry dials of the answer.
        advice: Advice,
        /// The fault rule that shed it, or `None` for a real (overload) shed.
        injected_by: Option<RuleId>,
        /// Shed for a running experiment's experiment group (EXP-1): injected like a
        /// fault rule hit, counted per run by the experiments.
        experiment: bool,
        /// Refused by the curve's share of the threshold priority (the others of that
        /// priority are admitted), not because the whole priority is shed.
        partial: bool,
    },
}

/// Outcome counters of one bucket, as read by tests and the admin view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ShedCounts {
    /// Requests passed to the routes.
    pub admitted: u64,
    /// Requests refused by the shed curve (real overload).
    pub shed: u64,
    /// Requests refused by a fault-injection rule.
    pub injected: u64,
}

#[derive(Debug, Default)]
struct BucketStats {
    admitted: AtomicU64,
    shed: AtomicU64,
    injected: AtomicU64,
    latency: Histogram,
}

/// A fault rule as the admin API lists it.
#[derive(Debug, Clone)]
pub struct RuleView {
    /// The rule's id.
    pub id: RuleId,
    /// The rule as added.
    pub spec: FaultRuleSpec,
    /// Requests it has shed.
    pub injected: u64,
    /// Time left before it expires.
    pub remaining: Duration,
}

/// Shedding state of one node (see the module docs).
#[derive(Debug)]
pub struct Shedder {
    enabled: bool,
    classifier: Classifier,
    curve: ShedCurve,
    back_pressure: BackPressure,
    rules: RwLock<FaultRules>,
    /// Rules in `rules` (expired ones included until purged); 0 skips the lock.
    rule_count: AtomicUsize,
    max_rule_duration: Duration,
    limit: Mutex<AdaptiveLimit>,
    limit_value: AtomicU32,
    limit_cfg: shed::AdaptiveLimitConfig,
    /// When the process last came back from a suspension (shedder clock, ns; 0 none):
    /// requests that started before it carry the suspension in their latency.
    resumed_at_nanos: AtomicU64,
    pub(crate) overload_cfg: OverloadConfig,
    pub(crate) level_source: LevelSource,
    pub(crate) control_cfg: LevelControlConfig,
    pub(crate) cut_cfg: LevelControlConfig,
    /// Priorities requested since the monitor last looked, one bit each (the cut
    /// controller's occupancy).
    requested: AtomicU128Bits,
    pub(crate) cpu_source: CpuSource,
    pub(crate) cpu_period: Duration,
    pub(crate) tick_period: Duration,
    origin: Instant,
    /// The node's wall clock (the experiments' records and KPIs are dated by it).
    clock: Clock,
    in_flight: AtomicU32,
    level_bits: AtomicU64,
    forced_bits: AtomicU64,
    next_request: AtomicU64,
    cpu_bits: AtomicU64,
    queue_delay_nanos: AtomicU64,
    /// The serving threads' queueing-delay probes ([`Shedder::run_serving_probe`]).
    serving_probes: std::sync::Mutex<Vec<Arc<ServingProbeSlot>>>,
    monitor_running: AtomicBool,
    stats: [BucketStats; 3],
    experiments: NodeExperiments,
    violator_pause: Duration,
    marginal_pause: Duration,
    connection_pauses: AtomicU64,
    priority_lane: LanePriority,
    lane_threads: usize,
    lane_pinned: bool,
    laned_connections: AtomicU64,
}

/// What one serving thread's queueing-delay probe last read, and since when a probe
/// has been waiting, so the monitor reads the wait as it is now, even while a probe
/// stuck behind a long queue has not come back.
#[derive(Debug, Default)]
pub(crate) struct ServingProbeSlot {
    /// The last completed probe's wait, in nanoseconds.
    last_nanos: AtomicU64,
    /// When the probe in flight was sent ([`Shedder::now`] in nanoseconds, plus 1 so
    /// that 0 means none in flight).
    sent_at_nanos: AtomicU64,
}

impl ServingProbeSlot {
    /// A probe was sent at `at` ([`Shedder::now`]).
    pub(crate) fn sent(&self, at: Duration) {
        let nanos = u64::try_from(at.as_nanos()).unwrap_or(u64::MAX - 1);
        self.sent_at_nanos.store(nanos + 1, Ordering::Relaxed);
    }

    /// The probe came back after `wait`.
    pub(crate) fn received(&self, wait: Duration) {
        let nanos = u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX);
        self.last_nanos.store(nanos, Ordering::Relaxed);
        self.sent_at_nanos.store(0, Ordering::Relaxed);
    }

    /// The wait at `now`: the last probe's, or the one in flight's so far if longer.
    fn wait(&self, now: Duration) -> Duration {
        let last = Duration::from_nanos(self.last_nanos.load(Ordering::Relaxed));
        match self.sent_at_nanos.load(Ordering::Relaxed) {
            0 => last,
            sent => last.max(now.saturating_sub(Duration::from_nanos(sent - 1))),
        }
    }
}

/// A set of priorities (0..=99) that request paths add to without a lock: two atomic
/// words of 64 bits.
#[derive(Debug, Default)]
struct AtomicU128Bits([AtomicU64; 2]);

impl AtomicU128Bits {
    fn insert(&self, v: u8) {
        let word = &self.0[usize::from(v / 64)];
        let bit = 1u64 << (v % 64);
        // Most requests find their bit already set: a load, no write to the line.
        if word.load(Ordering::Relaxed) & bit == 0 {
            word.fetch_or(bit, Ordering::Relaxed);
        }
    }

    /// The set, emptied.
    fn take(&self) -> PrioritySet {
        let low = self.0[0].swap(0, Ordering::Relaxed);
        let high = self.0[1].swap(0, Ordering::Relaxed);
        PrioritySet::from_bits(u128::from(high) << 64 | u128::from(low))
    }
}

/// A uniform draw in 0..1 from a request's sequence number (splitmix64): which of the
/// threshold priority's requests the curve's share admits, spread evenly and without
/// a random number generator on the request path.
fn unit_draw(seq: u64) -> f64 {
    let mut z = seq.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

fn bucket_index(bucket: Bucket) -> usize {
    bucket as usize
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
        let limit = AdaptiveLimit::new(settings.limit.clone()).map_err(section("limit"))?;
        let limit_value = limit.limit();
        Ok(Shedder {
            enabled: settings.enabled,
            classifier,
            curve: ShedCurve,
            back_pressure,
            rules: RwLock::new(FaultRules::new(settings.fault_rule_cap)),
            rule_count: AtomicUsize::new(0),
            max_rule_duration: Duration::from_secs(settings.max_fault_rule_seconds),
            limit: Mutex::new(limit),
            limit_value: AtomicU32::new(limit_value),
            limit_cfg: settings.limit.clone(),
            resumed_at_nanos: AtomicU64::new(0),
            overload_cfg: settings.overload.clone(),
            level_source: settings.level_source,
            control_cfg: settings.control.clone(),
            cut_cfg: settings.cut.clone(),
            requested: AtomicU128Bits::default(),
            cpu_source: settings.cpu_source,
            cpu_period: Duration::from_millis(settings.cpu_sample_ms),
            tick_period: Duration::from_millis(settings.tick_ms),
            origin: Instant::now(),
            clock: Clock::system(),
            in_flight: AtomicU32::new(0),
            level_bits: AtomicU64::new(0f64.to_bits()),
            forced_bits: AtomicU64::new(NOT_FORCED),
            next_request: AtomicU64::new(0),
            cpu_bits: AtomicU64::new(0f64.to_bits()),
            queue_delay_nanos: AtomicU64::new(0),
            serving_probes: std::sync::Mutex::new(Vec::new()),
            monitor_running: AtomicBool::new(false),
            stats: Default::default(),
            experiments: NodeExperiments::default(),
            violator_pause: Duration::from_millis(settings.violator_pause_ms),
            marginal_pause: Duration::from_millis(
                settings.marginal_pause_ms.min(settings.violator_pause_ms),
            ),
            connection_pauses: AtomicU64::new(0),
            priority_lane: settings.priority_lane,
            lane_threads: settings.lane_threads,
            lane_pinned: settings.lane_pinned,
            laned_connections: AtomicU64::new(0),
        })
    }

    /// The node's continuous shedding experiments (EXP-1): their shed slices are part
    /// of every decision, their KPIs are fed by the layer and `/telemetry`.
    pub fn experiments(&self) -> &NodeExperiments {
        &self.experiments
    }

    /// The longest pause for one breach of the device contract: `[shedding]
    /// marginal_pause_ms` after a refusal at the margin (`partial`), short so holding
    /// part of a class stays in step with the level; `violator_pause_ms` otherwise
    /// (zero never pauses). Drawn evenly from the upper half of that setting, so
    /// connections paused together (one flood, one spike) do not come back together
    /// and swing the node between idle and full.
    pub fn pause_for(&self, partial: bool) -> Duration {
        let longest = if partial {
            self.marginal_pause
        } else {
            self.violator_pause
        };
        let seq = self.next_request.load(Ordering::Relaxed)
            ^ self
                .connection_pauses
                .load(Ordering::Relaxed)
                .rotate_left(32);
        longest.mul_f64(0.5 + 0.5 * unit_draw(seq))
    }

    /// Where connections opening with a CRITICAL request are served
    /// (`[shedding] priority_lane`).
    pub fn priority_lane(&self) -> LanePriority {
        self.priority_lane
    }

    /// How many lane threads serve the priority lane (`[shedding] lane_threads`; 0
    /// there means one per core this process may use).
    pub fn lane_threads(&self) -> usize {
        match self.lane_threads {
            0 => std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
            n => n,
        }
    }

    /// Whether lane threads, one per CPU, are pinned to their CPUs
    /// (`[shedding] lane_pinned`).
    pub fn lane_pinned(&self) -> bool {
        self.lane_pinned
    }

    /// Counts a connection handed to the priority lane.
    pub fn count_laned(&self) {
        self.laned_connections.fetch_add(1, Ordering::Relaxed);
    }

    /// Connections handed to the priority lane so far.
    pub fn laned_connections(&self) -> u64 {
        self.laned_connections.load(Ordering::Relaxed)
    }

    /// Bucket and priority of a request, without counting it (the priority lane
    /// classifies a connection's first request before the layer sees it).
    pub fn classify(&self, facts: &RequestFacts) -> Classified {
        self.classifier.classify(facts)
    }

    /// Counts a connection paused for breaking the device contract.
    pub fn count_pause(&self) {
        self.connection_pauses.fetch_add(1, Ordering::Relaxed);
    }

    /// Pauses so far of connections that broke the device contract.
    pub fn connection_pauses(&self) -> u64 {
        self.connection_pauses.load(Ordering::Relaxed)
    }

    /// Whether the layer sheds at all (`[shedding] enabled`).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// This shedder with `clock` as the node's wall clock (a test's manual clock).
    #[must_use]
    pub fn with_clock(mut self, clock: Clock) -> Shedder {
        self.clock = clock;
        self
    }

    /// The node's wall clock.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Time since this shedder was created: the time axis of fault-rule expiry and of
    /// the adaptive limit (tokio's clock, so paused-time tests control it).
    pub fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    /// The overload level decisions use now: the operator/test override when set,
    /// otherwise the level last published by the monitor.
    pub fn level(&self) -> OverloadLevel {
        let forced = self.forced_bits.load(Ordering::Relaxed);
        let bits = if forced == NOT_FORCED {
            self.level_bits.load(Ordering::Relaxed)
        } else {
            forced
        };
        OverloadLevel::new(f64::from_bits(bits))
    }

    /// The lowest priority admitted at the current level.
    pub fn threshold(&self) -> Priority {
        self.curve.threshold(self.level())
    }

    /// Operator/test override of the overload level: `Some(level)` pins it (e.g. to
    /// rehearse shedding, or to stop shedding during an incident with `Some(ZERO)`),
    /// `None` returns to the measured level.
    pub fn force_level(&self, level: Option<OverloadLevel>) {
        let bits = level.map_or(NOT_FORCED, |l| l.get().to_bits());
        self.forced_bits.store(bits, Ordering::Relaxed);
    }

    /// Whether the level is currently overridden by [`Shedder::force_level`].
    pub fn is_forced(&self) -> bool {
        self.forced_bits.load(Ordering::Relaxed) != NOT_FORCED
    }

    /// The priorities requested since the last call.
    pub(crate) fn take_requested(&self) -> PrioritySet {
        self.requested.take()
    }

    pub(crate) fn publish_level(&self, level: OverloadLevel) {
        self.level_bits
            .store(level.get().to_bits(), Ordering::Relaxed);
    }

    /// A new serving thread's probe slot, read by the monitor from now on.
    pub(crate) fn add_serving_probe(&self) -> Arc<ServingProbeSlot> {
        let slot = Arc::new(ServingProbeSlot::default());
        if let Ok(mut probes) = self.serving_probes.lock() {
            probes.push(Arc::clone(&slot));
        }
        slot
    }

    /// The longest wait any serving thread sees now (see [`ServingProbeSlot::wait`]).
    pub(crate) fn serving_delay(&self) -> Duration {
        let now = self.now();
        self.serving_probes.lock().map_or(Duration::ZERO, |probes| {
            probes
                .iter()
                .map(|slot| slot.wait(now))
                .max()
                .unwrap_or_default()
        })
    }

    pub(crate) fn publish_inputs(&self, cpu: f64, queue_delay: Duration) {
        self.cpu_bits.store(cpu.to_bits(), Ordering::Relaxed);
        let nanos = u64::try_from(queue_delay.as_nanos()).unwrap_or(u64::MAX);
        self.queue_delay_nanos.store(nanos, Ordering::Relaxed);
    }

    /// Marks the monitor as started; false when one already runs.
    pub(crate) fn claim_monitor(&self) -> bool {
        !self.monitor_running.swap(true, Ordering::AcqRel)
    }

    pub(crate) fn release_monitor(&self) {
        self.monitor_running.store(false, Ordering::Release);
    }

    /// The CPU utilisation last sampled by the monitor from `shedding.cpu_source`
    /// (0..1); also the CPU load a node announces to its mesh domain (OTT-ELIG-5).
    pub fn cpu_utilisation(&self) -> f64 {
        f64::from_bits(self.cpu_bits.load(Ordering::Relaxed))
    }

    /// Requests currently being handled (admitted, response not yet produced).
    pub fn in_flight(&self) -> u32 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// The adaptive concurrency limit's current value.
    pub fn concurrency_limit(&self) -> u32 {
        self.limit_value.load(Ordering::Relaxed)
    }

    /// Outcome counters of a bucket.
    pub fn counts(&self, bucket: Bucket) -> ShedCounts {
        let s = &self.stats[bucket_index(bucket)];
        ShedCounts {
            admitted: s.admitted.load(Ordering::Relaxed),
            shed: s.shed.load(Ordering::Relaxed),
            injected: s.injected.load(Ordering::Relaxed),
        }
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
        let classified = self.classifier.classify(facts);
        let stats = &self.stats[bucket_index(classified.bucket)];
        let seq = self.next_request.fetch_add(1, Ordering::Relaxed);
        // A device that names its member always gets the same jitter; anonymous
        // requests spread by sequence number.
        let seed = facts.member.map_or(seq, |m| m.0);
        let level = self.level();
        if self.level_source == LevelSource::Cut {
            self.requested.insert(classified.priority.get());
        }
        let share = self.curve.share(classified.priority, level);
        if share < 1.0 && unit_draw(seq) >= share {
            stats.shed.fetch_add(1, Ordering::Relaxed);
            return Decision::Shed {
                classified,
                advice: self.back_pressure.answer(classified.priority, level, seed),
                injected_by: None,
                experiment: false,
                partial: share > 0.0,
            };
        }
        // Operator control is never shed by a rule or an experiment: an operator must
        // always reach the API that removes the rule (FIT-1).
        let injectable = !facts.route.is_operator_control();
        if injectable && self.rule_count.load(Ordering::Relaxed) > 0 {
            let hit = self
                .read_rules()
                .matches(facts, classified.priority, self.now(), seq);
            if let Some(rule) = hit {
                stats.injected.fetch_add(1, Ordering::Relaxed);
                return Decision::Shed {
                    classified,
                    advice: self.back_pressure.answer(classified.priority, level, seed),
                    injected_by: Some(rule),
                    experiment: false,
                    partial: false,
                };
            }
        }
        // Running experiments shed their experiment group's slice the same way (FIT-1).
        if injectable && experiments_apply && self.experiments.shed_hit(facts, classified.priority)
        {
            stats.injected.fetch_add(1, Ordering::Relaxed);
            return Decision::Shed {
                classified,
                advice: self.back_pressure.answer(classified.priority, level, seed),
                injected_by: None,
                experiment: true,
                partial: false,
            };
        }
        stats.admitted.fetch_add(1, Ordering::Relaxed);
        Decision::Admit(classified)
    }

    /// Counts an admitted request in flight; returns the count including it.
    pub(crate) fn enter(&self) -> u32 {
        self.in_flight
            .fetch_add(1, Ordering::Relaxed)
            .saturating_add(1)
    }

    /// The request left (answered or cancelled).
    pub(crate) fn leave(&self) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
    }

    /// The process was suspended (SIGSTOP, a paused VM) and runs again: the time it
    /// stood still is not overload. The adaptive limit starts afresh, and requests
    /// that were in flight across the suspension do not feed it.
    pub(crate) fn resumed_after_suspension(&self) {
        let now = u64::try_from(self.now().as_nanos()).unwrap_or(u64::MAX);
        self.resumed_at_nanos.store(now.max(1), Ordering::Relaxed);
        if let Ok(fresh) = AdaptiveLimit::new(self.limit_cfg.clone()) {
            let value = fresh.limit();
            *self.limit.lock().unwrap_or_else(|p| p.into_inner()) = fresh;
            self.limit_value.store(value, Ordering::Relaxed);
        }
    }

    /// Feeds a completed request's latency to the histogram and the adaptive limit.
    pub(crate) fn complete(&self, bucket: Bucket, rtt: Duration, in_flight_at_start: u32) {
        self.stats[bucket_index(bucket)].latency.observe(rtt);
        let resumed = self.resumed_at_nanos.load(Ordering::Relaxed);
        // One clock read for both uses (this runs once per admitted request).
        let now = self.now();
        let started = now.saturating_sub(rtt);
        if resumed != 0 && started.as_nanos() < u128::from(resumed) {
            return;
        }
        // No request waits for this lock: when another worker holds it, this sample
        // is skipped (Gradient2 aggregates windows of samples, one fewer is harmless).
        let mut limit = match self.limit.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::WouldBlock) => return,
            Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        };
        let value = limit.on_sample(rtt, in_flight_at_start, now);
        self.limit_value.store(value, Ordering::Relaxed);
    }

    fn read_rules(&self) -> RwLockReadGuard<'_, FaultRules> {
        self.rules.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write_rules(&self) -> RwLockWriteGuard<'_, FaultRules> {
        self.rules.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Longest duration a fault rule may be given.
    pub fn max_rule_duration(&self) -> Duration {
        self.max_rule_duration
    }

    /// Adds a fault rule that lasts `duration` from now (FIT-1).
    ///
    /// # Errors
    /// [`FaultError::Invalid`] naming the field, [`FaultError::Full`] at the cap.
    pub fn add_rule(
        &self,
        mut spec: FaultRuleSpec,
        duration: Duration,
    ) -> Result<RuleId, FaultError> {
        let now = self.now();
        spec.expires_at = now.saturating_add(duration);
        let mut rules = self.write_rules();
        let id = rules.add(spec, now)?;
        self.rule_count
            .store(rules.list(Duration::ZERO).count(), Ordering::Relaxed);
        Ok(id)
    }

    /// Removes a rule; returns how many requests it shed.
    ///
    /// # Errors
    /// [`FaultError::UnknownRule`] when no rule has this id.
    pub fn remove_rule(&self, id: RuleId) -> Result<u64, FaultError> {
        let mut rules = self.write_rules();
        let now = self.now();
        rules.purge_expired(now);
        let removed = rules.remove(id)?;
        self.rule_count
            .store(rules.list(Duration::ZERO).count(), Ordering::Relaxed);
        Ok(removed.injected())
    }

    /// The active rules, oldest first.
    pub fn rules(&self) -> Vec<RuleView> {
        let now = self.now();
        self.read_rules()
            .list(now)
            .map(|r: &FaultRule| RuleView {
                id: r.id(),
                spec: r.spec().clone(),
                injected: r.injected(),
                remaining: r.spec().expires_at.saturating_sub(now),
            })
            .collect()
    }

    /// Drops expired rules (called by the monitor, so an idle rule set costs nothing
    /// on the request path).
    pub(crate) fn purge_rules(&self) {
        if self.rule_count.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut rules = self.write_rules();
        rules.purge_expired(self.now());
        self.rule_count
            .store(rules.list(Duration::ZERO).count(), Ordering::Relaxed);
    }

    /// Appends the shedding metrics in the Prometheus text format.
    pub fn render_metrics(&self, out: &mut String) {
        out.push_str("# HELP brdyun_shed_requests_total Requests by bucket and shedding outcome (shed: overload, injected: fault rule).\n");
        out.push_str("# TYPE brdyun_shed_requests_total counter\n");
        for bucket in Bucket::ALL {
            let c = self.counts(bucket);
            for (outcome, value) in [
                ("admitted", c.admitted),
                ("shed", c.shed),
                ("injected", c.injected),
            ] {
                let _ = writeln!(
                    out,
                    "brdyun_shed_requests_total{{bucket=\"{}\",outcome=\"{outcome}\"}} {value}",
                    bucket.as_str()
                );
            }
        }
        let gauges: [(&str, &str, f64); 7] = [
            (
                "in_flight",
                "Admitted requests being handled.",
                f64::from(self.in_flight()),
            ),
            (
                "overload_level",
                "Overload level in use (0..1).",
                self.level().get(),
            ),
            (
                "threshold",
                "Lowest priority admitted (0..99).",
                f64::from(self.threshold().get()),
            ),
            (
                "concurrency_limit",
                "Adaptive concurrency limit (Gradient2).",
                f64::from(self.concurrency_limit()),
            ),
            (
                "cpu_utilisation",
                "CPU utilisation last sampled from shedding.cpu_source (0..1).",
                f64::from_bits(self.cpu_bits.load(Ordering::Relaxed)),
            ),
            (
                "queue_delay_seconds",
                "Runtime queueing delay last probed.",
                self.queue_delay_nanos.load(Ordering::Relaxed) as f64 / 1e9,
            ),
            (
                "level_forced",
                "1 while an operator override pins the level.",
                if self.is_forced() { 1.0 } else { 0.0 },
            ),
        ];
        for (name, help, value) in gauges {
            let _ = writeln!(out, "# HELP brdyun_shed_{name} {help}");
            let _ = writeln!(out, "# TYPE brdyun_shed_{name} gauge");
            let _ = writeln!(out, "brdyun_shed_{name} {value}");
        }
        out.push_str("# HELP brdyun_shed_connection_pauses_total Pauses of connections (not read for a moment) that repeated a refused request before its Retry-After.\n");
        out.push_str("# TYPE brdyun_shed_connection_pauses_total counter\n");
        let _ = writeln!(
            out,
            "brdyun_shed_connection_pauses_total {}",
            self.connection_pauses()
        );
        out.push_str("# HELP brdyun_shed_lane_connections_total Connections served on the priority lane (their first request was CRITICAL).\n");
        out.push_str("# TYPE brdyun_shed_lane_connections_total counter\n");
        let _ = writeln!(
            out,
            "brdyun_shed_lane_connections_total {}",
            self.laned_connections()
        );
        let _ = writeln!(
            out,
            "# HELP brdyun_shed_fault_rules Active fault-injection rules."
        );
        let _ = writeln!(out, "# TYPE brdyun_shed_fault_rules gauge");
        let _ = writeln!(
            out,
            "brdyun_shed_fault_rules {}",
            self.read_rules().list(self.now()).count()
        );
        out.push_str("# HELP brdyun_shed_request_duration_seconds Time to produce the response of admitted requests, by bucket.\n");
        out.push_str("# TYPE brdyun_shed_request_duration_seconds histogram\n");
        for bucket in Bucket::ALL {
            let labels = format!("bucket=\"{}\"", bucket.as_str());
            self.stats[bucket_index(bucket)].latency.render(
                "brdyun_shed_request_duration_seconds",
                &labels,
                out,
            );
        }
        self.experiments.render_metrics(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pauses spread over the upper half of their maximum, so paused connections come
    /// back at different times.
    #[test]
    fn pauses_spread_over_the_upper_half_of_their_maximum() {
        let shedder = Shedder::new(&ShedSettings::default()).expect("settings");
        let (mut shortest, mut longest) = (Duration::MAX, Duration::ZERO);
        for _ in 0..500 {
            let pause = shedder.pause_for(false);
            shedder.count_pause();
            assert!(
                (Duration::from_millis(500)..=Duration::from_millis(1000)).contains(&pause),
                "{pause:?}"
            );
            shortest = shortest.min(pause);
            longest = longest.max(pause);
            let marginal = shedder.pause_for(true);
            assert!((Duration::from_millis(50)..=Duration::from_millis(100)).contains(&marginal));
        }
        assert!(shortest < Duration::from_millis(550) && longest > Duration::from_millis(950));
    }

    #[test]
    fn a_suspension_resets_the_limit_and_its_stale_latencies_are_ignored() {
        let mut settings = ShedSettings::default();
        settings.limit.window_ms = 1;
        settings.limit.window_min_samples = 1;
        let shedder = Shedder::new(&settings).expect("settings");
        let initial = shedder.concurrency_limit();
        // One-sample windows: fast requests set the long RTT, then slow ones (at full
        // concurrency) drag the Gradient2 limit down.
        let window = |rtt: Duration| {
            std::thread::sleep(Duration::from_millis(2));
            shedder.complete(Bucket::Critical, rtt, initial);
        };
        (0..20).for_each(|_| window(Duration::from_millis(1)));
        (0..20).for_each(|_| window(Duration::from_millis(200)));
        let dragged = shedder.concurrency_limit();
        assert!(
            dragged < initial,
            "slow requests lower the limit ({dragged} vs {initial})"
        );
        shedder.resumed_after_suspension();
        assert_eq!(shedder.concurrency_limit(), initial);
        // Requests that started before the resume (their latency spans the hang) do
        // not feed the limit; the same latencies after it would.
        (0..20).for_each(|_| window(Duration::from_secs(30)));
        assert_eq!(shedder.concurrency_limit(), initial);
    }
}
