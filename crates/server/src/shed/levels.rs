//! The overload level the request path reads: the level the monitor last published,
//! the operator's override, the inputs it was computed from (for the metrics and the
//! mesh), and the priorities requested since the monitor last looked. Lock-free: a
//! request reads one or two atomics. The monitor that writes it is
//! [`super::overload`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use shed::{LevelControlConfig, OverloadConfig, OverloadLevel, Priority, PrioritySet, ShedCurve};

use super::serving_probe::ServingProbeSlot;
use super::settings::{CpuSource, LevelSource, ShedSettings};

/// `forced_bits` value meaning "no override".
const NOT_FORCED: u64 = u64::MAX;

/// The monitor's dials from `[shedding]`: what it samples, how often, and what
/// computes the level.
#[derive(Debug, Clone)]
pub(crate) struct MonitorSettings {
    pub(crate) overload: OverloadConfig,
    pub(crate) level_source: LevelSource,
    pub(crate) control: LevelControlConfig,
    pub(crate) cut: LevelControlConfig,
    pub(crate) cpu_source: CpuSource,
    pub(crate) cpu_period: Duration,
    pub(crate) tick_period: Duration,
}

impl MonitorSettings {
    /// The monitor's part of validated settings.
    pub(crate) fn of(settings: &ShedSettings) -> MonitorSettings {
        MonitorSettings {
            overload: settings.overload.clone(),
            level_source: settings.level_source,
            control: settings.control.clone(),
            cut: settings.cut.clone(),
            cpu_source: settings.cpu_source,
            cpu_period: Duration::from_millis(settings.cpu_sample_ms),
            tick_period: Duration::from_millis(settings.tick_ms),
        }
    }
}

/// The node's overload level and what it was computed from (see the module docs).
#[derive(Debug)]
pub struct LevelMonitor {
    settings: MonitorSettings,
    level_bits: AtomicU64,
    forced_bits: AtomicU64,
    /// Priorities requested since the monitor last looked (the cut controller's
    /// occupancy); only kept with `level_source = "cut"`.
    requested: PriorityBits,
    cpu_bits: AtomicU64,
    queue_delay_nanos: AtomicU64,
    /// The serving threads' queueing-delay probes.
    serving_probes: Mutex<Vec<Arc<ServingProbeSlot>>>,
    monitor_running: AtomicBool,
}

impl LevelMonitor {
    /// A monitor state at level 0, not forced, nothing sampled yet.
    pub(crate) fn new(settings: MonitorSettings) -> LevelMonitor {
        LevelMonitor {
            settings,
            level_bits: AtomicU64::new(0f64.to_bits()),
            forced_bits: AtomicU64::new(NOT_FORCED),
            requested: PriorityBits::default(),
            cpu_bits: AtomicU64::new(0f64.to_bits()),
            queue_delay_nanos: AtomicU64::new(0),
            serving_probes: Mutex::new(Vec::new()),
            monitor_running: AtomicBool::new(false),
        }
    }

    /// The monitor's dials.
    pub(crate) fn settings(&self) -> &MonitorSettings {
        &self.settings
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
        ShedCurve.threshold(self.level())
    }

    /// Operator/test override of the overload level: `Some(level)` pins it (e.g. to
    /// rehearse shedding, or to stop shedding during an incident with `Some(ZERO)`),
    /// `None` returns to the measured level.
    pub fn force_level(&self, level: Option<OverloadLevel>) {
        let bits = level.map_or(NOT_FORCED, |l| l.get().to_bits());
        self.forced_bits.store(bits, Ordering::Relaxed);
    }

    /// Whether the level is currently overridden by [`LevelMonitor::force_level`].
    pub fn is_forced(&self) -> bool {
        self.forced_bits.load(Ordering::Relaxed) != NOT_FORCED
    }

    /// Notes a request of `priority` for the cut controller (a no-op for the other
    /// level sources).
    pub(crate) fn note_requested(&self, priority: Priority) {
        if self.settings.level_source == LevelSource::Cut {
            self.requested.insert(priority.get());
        }
    }

    /// The priorities requested since the last call.
    pub(crate) fn take_requested(&self) -> PrioritySet {
        self.requested.take()
    }

    /// Publishes the level the next decisions read (unless forced).
    pub(crate) fn publish_level(&self, level: OverloadLevel) {
        self.level_bits
            .store(level.get().to_bits(), Ordering::Relaxed);
    }

    /// Publishes the inputs the level was computed from.
    pub(crate) fn publish_inputs(&self, cpu: f64, queue_delay: Duration) {
        self.cpu_bits.store(cpu.to_bits(), Ordering::Relaxed);
        let nanos = u64::try_from(queue_delay.as_nanos()).unwrap_or(u64::MAX);
        self.queue_delay_nanos.store(nanos, Ordering::Relaxed);
    }

