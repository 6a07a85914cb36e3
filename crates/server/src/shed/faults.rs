//! The operator's fault-injection rules (FIT-1) as the request path and the admin API
//! ([`crate::routes::fault_rules`]) share them. While no rule is active a request pays one atomic
//! load; times are on the caller's monotonic axis ([`super::Shedder::now`]), passed in.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use shed::{FaultError, FaultRule, FaultRuleSpec, FaultRules, Priority, RequestFacts, RuleId};

/// A fault rule as the admin API lists it.
#[derive(Debug, Clone)]
pub struct RuleView {
    /// The rule's id.
    pub id: RuleId,
    /// The rule as added.
    pub spec: FaultRuleSpec,
    /// Requests it has shed.
    pub injected: u64,
    /// Time left before it expires.
    pub remaining: Duration,
}

/// The node's fault rules, capped (`[shedding] fault_rule_cap`).
#[derive(Debug)]
pub struct FaultRuleSet {
    rules: RwLock<FaultRules>,
    /// Rules in `rules` (expired ones included until purged); 0 skips the lock.
    count: AtomicUsize,
    max_duration: Duration,
}

impl FaultRuleSet {
    /// No rules; at most `cap` at once, each for at most `max_duration`.
    pub fn new(cap: usize, max_duration: Duration) -> FaultRuleSet {
        FaultRuleSet {
            rules: RwLock::new(FaultRules::new(cap)),
            count: AtomicUsize::new(0),
            max_duration,
        }
    }

    /// Longest duration a fault rule may be given.
    pub fn max_rule_duration(&self) -> Duration {
        self.max_duration
    }

    /// Adds a rule that lasts `duration` from `now`.
    ///
    /// # Errors
    /// [`FaultError::Invalid`] naming the field, [`FaultError::Full`] at the cap.
    pub fn add(
        &self,
        mut spec: FaultRuleSpec,
        duration: Duration,
        now: Duration,
    ) -> Result<RuleId, FaultError> {
        spec.expires_at = now.saturating_add(duration);
        let mut rules = self.write();
        let id = rules.add(spec, now)?;
        self.recount(&rules);
        Ok(id)
    }

    /// Removes a rule; returns how many requests it shed.
    ///
    /// # Errors
    /// [`FaultError::UnknownRule`] when no rule has this id (or it expired).
    pub fn remove(&self, id: RuleId, now: Duration) -> Result<u64, FaultError> {
        let mut rules = self.write();
        rules.purge_expired(now);
        let removed = rules.remove(id)?;
        self.recount(&rules);
        Ok(removed.injected())
    }

    /// The rules active at `now`, oldest first.
    pub fn list(&self, now: Duration) -> Vec<RuleView> {
        self.read()
            .list(now)
            .map(|r: &FaultRule| RuleView {
                id: r.id(),
                spec: r.spec().clone(),
                injected: r.injected(),
                remaining: r.spec().expires_at.saturating_sub(now),
            })
            .collect()
    }

    /// Whether there are no rules (expired ones count until purged): one atomic load.
    pub fn is_empty(&self) -> bool {
        self.count.load(Ordering::Relaxed) == 0
    }

    /// How many rules are active at `now`.
    pub fn active(&self, now: Duration) -> usize {
        self.read().list(now).count()
    }

    /// The first active rule that sheds this request, counting the injection; `None`
    /// at once while there are no rules. Allocation-free.
    pub fn matches(
        &self,
        facts: &RequestFacts,
        priority: Priority,
        now: Duration,
        seq: u64,
    ) -> Option<RuleId> {
        if self.is_empty() {
            return None;
        }
        self.read().matches(facts, priority, now, seq)
    }

    /// Drops the rules expired at `now` (called by the monitor, so an idle rule set
    /// costs nothing on the request path).
    pub fn purge(&self, now: Duration) {
        if self.is_empty() {
            return;
        }
        let mut rules = self.write();
        rules.purge_expired(now);
        self.recount(&rules);
    }

    fn recount(&self, rules: &FaultRules) {
        self.count
            .store(rules.list(Duration::ZERO).count(), Ordering::Relaxed);
    }

    fn read(&self) -> RwLockReadGuard<'_, FaultRules> {
        self.rules.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, FaultRules> {
        self.rules.write().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shed::{DeviceType, RouteKind};

    fn spec() -> FaultRuleSpec {
        FaultRuleSpec {
            min_priority: Priority::BOTTOM,
            max_priority: Priority::new(69).expect("in range"),
            devices: None,
            members: None,
            share: 1.0,
            expires_at: Duration::ZERO,
        }
    }

    fn telemetry() -> RequestFacts {
        RequestFacts {
            route: RouteKind::Telemetry,
            device: DeviceType::Browser,
            member: None,
            in_playback: false,
        }
    }

    /// FIT-1: a rule sheds what it selects until it expires, counts what it shed, and
    /// is gone once purged.
    #[test]
    fn a_rule_sheds_until_it_expires_and_counts_its_hits() {
        let s = Duration::from_secs;
        let set = FaultRuleSet::new(4, s(600));
        let low = Priority::new(10).expect("in range");
        assert_eq!(set.matches(&telemetry(), low, s(0), 1), None);
        let id = set.add(spec(), s(60), s(10)).expect("added");
        assert_eq!(set.matches(&telemetry(), low, s(20), 1), Some(id));
        let high = Priority::new(90).expect("in range");
        assert_eq!(set.matches(&telemetry(), high, s(20), 1), None);
        let listed = set.list(s(30));
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].injected, 1);
        assert_eq!(listed[0].remaining, s(40));
        assert_eq!(set.matches(&telemetry(), low, s(70), 1), None, "expired");
        assert_eq!(set.active(s(70)), 0);
        set.purge(s(70));
        assert!(matches!(
            set.remove(id, s(70)),
            Err(FaultError::UnknownRule(_))
        ));
    }

    #[test]
    fn removing_a_rule_returns_its_hits_and_the_cap_holds() {
        let s = Duration::from_secs;
        let set = FaultRuleSet::new(1, s(600));
        let id = set.add(spec(), s(60), s(0)).expect("added");
        assert!(matches!(
            set.add(spec(), s(60), s(0)),
            Err(FaultError::Full { .. })
        ));
        let low = Priority::new(10).expect("in range");
        set.matches(&telemetry(), low, s(1), 1);
        set.matches(&telemetry(), low, s(1), 2);
        assert_eq!(set.remove(id, s(2)).expect("removed"), 2);
        assert_eq!(set.matches(&telemetry(), low, s(3), 1), None);
        assert_eq!(set.max_rule_duration(), s(600));
    }
}
