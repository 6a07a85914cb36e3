//! What an experiment is (EXP-1, EXP-2): the priority range to throttle, the group
//! shares, the duration, the device types in scope, the guardrails, the verdict
//! settings and the schedule. Parsed from TOML (`[[experiment]]` tables) or JSON
//! (the admin API) and validated with errors that name the field.
//!
//! ```toml
//! [[experiment]]
//! id = "non-critical-daily"
//! priorities = "non_critical"          # a bucket, or { min = 0, max = 29 }
//! control_share_bp = 50                # 0.5 % of members
//! experiment_share_bp = 50
//! duration_minutes = 45                # default 45
//! devices = ["smart_tv", "browser"]    # default: every device type
//! schedule = { daily_at = "03:00" }    # or { every_hours = 6, anchor = "2026-01-01T00:30Z" }
//! guardrails = { max_critical_failure_share = 0.05, max_start_failure_rate = 0.2, min_samples = 30 }
//! verdict = { alpha = 0.05, min_samples = 200, min_relative_change = 0.1 }
//! ```

use std::collections::BTreeSet;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use shed::{Bucket, DeviceSet, DeviceType, FaultRuleSpec, MemberId, Priority};

use crate::assign::{Assigner, BASIS_POINTS};
use crate::error::DefinitionError;
use crate::schedule::Schedule;

/// Largest experiment-group share, 10 %: an experiment sheds real viewers' requests
/// on purpose, so it must stay a small sample.
pub const MAX_EXPERIMENT_SHARE_BP: u16 = 1_000;

/// The default run length (EXP-1).
pub const DEFAULT_DURATION_MINUTES: u32 = 45;

/// The inclusive range of priorities an experiment sheds for its experiment group.
/// In config: a bucket name (`"non_critical"`) or `{ min, max }` on the 0..=99 scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "RawRange")]
pub struct PriorityRange {
    /// Lowest priority shed.
    pub min: u8,
    /// Highest priority shed.
    pub max: u8,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawRange {
    Bucket(Bucket),
    Range { min: u8, max: u8 },
}

impl From<RawRange> for PriorityRange {
    fn from(raw: RawRange) -> Self {
        match raw {
            RawRange::Bucket(b) => PriorityRange {
                min: b.min().get(),
                max: b.max().get(),
            },
            RawRange::Range { min, max } => PriorityRange { min, max },
        }
    }
}

impl PriorityRange {
    /// Whether a priority lies in the range.
    pub fn contains(&self, p: Priority) -> bool {
        (self.min..=self.max).contains(&p.get())
    }
}

/// Limits that end a run at once when the experiment group crosses them (EXP-1). They
/// are checked per device type in scope, on the experiment group's counters merged
/// over the nodes, once the device type has `min_samples` start attempts (sessions).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Guardrails {
    /// Largest tolerated share of failed CRITICAL requests (failed / answered).
    pub max_critical_failure_share: f64,
    /// Largest tolerated start-failure rate (failures / attempts).
    pub max_start_failure_rate: f64,
    /// Start attempts (sessions) a device type needs in the experiment group before a
    /// limit applies, so one unlucky session does not abort a run.
    pub min_samples: u64,
}

impl Default for Guardrails {
    fn default() -> Self {
        Guardrails {
            max_critical_failure_share: 0.05,
            max_start_failure_rate: 0.2,
            min_samples: 30,
        }
    }
}

/// How a run's KPIs become a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VerdictConfig {
    /// Family-wise false-positive rate of one run over all its (device, KPI)
    /// comparisons, after Holm–Bonferroni.
    pub alpha: f64,
    /// Observations each group needs for a (device, KPI) comparison; below it the
    /// comparison is "not enough data".
    pub min_samples: u64,
    /// Smallest relative worsening (0.1 = 10 %) that counts as a deviation, so a huge
    /// sample does not flag a harmless difference.
    pub min_relative_change: f64,
}

impl Default for VerdictConfig {
    fn default() -> Self {
        VerdictConfig {
            alpha: 0.05,
            min_samples: 200,
            min_relative_change: 0.1,
        }
    }
}

fn yes() -> bool {
    true
}

fn default_duration() -> u32 {
    DEFAULT_DURATION_MINUTES
}

fn all_devices() -> Vec<DeviceType> {
    DeviceType::ALL.to_vec()
}

