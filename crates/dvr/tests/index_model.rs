//! The pure index against a plain-vector model: range, gap and MSN queries, ordinals and
//! retention (range and gap queries as property tests; OTT-ARCH-2).

use dvr::index::{is_gap, Entry, Index, GAP_TOLERANCE_MS};
use dvr::{ArchiveRange, Retention};
use proptest::prelude::*;

/// How each step moves on from the previous entry.
#[derive(Debug, Clone, Copy)]
struct Step {
    skipped_msns: u64,
    duration_ms: u64,
    extra_ms: i64,
    discontinuous: bool,
    size: u32,
}

fn step() -> impl Strategy<Value = Step> {
    (
        prop_oneof![8 => Just(0u64), 1 => 1u64..4],
        500u64..4000,
        prop_oneof![8 => Just(0i64), 1 => 0i64..GAP_TOLERANCE_MS, 1 => 0i64..600_000],
        prop::bool::weighted(0.05),
        1u32..5000,
    )
        .prop_map(
            |(skipped_msns, duration_ms, extra_ms, discontinuous, size)| Step {
                skipped_msns,
                duration_ms,
                extra_ms,
                discontinuous,
                size,
            },
        )
}

fn build(start_ms: i64, steps: &[Step]) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::with_capacity(steps.len());
    let mut msn = 100;
    let mut at = start_ms;
    for s in steps {
        if let Some(prev) = out.last() {
            msn = prev.msn + 1 + s.skipped_msns;
            at = prev.end_ms() + s.extra_ms;
        }
        out.push(Entry {
            msn,
            discontinuity_seq: 0,
            discontinuous: s.discontinuous,
            start_ms: at,
            duration_ticks: s.duration_ms * 90,
            file: u32::try_from(at / 60_000).unwrap(),
            offset: 0,
            size: s.size,
        });
    }
    out
}

fn model_gaps(model: &[Entry]) -> Vec<ArchiveRange> {
    model
        .windows(2)
        .filter(|w| is_gap(&w[0], &w[1]))
        .map(|w| ArchiveRange {
            from_ms: w[0].end_ms(),
            to_ms: w[1].start_ms.max(w[0].end_ms()),
        })
        .collect()
}

