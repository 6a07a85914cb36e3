//! What the experiments state machine reports: events to act on (start, finish,
//! regression alert), finished-run records for the history, and the per-node report
//! exchanged by gossip. All serde, for logs, the admin API and the Experiments page.

use serde::{Deserialize, Serialize};
use shed::DeviceType;

use crate::kpi::GroupKpis;
use crate::verdict::{DeviceStatus, KpiResult, Verdict};

/// Which guardrail was crossed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardrailKind {
    /// `max_critical_failure_share`.
    CriticalFailureShare,
    /// `max_start_failure_rate`.
    StartFailureRate,
}

/// Why a run ended before its time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum AbortReason {
    /// The experiment group crossed a guardrail on one device type.
    Guardrail {
        /// The device type.
        #[serde(with = "crate::device::name")]
        device: DeviceType,
        /// The guardrail.
        guardrail: GuardrailKind,
        /// The observed value.
        value: f64,
        /// The limit.
        limit: f64,
    },
    /// An operator stopped it.
    Operator,
    /// Its definition was removed or disabled.
    DefinitionRemoved,
}

/// How a finished run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum RunOutcome {
    /// It ran its full duration.
    Completed,
    /// It was cut short.
    Aborted(AbortReason),
}

/// A finished run, as the history and the Experiments page show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// `experiment@start_ms`.
    pub id: String,
    /// The definition's id.
    pub experiment: String,
    /// Scheduled start, ms since the epoch.
    pub started_at_ms: u64,
    /// When it ended (at or before its scheduled end), ms since the epoch.
    pub ended_at_ms: u64,
    /// How it ended.
    pub outcome: RunOutcome,
    /// Nodes whose reports were merged besides this one.
    pub nodes: Vec<String>,
    /// The merged KPIs.
    pub kpis: GroupKpis,
    /// The verdict over them.
    pub verdict: Verdict,
}

/// Something the caller should act on: log, show, alert.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum ExperimentEvent {
    /// A run started; its shed slice is now active ([`crate::Experiments::generation`] moved).
    Started {
        /// Run id.
        run: String,
        /// Scheduled end, ms since the epoch.
        ends_at_ms: u64,
    },
    /// A run ended (completed or aborted) with its verdict; see the history.
    Finished {
        /// Run id.
        run: String,
        /// How it ended.
        outcome: RunOutcome,
        /// The device types that were hurt.
        #[serde(with = "crate::device::names")]
        hurt: Vec<DeviceType>,
    },
    /// A device type turned to "deviation" (from "no deviation", or on its first
    /// verdict): a request class became critical for it (EXP-2).
    Alert(Alert),
}

/// A regression alert for one (experiment, device type).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alert {
    /// The definition's id.
    pub experiment: String,
    /// The run that found it.
    pub run: String,
    /// The hurt device type.
    #[serde(with = "crate::device::name")]
    pub device: DeviceType,
    /// The previous decided status, `None` on the first verdict.
    pub previous: Option<DeviceStatus>,
    /// The deviating KPIs.
    pub kpis: Vec<KpiResult>,
}

/// One node's KPIs of the runs in progress, for gossip.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NodeReport {
    /// Per running run: its id and this node's counters.
    pub runs: Vec<(String, GroupKpis)>,
}