    /// The CPU utilisation last sampled by the monitor from `shedding.cpu_source`
    /// (0..1); also the CPU load a node announces to its mesh domain (OTT-ELIG-5).
    pub fn cpu_utilisation(&self) -> f64 {
        f64::from_bits(self.cpu_bits.load(Ordering::Relaxed))
    }

    /// The runtime queueing delay last probed.
    pub fn queue_delay(&self) -> Duration {
        Duration::from_nanos(self.queue_delay_nanos.load(Ordering::Relaxed))
    }

    /// A new serving thread's probe slot, read by the monitor from now on.
    pub(crate) fn add_serving_probe(&self) -> Arc<ServingProbeSlot> {
        let slot = Arc::new(ServingProbeSlot::default());
        if let Ok(mut probes) = self.serving_probes.lock() {
            probes.push(Arc::clone(&slot));
        }
        slot
    }

    /// The longest wait any serving thread sees at `now` (see
    /// [`ServingProbeSlot::wait`]).
    pub(crate) fn serving_delay(&self, now: Duration) -> Duration {
        self.serving_probes.lock().map_or(Duration::ZERO, |probes| {
            probes
                .iter()
                .map(|slot| slot.wait(now))
                .max()
                .unwrap_or_default()
        })
    }

    /// How long one readiness probe waits before it gives up: a tick, at least 100 ms.
    /// Every probe reading (the monitor's and the serving threads') is at most this.
    pub(crate) fn probe_limit(&self) -> Duration {
        self.settings.tick_period.max(Duration::from_millis(100))
    }

    /// Marks the monitor as started; false when one already runs.
    pub(crate) fn claim_monitor(&self) -> bool {
        !self.monitor_running.swap(true, Ordering::AcqRel)
    }

    /// Marks the monitor as stopped.
    pub(crate) fn release_monitor(&self) {
        self.monitor_running.store(false, Ordering::Release);
    }
}

/// A set of priorities (0..=99) that request paths add to without a lock: two atomic
/// words of 64 bits.
#[derive(Debug, Default)]
struct PriorityBits([AtomicU64; 2]);

impl PriorityBits {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn monitor(source: LevelSource) -> LevelMonitor {
        let settings = ShedSettings {
            level_source: source,
            ..ShedSettings::default()
        };
        LevelMonitor::new(MonitorSettings::of(&settings))
    }

    /// An override wins over the published level until it is lifted.
    #[test]
    fn a_forced_level_wins_until_lifted() {
        let m = monitor(LevelSource::Cut);
        m.publish_level(OverloadLevel::new(0.3));
        assert_eq!(m.level().get(), 0.3);
        m.force_level(Some(OverloadLevel::FULL));
        assert!(m.is_forced());
        assert_eq!(m.level().get(), 1.0);
        assert_eq!(m.threshold(), ShedCurve.threshold(OverloadLevel::FULL));
        m.publish_level(OverloadLevel::new(0.5));
        assert_eq!(
            m.level().get(),
            1.0,
            "the override holds over a new reading"
        );
        m.force_level(None);
        assert!(!m.is_forced());
        assert_eq!(m.level().get(), 0.5);
    }

    /// The requested priorities are kept for the cut controller only, and taking
    /// them empties the set.
    #[test]
    fn requested_priorities_are_kept_for_the_cut_only() {
        let cut = monitor(LevelSource::Cut);
        for p in [3u8, 64, 99, 3] {
            cut.note_requested(Priority::new(p).expect("in range"));
        }
        let expected = [3u8, 64, 99]
            .into_iter()
            .fold(PrioritySet::EMPTY, |set, p| {
                set.with(Priority::new(p).expect("in range"))
            });
        assert_eq!(cut.take_requested(), expected);
        assert_eq!(cut.take_requested(), PrioritySet::EMPTY);
        let feedback = monitor(LevelSource::Feedback);
        feedback.note_requested(Priority::new(3).expect("in range"));
        assert_eq!(feedback.take_requested(), PrioritySet::EMPTY);
    }

    #[test]
    fn the_serving_delay_is_the_longest_probe_wait() {
        let m = monitor(LevelSource::Cut);
        assert_eq!(m.serving_delay(Duration::from_secs(1)), Duration::ZERO);
        let a = m.add_serving_probe();
        let b = m.add_serving_probe();
        a.received(Duration::from_millis(5));
        b.sent(Duration::from_millis(100));
        assert_eq!(
            m.serving_delay(Duration::from_millis(130)),
            Duration::from_millis(30)
        );
        m.publish_inputs(0.25, Duration::from_millis(7));
        assert_eq!(m.cpu_utilisation(), 0.25);
        assert_eq!(m.queue_delay(), Duration::from_millis(7));
    }

    #[test]
    fn only_one_monitor_claims_the_state() {
        let m = monitor(LevelSource::Cut);
        assert!(m.claim_monitor());
        assert!(!m.claim_monitor());
        m.release_monitor();
        assert!(m.claim_monitor());
    }
}