/// One experiment. Build it with [`ExperimentDefinition::from_json`],
/// [`parse_definitions_toml`] or by hand followed by [`ExperimentDefinition::validate`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentDefinition {
    /// Stable identifier (1–64 of `A-Z a-z 0-9 - _`); also the assignment hash key, so
    /// renaming an experiment reshuffles its groups.
    pub id: String,
    /// A disabled experiment keeps its history but starts no runs.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// The priorities shed for the experiment group.
    pub priorities: PriorityRange,
    /// Share of members in the control group, basis points.
    pub control_share_bp: u16,
    /// Share of members in the experiment group, basis points (at most 1 000).
    pub experiment_share_bp: u16,
    /// How long a run lasts, minutes (default 45).
    #[serde(default = "default_duration")]
    pub duration_minutes: u32,
    /// Device types in scope: only their requests are shed and their KPIs judged.
    #[serde(default = "all_devices", with = "crate::device::names")]
    pub devices: Vec<DeviceType>,
    /// Limits that abort a run.
    #[serde(default)]
    pub guardrails: Guardrails,
    /// Verdict settings.
    #[serde(default)]
    pub verdict: VerdictConfig,
    /// When runs start.
    pub schedule: Schedule,
}

fn unit_share(field: &str, v: f64) -> Result<(), DefinitionError> {
    if v.is_finite() && v > 0.0 && v <= 1.0 {
        Ok(())
    } else {
        Err(DefinitionError::invalid(
            field,
            format!("{v} is outside (0, 1]"),
        ))
    }
}

impl ExperimentDefinition {
    /// Parse and validate one definition from JSON (the admin API's body).
    ///
    /// # Errors
    /// [`DefinitionError::Parse`] for malformed JSON or unknown keys,
    /// [`DefinitionError::Invalid`] naming the field for a value that cannot work.
    pub fn from_json(text: &str) -> Result<ExperimentDefinition, DefinitionError> {
        let def: ExperimentDefinition =
            serde_json::from_str(text).map_err(|e| DefinitionError::Parse(e.to_string()))?;
        def.validate()?;
        Ok(def)
    }

