//! From a run's KPIs to a verdict (EXP-1, EXP-2): per device type in scope and per
//! KPI, the right test between control and experiment, Holm–Bonferroni over every
//! comparison of the run, and a minimum sample size below which the answer is "not
//! enough data".
//!
//! Tests: rates use the two-proportion z-test, or Fisher's exact test when an expected
//! cell of the 2×2 table is below 5 (rare events, small groups); time to first frame
//! uses Mann–Whitney U on the histograms. A comparison is a **deviation** when its
//! adjusted p-value is below `alpha`, the experiment group is *worse* (higher rate,
//! slower start) and the relative worsening is at least `min_relative_change`: the
//! question is "does shedding hurt", so an improvement is not flagged.

use serde::{Deserialize, Serialize};
use shed::DeviceType;

use crate::definition::ExperimentDefinition;
use crate::kpi::{GroupKpis, Kpi, KpiCounters};
use crate::stats::{self, TestKind};

/// Smallest expected cell count for which the z-test's normal approximation is used.
const MIN_EXPECTED_CELL: f64 = 5.0;

/// The outcome of one (device type, KPI) comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum KpiVerdict {
    /// A group has fewer than `needed` observations.
    NotEnoughData {
        /// Observations in control.
        control_n: u64,
        /// Observations in the experiment group.
        experiment_n: u64,
        /// Observations each group needs.
        needed: u64,
    },
    /// No harmful difference.
    NoDeviation(Comparison),
    /// The experiment group is worse, significantly and by at least the minimum
    /// relative change.
    Deviation(Comparison),
}

/// The numbers behind a verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Control's value: a rate in 0..=1, or the mean time to first frame in ms.
    pub control: f64,
    /// The experiment group's value, same unit.
    pub experiment: f64,
    /// `(experiment - control) / control`; `None` when control is 0 (then any
    /// experiment value above 0 is an unbounded worsening).
    pub relative_change: Option<f64>,
    /// Observations in control.
    pub control_n: u64,
    /// Observations in the experiment group.
    pub experiment_n: u64,
    /// The test used.
    pub test: TestKind,
    /// The test's two-sided p-value.
    pub p_value: f64,
    /// The p-value after Holm–Bonferroni over the run's comparisons.
    pub p_adjusted: f64,
}

/// One KPI's result for one device type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KpiResult {
    /// Which KPI.
    pub kpi: Kpi,
    /// Its verdict.
    pub verdict: KpiVerdict,
}

/// The summary status of one device type in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceStatus {
    /// At least one KPI deviates.
    Deviation,
    /// Some KPI had enough data and none deviates.
    NoDeviation,
    /// No KPI had enough data.
    NotEnoughData,
}

/// The verdict for one device type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceVerdict {
    /// The device type.
    #[serde(with = "crate::device::name")]
    pub device: DeviceType,
    /// Its summary.
    pub status: DeviceStatus,
    /// Per KPI, in [`Kpi::ALL`] order.
    pub kpis: Vec<KpiResult>,
}

/// A device type the experiment hurt, and how much.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hurt {
    /// The device type.
    #[serde(with = "crate::device::name")]
    pub device: DeviceType,
    /// The KPIs that deviate, with their numbers.
    pub kpis: Vec<(Kpi, Comparison)>,
}

/// A run's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Per device type in scope, in the definition's order.
    pub devices: Vec<DeviceVerdict>,
    /// The device types that were hurt (EXP-2), empty when none.
    pub hurt: Vec<Hurt>,
    /// Comparisons that had enough data and could show a difference (the Holm family
    /// size): a rate with no event at all, or only events, in both groups cannot, so
    /// it does not dilute the others (Tarone's argument for discrete tests).
    pub comparisons: usize,
    /// The family-wise false-positive rate used.
    pub alpha: f64,
}

