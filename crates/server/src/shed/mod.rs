//! Prioritized load shedding in the HTTP stack (SHED-1..3, FIT-1): the I/O edge of the
//! pure `shed` crate.
//!
//! Per request, [`crate::http::shed_layer::ShedService`] gathers the facts (route kind from the path via
//! the route table ([`crate::url::Target::shed_kind`]), device from `X-Brdyun-Device` or `User-Agent`,
//! member from `X-Brdyun-Member`, in playback from `X-Brdyun-Playback: 1` or a
//! segment/media-playlist request), asks [`Shedder::decide`] (classify, shed curve at the
//! current overload level, then the operator's fault rules) and either answers the
//! back-pressure 503 at once, without reading the body, or calls the routes with an
//! in-flight guard and feeds the request's latency to the adaptive limit. Just inside
//! it, [`crate::http::kpi_layer::KpiLayer`] reports the requests it admitted to the node's
//! experiments (EXP-1).
//!
//! [`Shedder`] is a composition of small parts, each in its file with its tests:
//! [`Policy`] (the pure decision), [`LevelMonitor`] (the level the decisions read and
//! its override), [`FaultRuleSet`] (FIT-1 rules; [`crate::routes::fault_rules`] is
//! their authenticated admin API), [`DevicePauses`] (the device contract's pauses),
//! [`LaneSettings`] (the priority lane), [`LimitTracker`] (the adaptive concurrency
//! limit) and [`ShedMetrics`] (the counters behind `brdyun_shed_*`). The routes that
//! reach it from outside (the fault-rule API, `/telemetry`) live in
//! [`crate::routes`]: this folder does not know the node's state.
//!
//! In the background, [`overload::run_monitor`] samples the CPU utilisation (by default
//! this process's, from `/proc/self/stat`; see [`CpuSource`]) every `cpu_sample_ms`
//! (200 ms by default) and the runtime's queueing delay every `tick_ms` (20 ms), and
//! publishes the overload level the next decisions read (the cut by default, see
//! `docs/load-shedding.md`). A connection that repeats a refused request before
//! its `Retry-After` is not read for a moment ([`gate`]). [`ShedSettings`] is the
//! `[shedding]` config section.

mod faults;
pub mod gate;
mod lane_settings;
mod levels;
mod limit;
mod metrics;
pub mod overload;
mod pauses;
mod policy;
mod serving_probe;
mod settings;
mod shedder;

pub use faults::{FaultRuleSet, RuleView};
pub use gate::{ConnectionGate, GatedStream};
pub use lane_settings::LaneSettings;
pub use levels::LevelMonitor;
pub use limit::LimitTracker;
pub use metrics::{Readings, ShedCounts, ShedMetrics};
pub use pauses::DevicePauses;
pub use policy::{Decision, Injection, Policy};
pub use settings::{CpuSource, LanePriority, LevelSource, ShedSettings, ShedSettingsError};
pub use shed::member_id;
pub use shedder::Shedder;
