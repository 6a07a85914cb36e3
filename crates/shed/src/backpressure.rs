//! The back-pressure answer of a shed request (SHED-3).
//!
//! With `q = priority / 99` and `x` the overload level (defaults in brackets):
//!
//! ```text
//! max_retries         = round(max_retries [5] · q² · (1 − x/2))
//! base_seconds        = (top_wait [1] + (bottom_wait [60] − top_wait) · (1 − q)) · (1 + growth [3] · x)
//! retry_after_seconds = min(cap [600], max(1, ceil(base_seconds · (1 + jitter [0.5] · u))))
//! ```
//!
//! where `u ∈ [0, 1)` is derived from `jitter_seed` by a fixed mix, so a given device
//! (seed = hash of member or connection) always gets the same spread while different
//! devices come back at different moments. High priority retries more and sooner; low
//! priority waits longer and NON_CRITICAL gets 0 retries; as overload grows, everyone
//! waits longer and retries less. For a fixed seed both dials are monotone in
//! priority and level.
//!
//! Device contract: on 503, read `retryAfterSeconds` (also in `Retry-After`), wait
//! that long, then retry at most `maxRetries` times, waiting at least as long between
//! attempts; with `maxRetries` 0, do not retry this request.

use serde::Deserialize;

use crate::error::ConfigError;
use crate::overload::OverloadLevel;
use crate::priority::Priority;

/// Tuning of the two dials (see the module docs for the formula).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BackPressureConfig {
    /// Retries granted to the top priority with no overload.
    pub max_retries: u8,
    /// Wait (s) for the top priority with no overload.
    pub top_wait_seconds: f64,
    /// Wait (s) for the bottom priority with no overload.
    pub bottom_wait_seconds: f64,
    /// Factor by which full overload stretches the wait, on top of 1.
    pub overload_growth: f64,
    /// Largest random stretch of the wait (0.5 = up to +50 %).
    pub jitter: f64,
    /// Upper bound of `retryAfterSeconds`.
    pub cap_seconds: u32,
}

impl Default for BackPressureConfig {
    fn default() -> Self {
        BackPressureConfig {
            max_retries: 5,
            top_wait_seconds: 1.0,
            bottom_wait_seconds: 60.0,
            overload_growth: 3.0,
            jitter: 0.5,
            cap_seconds: 600,
        }
    }
}

/// What a shed request is told: how many times it may retry and how long to wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Advice {
    /// Retries the device may still make for this request.
    pub max_retries: u8,
    /// Seconds to wait before the next attempt (also the `Retry-After` value).
    pub retry_after_seconds: u32,
}

/// A short ASCII text on the stack, so rendering an answer never allocates.
#[derive(Clone, Copy)]
pub struct StackText<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> StackText<N> {
    fn new() -> Self {
        StackText {
            buf: [0; N],
            len: 0,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        let end = self.len + bytes.len();
        debug_assert!(end <= N, "stack text sized for the longest answer");
        if let Some(dst) = self.buf.get_mut(self.len..end) {
            dst.copy_from_slice(bytes);
            self.len = end;
        }
    }

    fn push_u32(&mut self, mut v: u32) {
        let mut digits = [0u8; 10];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.push(&digits[i..]);
    }

    /// The bytes, ready to send.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(self.as_bytes()).expect("only ascii is ever pushed")
    }
}

impl<const N: usize> std::fmt::Debug for StackText<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Advice {
    /// The 503 body, exactly `{"code":109001,"maxRetries":N,"retryAfterSeconds":S}`:
    /// the seed's two dials and the back-pressure code of the one code table, rendered
    /// on the stack (at most 63 bytes).
    pub fn json(&self) -> StackText<72> {
        let mut t = StackText::new();
        t.push(b"{\"code\":");
        t.push_u32(codes::Shed::BackPressure.code());
        t.push(b",\"maxRetries\":");
        t.push_u32(u32::from(self.max_retries));
        t.push(b",\"retryAfterSeconds\":");
        t.push_u32(self.retry_after_seconds);
        t.push(b"}");
        t
    }

