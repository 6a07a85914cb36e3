//! The continuous experiments state machine (EXP-1, EXP-2): [`Experiments`] is driven
//! by [`Experiments::tick`] with the wall-clock time and by KPI events; it starts runs
//! on schedule, stops them at the end of their duration, aborts them at once on a
//! guardrail breach, judges them, keeps a bounded history and raises an alert when a
//! (definition, device type) turns from "no deviation" to "deviation".
//!
//! Cluster: a run's id is `experiment@scheduled_start_ms`, the same on every node, so
//! each node counts its own members' events ([`Experiments::record`]), publishes
//! [`Experiments::local_report`], and takes in the others' with
//! [`Experiments::apply_report`]: the latest report of each node replaces the previous
//! one, so repeated or reordered gossip never double-counts. Guardrails and verdicts
//! use local + remote counters. A node that restarts inside a run's window rejoins it.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};
use shed::{DeviceType, MemberId, Priority, RequestFacts};

use crate::assign::{Assigner, Group};
use crate::definition::{validate_all, ExperimentDefinition};
use crate::device::PerDevice;
use crate::error::{CommandError, DefinitionError};
use crate::events::{
    AbortReason, Alert, ExperimentEvent, GuardrailKind, NodeReport, RunOutcome, RunRecord,
};
use crate::kpi::{GroupKpis, KpiEvent};
use crate::shedset::{ShedEntry, ShedSet};
use crate::verdict::{judge, DeviceStatus, KpiVerdict};

/// Limits of the state machine's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExperimentsConfig {
    /// Finished runs kept (oldest dropped first).
    pub history: usize,
    /// Remote nodes whose reports a run accepts; more are ignored.
    pub max_nodes: usize,
}

impl Default for ExperimentsConfig {
    fn default() -> Self {
        ExperimentsConfig {
            history: 200,
            max_nodes: 256,
        }
    }
}

/// A run in progress.
#[derive(Debug, Clone)]
struct Running {
    id: String,
    def: ExperimentDefinition,
    assigner: Assigner,
    started_at_ms: u64,
    ends_at_ms: u64,
    local: GroupKpis,
    remote: BTreeMap<String, GroupKpis>,
}

impl Running {
    fn merged(&self) -> GroupKpis {
        let mut all = self.local.clone();
        for r in self.remote.values() {
            all.merge(r);
        }
        all
    }

    fn guardrail_breach(&self, merged: &GroupKpis) -> Option<AbortReason> {
        let g = self.def.guardrails;
        for &device in &self.def.devices {
            let e = merged.experiment.get(device);
            let checks = [
                (
                    GuardrailKind::CriticalFailureShare,
                    e.critical_failed,
                    e.critical_requests,
                    g.max_critical_failure_share,
                ),
                (
                    GuardrailKind::StartFailureRate,
                    e.start_failures,
                    e.start_attempts,
                    g.max_start_failure_rate,
                ),
            ];
            for (guardrail, bad, total, limit) in checks {
                // Gated on sessions, not requests: one broken session's 30 failed
                // segment requests must not abort a run on its own.
                if e.start_attempts >= g.min_samples && total > 0 {
                    let value = bad.min(total) as f64 / total as f64;
                    if value > limit {
                        return Some(AbortReason::Guardrail {
                            device,
                            guardrail,
                            value,
                            limit,
                        });
                    }
                }
            }
        }
        None
    }
}

/// A definition and what the scheduler remembers about it.
#[derive(Debug, Clone)]
struct Slot {
    def: ExperimentDefinition,
    /// Scheduled start of the last run started from the schedule.
    last_start_ms: Option<u64>,
    /// Last decided status per device type (NotEnoughData does not overwrite it).
    last_status: PerDevice<Option<DeviceStatus>>,
}

/// The state of every experiment on one node. Pure: no clock, no I/O.
#[derive(Debug, Clone)]
pub struct Experiments {
    config: ExperimentsConfig,
    slots: Vec<Slot>,
    running: Vec<Running>,
    history: VecDeque<RunRecord>,
    shed_set: ShedSet,
    generation: u64,
}

