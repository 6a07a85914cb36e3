//! Continuous shedding experiments (EXP-1, EXP-2), the pure core: no tokio, no
//! sockets, no clock reads — time is milliseconds since the Unix epoch, passed in.
//!
//! The request taxonomy of `shed` is a hypothesis; experiments keep testing it on
//! real traffic. Data flow:
//!
//! 1. [`ExperimentDefinition`]s (TOML `[[experiment]]` or JSON) name a priority
//!    range, group shares, duration, device types, guardrails and a [`Schedule`].
//! 2. [`Experiments::tick`] starts runs on schedule and publishes a [`ShedSet`]; the
//!    server asks [`ShedSet::matches`] for every request next to its FIT rules and
//!    sheds matches the same way. Members are placed in [`Group`]s by a keyed hash
//!    ([`Assigner`]), sticky across runs and nodes.
//! 3. The server turns beacons, inferred stalls ([`StallDetector`]) and CRITICAL
//!    request outcomes into [`KpiEvent`]s (with [`SessionFlags`] per session) and
//!    feeds [`Experiments::record`]; nodes exchange [`NodeReport`]s.
//! 4. When a run ends (or a guardrail aborts it), [`verdict::judge`] compares each
//!    KPI per device type with the [`stats`] tests and Holm–Bonferroni; the run goes
//!    to the bounded history, and a device type turning to "deviation" raises an
//!    [`Alert`]. [`Experiments::status`] is the admin API / page view.

pub mod assign;
pub mod definition;
pub mod device;
pub mod error;
pub mod events;
pub mod histogram;
pub mod kpi;
pub mod run;
pub mod schedule;
pub mod shedset;
pub mod stall;
pub mod stats;
pub mod status;
pub mod verdict;

pub use assign::{Assigner, Group};
pub use definition::{
    parse_definitions_toml, validate_all, ExperimentDefinition, Guardrails, PriorityRange,
    VerdictConfig,
};
pub use device::PerDevice;
pub use error::{CommandError, DefinitionError};
pub use events::{
    AbortReason, Alert, ExperimentEvent, GuardrailKind, NodeReport, RunOutcome, RunRecord,
};
pub use histogram::TtffHistogram;
pub use kpi::{GroupKpis, Kpi, KpiCounters, KpiEvent, SessionFlags};
pub use run::{Experiments, ExperimentsConfig};
pub use schedule::Schedule;
pub use shedset::{ShedEntry, ShedSet};
pub use stall::{count_stalls, SegmentRequest, StallDetector, StallDetectorConfig, StallReport};
pub use status::{ExperimentStatus, ExperimentsStatus, RunView};
pub use verdict::{Comparison, DeviceStatus, DeviceVerdict, Hurt, KpiResult, KpiVerdict, Verdict};
