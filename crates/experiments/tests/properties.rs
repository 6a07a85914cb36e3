//! Properties of the statistics, the stall detector and the event records.

use experiments::stats::{fisher_exact, mann_whitney_u, mann_whitney_u_binned};
use experiments::{
    count_stalls, AbortReason, GuardrailKind, RunOutcome, SegmentRequest, StallDetectorConfig,
};
use proptest::prelude::*;
use shed::DeviceType;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// The histogram form of Mann–Whitney is the raw test on the expanded samples
    /// (each bin one tied value) whenever the raw test is asymptotic.
    #[test]
    fn binned_mann_whitney_is_the_raw_test_on_expanded_samples(
        x in proptest::collection::vec(0u64..6, 1..12),
        y in proptest::collection::vec(0u64..6, 1..12),
    ) {
        let expand = |h: &[u64]| -> Vec<f64> {
            h.iter().enumerate().flat_map(|(i, &c)| std::iter::repeat_n(i as f64, c as usize)).collect()
        };
        let (ex, ey) = (expand(&x), expand(&y));
        let binned = mann_whitney_u_binned(&x, &y);
        let raw = mann_whitney_u(&ex, &ey);
        prop_assert_eq!(binned.is_none(), raw.is_none());
        if let (Some(b), Some(r)) = (binned, raw) {
            prop_assert!((b.u1 - r.u1).abs() < 1e-9);
            if !r.exact {
                prop_assert!((b.p_value - r.p_value).abs() < 1e-12, "{} vs {}", b.p_value, r.p_value);
            }
            prop_assert!((0.0..=1.0).contains(&b.p_value));
        }
    }

    /// Fisher's p is a probability, unchanged by swapping rows or columns, and 1 for
    /// a table that is exactly proportional.
    #[test]
    fn fisher_is_a_symmetric_probability(a in 0u64..40, b in 0u64..40, c in 0u64..40, d in 0u64..40) {
        prop_assume!(a + b + c + d > 0);
        let p = fisher_exact(a, b, c, d).expect("non-empty").p_value;
        prop_assert!((0.0..=1.0).contains(&p));
        for q in [fisher_exact(c, d, a, b), fisher_exact(b, a, d, c)] {
            prop_assert!((q.expect("non-empty").p_value - p).abs() < 1e-9);
        }
        let k = a.max(1);
        prop_assert!((fisher_exact(k, 2 * k, 3 * k, 6 * k).expect("non-empty").p_value - 1.0).abs() < 1e-9);
    }

    /// A player that requests every segment no later than one segment duration after
    /// the previous one, after a start-up burst, never shows a stall; a session with
    /// `n` new segments shows at most `n - 1` stalls.
    #[test]
    fn paced_sessions_never_stall(
        gaps in proptest::collection::vec(0u64..=2_000, 1..200),
        late in proptest::collection::vec(0u64..30_000, 1..50),
    ) {
        let cfg = StallDetectorConfig::default();
        let mut t = 0;
        let mut reqs = vec![SegmentRequest { at_ms: 0, sequence: 0, duration_ms: 2_000 }];
        for (i, g) in gaps.iter().enumerate() {
            t += g;
            reqs.push(SegmentRequest { at_ms: t, sequence: i as u64 + 1, duration_ms: 2_000 });
        }
        prop_assert_eq!(count_stalls(&reqs, cfg).stalls, 0);
        let mut t = 0;
        let reqs: Vec<_> = late.iter().enumerate().map(|(i, g)| {
            t += g;
            SegmentRequest { at_ms: t, sequence: i as u64, duration_ms: 2_000 }
        }).collect();
        let r = count_stalls(&reqs, cfg);
        prop_assert!(r.stalls as usize <= late.len().saturating_sub(1));
    }
}

#[test]
fn run_outcomes_round_trip_json() {
    let outcomes = [
        RunOutcome::Completed,
        RunOutcome::Aborted(AbortReason::Operator),
        RunOutcome::Aborted(AbortReason::Guardrail {
            device: DeviceType::SmartTv,
            guardrail: GuardrailKind::StartFailureRate,
            value: 0.4,
            limit: 0.2,
        }),
    ];
    for o in outcomes {
        let json = serde_json::to_string(&o).expect("serializes");
        let back: RunOutcome = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, o, "{json}");
    }
    let json =
        serde_json::to_string(&RunOutcome::Aborted(AbortReason::Operator)).expect("serializes");
    assert_eq!(json, r#"{"state":"aborted","reason":"operator"}"#);
}
