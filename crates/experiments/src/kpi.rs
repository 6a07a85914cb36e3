//! KPI accumulators (EXP-1): per device type, per group, cheap to update (a few
//! integer adds), mergeable across nodes (field-wise sums), serde for gossip and the
//! admin API.
//!
//! The unit of every rate is the **playback session**, so each session contributes
//! one independent trial and the two-proportion and Fisher tests are valid: a session
//! either failed to start or started; a started session had an error or not, a stall
//! or not; an attempted session saw a failed CRITICAL request or not. Raw event counts
//! (errors, stalls, CRITICAL requests) are kept beside them for display and for the
//! guardrails. [`SessionFlags`] is the one bit per outcome a caller keeps per session
//! so "first in session" is known without more state.

use serde::{Deserialize, Serialize};
use shed::DeviceType;

use crate::assign::Group;
use crate::device::PerDevice;
use crate::histogram::TtffHistogram;

/// One observation about a playback session, from a player beacon, the stall
/// detector or the request path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum KpiEvent {
    /// Playback started; the time from the start request to the first frame.
    PlaybackStarted {
        /// Time to first frame in milliseconds.
        ttff_ms: u64,
    },
    /// The player gave up starting (error or timeout before the first frame).
    StartFailed,
    /// A playback error after the start.
    PlaybackError {
        /// Whether it is the session's first error (see [`SessionFlags`]).
        first_in_session: bool,
    },
    /// A stall (rebuffering), reported or inferred.
    Stall {
        /// Whether it is the session's first stall.
        first_in_session: bool,
    },
    /// A CRITICAL request of the session was answered.
    CriticalRequest {
        /// Whether it failed (shed, error status, timeout).
        failed: bool,
        /// Whether it is the session's first failed CRITICAL request.
        first_failure_in_session: bool,
    },
}

/// Which session-level outcomes a session has already reported; one byte a caller
/// keeps per session, turning raw observations into [`KpiEvent`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SessionFlags(u8);

impl SessionFlags {
    const ERROR: u8 = 1;
    const STALL: u8 = 2;
    const CRITICAL: u8 = 4;

    fn first(&mut self, bit: u8) -> bool {
        let first = self.0 & bit == 0;
        self.0 |= bit;
        first
    }

    /// The event for a playback error of this session.
    pub fn playback_error(&mut self) -> KpiEvent {
        KpiEvent::PlaybackError {
            first_in_session: self.first(Self::ERROR),
        }
    }

    /// The event for a stall of this session.
    pub fn stall(&mut self) -> KpiEvent {
        KpiEvent::Stall {
            first_in_session: self.first(Self::STALL),
        }
    }

    /// The event for an answered CRITICAL request of this session.
    pub fn critical_request(&mut self, failed: bool) -> KpiEvent {
        KpiEvent::CriticalRequest {
            failed,
            first_failure_in_session: failed && self.first(Self::CRITICAL),
        }
    }
}

/// The KPIs a verdict compares, each with its test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kpi {
    /// Start failures / start attempts.
    StartFailureRate,
    /// Started sessions with a playback error / started sessions.
    PlaybackErrorRate,
    /// Started sessions with a stall / started sessions.
    StallRate,
    /// Attempted sessions with a failed CRITICAL request / attempted sessions.
    CriticalFailureRate,
    /// Time to first frame (Mann–Whitney U on the histograms; shown as medians).
    TimeToFirstFrame,
}

impl Kpi {
    /// Every KPI, in the order verdicts list them.
    pub const ALL: [Kpi; 5] = [
        Kpi::StartFailureRate,
        Kpi::PlaybackErrorRate,
        Kpi::StallRate,
        Kpi::CriticalFailureRate,
        Kpi::TimeToFirstFrame,
    ];
}

/// The KPI counters of one (group, device type) on one node or merged over many.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KpiCounters {
    /// Sessions that tried to start playback.
    pub start_attempts: u64,
    /// Of those, sessions whose start failed.
    pub start_failures: u64,
    /// Playback errors after the start (events).
    pub playback_errors: u64,
    /// Started sessions with at least one playback error.
    pub sessions_with_error: u64,
    /// Stalls (events, reported or inferred).
    pub stalls: u64,
    /// Started sessions with at least one stall.
    pub sessions_with_stall: u64,
    /// CRITICAL requests answered.
    pub critical_requests: u64,
    /// Of those, failed ones.
    pub critical_failed: u64,
    /// Sessions with at least one failed CRITICAL request.
    pub sessions_with_critical_failure: u64,
    /// Time to first frame of the started sessions.
    pub ttff_ms: TtffHistogram,
}

impl KpiCounters {
    /// Count one event.
    pub fn apply(&mut self, event: KpiEvent) {
        fn inc(c: &mut u64, by: bool) {
            *c = c.saturating_add(u64::from(by));
        }
        match event {
            KpiEvent::PlaybackStarted { ttff_ms } => {
                inc(&mut self.start_attempts, true);
                self.ttff_ms.record(ttff_ms);
            }
            KpiEvent::StartFailed => {
                inc(&mut self.start_attempts, true);
                inc(&mut self.start_failures, true);
            }
            KpiEvent::PlaybackError { first_in_session } => {
                inc(&mut self.playback_errors, true);
                inc(&mut self.sessions_with_error, first_in_session);
            }
            KpiEvent::Stall { first_in_session } => {
                inc(&mut self.stalls, true);
                inc(&mut self.sessions_with_stall, first_in_session);
            }
            KpiEvent::CriticalRequest {
                failed,
                first_failure_in_session,
            } => {
                inc(&mut self.critical_requests, true);
                inc(&mut self.critical_failed, failed);
                inc(
                    &mut self.sessions_with_critical_failure,
                    failed && first_failure_in_session,
                );
            }
        }
    }