impl Verdict {
    /// The status of one device type, `None` when it is not in scope.
    pub fn status(&self, device: DeviceType) -> Option<DeviceStatus> {
        self.devices
            .iter()
            .find(|d| d.device == device)
            .map(|d| d.status)
    }
}

/// One (device, KPI) cell: its raw comparison, or the two sample sizes when one is
/// too small.
type Cell = (DeviceType, Kpi, Result<Raw, (u64, u64)>);

/// A comparison before the multiple-testing adjustment.
struct Raw {
    control: f64,
    experiment: f64,
    control_n: u64,
    experiment_n: u64,
    test: TestKind,
    p_value: f64,
    worse: bool,
    /// Whether the test could reach a p-value below 1 with these margins.
    informative: bool,
}

fn rate(events: u64, trials: u64) -> f64 {
    events as f64 / trials as f64
}

fn compare_rate(c: (u64, u64), e: (u64, u64)) -> Option<Raw> {
    let ((xc, nc), (xe, ne)) = (c, e);
    let total = (nc + ne) as f64;
    let events = (xc + xe) as f64;
    let non_events = total - events;
    let min_expected = (nc.min(ne) as f64) * events.min(non_events) / total;
    let (test, outcome) = if min_expected < MIN_EXPECTED_CELL {
        (
            TestKind::FisherExact,
            stats::fisher_exact(xe, ne - xe, xc, nc - xc)?,
        )
    } else {
        (
            TestKind::TwoProportionZ,
            stats::two_proportion_z(xe, ne, xc, nc)?,
        )
    };
    Some(Raw {
        control: rate(xc, nc),
        experiment: rate(xe, ne),
        control_n: nc,
        experiment_n: ne,
        test,
        p_value: outcome.p_value,
        worse: rate(xe, ne) > rate(xc, nc),
        informative: xc + xe > 0 && xc + xe < nc + ne,
    })
}

fn mean_ms(h: &crate::histogram::TtffHistogram) -> f64 {
    let (mut sum, mut n) = (0.0, 0.0);
    for (bin, &c) in h.counts().iter().enumerate() {
        let (lo, width) = crate::histogram::TtffHistogram::bin_range(bin);
        sum += c as f64 * (lo as f64 + (width as f64 - 1.0) / 2.0);
        n += c as f64;
    }
    if n > 0.0 {
        sum / n
    } else {
        0.0
    }
}

fn compare_ttff(c: &KpiCounters, e: &KpiCounters) -> Option<Raw> {
    let mw = stats::mann_whitney_u_binned(e.ttff_ms.counts(), c.ttff_ms.counts())?;
    let (ne, nc) = (e.ttff_ms.total(), c.ttff_ms.total());
    Some(Raw {
        control: mean_ms(&c.ttff_ms),
        experiment: mean_ms(&e.ttff_ms),
        control_n: nc,
        experiment_n: ne,
        test: TestKind::MannWhitneyU,
        p_value: mw.p_value,
        worse: mw.u1 > ne as f64 * nc as f64 / 2.0,
        informative: true,
    })
}

