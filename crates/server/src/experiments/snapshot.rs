//! The request path's copy of the running experiments (EXP-1, FIT-1): a [`Published`]
//! snapshot (the [`ShedSet`] plus per-run counters) that the tick swaps in whenever
//! [`experiments::Experiments::generation`] moves.
//!
//! Reading it takes no lock in the steady state: with no experiment running one atomic
//! load answers; otherwise each worker thread keeps the `Arc` of the snapshot it last
//! saw, tagged with the generation, and only takes the (uncontended) read lock when the
//! generation changed — about once per run start or end.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use experiments::{Group, KpiEvent, ShedSet};
use shed::{DeviceType, MemberId, Priority, RequestFacts};

/// The KPI event kinds counted per run for the metrics, in label order.
pub const EVENT_KINDS: [&str; 5] = [
    "starts",
    "start_failures",
    "errors",
    "stalls",
    "critical_failures",
];

type DeviceCounters = [AtomicU64; DeviceType::COUNT];

/// What the metrics count per run: experiment-group requests shed, by device, and
/// this node's KPI events by group, device and kind. Kept across republishing while
/// the run lasts (and a while after, so the counters do not vanish at its end).
#[derive(Debug)]
pub struct RunCounters {
    /// The run id (`experiment@start_ms`).
    pub run: String,
    shed: DeviceCounters,
    /// `[group (control, experiment)][kind (EVENT_KINDS)][device]`.
    events: [[DeviceCounters; EVENT_KINDS.len()]; 2],
}

impl RunCounters {
    /// Zeroed counters of a run.
    pub fn new(run: &str) -> RunCounters {
        RunCounters {
            run: run.to_string(),
            shed: Default::default(),
            events: Default::default(),
        }
    }

