//! The `[shedding]` section of a node's config: every dial of the shedding layer, each
//! with a default, so an empty (or missing) section gives the documented behaviour.

use serde::Deserialize;
use shed::{
    AdaptiveLimitConfig, BackPressureConfig, ClassifierConfig, ConfigError, LevelControlConfig,
    OverloadConfig,
};

/// Configuration of the shedding layer (SHED-1..3, FIT-1).
///
/// ```toml
/// [shedding]
/// enabled = true            # false: every request passes, fault rules included
/// fault_rule_cap = 32       # most active fault-injection rules
/// max_fault_rule_seconds = 86400
/// cpu_source = "process"   # "process" (default): this process's CPU time over the
///                           # cores it may use; "host": host-wide /proc/stat;
///                           # "runtime": busy share of the node's tokio workers; "off"
/// cpu_sample_ms = 200       # CPU sampling period
/// tick_ms = 20              # overload level period
/// violator_pause_ms = 1000  # longest pause of a connection that ignores the
///                           # back-pressure answer (0: never pause)
/// marginal_pause_ms = 100   # the same after a refusal at the margin (the part of
///                           # the threshold priority shed); at most the above
/// priority_lane = "nice"    # "nice" (default) / "realtime": serve connections whose
///                           # first request is CRITICAL on threads above the
///                           # others; "off": where they were accepted
/// lane_threads = 0          # lane threads (0: one per core the node may use)
/// lane_pinned = true        # with one lane thread per CPU: each pinned to its CPU,
///                           # a connection served on the CPU its packets arrive on
/// level_source = "cut"      # "cut" (default): shed::CutController, moves the cut
///                           # through the requested priorities while the admitted
///                           # work does not fit; "feedback": shed::LevelController,
///                           # the same question on the level's scale; "pressure":
///                           # shed::OverloadEstimator over CPU, in-flight and
///                           # queueing delay
/// [shedding.classifier]     # shed::ClassifierConfig (route table, device bonuses)
/// [shedding.back_pressure]  # shed::BackPressureConfig (retry dials)
/// [shedding.overload]       # shed::OverloadConfig (pressure marks, smoothing)
/// [shedding.limit]          # shed::AdaptiveLimitConfig (Gradient2)
/// [shedding.control]        # shed::LevelControlConfig (used by "feedback")
/// [shedding.cut]            # shed::LevelControlConfig (used by "cut"; its rates
///                           # count priorities: LevelControlConfig::cut_default)
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShedSettings {
    /// Whether the layer sheds at all; when false it only passes requests through.
    pub enabled: bool,
    /// Route table and device/member/playback adjustments.
    pub classifier: ClassifierConfig,
    /// The retry dials of the 503 answer.
    pub back_pressure: BackPressureConfig,
    /// Most fault-injection rules active at once (FIT-1).
    pub fault_rule_cap: usize,
    /// Longest duration an operator may give a fault rule, in seconds.
    pub max_fault_rule_seconds: u64,
    /// Marks and smoothing of the overload level.
    pub overload: OverloadConfig,
    /// The adaptive concurrency limit.
    pub limit: AdaptiveLimitConfig,
    /// Where CPU pressure is read from (default: this process).
    pub cpu_source: CpuSource,
    /// How often CPU utilisation is sampled, in milliseconds.
    pub cpu_sample_ms: u64,
    /// How often the overload level is recomputed, in milliseconds.
    pub tick_ms: u64,
    /// What computes the overload level.
    pub level_source: LevelSource,
    /// The feedback controller of `level_source = "feedback"`.
    pub control: LevelControlConfig,
    /// The cut controller of `level_source = "cut"`; keys left out take
    /// [`LevelControlConfig::cut_default`], not the feedback controller's defaults.
    #[serde(deserialize_with = "cut_keys")]
    pub cut: LevelControlConfig,
    /// Longest time, in milliseconds, a connection is not read after it broke the
    /// device contract (repeated a refused DEGRADED or NON_CRITICAL request before its
    /// `Retry-After`); 0 never pauses. See [`shed::ContractTracker`].
    pub violator_pause_ms: u64,
    /// Longest pause, in milliseconds, after a refusal at the margin (the curve shed
    /// part of the request's priority and admitted the rest); capped by
    /// `violator_pause_ms`. Short, so that holding part of a class follows the level
    /// instead of taking whole connections away for a second.
    pub marginal_pause_ms: u64,
    /// Whether plain-HTTP connections whose first request is CRITICAL are served on a
    /// thread of their own, ahead of the others in the OS scheduler
    /// ([`crate::http::lane::PriorityLane`]).
    pub priority_lane: LanePriority,
    /// How many lane threads share the CRITICAL connections (0: one per core the
    /// process may use), so the lane never caps a node's viewers at one core.
    pub lane_threads: usize,
    /// With a `"nice"` lane and one lane thread per CPU of the affinity mask (no CPU
    /// quota below it): each pinned to its CPU, and a connection handed to the lane
    /// thread of the CPU its packets arrive on (within a fair share), so no request
    /// crosses CPUs ([`crate::http::lane::PriorityLane::cpu_placement`]).
    pub lane_pinned: bool,
}

