//! The serializable view of the experiments for the admin API and the Experiments
//! page: definitions with their next run and last status per device, runs in
//! progress with interim verdicts, and the history (newest first).

use serde::{Deserialize, Serialize};

use crate::definition::ExperimentDefinition;
use crate::device::PerDevice;
use crate::events::RunRecord;
use crate::kpi::GroupKpis;
use crate::verdict::{DeviceStatus, Verdict};

/// The whole page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentsStatus {
    /// The time the view was taken, ms since the epoch.
    pub now_ms: u64,
    /// Every definition.
    pub experiments: Vec<ExperimentStatus>,
    /// Runs in progress.
    pub running: Vec<RunView>,
    /// Finished runs, newest first.
    pub history: Vec<RunRecord>,
}

/// One definition and what the scheduler knows of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentStatus {
    /// The definition.
    pub definition: ExperimentDefinition,
    /// The next scheduled start, `None` when disabled.
    pub next_run_ms: Option<u64>,
    /// Last decided status per device type (`null` before any).
    pub last_status: PerDevice<Option<DeviceStatus>>,
}

/// A run in progress.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunView {
    /// `experiment@start_ms`.
    pub id: String,
    /// The definition's id.
    pub experiment: String,
    /// Scheduled start, ms since the epoch.
    pub started_at_ms: u64,
    /// Scheduled end, ms since the epoch.
    pub ends_at_ms: u64,
    /// Remote nodes whose reports are merged.
    pub nodes: Vec<String>,
    /// Merged KPIs so far.
    pub kpis: GroupKpis,
    /// The verdict if the run ended now.
    pub interim: Verdict,
}