impl Experiments {
    /// The state machine over validated definitions; nothing runs until the first
    /// [`Experiments::tick`].
    ///
    /// # Errors
    /// The first invalid definition or duplicate id (see [`validate_all`]).
    pub fn new(
        definitions: Vec<ExperimentDefinition>,
        config: ExperimentsConfig,
    ) -> Result<Experiments, DefinitionError> {
        validate_all(&definitions)?;
        Ok(Experiments {
            config,
            slots: definitions.into_iter().map(Slot::new).collect(),
            running: Vec::new(),
            history: VecDeque::new(),
            shed_set: ShedSet::default(),
            generation: 0,
        })
    }

    /// Replace the definitions (admin API, config reload). Runs of removed or
    /// disabled definitions are aborted; a changed definition's running run keeps the
    /// definition it started with. Scheduler memory and alert state carry over by id.
    ///
    /// # Errors
    /// The first invalid definition; nothing changes then.
    pub fn set_definitions(
        &mut self,
        definitions: Vec<ExperimentDefinition>,
        now_ms: u64,
    ) -> Result<Vec<ExperimentEvent>, DefinitionError> {
        validate_all(&definitions)?;
        let mut old: BTreeMap<String, Slot> = self
            .slots
            .drain(..)
            .map(|s| (s.def.id.clone(), s))
            .collect();
        self.slots = definitions
            .into_iter()
            .map(|def| match old.remove(&def.id) {
                Some(prev) => Slot { def, ..prev },
                None => Slot::new(def),
            })
            .collect();
        let mut events = Vec::new();
        let gone: Vec<String> = self
            .running
            .iter()
            .filter(|r| self.slot(&r.def.id).is_none_or(|s| !s.def.enabled))
            .map(|r| r.id.clone())
            .collect();
        for id in gone {
            self.finish(
                &id,
                now_ms,
                RunOutcome::Aborted(AbortReason::DefinitionRemoved),
                &mut events,
            );
        }
        Ok(events)
    }

    /// The definitions, in configured order.
    pub fn definitions(&self) -> impl Iterator<Item = &ExperimentDefinition> {
        self.slots.iter().map(|s| &s.def)
    }

    fn slot(&self, id: &str) -> Option<&Slot> {
        self.slots.iter().find(|s| s.def.id == id)
    }

    /// Advance to `now_ms` (ms since the epoch, UTC): abort runs that cross a
    /// guardrail, finish runs whose time is up, start runs that are due. Call it about
    /// once a second; a tick that comes late still starts a due run (with its
    /// scheduled start and end) as long as its window has not passed.
    pub fn tick(&mut self, now_ms: u64) -> Vec<ExperimentEvent> {
        let mut events = Vec::new();
        let ending: Vec<(String, RunOutcome)> = self
            .running
            .iter()
            .filter_map(|r| {
                if let Some(reason) = r.guardrail_breach(&r.merged()) {
                    Some((r.id.clone(), RunOutcome::Aborted(reason)))
                } else {
                    (now_ms >= r.ends_at_ms).then(|| (r.id.clone(), RunOutcome::Completed))
                }
            })
            .collect();
        for (id, outcome) in ending {
            self.finish(&id, now_ms, outcome, &mut events);
        }
        for i in 0..self.slots.len() {
            let slot = &self.slots[i];
            if !slot.def.enabled || self.running.iter().any(|r| r.def.id == slot.def.id) {
                continue;
            }
            let Some(start) = slot.def.schedule.last_run_at_or_before(now_ms) else {
                continue;
            };
            let due = slot.last_start_ms.is_none_or(|last| last < start);
            if due && now_ms < start.saturating_add(slot.def.duration_ms()) {
                self.slots[i].last_start_ms = Some(start);
                let def = self.slots[i].def.clone();
                events.push(self.begin(def, start));
            }
        }
        events
    }