impl Default for ShedSettings {
    fn default() -> Self {
        ShedSettings {
            enabled: true,
            classifier: ClassifierConfig::default(),
            back_pressure: BackPressureConfig::default(),
            fault_rule_cap: 32,
            max_fault_rule_seconds: 86_400,
            overload: OverloadConfig::default(),
            limit: AdaptiveLimitConfig::default(),
            cpu_source: CpuSource::Process,
            cpu_sample_ms: 200,
            tick_ms: 20,
            level_source: LevelSource::Cut,
            control: LevelControlConfig::default(),
            cut: LevelControlConfig::cut_default(),
            violator_pause_ms: 1000,
            marginal_pause_ms: 100,
            priority_lane: LanePriority::Nice,
            lane_threads: 0,
            lane_pinned: true,
        }
    }
}

/// The keys of `[shedding.cut]`, each optional: those given replace
/// [`LevelControlConfig::cut_default`]'s.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CutKeys {
    target_ms: Option<f64>,
    low_fraction: Option<f64>,
    rise_per_second: Option<f64>,
    fall_per_second: Option<f64>,
    interval_ms: Option<u64>,
    cpu_target: Option<f64>,
    cpu_low: Option<f64>,
}

fn cut_keys<'de, D: serde::Deserializer<'de>>(d: D) -> Result<LevelControlConfig, D::Error> {
    let keys = CutKeys::deserialize(d)?;
    let base = LevelControlConfig::cut_default();
    Ok(LevelControlConfig {
        target_ms: keys.target_ms.unwrap_or(base.target_ms),
        low_fraction: keys.low_fraction.unwrap_or(base.low_fraction),
        rise_per_second: keys.rise_per_second.unwrap_or(base.rise_per_second),
        fall_per_second: keys.fall_per_second.unwrap_or(base.fall_per_second),
        interval_ms: keys.interval_ms.unwrap_or(base.interval_ms),
        cpu_target: keys.cpu_target.unwrap_or(base.cpu_target),
        cpu_low: keys.cpu_low.unwrap_or(base.cpu_low),
    })
}

/// How the priority lane's thread is placed above the node's other threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LanePriority {
    /// No lane: every connection is served where it was accepted.
    Off,
    /// Lane threads at nice −10, the default: favoured by the fair scheduler (about
    /// nine times a normal thread's weight), never starving the rest of the CPU, and
    /// free for a node whose traffic is all viewers. Without `CAP_SYS_NICE` they run
    /// at normal priority, still apart from the flood's run queue.
    #[default]
    Nice,
    /// Lane threads under `SCHED_FIFO` (priority 1): a lane runs the moment it has
    /// work, so a CRITICAL answer never waits for another thread's time slice (the
    /// viewer's p99 under 4× overload at 0.4–1.0× an idle node's, against 1.0–4.4×
    /// with `Nice`), at a price when the traffic is all viewers: each wakeup preempts
    /// at once, and a node served 11 % fewer playlist requests with 29 % more CPU per
    /// request. The kernel's real-time throttling (95 %) still leaves the others some
    /// CPU. Without `CAP_SYS_NICE` the lanes run at normal priority.
    Realtime,
}

