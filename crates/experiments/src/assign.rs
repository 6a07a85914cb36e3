//! Sticky assignment of members to an experiment's groups (EXP-1).
//!
//! A member's group is a pure function of (experiment id, member id): SipHash-2-4
//! keyed by a key derived from the experiment id, reduced to a slot in
//! `0..10_000` basis points. Slots `[0, control)` are Control, `[control, control +
//! experiment)` Experiment, the rest Neither. So a member stays in its group for every
//! run of an experiment and on every node without any shared state, and since each
//! experiment has its own key, the groups of two experiments are independent.

use serde::{Deserialize, Serialize};
use shed::MemberId;

/// Basis points in a whole: shares are given in 1/10 000.
pub const BASIS_POINTS: u16 = 10_000;

/// Which group a member belongs to in one experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    /// Watched but untouched: the baseline.
    Control,
    /// The group whose requests in the priority range are shed while the run lasts.
    Experiment,
    /// Not part of the experiment.
    Neither,
}

/// The assignment function of one experiment: its hash key and the share thresholds.
/// `Copy` and allocation-free so the request path can hold one per running experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Assigner {
    key: (u64, u64),
    control_bp: u16,
    experiment_end_bp: u16,
}

impl Assigner {
    /// The assigner of experiment `experiment_id` with the given shares in basis
    /// points. Shares summing above 10 000 are capped so Control keeps its share.
    pub fn new(experiment_id: &str, control_bp: u16, experiment_bp: u16) -> Assigner {
        let control_bp = control_bp.min(BASIS_POINTS);
        let experiment_end_bp = control_bp.saturating_add(experiment_bp).min(BASIS_POINTS);
        // Two fixed, distinct keys derive a 128-bit experiment key from its id.
        let id = experiment_id.as_bytes();
        let k0 = siphash24((0x6272_6479_756e_2d65, 0x7870_2d6b_6579_2d30), id);
        let k1 = siphash24((0x6272_6479_756e_2d65, 0x7870_2d6b_6579_2d31), id);
        Assigner {
            key: (k0, k1),
            control_bp,
            experiment_end_bp,
        }
    }

    /// The member's slot in `0..10_000`.
    pub fn slot(&self, member: MemberId) -> u16 {
        let h = siphash24(self.key, &member.0.to_le_bytes());
        // Multiply-shift maps the hash onto 0..10_000 without modulo bias worth noting
        // (< 1e-15) and without a division.
        ((u128::from(h) * u128::from(BASIS_POINTS)) >> 64) as u16
    }

    /// The member's group.
    pub fn group(&self, member: MemberId) -> Group {
        let slot = self.slot(member);
        if slot < self.control_bp {
            Group::Control
        } else if slot < self.experiment_end_bp {
            Group::Experiment
        } else {
            Group::Neither
        }
    }
}

/// SipHash-2-4 of `data` under the 128-bit key `(k0, k1)` (Aumasson & Bernstein),
/// checked against the reference test vectors.
pub fn siphash24(key: (u64, u64), data: &[u8]) -> u64 {
    let (k0, k1) = key;
    let mut v = [
        k0 ^ 0x736f_6d65_7073_6575,
        k1 ^ 0x646f_7261_6e64_6f6d,
        k0 ^ 0x6c79_6765_6e65_7261,
        k1 ^ 0x7465_6462_7974_6573,
    ];
    let mut chunks = data.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let m = u64::from_le_bytes(word);
        v[3] ^= m;
        sip_round(&mut v);
        sip_round(&mut v);
        v[0] ^= m;
    }
    let rest = chunks.remainder();
    let mut last = [0u8; 8];
    last[..rest.len()].copy_from_slice(rest);
    // The length's low byte goes to the top byte of the last word.
    last[7] = data.len() as u8;
    let m = u64::from_le_bytes(last);
    v[3] ^= m;
    sip_round(&mut v);
    sip_round(&mut v);
    v[0] ^= m;
    v[2] ^= 0xff;
    for _ in 0..4 {
        sip_round(&mut v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

fn sip_round(v: &mut [u64; 4]) {
    v[0] = v[0].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(13);
    v[1] ^= v[0];
    v[0] = v[0].rotate_left(32);
    v[2] = v[2].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(16);
    v[3] ^= v[2];
    v[0] = v[0].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(21);
    v[3] ^= v[0];
    v[2] = v[2].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(17);
    v[1] ^= v[2];
    v[2] = v[2].rotate_left(32);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const REF_KEY: (u64, u64) = (0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908);

    #[test]
    fn siphash_reference_vectors() {
        // From the SipHash paper / reference `vectors.h` (key 00..0f, message 00..len-1).
        let msg: Vec<u8> = (0u8..64).collect();
        assert_eq!(siphash24(REF_KEY, &msg[..0]), 0x726f_db47_dd0e_0e31);
        assert_eq!(siphash24(REF_KEY, &msg[..15]), 0xa129_ca61_49be_45e5);
        assert_eq!(siphash24(REF_KEY, &msg[..1]), 0x74f8_39c5_93dc_67fd);
    }

    #[test]
    fn assignment_is_sticky_and_per_experiment() {
        let a = Assigner::new("exp-a", 500, 500);
        let a_again = Assigner::new("exp-a", 500, 500);
        let b = Assigner::new("exp-b", 500, 500);
        let mut differs = 0;
        for m in 0..2_000u64 {
            assert_eq!(a.group(MemberId(m)), a_again.group(MemberId(m)));
            if a.slot(MemberId(m)) != b.slot(MemberId(m)) {
                differs += 1;
            }
        }
        assert!(
            differs > 1_990,
            "experiments must hash differently: {differs}"
        );
        // Growing the experiment share keeps everyone already in a group there.
        let wider = Assigner::new("exp-a", 500, 1_000);
        for m in 0..2_000u64 {
            let g = a.group(MemberId(m));
            if g != Group::Neither {
                assert_eq!(wider.group(MemberId(m)), g);
            }
        }
    }

    #[test]
    fn shares_are_capped() {
        let all = Assigner::new("x", 9_000, 9_000);
        assert!((0..500u64).all(|m| all.group(MemberId(m)) != Group::Neither));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Over 40 000 consecutive member ids the observed shares are within 5
        /// binomial standard deviations of the configured ones (a bound a correct
        /// hash exceeds with probability ~1e-6 per case).
        #[test]
        fn shares_are_respected(
            control_bp in 0u16..3_000,
            experiment_bp in 0u16..3_000,
            start in any::<u64>(),
            id in "[a-z0-9-]{1,16}",
        ) {
            let a = Assigner::new(&id, control_bp, experiment_bp);
            let n = 40_000u64;
            let (mut c, mut e) = (0u64, 0u64);
            for m in 0..n {
                match a.group(MemberId(start.wrapping_add(m))) {
                    Group::Control => c += 1,
                    Group::Experiment => e += 1,
                    Group::Neither => {}
                }
            }
            for (count, bp) in [(c, control_bp), (e, experiment_bp)] {
                let p = f64::from(bp) / 10_000.0;
                let expected = p * n as f64;
                let sd = (n as f64 * p * (1.0 - p)).sqrt();
                prop_assert!((count as f64 - expected).abs() <= 5.0 * sd + 1.0,
                    "count {} expected {} (bp {})", count, expected, bp);
            }
        }
    }
}
