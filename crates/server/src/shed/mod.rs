//! Prioritized load shedding in the HTTP stack (SHED-1..3, FIT-1): the I/O edge of the
//! pure `shed` crate.
//!
//! Per request, [`layer::ShedService`] gathers the facts (route kind from the path via
//! the route table ([`crate::url::Target::shed_kind`]), device from `X-Brdyun-Device` or `User-Agent`,
//! member from `X-Brdyun-Member`, in playback from `X-Brdyun-Playback: 1` or a
//! segment/media-playlist request), asks [`Shedder::decide`] (classify, shed curve at the
//! current overload level, then the operator's fault rules) and either answers the
//! back-pressure 503 at once, without reading the body, or calls the routes with an
//! in-flight guard and feeds the request's latency to the adaptive limit.
//!
//! In the background, [`Shedder::run_monitor`] samples the CPU utilisation (by default
//! this process's, from `/proc/self/stat`; see [`CpuSource`]) every `cpu_sample_ms`
//! (200 ms by default) and the runtime's queueing delay every `tick_ms` (20 ms), and
//! publishes the overload level the next decisions read (the cut by default, see
//! `docs/load-shedding.md`). A connection that repeats a refused request before
//! its `Retry-After` is not read for a moment ([`gate`]). [`fault_api`] is the authenticated admin API for the
//! fault-injection rules; [`ShedSettings`] is the `[shedding]` config section.

pub mod fault_api;
pub mod gate;
pub mod layer;
pub mod overload;
mod settings;
mod shedder;
pub mod telemetry;

pub use gate::{ConnectionGate, GatedStream};
pub use layer::{ShedLayer, ShedService};
pub use settings::{CpuSource, LanePriority, LevelSource, ShedSettings, ShedSettingsError};
pub use shed::member_id;
pub use shedder::{Decision, RuleView, ShedCounts, Shedder};