    /// The `Retry-After` header value (decimal seconds).
    pub fn retry_after(&self) -> StackText<10> {
        let mut t = StackText::new();
        t.push_u32(self.retry_after_seconds);
        t
    }
}

/// splitmix64 finalizer: spreads any seed (even 0, 1, 2...) over all 64 bits.
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Computes [`Advice`] from priority, overload and a per-device seed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BackPressure {
    cfg: BackPressureConfig,
}

impl BackPressure {
    /// Dials with the given tuning.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first offending key.
    pub fn new(cfg: BackPressureConfig) -> Result<BackPressure, ConfigError> {
        let check = |key, v: f64, ok: bool, expected| {
            if v.is_finite() && ok {
                Ok(())
            } else {
                Err(ConfigError::OutOfRange {
                    key,
                    value: v,
                    expected,
                })
            }
        };
        check(
            "top_wait_seconds",
            cfg.top_wait_seconds,
            cfg.top_wait_seconds > 0.0,
            "> 0",
        )?;
        check(
            "bottom_wait_seconds",
            cfg.bottom_wait_seconds,
            cfg.bottom_wait_seconds >= cfg.top_wait_seconds,
            ">= top_wait_seconds",
        )?;
        check(
            "overload_growth",
            cfg.overload_growth,
            cfg.overload_growth >= 0.0,
            ">= 0",
        )?;
        check(
            "jitter",
            cfg.jitter,
            (0.0..=1.0).contains(&cfg.jitter),
            "[0, 1]",
        )?;
        if cfg.cap_seconds == 0 {
            return Err(ConfigError::OutOfRange {
                key: "cap_seconds",
                value: 0.0,
                expected: ">= 1",
            });
        }
        Ok(BackPressure { cfg })
    }

    /// The wait before jitter, in seconds (exposed for tests and docs).
    pub fn base_seconds(&self, priority: Priority, level: OverloadLevel) -> f64 {
        let c = &self.cfg;
        let q = f64::from(priority.get()) / f64::from(Priority::TOP.get());
        (c.top_wait_seconds + (c.bottom_wait_seconds - c.top_wait_seconds) * (1.0 - q))
            * (1.0 + c.overload_growth * level.get())
    }

