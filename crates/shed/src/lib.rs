//! The pure core of prioritized load shedding (SHED-1..3, FIT-1): no I/O, no tokio, no
//! clock reads; time is always passed in as a `Duration` since a caller-chosen origin.
//!
//! Data flow per request, in the HTTP layer that wraps this crate:
//!
//! 1. gather [`RequestFacts`] (route kind, [`DeviceType::from_user_agent`], member,
//!    in playback) and [`Classifier::classify`] them into a [`Bucket`] and [`Priority`]
//!    (higher = more important, see [`priority`]);
//! 2. ask [`FaultRules::matches`] whether an operator rule sheds it on purpose;
//! 3. otherwise [`ShedCurve::admit`] compares the priority with the threshold for the
//!    current [`OverloadLevel`];
//! 4. a shed request gets [`BackPressure::answer`], rendered by [`Advice::json`];
//!    the connection's [`ContractTracker`] tells whether the device ignored an
//!    earlier answer, so the node can stop reading it for a moment.
//!
//! In the background, every tick, the node feeds CPU, in-flight count, the
//! [`AdaptiveLimit`] (fed by completed requests' RTTs) and queueing delay to the
//! [`OverloadEstimator`], which publishes the level step 3 reads.
//!
//! Steps 1 and 3 are O(1) and allocation-free (DESIGN invariant 5; tested with a
//! counting allocator in `tests/no_alloc.rs`, timed by `examples/admit_cost.rs`).

pub mod backpressure;
pub mod classify;
pub mod contract;
pub mod control;
pub mod curve;
pub mod cut;
pub mod device;
pub mod error;
pub mod fault;
pub mod limit;
pub mod overload;
pub mod priority;
pub mod procfs;
pub mod request;

pub use backpressure::{Advice, BackPressure, BackPressureConfig, StackText};
pub use classify::{Classified, Classifier, ClassifierConfig, RouteRule};
pub use contract::ContractTracker;
pub use control::{LevelControlConfig, LevelController};
pub use curve::ShedCurve;
pub use cut::{CutController, Occupancy, PrioritySet};
pub use device::DeviceType;
pub use error::{ConfigError, FaultError};
pub use fault::{DeviceSet, FaultRule, FaultRuleSpec, FaultRules, RuleId};
pub use limit::{AdaptiveLimit, AdaptiveLimitConfig};
pub use overload::{OverloadConfig, OverloadEstimator, OverloadInputs, OverloadLevel};
pub use priority::{Bucket, Priority};
pub use request::{member_id, MemberId, RequestFacts, RouteKind};