    /// Start a run of `experiment_id` now, outside its schedule (admin "run now").
    /// Other nodes only join it if given the same `now_ms`.
    ///
    /// # Errors
    /// [`CommandError::UnknownExperiment`], [`CommandError::Disabled`],
    /// [`CommandError::AlreadyRunning`].
    pub fn start_now(
        &mut self,
        experiment_id: &str,
        now_ms: u64,
    ) -> Result<ExperimentEvent, CommandError> {
        let slot = self
            .slot(experiment_id)
            .ok_or_else(|| CommandError::UnknownExperiment(experiment_id.to_string()))?;
        if !slot.def.enabled {
            return Err(CommandError::Disabled(experiment_id.to_string()));
        }
        if self.running.iter().any(|r| r.def.id == experiment_id) {
            return Err(CommandError::AlreadyRunning(experiment_id.to_string()));
        }
        let def = slot.def.clone();
        Ok(self.begin(def, now_ms))
    }

    /// Stop a run now (admin), judging what it has.
    ///
    /// # Errors
    /// [`CommandError::NotRunning`] when no run has this id.
    pub fn abort(
        &mut self,
        run_id: &str,
        now_ms: u64,
    ) -> Result<Vec<ExperimentEvent>, CommandError> {
        if !self.running.iter().any(|r| r.id == run_id) {
            return Err(CommandError::NotRunning(run_id.to_string()));
        }
        let mut events = Vec::new();
        self.finish(
            run_id,
            now_ms,
            RunOutcome::Aborted(AbortReason::Operator),
            &mut events,
        );
        Ok(events)
    }

    fn begin(&mut self, def: ExperimentDefinition, start_ms: u64) -> ExperimentEvent {
        let id = format!("{}@{start_ms}", def.id);
        let ends_at_ms = start_ms.saturating_add(def.duration_ms());
        self.running.push(Running {
            id: id.clone(),
            assigner: def.assigner(),
            def,
            started_at_ms: start_ms,
            ends_at_ms,
            local: GroupKpis::default(),
            remote: BTreeMap::new(),
        });
        self.rebuild_shed_set();
        ExperimentEvent::Started {
            run: id,
            ends_at_ms,
        }
    }

    fn finish(
        &mut self,
        run_id: &str,
        now_ms: u64,
        outcome: RunOutcome,
        events: &mut Vec<ExperimentEvent>,
    ) {
        let Some(pos) = self.running.iter().position(|r| r.id == run_id) else {
            return;
        };
        let run = self.running.remove(pos);
        self.rebuild_shed_set();
        let kpis = run.merged();
        let verdict = judge(&run.def, &kpis);
        if let Some(slot) = self.slots.iter_mut().find(|s| s.def.id == run.def.id) {
            for dv in &verdict.devices {
                let last = slot.last_status.get_mut(dv.device);
                match dv.status {
                    DeviceStatus::NotEnoughData => {}
                    DeviceStatus::NoDeviation => *last = Some(DeviceStatus::NoDeviation),
                    DeviceStatus::Deviation => {
                        if *last != Some(DeviceStatus::Deviation) {
                            events.push(ExperimentEvent::Alert(Alert {
                                experiment: run.def.id.clone(),
                                run: run.id.clone(),
                                device: dv.device,
                                previous: *last,
                                kpis: dv
                                    .kpis
                                    .iter()
                                    .filter(|k| matches!(k.verdict, KpiVerdict::Deviation(_)))
                                    .cloned()
                                    .collect(),
                            }));
                        }
                        *last = Some(DeviceStatus::Deviation);
                    }
                }
            }
        }
        events.push(ExperimentEvent::Finished {
            run: run.id.clone(),
            outcome: outcome.clone(),
            hurt: verdict.hurt.iter().map(|h| h.device).collect(),
        });
        if self.history.len() >= self.config.history.max(1) {
            self.history.pop_front();
        }
        self.history.push_back(RunRecord {
            id: run.id,
            experiment: run.def.id,
            started_at_ms: run.started_at_ms,
            ended_at_ms: now_ms.min(run.ends_at_ms),
            outcome,
            nodes: run.remote.into_keys().collect(),
            kpis,
            verdict,
        });
    }