    /// Check every value; the only constructors that skip it are struct literals.
    ///
    /// # Errors
    /// [`DefinitionError::Invalid`] naming the first field that cannot work.
    pub fn validate(&self) -> Result<(), DefinitionError> {
        if self.id.is_empty()
            || self.id.len() > 64
            || !self
                .id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(DefinitionError::invalid(
                "id",
                "must be 1-64 of A-Z a-z 0-9 - _",
            ));
        }
        let r = self.priorities;
        if r.max > Priority::TOP.get() {
            return Err(DefinitionError::invalid("priorities.max", "is above 99"));
        }
        if r.min > r.max {
            return Err(DefinitionError::invalid("priorities", "min is above max"));
        }
        if self.control_share_bp == 0 {
            return Err(DefinitionError::invalid(
                "control_share_bp",
                "must be at least 1",
            ));
        }
        if self.experiment_share_bp == 0 || self.experiment_share_bp > MAX_EXPERIMENT_SHARE_BP {
            return Err(DefinitionError::invalid(
                "experiment_share_bp",
                format!("must be 1..={MAX_EXPERIMENT_SHARE_BP}"),
            ));
        }
        if u32::from(self.control_share_bp) + u32::from(self.experiment_share_bp)
            > u32::from(BASIS_POINTS)
        {
            return Err(DefinitionError::invalid(
                "control_share_bp",
                "the two shares exceed 10000",
            ));
        }
        let period_minutes = self.schedule.period_ms() / 60_000;
        if self.duration_minutes == 0 || u64::from(self.duration_minutes) > period_minutes {
            return Err(DefinitionError::invalid(
                "duration_minutes",
                format!("must be 1..={period_minutes} (the schedule's period)"),
            ));
        }
        if self.devices.is_empty() {
            return Err(DefinitionError::invalid("devices", "is empty"));
        }
        let unique: BTreeSet<_> = self.devices.iter().collect();
        if unique.len() != self.devices.len() {
            return Err(DefinitionError::invalid(
                "devices",
                "lists a device type twice",
            ));
        }
        let g = &self.guardrails;
        unit_share(
            "guardrails.max_critical_failure_share",
            g.max_critical_failure_share,
        )?;
        unit_share(
            "guardrails.max_start_failure_rate",
            g.max_start_failure_rate,
        )?;
        if g.min_samples == 0 {
            return Err(DefinitionError::invalid(
                "guardrails.min_samples",
                "must be at least 1",
            ));
        }
        let v = &self.verdict;
        if !(v.alpha > 0.0 && v.alpha <= 0.5) {
            return Err(DefinitionError::invalid(
                "verdict.alpha",
                format!("{} is outside (0, 0.5]", v.alpha),
            ));
        }
        if v.min_samples < 2 {
            return Err(DefinitionError::invalid(
                "verdict.min_samples",
                "must be at least 2",
            ));
        }
        if !(v.min_relative_change.is_finite() && v.min_relative_change >= 0.0) {
            return Err(DefinitionError::invalid(
                "verdict.min_relative_change",
                "must be 0 or more",
            ));
        }
        Ok(())
    }

    /// The run length in milliseconds.
    pub fn duration_ms(&self) -> u64 {
        u64::from(self.duration_minutes) * 60_000
    }

    /// The device types in scope as shed's bitmask.
    pub fn device_set(&self) -> DeviceSet {
        self.devices.iter().copied().collect()
    }

    /// The member assignment of this experiment.
    pub fn assigner(&self) -> Assigner {
        Assigner::new(&self.id, self.control_share_bp, self.experiment_share_bp)
    }

    /// The FIT-1 rule equivalent to this experiment for a known set of experiment-group
    /// `members` (e.g. those with a playback on this node): same priority range, same
    /// device types, those members, share 1. For callers that prefer to go through
    /// [`shed::FaultRules`]; the request path can instead ask
    /// [`crate::ShedSet::matches`], which needs no member list.
    pub fn fault_rule_spec(
        &self,
        members: BTreeSet<MemberId>,
        expires_at: Duration,
    ) -> FaultRuleSpec {
        let p = |v: u8| Priority::new(v.min(99)).unwrap_or(Priority::TOP);
        FaultRuleSpec {
            min_priority: p(self.priorities.min),
            max_priority: p(self.priorities.max),
            devices: Some(self.device_set()),
            members: Some(members),
            share: 1.0,
            expires_at,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DefinitionsFile {
    #[serde(default)]
    experiment: Vec<ExperimentDefinition>,
}

/// Parse and validate the `[[experiment]]` tables of a TOML document.
///
/// # Errors
/// [`DefinitionError::Parse`] for TOML or schema errors, [`DefinitionError::Invalid`]
/// with the field path `experiment[i].field`, including a duplicate `id`.
pub fn parse_definitions_toml(text: &str) -> Result<Vec<ExperimentDefinition>, DefinitionError> {
    let file: DefinitionsFile =
        toml::from_str(text).map_err(|e| DefinitionError::Parse(e.to_string()))?;
    validate_all(&file.experiment)?;
    Ok(file.experiment)
}

/// Validate a list of definitions: each one, and that ids are unique.
///
/// # Errors
/// The first [`DefinitionError::Invalid`], with the path `experiment[i].field`.
pub fn validate_all(defs: &[ExperimentDefinition]) -> Result<(), DefinitionError> {
    let mut seen = BTreeSet::new();
    for (i, def) in defs.iter().enumerate() {
        let prefix = format!("experiment[{i}]");
        def.validate().map_err(|e| e.within(&prefix))?;
        if !seen.insert(def.id.as_str()) {
            return Err(DefinitionError::invalid(
                format!("{prefix}.id"),
                format!("{:?} is used twice", def.id),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[[experiment]]
id = "nc-daily"
priorities = "non_critical"
control_share_bp = 50
experiment_share_bp = 50
devices = ["smart_tv", "browser"]
schedule = { daily_at = "03:00" }

[[experiment]]
id = "thumbs"
priorities = { min = 35, max = 45 }
control_share_bp = 100
experiment_share_bp = 100
duration_minutes = 30
schedule = { every_hours = 6, anchor = "2026-01-01T00:30Z" }
guardrails = { max_start_failure_rate = 0.1 }
verdict = { alpha = 0.01 }
"#;

    #[test]
    fn parses_with_defaults() {
        let defs = parse_definitions_toml(GOOD).expect("valid");
        assert_eq!(defs.len(), 2);
        let a = &defs[0];
        assert_eq!((a.priorities.min, a.priorities.max), (0, 29));
        assert_eq!(a.duration_minutes, 45);
        assert!(a.enabled);
        assert_eq!(a.devices, vec![DeviceType::SmartTv, DeviceType::Browser]);
        assert_eq!(a.guardrails, Guardrails::default());
        let b = &defs[1];
        assert_eq!(b.devices.len(), DeviceType::COUNT);
        assert_eq!(b.guardrails.max_start_failure_rate, 0.1);
        assert_eq!(b.guardrails.min_samples, 30);
        assert_eq!(b.verdict.alpha, 0.01);
        // JSON round trip (the admin API's form).
        let json = serde_json::to_string(b).expect("serializes");
        assert_eq!(ExperimentDefinition::from_json(&json).expect("valid"), *b);
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            (
                "experiment_share_bp = 50",
                "experiment_share_bp = 5000",
                "experiment[0].experiment_share_bp",
            ),
            (
                "priorities = \"non_critical\"",
                "priorities = { min = 50, max = 40 }",
                "experiment[0].priorities",
            ),
            (
                "priorities = \"non_critical\"",
                "priorities = { min = 50, max = 140 }",
                "experiment[0].priorities.max",
            ),
            (
                "devices = [\"smart_tv\", \"browser\"]",
                "devices = []",
                "experiment[0].devices",
            ),
            (
                "schedule = { daily_at = \"03:00\" }",
                "schedule = { daily_at = \"03:00\" }\nduration_minutes = 2000",
                "experiment[0].duration_minutes",
            ),
            (
                "guardrails = { max_start_failure_rate = 0.1 }",
                "guardrails = { max_start_failure_rate = 1.5 }",
                "experiment[1].guardrails.max_start_failure_rate",
            ),
            (
                "verdict = { alpha = 0.01 }",
                "verdict = { alpha = 0.9 }",
                "experiment[1].verdict.alpha",
            ),
            ("id = \"thumbs\"", "id = \"nc-daily\"", "experiment[1].id"),
            ("id = \"thumbs\"", "id = \"th umbs\"", "experiment[1].id"),
        ];
        for (from, to, field) in cases {
            let text = GOOD.replacen(from, to, 1);
            let err = parse_definitions_toml(&text).expect_err(to);
            assert!(
                err.to_string().starts_with(&format!("{field}:")),
                "{to}: {err}"
            );
        }
        for (from, to, needle) in [
            (
                "devices = [\"smart_tv\", \"browser\"]",
                "devices = [\"fridge\"]",
                "fridge",
            ),
            (
                "schedule = { daily_at = \"03:00\" }",
                "schedule = { daily_at = \"3pm\" }",
                "schedule.daily_at",
            ),
            (
                "control_share_bp = 50",
                "control_sahre_bp = 50",
                "control_sahre_bp",
            ),
        ] {
            let err = parse_definitions_toml(&GOOD.replacen(from, to, 1)).expect_err(to);
            assert!(matches!(err, DefinitionError::Parse(_)), "{err:?}");
            assert!(err.to_string().contains(needle), "{to}: {err}");
        }
    }

    #[test]
    fn fault_rule_equivalent_is_accepted_by_shed() {
        let def = parse_definitions_toml(GOOD).expect("valid").remove(0);
        let members: BTreeSet<MemberId> = [MemberId(1), MemberId(2)].into();
        let spec = def.fault_rule_spec(members, Duration::from_secs(100));
        let mut rules = shed::FaultRules::new(4);
        let id = rules.add(spec, Duration::from_secs(1)).expect("valid rule");
        let facts = |member, device| shed::RequestFacts {
            route: shed::RouteKind::Telemetry,
            device,
            member: Some(MemberId(member)),
            in_playback: true,
        };
        let low = Priority::new(20).expect("valid");
        let now = Duration::from_secs(2);
        assert_eq!(
            rules.matches(&facts(1, DeviceType::SmartTv), low, now, 0),
            Some(id)
        );
        assert_eq!(
            rules.matches(&facts(3, DeviceType::SmartTv), low, now, 0),
            None
        );
        assert_eq!(
            rules.matches(&facts(1, DeviceType::Apple), low, now, 0),
            None
        );
        let high = Priority::new(30).expect("valid");
        assert_eq!(
            rules.matches(&facts(1, DeviceType::SmartTv), high, now, 0),
            None
        );
    }
}
