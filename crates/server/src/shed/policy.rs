//! The admit/shed decision of one request, pure: classify it, compare its priority
//! with the shed curve at the level given, then ask the caller whether an operator's
//! fault rule or a running experiment injects a refusal. No clock, no counters, no
//! I/O: [`super::Shedder`] feeds it the level, the request's sequence number and the
//! injection check, and counts what it returns.

use shed::{
    Advice, BackPressure, Classified, Classifier, OverloadLevel, RequestFacts, RuleId, ShedCurve,
};

/// What the layer does with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Serve it.
    Admit(Classified),
    /// Answer the back-pressure 503 with this advice.
    Shed {
        /// The request's bucket and priority.
        classified: Classified,
        /// The retry dials of the answer.
        advice: Advice,
        /// The fault rule that shed it, or `None` for a real (overload) shed.
        injected_by: Option<RuleId>,
        /// Shed for a running experiment's experiment group (EXP-1): injected like a
        /// fault rule hit, counted per run by the experiments.
        experiment: bool,
        /// Refused by the curve's share of the threshold priority (the others of that
        /// priority are admitted), not because the whole priority is shed.
        partial: bool,
    },
}

/// Why a request the curve admits is refused all the same (FIT-1, EXP-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Injection {
    /// An operator's fault rule selected it.
    Rule(RuleId),
    /// A running experiment sheds its experiment group's slice.
    Experiment,
}

/// The compiled classification and answer settings of `[shedding]`.
#[derive(Debug)]
pub struct Policy {
    classifier: Classifier,
    curve: ShedCurve,
    back_pressure: BackPressure,
}

impl Policy {
    /// A policy from the compiled classifier and back-pressure dials.
    pub fn new(classifier: Classifier, back_pressure: BackPressure) -> Policy {
        Policy {
            classifier,
            curve: ShedCurve,
            back_pressure,
        }
    }

    /// Bucket and priority of a request (the priority lane classifies a connection's
    /// first request before the layer sees it).
    pub fn classify(&self, facts: &RequestFacts) -> Classified {
        self.classifier.classify(facts)
    }

    /// Decides `facts` (already `classified`) at `level`. `seq` is the request's
    /// sequence number (which of the threshold priority's requests the curve's share
    /// admits); a member's requests draw their retry jitter from the member, anonymous
    /// ones from `seq`. `inject` is asked only when the curve admits the request and
    /// it is not operator control (an operator must always reach the API that removes
    /// a rule, FIT-1). Allocation-free.
    pub fn decide(
        &self,
        facts: &RequestFacts,
        classified: Classified,
        level: OverloadLevel,
        seq: u64,
        inject: impl FnOnce() -> Option<Injection>,
    ) -> Decision {
        let seed = facts.member.map_or(seq, |m| m.0);
        let share = self.curve.share(classified.priority, level);
        let shed = |injection: Option<Injection>, partial| Decision::Shed {
            classified,
            advice: self.back_pressure.answer(classified.priority, level, seed),
            injected_by: match injection {
                Some(Injection::Rule(id)) => Some(id),
                _ => None,
            },
            experiment: injection == Some(Injection::Experiment),
            partial,
        };
        if share < 1.0 && unit_draw(seq) >= share {
            return shed(None, share > 0.0);
        }
        if facts.route.is_operator_control() {
            return Decision::Admit(classified);
        }
        match inject() {
            Some(injection) => shed(Some(injection), false),
            None => Decision::Admit(classified),
        }
    }
}