    fn rebuild_shed_set(&mut self) {
        self.shed_set = ShedSet::new(
            self.running
                .iter()
                .map(|r| ShedEntry {
                    run: r.id.clone(),
                    priorities: r.def.priorities,
                    devices: r.def.device_set(),
                    assigner: r.assigner,
                })
                .collect(),
        );
        self.generation += 1;
    }

    /// Count one KPI event of `member` on `device` in every running run where the
    /// member is in control or experiment and the device type is in scope. Returns
    /// whether any run counted it.
    pub fn record(&mut self, member: MemberId, device: DeviceType, event: KpiEvent) -> bool {
        let mut counted = false;
        for run in &mut self.running {
            if !run.def.devices.contains(&device) {
                continue;
            }
            let group = run.assigner.group(member);
            if group != Group::Neither {
                run.local.apply(group, device, event);
                counted = true;
            }
        }
        counted
    }

    /// The request path's snapshot; changes exactly when [`Experiments::generation`] does.
    pub fn shed_set(&self) -> &ShedSet {
        &self.shed_set
    }

    /// Bumped whenever the set of running experiments changes, so the server knows
    /// when to republish [`Experiments::shed_set`].
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Shorthand for [`ShedSet::matches`] on the current snapshot.
    pub fn sheds(&self, facts: &RequestFacts, priority: Priority) -> Option<&str> {
        self.shed_set.matches(facts, priority)
    }

    /// This node's counters of the runs in progress, to gossip to the others.
    pub fn local_report(&self) -> NodeReport {
        NodeReport {
            runs: self
                .running
                .iter()
                .map(|r| (r.id.clone(), r.local.clone()))
                .collect(),
        }
    }

    /// Take in another node's latest report: it replaces that node's previous one for
    /// each run both know. Never feed this node's own report back (it would count
    /// twice). Reports for unknown or finished runs are ignored, as are
    /// nodes beyond [`ExperimentsConfig::max_nodes`].
    pub fn apply_report(&mut self, node: &str, report: NodeReport) {
        for (run_id, kpis) in report.runs {
            if let Some(run) = self.running.iter_mut().find(|r| r.id == run_id) {
                if run.remote.contains_key(node) || run.remote.len() < self.config.max_nodes {
                    run.remote.insert(node.to_string(), kpis);
                }
            }
        }
    }

    /// The finished runs, oldest first.
    pub fn history(&self) -> impl Iterator<Item = &RunRecord> {
        self.history.iter()
    }

    /// Everything the admin API and the Experiments page show, with interim verdicts
    /// of the runs in progress and the newest `history` finished runs.
    pub fn status(&self, now_ms: u64, history: usize) -> crate::status::ExperimentsStatus {
        crate::status::ExperimentsStatus {
            now_ms,
            experiments: self
                .slots
                .iter()
                .map(|s| crate::status::ExperimentStatus {
                    definition: s.def.clone(),
                    next_run_ms: s.def.enabled.then(|| s.def.schedule.next_run_after(now_ms)),
                    last_status: s.last_status.clone(),
                })
                .collect(),
            running: self
                .running
                .iter()
                .map(|r| {
                    let kpis = r.merged();
                    crate::status::RunView {
                        id: r.id.clone(),
                        experiment: r.def.id.clone(),
                        started_at_ms: r.started_at_ms,
                        ends_at_ms: r.ends_at_ms,
                        nodes: r.remote.keys().cloned().collect(),
                        interim: judge(&r.def, &kpis),
                        kpis,
                    }
                })
                .collect(),
            history: self.history.iter().rev().take(history).cloned().collect(),
        }
    }
}

impl Slot {
    fn new(def: ExperimentDefinition) -> Slot {
        Slot {
            def,
            last_start_ms: None,
            last_status: PerDevice::default(),
        }
    }
}