    /// The answer for a shed request. `jitter_seed` should identify the device or
    /// member (or the request, when nothing else is known).
    pub fn answer(&self, priority: Priority, level: OverloadLevel, jitter_seed: u64) -> Advice {
        let c = &self.cfg;
        let q = f64::from(priority.get()) / f64::from(Priority::TOP.get());
        let x = level.get();
        let retries = (f64::from(c.max_retries) * q * q * (1.0 - x / 2.0)).round();
        // 53 random bits -> u in [0, 1).
        let u = (mix64(jitter_seed) >> 11) as f64 / (1u64 << 53) as f64;
        let wait = (self.base_seconds(priority, level) * (1.0 + c.jitter * u)).ceil();
        Advice {
            // retries is in 0..=max_retries, wait is finite and positive: casts exact.
            max_retries: retries as u8,
            retry_after_seconds: (wait as u32).clamp(1, c.cap_seconds),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(v: u8) -> Priority {
        Priority::new(v).expect("in range")
    }

    #[test]
    fn json_is_exact() {
        let a = Advice {
            max_retries: 3,
            retry_after_seconds: 12,
        };
        assert_eq!(
            a.json().as_str(),
            r#"{"code":109001,"maxRetries":3,"retryAfterSeconds":12}"#
        );
        assert_eq!(a.retry_after().as_str(), "12");
        let max = Advice {
            max_retries: u8::MAX,
            retry_after_seconds: u32::MAX,
        };
        let text = max.json();
        let v: serde_json_like::Parsed = serde_json_like::parse(text.as_str());
        assert_eq!(v, (255, 4_294_967_295));
        let zero = Advice {
            max_retries: 0,
            retry_after_seconds: 0,
        };
        assert_eq!(
            zero.json().as_str(),
            r#"{"code":109001,"maxRetries":0,"retryAfterSeconds":0}"#
        );
    }

    /// A tiny independent reader of the two fields, to check the rendering round-trips.
    mod serde_json_like {
        pub type Parsed = (u64, u64);
        pub fn parse(s: &str) -> Parsed {
            let inner = s
                .strip_prefix('{')
                .and_then(|s| s.strip_suffix('}'))
                .expect("object");
            let mut out = (u64::MAX, u64::MAX);
            for field in inner.split(',') {
                let (k, v) = field.split_once(':').expect("key:value");
                let v: u64 = v.parse().expect("number");
                match k {
                    "\"maxRetries\"" => out.0 = v,
                    "\"retryAfterSeconds\"" => out.1 = v,
                    "\"code\"" => assert_eq!(v, 109_001),
                    other => panic!("unexpected key {other}"),
                }
            }
            out
        }
    }

    #[test]
    fn buckets_get_the_documented_shape() {
        let bp = BackPressure::default();
        let calm = OverloadLevel::ZERO;
        let top = bp.answer(Priority::TOP, calm, 1);
        assert_eq!(top.max_retries, 5);
        assert!(top.retry_after_seconds <= 2, "{top:?}");
        let low = bp.answer(p(20), calm, 1);
        assert_eq!(low.max_retries, 0, "NON_CRITICAL does not retry");
        assert!(low.retry_after_seconds >= 42, "{low:?}");
        let storm = bp.answer(p(20), OverloadLevel::FULL, 1);
        assert!(storm.retry_after_seconds >= 4 * 42, "{storm:?}");
    }

    proptest! {
        /// SHED-3: for one device (seed), higher priority never waits longer nor
        /// retries less; more overload never shortens the wait nor adds retries.
        #[test]
        fn dials_are_monotone(a in 0u8..=99, b in 0u8..=99, x in 0.0f64..=1.0, y in 0.0f64..=1.0, seed in any::<u64>()) {
            let bp = BackPressure::default();
            let (lo, hi) = if a <= b { (p(a), p(b)) } else { (p(b), p(a)) };
            let (calm, busy) = if x <= y { (x, y) } else { (y, x) };
            let (calm, busy) = (OverloadLevel::new(calm), OverloadLevel::new(busy));
            let l = bp.answer(lo, calm, seed);
            let h = bp.answer(hi, calm, seed);
            prop_assert!(h.max_retries >= l.max_retries);
            prop_assert!(h.retry_after_seconds <= l.retry_after_seconds);
            let later = bp.answer(lo, busy, seed);
            prop_assert!(later.max_retries <= l.max_retries);
            prop_assert!(later.retry_after_seconds >= l.retry_after_seconds);
        }

        /// Jitter stays within [base, base · (1 + jitter)] (rounded up) and the cap.
        #[test]
        fn jitter_is_bounded(v in 0u8..=99, x in 0.0f64..=1.0, seed in any::<u64>()) {
            let bp = BackPressure::default();
            let level = OverloadLevel::new(x);
            let base = bp.base_seconds(p(v), level);
            let a = bp.answer(p(v), level, seed);
            let s = f64::from(a.retry_after_seconds);
            prop_assert!(s >= base.ceil().min(600.0));
            prop_assert!(s <= (base * 1.5).ceil());
            prop_assert!(a.retry_after_seconds <= 600);
        }
    }

    #[test]
    fn jitter_spreads_devices() {
        let bp = BackPressure::default();
        let waits: std::collections::BTreeSet<u32> = (0..200)
            .map(|seed| {
                bp.answer(p(50), OverloadLevel::new(0.5), seed)
                    .retry_after_seconds
            })
            .collect();
        // base ~ 75 s, jitter up to +37 s: 200 devices must land on many distinct seconds.
        assert!(waits.len() > 25, "{waits:?}");
        assert_eq!(
            bp.answer(p(50), OverloadLevel::new(0.5), 42),
            bp.answer(p(50), OverloadLevel::new(0.5), 42),
            "deterministic per seed"
        );
    }
}