    /// Counts one KPI event of a member of `group` (control or experiment).
    pub fn count_event(&self, group: Group, device: DeviceType, event: &KpiEvent) {
        let g = match group {
            Group::Control => 0,
            Group::Experiment => 1,
            Group::Neither => return,
        };
        let kind = match event {
            KpiEvent::PlaybackStarted { .. } => 0,
            KpiEvent::StartFailed => 1,
            KpiEvent::PlaybackError { .. } => 2,
            KpiEvent::Stall { .. } => 3,
            KpiEvent::CriticalRequest { failed: true, .. } => 4,
            KpiEvent::CriticalRequest { failed: false, .. } => return,
        };
        self.events[g][kind][device as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// KPI events counted for a group (`0` control, `1` experiment), kind index and device.
    pub fn events(&self, group: usize, kind: usize, device: DeviceType) -> u64 {
        self.events
            .get(group)
            .and_then(|g| g.get(kind))
            .map_or(0, |k| k[device as usize].load(Ordering::Relaxed))
    }

    /// Counts one shed request of a device type.
    pub fn count_shed(&self, device: DeviceType) {
        self.shed[device as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Requests shed for this run on a device type.
    pub fn shed(&self, device: DeviceType) -> u64 {
        self.shed[device as usize].load(Ordering::Relaxed)
    }

    /// The definition id: the run id before its `@`.
    pub fn experiment(&self) -> &str {
        self.run.split('@').next().unwrap_or(&self.run)
    }
}

/// One published state: the shed set and, index for index, its runs' counters.
#[derive(Debug, Default)]
pub struct Published {
    /// The runs in progress as the request path needs them.
    pub set: ShedSet,
    /// `counters[i]` belongs to `set.entries()[i]`.
    pub counters: Vec<Arc<RunCounters>>,
}

impl Published {
    /// The index of the run whose experiment group and slice contain this request (the
    /// same test as [`ShedSet::matches`], answering the index for the counters).
    pub fn shed_index(&self, facts: &RequestFacts, priority: Priority) -> Option<usize> {
        let member = facts.member?;
        self.set.entries().iter().position(|e| {
            e.priorities.contains(priority)
                && e.devices.contains(facts.device)
                && e.assigner.group(member) == Group::Experiment
        })
    }

    /// Whether the member is in a group of a running experiment with this device in
    /// scope (its KPI events count).
    pub fn is_observed(&self, member: MemberId, device: DeviceType) -> bool {
        self.set.is_observed(member, device)
    }
}

/// The swap cell of [`Published`] snapshots.
#[derive(Debug)]
pub struct SnapshotCell {
    /// Distinguishes cells in the per-thread cache (tests build many nodes).
    id: u64,
    generation: AtomicU64,
    running: AtomicUsize,
    slot: RwLock<Arc<Published>>,
}

static NEXT_CELL: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// (cell id, generation, snapshot) last read by this thread.
    static CACHE: RefCell<Option<(u64, u64, Arc<Published>)>> = const { RefCell::new(None) };
}

impl Default for SnapshotCell {
    fn default() -> Self {
        SnapshotCell {
            id: NEXT_CELL.fetch_add(1, Ordering::Relaxed),
            generation: AtomicU64::new(0),
            running: AtomicUsize::new(0),
            slot: RwLock::new(Arc::new(Published::default())),
        }
    }
}

impl SnapshotCell {
    /// Swaps in a new snapshot.
    pub fn publish(&self, published: Published) {
        let running = published.set.entries().len();
        {
            let mut slot = self.slot.write().unwrap_or_else(|p| p.into_inner());
            *slot = Arc::new(published);
        }
        self.running.store(running, Ordering::Release);
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Whether any experiment runs: one atomic load, the whole cost for every request
    /// while none does.
    pub fn is_active(&self) -> bool {
        self.running.load(Ordering::Acquire) > 0
    }

    fn load(&self) -> Arc<Published> {
        Arc::clone(&self.slot.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// The current snapshot: from this thread's cache while the generation is
    /// unchanged (no lock), else read and cached.
    pub fn current(&self) -> Arc<Published> {
        let generation = self.generation.load(Ordering::Acquire);
        CACHE
            .try_with(|cache| {
                let Ok(mut cache) = cache.try_borrow_mut() else {
                    return self.load();
                };
                match &*cache {
                    Some((id, g, p)) if *id == self.id && *g == generation => Arc::clone(p),
                    _ => {
                        let p = self.load();
                        *cache = Some((self.id, generation, Arc::clone(&p)));
                        p
                    }
                }
            })
            .unwrap_or_else(|_| self.load())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use experiments::{Assigner, PriorityRange, ShedEntry};
    use shed::{DeviceSet, RouteKind};

    fn published(run: &str) -> Published {
        Published {
            set: ShedSet::new(vec![ShedEntry {
                run: run.to_string(),
                priorities: PriorityRange { min: 0, max: 99 },
                devices: DeviceSet::default().with(DeviceType::Browser),
                assigner: Assigner::new("x", 0, 10_000),
            }]),
            counters: vec![Arc::new(RunCounters::new(run))],
        }
    }

    #[test]
    fn readers_see_each_published_snapshot() {
        let cell = SnapshotCell::default();
        assert!(!cell.is_active());
        assert!(cell.current().set.is_empty());
        cell.publish(published("x@1"));
        assert!(cell.is_active());
        assert_eq!(cell.current().counters[0].run, "x@1");
        // Cached now; a second publication must still be seen.
        cell.publish(published("x@2"));
        assert_eq!(cell.current().counters[0].run, "x@2");
        let other = SnapshotCell::default();
        assert!(
            other.current().set.is_empty(),
            "another cell's cache is not reused"
        );
        cell.publish(Published::default());
        assert!(!cell.is_active());
    }

    #[test]
    fn shed_index_needs_member_device_and_group() {
        let p = published("x@1");
        let mut facts = RequestFacts {
            route: RouteKind::LiveSegment,
            device: DeviceType::Browser,
            member: None,
            in_playback: true,
        };
        let top = Priority::new(90).expect("in range");
        assert_eq!(p.shed_index(&facts, top), None, "anonymous");
        facts.member = Some(MemberId(7));
        assert_eq!(p.shed_index(&facts, top), Some(0));
        facts.device = DeviceType::SmartTv;
        assert_eq!(p.shed_index(&facts, top), None, "out of scope");
        assert_eq!(p.counters[0].experiment(), "x");
    }
}
