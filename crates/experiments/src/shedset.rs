//! The request path's view of the running experiments: "is this request of an
//! experiment-group member in a running experiment's shed slice?" (EXP-1, FIT-1).
//!
//! A [`ShedSet`] is a small immutable snapshot the server swaps in whenever
//! [`crate::Experiments::generation`] changes, so the per-request check takes no lock:
//! it walks the (few) running experiments, compares the priority range and the device
//! type first and hashes the member only when both match — O(running experiments),
//! no allocation. A request it matches is answered exactly like one shed by a FIT
//! rule (same back-pressure answer), so the experiment measures what shedding does.

use shed::{DeviceSet, DeviceType, MemberId, Priority, RequestFacts};

use crate::assign::{Assigner, Group};
use crate::definition::PriorityRange;

/// One running experiment as the request path needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShedEntry {
    /// The run id (`experiment@start_ms`), for logs and metric labels.
    pub run: String,
    /// The priorities shed for the experiment group.
    pub priorities: PriorityRange,
    /// The device types in scope.
    pub devices: DeviceSet,
    /// The experiment's assignment.
    pub assigner: Assigner,
}

/// Snapshot of the running experiments for the request path.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShedSet {
    entries: Vec<ShedEntry>,
}

impl ShedSet {
    /// A snapshot of these entries.
    pub fn new(entries: Vec<ShedEntry>) -> ShedSet {
        ShedSet { entries }
    }

    /// Whether no experiment is running (the server can skip the check entirely).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries, one per running experiment.
    pub fn entries(&self) -> &[ShedEntry] {
        &self.entries
    }

    /// The run whose experiment group this request belongs to and whose slice
    /// (priority range, device types) contains it: the request must be shed through
    /// the fault-injection path. `None` for anonymous requests, control and everyone
    /// else.
    pub fn matches(&self, facts: &RequestFacts, priority: Priority) -> Option<&str> {
        let member = facts.member?;
        self.entries
            .iter()
            .find(|e| {
                e.priorities.contains(priority)
                    && e.devices.contains(facts.device)
                    && e.assigner.group(member) == Group::Experiment
            })
            .map(|e| e.run.as_str())
    }

    /// Whether the member is in the control or experiment group of a running
    /// experiment that has its device type in scope: the server needs to record its
    /// KPI events (and can skip everyone else without taking a lock).
    pub fn is_observed(&self, member: MemberId, device: DeviceType) -> bool {
        self.entries
            .iter()
            .any(|e| e.devices.contains(device) && e.assigner.group(member) != Group::Neither)
    }
}