fn check(index: &Index, model: &[Entry], probes: &[(i64, i64)]) -> Result<(), TestCaseError> {
    prop_assert_eq!(index.entries(), model);
    prop_assert_eq!(index.len(), model.len());
    prop_assert_eq!(
        index.bytes(),
        model.iter().map(|e| u64::from(e.size)).sum::<u64>()
    );
    prop_assert_eq!(
        index.range(),
        model.first().zip(model.last()).map(|(a, b)| ArchiveRange {
            from_ms: a.start_ms,
            to_ms: b.end_ms()
        })
    );
    prop_assert_eq!(index.gaps().collect::<Vec<_>>(), model_gaps(model));
    for &(from, len) in probes {
        let to = from + len;
        let slice = index.query(from, to);
        let expected: Vec<Entry> = model
            .iter()
            .filter(|e| e.end_ms() > from && e.start_ms < to)
            .copied()
            .collect();
        prop_assert_eq!(slice.entries, &expected[..], "query {}..{}", from, to);
        let again = index.from_ordinal(slice.first_ordinal, slice.entries.len());
        prop_assert_eq!(again.entries, slice.entries);
        prop_assert_eq!(again.first_discontinuity, slice.first_discontinuity);
    }
    for e in model {
        prop_assert_eq!(index.by_msn(e.msn), Some(e));
        if model.iter().all(|m| m.msn != e.msn + 1) {
            prop_assert_eq!(index.by_msn(e.msn + 1), None);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn queries_match_the_model(
        steps in prop::collection::vec(step(), 0..120),
        probes in prop::collection::vec((1_700_000_000_000i64 - 10_000..1_700_000_000_000 + 2_000_000, 0i64..400_000), 1..20),
    ) {
        let model = build(1_700_000_000_000, &steps);
        let mut index = Index::new();
        for e in &model {
            index.push(*e).unwrap();
        }
        check(&index, &model, &probes)?;
    }

    #[test]
    fn retention_matches_the_model(
        steps in prop::collection::vec(step(), 1..150),
        depth_ms in prop::option::of(1u64..3_000_000),
        max_bytes in prop::option::of(1u64..200_000),
        now_offsets in prop::collection::vec(0i64..2_000_000, 1..6),
        probes in prop::collection::vec((1_700_000_000_000i64..1_700_000_000_000 + 2_000_000, 0i64..400_000), 1..10),
    ) {
        let mut model = build(1_700_000_000_000, &steps);
        let mut index = Index::new();
        for e in &model {
            index.push(*e).unwrap();
        }
        let policy = Retention { depth_ms, max_bytes };
        let mut now = 1_700_000_000_000;
        let mut dropped_total = 0;
        let ordinal_of_first = |index: &Index| index.query(i64::MIN, i64::MAX).first_ordinal;
        for offset in now_offsets {
            now += offset;
            let before = ordinal_of_first(&index);
            let dropped = index.retain(&policy, now);
            dropped_total += dropped;
            if let Some(depth) = depth_ms {
                model.retain(|e| e.end_ms() > now - depth as i64);
            }
            if let Some(max) = max_bytes {
                while model.iter().map(|e| u64::from(e.size)).sum::<u64>() > max {
                    let file = model[0].file;
                    model.retain(|e| e.file != file);
                }
            }
            prop_assert_eq!(ordinal_of_first(&index), before + dropped as u64);
            check(&index, &model, &probes)?;
        }
        prop_assert_eq!(dropped_total, steps.len() - model.len());
    }
}

#[test]
fn out_of_order_entries_are_refused() {
    let model = build(
        1_700_000_000_000,
        &[Step {
            skipped_msns: 0,
            duration_ms: 2000,
            extra_ms: 0,
            discontinuous: false,
            size: 10,
        }; 3],
    );
    let mut index = Index::new();
    for e in &model {
        index.push(*e).unwrap();
    }
    assert!(index.push(model[1]).is_err());
    let mut earlier = model[2];
    earlier.msn = 200;
    earlier.start_ms -= 10_000;
    assert!(index.push(earlier).is_err());
    assert_eq!(index.entries(), &model[..]);
}

/// A week of 2-second segments, one a day checked: with a 7-day depth the archive holds
/// exactly the last week at every moment, and nothing of what it drops comes back.
#[test]
fn a_week_of_retention_with_an_injected_clock() {
    const WEEK_MS: i64 = 7 * 86_400_000;
    let policy = Retention {
        depth_ms: Some(WEEK_MS as u64),
        max_bytes: None,
    };
    let start = 1_700_000_000_000i64;
    let mut index = Index::new();
    let mut now = start;
    // Nine days of recording, retention run after every segment as the recorder does.
    for msn in 0..(9 * 43_200u64) {
        let entry = Entry {
            msn,
            discontinuity_seq: 0,
            discontinuous: false,
            start_ms: start + msn as i64 * 2000,
            duration_ticks: 180_000,
            file: u32::try_from((start + msn as i64 * 2000) / 600_000).unwrap(),
            offset: 0,
            size: 1000,
        };
        index.push(entry).unwrap();
        now = entry.end_ms();
        index.retain(&policy, now);
        if msn % 43_200 == 43_199 {
            let range = index.range().unwrap();
            assert!(
                range.duration_ms() <= WEEK_MS,
                "day {}: {range:?}",
                msn / 43_200
            );
            assert!(range.from_ms >= now - WEEK_MS);
        }
    }
    let range = index.range().unwrap();
    assert_eq!(range.to_ms, now);
    assert_eq!(range.from_ms, now - WEEK_MS);
    assert_eq!(index.len(), 302_400);
    assert_eq!(index.gaps().len(), 0);
    // A day later with nothing recorded, a day's worth is gone.
    index.retain(&policy, now + 86_400_000);
    assert_eq!(index.len(), 302_400 - 43_200);
    // A byte limit takes whole files (10 minutes = 300 segments here) from the front.
    let by_bytes = Retention {
        depth_ms: None,
        max_bytes: Some(1000 * 1000),
    };
    index.retain(&by_bytes, now);
    assert!(index.bytes() <= 1_000_000);
    assert!(index.bytes() > 1_000_000 - 300 * 1000);
    assert_eq!(index.first().unwrap().start_ms % 600_000, 0);
}