    /// Add another node's (or period's) counters.
    pub fn merge(&mut self, other: &KpiCounters) {
        let pairs = [
            (&mut self.start_attempts, other.start_attempts),
            (&mut self.start_failures, other.start_failures),
            (&mut self.playback_errors, other.playback_errors),
            (&mut self.sessions_with_error, other.sessions_with_error),
            (&mut self.stalls, other.stalls),
            (&mut self.sessions_with_stall, other.sessions_with_stall),
            (&mut self.critical_requests, other.critical_requests),
            (&mut self.critical_failed, other.critical_failed),
            (
                &mut self.sessions_with_critical_failure,
                other.sessions_with_critical_failure,
            ),
        ];
        for (a, b) in pairs {
            *a = a.saturating_add(b);
        }
        self.ttff_ms.merge(&other.ttff_ms);
    }

    /// Sessions that started playback.
    pub fn started(&self) -> u64 {
        self.start_attempts.saturating_sub(self.start_failures)
    }

    /// `(events, trials)` of a rate KPI, events capped at trials so inconsistent
    /// reports never make an impossible table; `None` for [`Kpi::TimeToFirstFrame`].
    pub fn rate_counts(&self, kpi: Kpi) -> Option<(u64, u64)> {
        let (events, trials) = match kpi {
            Kpi::StartFailureRate => (self.start_failures, self.start_attempts),
            Kpi::PlaybackErrorRate => (self.sessions_with_error, self.started()),
            Kpi::StallRate => (self.sessions_with_stall, self.started()),
            Kpi::CriticalFailureRate => (self.sessions_with_critical_failure, self.start_attempts),
            Kpi::TimeToFirstFrame => return None,
        };
        Some((events.min(trials), trials))
    }

    /// The number of observations a KPI rests on (its trials, or TTFF values).
    pub fn sample_size(&self, kpi: Kpi) -> u64 {
        match self.rate_counts(kpi) {
            Some((_, trials)) => trials,
            None => self.ttff_ms.total(),
        }
    }
}

/// The KPIs of one experiment run, per group and device type: what a node reports
/// and what a verdict is computed from.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GroupKpis {
    /// The control group.
    pub control: PerDevice<KpiCounters>,
    /// The experiment group.
    pub experiment: PerDevice<KpiCounters>,
}

impl GroupKpis {
    /// The counters of one group and device type, or `None` for [`Group::Neither`].
    pub fn counters_mut(&mut self, group: Group, device: DeviceType) -> Option<&mut KpiCounters> {
        match group {
            Group::Control => Some(self.control.get_mut(device)),
            Group::Experiment => Some(self.experiment.get_mut(device)),
            Group::Neither => None,
        }
    }

    /// Count one event of a member of `group` on `device`; members of neither group
    /// are ignored.
    pub fn apply(&mut self, group: Group, device: DeviceType, event: KpiEvent) {
        if let Some(c) = self.counters_mut(group, device) {
            c.apply(event);
        }
    }

    /// Add another node's KPIs of the same run.
    pub fn merge(&mut self, other: &GroupKpis) {
        for device in DeviceType::ALL {
            self.control
                .get_mut(device)
                .merge(other.control.get(device));
            self.experiment
                .get_mut(device)
                .merge(other.experiment.get(device));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_flags_count_sessions_once() {
        let mut c = KpiCounters::default();
        let mut s = SessionFlags::default();
        c.apply(KpiEvent::PlaybackStarted { ttff_ms: 900 });
        for _ in 0..3 {
            c.apply(s.stall());
            c.apply(s.playback_error());
        }
        c.apply(s.critical_request(false));
        c.apply(s.critical_request(true));
        c.apply(s.critical_request(true));
        assert_eq!((c.stalls, c.sessions_with_stall), (3, 1));
        assert_eq!((c.playback_errors, c.sessions_with_error), (3, 1));
        assert_eq!(
            (
                c.critical_requests,
                c.critical_failed,
                c.sessions_with_critical_failure
            ),
            (3, 2, 1)
        );
        assert_eq!(c.rate_counts(Kpi::StallRate), Some((1, 1)));
        assert_eq!(c.sample_size(Kpi::TimeToFirstFrame), 1);
    }

    #[test]
    fn merge_is_a_fieldwise_sum_and_round_trips_json() {
        let mut a = GroupKpis::default();
        let mut b = GroupKpis::default();
        a.apply(Group::Control, DeviceType::SmartTv, KpiEvent::StartFailed);
        b.apply(
            Group::Control,
            DeviceType::SmartTv,
            KpiEvent::PlaybackStarted { ttff_ms: 1_200 },
        );
        b.apply(Group::Neither, DeviceType::SmartTv, KpiEvent::StartFailed);
        a.merge(&b);
        let tv = a.control.get(DeviceType::SmartTv);
        assert_eq!((tv.start_attempts, tv.start_failures), (2, 1));
        assert_eq!(tv.ttff_ms.total(), 1);
        let json = serde_json::to_string(&a).expect("serializes");
        assert!(json.contains("\"smart_tv\""), "{json}");
        let back: GroupKpis = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, a);
        assert!(serde_json::from_str::<GroupKpis>(r#"{"control":{"fridge":{}}}"#).is_err());
    }

    #[test]
    fn inconsistent_counts_are_capped() {
        let c = KpiCounters {
            sessions_with_error: 5,
            start_attempts: 2,
            ..KpiCounters::default()
        };
        assert_eq!(c.rate_counts(Kpi::PlaybackErrorRate), Some((2, 2)));
    }
}