/// What computes the overload level the shed curve reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LevelSource {
    /// [`shed::OverloadEstimator`]: the largest of CPU, in-flight/limit and queueing
    /// delay pressure, smoothed. Simple to reason about, but under a flood whose
    /// refusals alone saturate the CPU it pins at 1.
    Pressure,
    /// [`shed::LevelController`]: raised while the runtime's queueing delay or the
    /// busy share (from `cpu_source`) is above its target (`control.target_ms`,
    /// `control.cpu_target`), lowered while both are well below, so the level settles
    /// where the admitted work fits the node.
    Feedback,
    /// [`shed::CutController`]: the feedback controller's question, answered by
    /// moving the cut through the priorities requested lately (a step is one
    /// requested priority, unrequested ones are jumped over) and shedding the
    /// priority at the cut in part (`cut` settings). Holds a node full even when a
    /// flood sits on one priority, where `feedback` can only admit all of it or none.
    /// The default: with the lane it held a viewer's latency at 4× overload.
    #[default]
    Cut,
}

/// Where the overload monitor reads CPU utilisation from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CpuSource {
    /// This process's user + system time (`/proc/self/stat`) over the wall time and the
    /// cores available to it: a node sheds for its own work only, not because a
    /// compiler or another service is busy on the same host.
    #[default]
    Process,
    /// Host-wide utilisation (`/proc/stat`): for a host dedicated to the node, where
    /// any CPU contention hurts its viewers. A node pinned to some cores (taskset,
    /// cpuset) measures those cores only.
    Host,
    /// The busy share of the worker threads of the tokio runtime the monitor runs on:
    /// only this node's own work counts, which also makes it usable for a node that
    /// shares its process (tests, benchmarks, an embedded node).
    Runtime,
    /// CPU is not an overload signal (in-flight and queueing delay still are).
    Off,
}

/// A `[shedding]` value that cannot work; the message starts with the dotted key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ShedSettingsError {
    /// A sub-section rejected its values.
    #[error("shedding.{section}.{source}")]
    Section {
        /// `classifier`, `back_pressure`, `overload` or `limit`.
        section: &'static str,
        /// What is wrong, naming the key inside the section.
        source: ConfigError,
    },
    /// A top-level number is outside its range.
    #[error("shedding.{key}: must be {expected}")]
    OutOfRange {
        /// The key.
        key: &'static str,
        /// The allowed range.
        expected: &'static str,
    },
}

impl ShedSettings {
    /// Checks the top-level numbers (the sections are checked when compiled).
    ///
    /// # Errors
    /// [`ShedSettingsError::OutOfRange`] naming the key.
    pub(crate) fn validate_top(&self) -> Result<(), ShedSettingsError> {
        let out = |key, expected| Err(ShedSettingsError::OutOfRange { key, expected });
        if self.fault_rule_cap == 0 || self.fault_rule_cap > 1024 {
            return out("fault_rule_cap", "in 1..=1024");
        }
        if self.max_fault_rule_seconds == 0 {
            return out("max_fault_rule_seconds", ">= 1");
        }
        if !(10..=60_000).contains(&self.cpu_sample_ms) {
            return out("cpu_sample_ms", "in 10..=60000");
        }
        if !(10..=10_000).contains(&self.tick_ms) {
            return out("tick_ms", "in 10..=10000");
        }
        if self.violator_pause_ms > 60_000 {
            return out("violator_pause_ms", "in 0..=60000");
        }
        if self.marginal_pause_ms > 60_000 {
            return out("marginal_pause_ms", "in 0..=60000");
        }
        if self.lane_threads > 256 {
            return out("lane_threads", "in 0..=256");
        }
        Ok(())
    }
}