/// A uniform draw in 0..1 from a request's sequence number (splitmix64): which of the
/// threshold priority's requests the curve's share admits, spread evenly and without
/// a random number generator on the request path.
pub(crate) fn unit_draw(seq: u64) -> f64 {
    let mut z = seq.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use shed::{Bucket, DeviceType, MemberId, RouteKind};

    fn policy() -> Policy {
        Policy::new(
            Classifier::new(&shed::ClassifierConfig::default()).expect("defaults"),
            BackPressure::new(shed::BackPressureConfig::default()).expect("defaults"),
        )
    }

    fn facts(route: RouteKind) -> RequestFacts {
        RequestFacts {
            route,
            device: DeviceType::Browser,
            member: None,
            in_playback: false,
        }
    }

    fn decide(
        p: &Policy,
        f: &RequestFacts,
        level: f64,
        seq: u64,
        inj: Option<Injection>,
    ) -> Decision {
        p.decide(f, p.classify(f), OverloadLevel::new(level), seq, || inj)
    }

    #[test]
    fn every_request_is_admitted_at_level_zero() {
        let p = policy();
        for route in [
            RouteKind::LiveSegment,
            RouteKind::Telemetry,
            RouteKind::Status,
        ] {
            for seq in 0..100 {
                assert!(matches!(
                    decide(&p, &facts(route), 0.0, seq, None),
                    Decision::Admit(_)
                ));
            }
        }
    }

    /// SHED-1: at high overload telemetry (NON_CRITICAL) is refused, a live segment
    /// (CRITICAL) is not, and the refusal is a real shed, not an injected one.
    #[test]
    fn high_overload_sheds_non_critical_and_keeps_critical() {
        let p = policy();
        let telemetry = facts(RouteKind::Telemetry);
        assert_eq!(p.classify(&telemetry).bucket, Bucket::NonCritical);
        match decide(&p, &telemetry, 0.9, 7, None) {
            Decision::Shed {
                injected_by: None,
                experiment: false,
                partial: false,
                ..
            } => {}
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            decide(&p, &facts(RouteKind::LiveSegment), 0.9, 7, None),
            Decision::Admit(_)
        ));
    }

    /// The injection check runs only for requests the curve admits, and never for
    /// operator control (FIT-1).
    #[test]
    fn injection_is_asked_only_after_the_curve_admits_and_never_for_operator_control() {
        let p = policy();
        let telemetry = facts(RouteKind::Telemetry);
        let shed_anyway = p.decide(
            &telemetry,
            p.classify(&telemetry),
            OverloadLevel::FULL,
            1,
            || panic!("asked although the curve shed"),
        );
        assert!(matches!(
            shed_anyway,
            Decision::Shed {
                injected_by: None,
                ..
            }
        ));
        let admin = facts(RouteKind::Admin);
        let kept = p.decide(&admin, p.classify(&admin), OverloadLevel::ZERO, 1, || {
            panic!("asked for operator control")
        });
        assert!(matches!(kept, Decision::Admit(_)));
        let rule = decide(&p, &telemetry, 0.0, 1, Some(Injection::Rule(RuleId(3))));
        assert!(matches!(
            rule,
            Decision::Shed {
                injected_by: Some(RuleId(3)),
                experiment: false,
                ..
            }
        ));
        let exp = decide(&p, &telemetry, 0.0, 1, Some(Injection::Experiment));
        assert!(matches!(
            exp,
            Decision::Shed {
                injected_by: None,
                experiment: true,
                ..
            }
        ));
    }

    /// A member's refusals carry the same retry jitter whatever the sequence number.
    #[test]
    fn a_members_advice_does_not_depend_on_the_sequence_number() {
        let p = policy();
        let mut member = facts(RouteKind::Telemetry);
        member.member = Some(MemberId(4711));
        let advice = |seq| match decide(&p, &member, 1.0, seq, None) {
            Decision::Shed { advice, .. } => advice,
            other => panic!("{other:?}"),
        };
        assert!((0..50).all(|seq| advice(seq) == advice(0)));
    }

    #[test]
    fn unit_draws_are_spread_evenly_over_zero_to_one() {
        let draws: Vec<f64> = (0..10_000).map(unit_draw).collect();
        assert!(draws.iter().all(|d| (0.0..1.0).contains(d)));
        let below_half = draws.iter().filter(|d| **d < 0.5).count();
        assert!((4_700..5_300).contains(&below_half), "{below_half}");
    }
}
