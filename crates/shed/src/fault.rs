//! Fault-injection rules (FIT-1): an operator sheds a chosen slice of requests on
//! purpose, to check that slice is safe to shed without hurting viewers.
//!
//! A rule selects by priority range, optionally by device types and/or members, and
//! then a deterministic share: the member id (or, for anonymous requests, the request
//! hash) is mixed with the rule id and compared with the share, so a given member is
//! consistently in or out of a rule. Rules expire at a time passed in by the caller;
//! the number of active rules is capped, and every injection is counted per rule.
//! Matching walks at most `cap` rules and never allocates.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::backpressure::mix64;
use crate::device::DeviceType;
use crate::error::FaultError;
use crate::priority::Priority;
use crate::request::{MemberId, RequestFacts};

/// Identifier of a rule, unique for the life of a [`FaultRules`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RuleId(pub u64);

/// A set of device types as a bitmask: `Copy`, O(1) membership, no allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeviceSet(u8);

impl DeviceSet {
    /// The set with one more device type.
    pub const fn with(self, device: DeviceType) -> DeviceSet {
        DeviceSet(self.0 | (1 << device as u8))
    }

    /// Whether the device type is in the set.
    pub const fn contains(self, device: DeviceType) -> bool {
        self.0 & (1 << device as u8) != 0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl FromIterator<DeviceType> for DeviceSet {
    fn from_iter<I: IntoIterator<Item = DeviceType>>(iter: I) -> Self {
        iter.into_iter().fold(DeviceSet::default(), DeviceSet::with)
    }
}

/// Most members one rule may list; keeps the admin API from building huge rules.
pub const MAX_MEMBERS_PER_RULE: usize = 10_000;

/// What an operator asks for when adding a rule.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultRuleSpec {
    /// Lowest priority the rule sheds (inclusive).
    pub min_priority: Priority,
    /// Highest priority the rule sheds (inclusive).
    pub max_priority: Priority,
    /// Only these device types, or any when `None`.
    pub devices: Option<DeviceSet>,
    /// Only these members, or anyone (including anonymous requests) when `None`.
    pub members: Option<BTreeSet<MemberId>>,
    /// Share of the selected members/requests to shed, 0..=1.
    pub share: f64,
    /// When the rule stops applying, on the caller's monotonic time axis.
    pub expires_at: Duration,
}

/// An active rule and its injection counter.
#[derive(Debug)]
pub struct FaultRule {
    id: RuleId,
    spec: FaultRuleSpec,
    /// Selected iff `mix(key, id) < gate`; `None` means share 1 (everything).
    gate: Option<u64>,
    injected: AtomicU64,
}

impl FaultRule {
    /// The rule's id.
    pub fn id(&self) -> RuleId {
        self.id
    }

    /// The rule as it was added.
    pub fn spec(&self) -> &FaultRuleSpec {
        &self.spec
    }

    /// How many requests this rule has shed so far.
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::Relaxed)
    }

    fn selects(&self, facts: &RequestFacts, priority: Priority, request_hash: u64) -> bool {
        let s = &self.spec;
        if priority < s.min_priority || priority > s.max_priority {
            return false;
        }
        if s.devices.is_some_and(|d| !d.contains(facts.device)) {
            return false;
        }
        if let Some(members) = &s.members {
            match facts.member {
                Some(m) if members.contains(&m) => {}
                _ => return false,
            }
        }
        match self.gate {
            None => true,
            Some(gate) => {
                let key = facts.member.map_or(request_hash, |m| m.0);
                mix64(key ^ mix64(self.id.0)) < gate
            }
        }
    }
}

/// The active fault-injection rules of one node.
#[derive(Debug)]
pub struct FaultRules {
    cap: usize,
    next_id: u64,
    rules: Vec<FaultRule>,
}

impl FaultRules {
    /// An empty rule set that accepts at most `cap` active rules.
    pub fn new(cap: usize) -> FaultRules {
        FaultRules {
            cap,
            next_id: 1,
            rules: Vec::with_capacity(cap.min(64)),
        }
    }

    /// Add a rule, after dropping expired ones.
    ///
    /// # Errors
    /// [`FaultError::Invalid`] naming the field when the spec is unusable (inverted
    /// range, share outside 0..=1, already expired, empty device or member set, too many
    /// members); [`FaultError::Full`] when `cap` rules are active.
    pub fn add(&mut self, spec: FaultRuleSpec, now: Duration) -> Result<RuleId, FaultError> {
        let invalid = |key, reason| Err(FaultError::Invalid { key, reason });
        if spec.min_priority > spec.max_priority {
            return invalid("priorities", "min is above max");
        }
        if !(0.0..=1.0).contains(&spec.share) {
            return invalid("share", "must be between 0 and 1");
        }
        if spec.expires_at <= now {
            return invalid("expires_at", "is not in the future");
        }
        if spec.devices.is_some_and(DeviceSet::is_empty) {
            return invalid("devices", "is empty");
        }
        match &spec.members {
            Some(m) if m.is_empty() => return invalid("members", "is empty"),
            Some(m) if m.len() > MAX_MEMBERS_PER_RULE => {
                return invalid("members", "lists too many members")
            }
            _ => {}
        }
        self.purge_expired(now);
        if self.rules.len() >= self.cap {
            return Err(FaultError::Full { cap: self.cap });
        }
        let id = RuleId(self.next_id);
        self.next_id += 1;
        // share 1 selects everything; otherwise scale to the u64 range (share 0 -> 0,
        // which nothing is below).
        let gate = (spec.share < 1.0).then(|| (spec.share * 2f64.powi(64)) as u64);
        self.rules.push(FaultRule {
            id,
            spec,
            gate,
            injected: AtomicU64::new(0),
        });
        Ok(id)
    }

    /// Remove a rule and return it (with its final counter).
    ///
    /// # Errors
    /// [`FaultError::UnknownRule`] when no rule has this id.
    pub fn remove(&mut self, id: RuleId) -> Result<FaultRule, FaultError> {
        let pos = self
            .rules
            .iter()
            .position(|r| r.id == id)
            .ok_or(FaultError::UnknownRule(id.0))?;
        Ok(self.rules.remove(pos))
    }

    /// Drop every rule whose expiry is at or before `now`.
    pub fn purge_expired(&mut self, now: Duration) {
        self.rules.retain(|r| r.spec.expires_at > now);
    }

    /// The rules still active at `now`, oldest first.
    pub fn list(&self, now: Duration) -> impl Iterator<Item = &FaultRule> {
        self.rules.iter().filter(move |r| r.spec.expires_at > now)
    }

    /// The first active rule that sheds this request, counting the injection. The
    /// caller answers exactly as for a real shed. `request_hash` decides the share for
    /// requests without a member.
    pub fn matches(
        &self,
        facts: &RequestFacts,
        priority: Priority,
        now: Duration,
        request_hash: u64,
    ) -> Option<RuleId> {
        let rule = self
            .rules
            .iter()
            .find(|r| r.spec.expires_at > now && r.selects(facts, priority, request_hash))?;
        rule.injected.fetch_add(1, Ordering::Relaxed);
        Some(rule.id)
    }
}