/// The verdict of a run of `def` over its merged KPIs.
pub fn judge(def: &ExperimentDefinition, kpis: &GroupKpis) -> Verdict {
    let cfg = def.verdict;
    // Pass 1: the raw comparisons, and the p-values of those with enough data.
    let mut cells: Vec<Cell> = Vec::new();
    for &device in &def.devices {
        let c = kpis.control.get(device);
        let e = kpis.experiment.get(device);
        for kpi in Kpi::ALL {
            let (nc, ne) = (c.sample_size(kpi), e.sample_size(kpi));
            let raw = if nc < cfg.min_samples || ne < cfg.min_samples {
                None
            } else {
                match (c.rate_counts(kpi), e.rate_counts(kpi)) {
                    (Some(rc), Some(re)) => compare_rate(rc, re),
                    _ => compare_ttff(c, e),
                }
            };
            cells.push((device, kpi, raw.ok_or((nc, ne))));
        }
    }
    let p_values: Vec<f64> = cells
        .iter()
        .filter_map(|(_, _, r)| r.as_ref().ok().filter(|r| r.informative).map(|r| r.p_value))
        .collect();
    let adjusted = stats::holm(&p_values);
    // Pass 2: verdicts per device type.
    let mut next_adjusted = adjusted.iter();
    let mut devices: Vec<DeviceVerdict> = Vec::with_capacity(def.devices.len());
    for (device, kpi, raw) in cells {
        if devices.last().map(|d| d.device) != Some(device) {
            devices.push(DeviceVerdict {
                device,
                status: DeviceStatus::NotEnoughData,
                kpis: Vec::with_capacity(Kpi::ALL.len()),
            });
        }
        let verdict = match raw {
            Err((control_n, experiment_n)) => KpiVerdict::NotEnoughData {
                control_n,
                experiment_n,
                needed: cfg.min_samples,
            },
            Ok(r) => {
                let p_adjusted = if r.informative {
                    next_adjusted.next().copied().unwrap_or(1.0)
                } else {
                    1.0
                };
                let relative_change =
                    (r.control > 0.0).then(|| (r.experiment - r.control) / r.control);
                let big_enough = relative_change.is_none_or(|ch| ch >= cfg.min_relative_change);
                let comparison = Comparison {
                    control: r.control,
                    experiment: r.experiment,
                    relative_change,
                    control_n: r.control_n,
                    experiment_n: r.experiment_n,
                    test: r.test,
                    p_value: r.p_value,
                    p_adjusted,
                };
                if r.worse && big_enough && p_adjusted < cfg.alpha {
                    KpiVerdict::Deviation(comparison)
                } else {
                    KpiVerdict::NoDeviation(comparison)
                }
            }
        };
        let dv = devices.last_mut().expect("pushed above");
        dv.status = match (&verdict, dv.status) {
            (KpiVerdict::Deviation(_), _) | (_, DeviceStatus::Deviation) => DeviceStatus::Deviation,
            (KpiVerdict::NoDeviation(_), _) | (_, DeviceStatus::NoDeviation) => {
                DeviceStatus::NoDeviation
            }
            _ => DeviceStatus::NotEnoughData,
        };
        dv.kpis.push(KpiResult { kpi, verdict });
    }
    let hurt = devices
        .iter()
        .filter(|d| d.status == DeviceStatus::Deviation)
        .map(|d| Hurt {
            device: d.device,
            kpis: d
                .kpis
                .iter()
                .filter_map(|k| match &k.verdict {
                    KpiVerdict::Deviation(c) => Some((k.kpi, c.clone())),
                    _ => None,
                })
                .collect(),
        })
        .collect();
    Verdict {
        devices,
        hurt,
        comparisons: p_values.len(),
        alpha: cfg.alpha,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assign::Group;
    use crate::kpi::KpiEvent;
    use crate::schedule::Schedule;

    fn def() -> ExperimentDefinition {
        ExperimentDefinition {
            id: "t".into(),
            enabled: true,
            priorities: crate::definition::PriorityRange { min: 0, max: 29 },
            control_share_bp: 100,
            experiment_share_bp: 100,
            duration_minutes: 45,
            devices: vec![DeviceType::Browser, DeviceType::SmartTv],
            guardrails: Default::default(),
            verdict: Default::default(),
            schedule: Schedule::Daily { minute_of_day: 0 },
        }
    }

    fn fill(k: &mut GroupKpis, group: Group, device: DeviceType, n: u64, failures: u64, ttff: u64) {
        for i in 0..n {
            let event = if i < failures {
                KpiEvent::StartFailed
            } else {
                KpiEvent::PlaybackStarted {
                    ttff_ms: ttff + i % 200,
                }
            };
            k.apply(group, device, event);
        }
    }

    #[test]
    fn flags_only_the_worse_device_and_kpi() {
        let mut k = GroupKpis::default();
        fill(&mut k, Group::Control, DeviceType::Browser, 1_000, 20, 800);
        fill(
            &mut k,
            Group::Experiment,
            DeviceType::Browser,
            1_000,
            22,
            800,
        );
        fill(
            &mut k,
            Group::Control,
            DeviceType::SmartTv,
            1_000,
            20,
            1_500,
        );
        fill(
            &mut k,
            Group::Experiment,
            DeviceType::SmartTv,
            1_000,
            120,
            1_500,
        );
        let v = judge(&def(), &k);
        assert_eq!(
            v.status(DeviceType::Browser),
            Some(DeviceStatus::NoDeviation)
        );
        assert_eq!(v.status(DeviceType::SmartTv), Some(DeviceStatus::Deviation));
        assert_eq!(v.status(DeviceType::Apple), None);
        assert_eq!(v.hurt.len(), 1);
        let (kpi, c) = &v.hurt[0].kpis[0];
        assert_eq!(*kpi, Kpi::StartFailureRate);
        assert!((c.control - 0.02).abs() < 1e-12 && (c.experiment - 0.12).abs() < 1e-12);
        assert!((c.relative_change.expect("control > 0") - 5.0).abs() < 1e-9);
        assert_eq!(c.test, TestKind::TwoProportionZ);
        assert!(c.p_adjusted < 1e-6 && c.p_adjusted >= c.p_value);
        // Errors, stalls and critical failures have no events in either group: they
        // cannot differ and stay out of the Holm family (start failures and TTFF count).
        assert_eq!(v.comparisons, 2 * 2);
    }

    #[test]
    fn improvement_and_small_samples_are_not_deviations() {
        let mut k = GroupKpis::default();
        fill(&mut k, Group::Control, DeviceType::Browser, 1_000, 120, 800);
        fill(
            &mut k,
            Group::Experiment,
            DeviceType::Browser,
            1_000,
            20,
            800,
        );
        fill(&mut k, Group::Control, DeviceType::SmartTv, 150, 0, 800);
        fill(
            &mut k,
            Group::Experiment,
            DeviceType::SmartTv,
            150,
            100,
            800,
        );
        let v = judge(&def(), &k);
        assert_eq!(
            v.status(DeviceType::Browser),
            Some(DeviceStatus::NoDeviation)
        );
        assert_eq!(
            v.status(DeviceType::SmartTv),
            Some(DeviceStatus::NotEnoughData)
        );
        assert!(v.hurt.is_empty());
    }

    #[test]
    fn slower_start_is_found_by_mann_whitney() {
        let mut k = GroupKpis::default();
        fill(&mut k, Group::Control, DeviceType::SmartTv, 400, 0, 1_000);
        fill(
            &mut k,
            Group::Experiment,
            DeviceType::SmartTv,
            400,
            0,
            1_400,
        );
        let v = judge(&def(), &k);
        let hurt = &v.hurt[0];
        assert_eq!(hurt.device, DeviceType::SmartTv);
        assert_eq!(hurt.kpis[0].0, Kpi::TimeToFirstFrame);
        assert_eq!(hurt.kpis[0].1.test, TestKind::MannWhitneyU);
    }

    #[test]
    fn rare_events_use_fisher() {
        let mut k = GroupKpis::default();
        fill(&mut k, Group::Control, DeviceType::Browser, 300, 0, 800);
        fill(&mut k, Group::Experiment, DeviceType::Browser, 300, 9, 800);
        let v = judge(&def(), &k);
        let browser = &v.devices[0];
        match &browser.kpis[0].verdict {
            KpiVerdict::Deviation(c) | KpiVerdict::NoDeviation(c) => {
                assert_eq!(c.test, TestKind::FisherExact);
                assert_eq!(c.relative_change, None);
            }
            other => panic!("{other:?}"),
        }
        let json = serde_json::to_string(&v).expect("serializes");
        assert!(json.contains("\"outcome\":\"not_enough_data\""), "{json}");
    }
}
