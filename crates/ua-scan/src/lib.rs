//! Which of a fixed set of tokens a `User-Agent` header contains, ignoring ASCII case:
//! one pass over the header's first [`SCAN_LIMIT`] bytes, no allocation.
//!
//! Two classifiers read the same header on a node's hot path — the shedding layer's
//! device family and the master playlist's player kind — so the search is written once
//! here. A [`TokenTable`] is built at compile time: for every pair of leading bytes, the
//! tokens that start that way. At each byte the scan tries only the tokens its pair
//! (ignoring case) allows, so the cost grows with the header's length, not with the
//! number of tokens. A thread remembers its recent scans ([`memo`]): the same header
//! scanned again is answered by one comparison.

mod memo;

/// How many leading bytes of a header are examined: real ones are under 400, and a
/// hostile, huge header costs no more than a real one.
pub const SCAN_LIMIT: usize = 512;

/// Buckets of the leading-pair index (a power of two).
const PAIR_BUCKETS: usize = 1024;

const fn pair_bucket(a: u8, b: u8) -> usize {
    (a.to_ascii_lowercase() as usize * 37 + b.to_ascii_lowercase() as usize) & (PAIR_BUCKETS - 1)
}

/// Up to 64 tokens (one bit each in a scan's answer) and their leading-pair index.
#[derive(Debug)]
pub struct TokenTable<const N: usize> {
    tokens: [&'static [u8]; N],
    /// Tokens matched byte for byte instead of ignoring case (bit `k` for token `k`).
    exact: u64,
    by_pair: [u64; PAIR_BUCKETS],
    /// The tokens and `exact`, reduced (never 0): what the memo knows a table by, so
    /// two tables share remembered answers only when they would give the same ones.
    fingerprint: u64,
}

impl<const N: usize> TokenTable<N> {
    /// A table of `tokens`: lowercase ASCII, at least two bytes each, matched ignoring
    /// case; except the tokens whose bit is set in `exact`, written as they must appear.
    /// Checked at compile time when used in a `const` or `static`.
    pub const fn new(tokens: [&'static [u8]; N], exact: u64) -> Self {
        assert!(N <= 64, "at most 64 tokens");
        let mut by_pair = [0u64; PAIR_BUCKETS];
        let mut fingerprint = 0xcbf2_9ce4_8422_2325 ^ exact;
        let mut k = 0;
        while k < N {
            let t = tokens[k];
            assert!(t.len() >= 2, "a token has at least two bytes");
            if exact & (1 << k) == 0 {
                let mut i = 0;
                while i < t.len() {
                    assert!(!t[i].is_ascii_uppercase(), "tokens are lowercase");
                    i += 1;
                }
            }
            by_pair[pair_bucket(t[0], t[1])] |= 1 << k;
            let mut i = 0;
            while i < t.len() {
                fingerprint = (fingerprint ^ t[i] as u64).wrapping_mul(0x0100_0000_01b3);
                i += 1;
            }
            // A separator, so ["ab", "c"] and ["a", "bc"] differ.
            fingerprint = (fingerprint ^ 0xff).wrapping_mul(0x0100_0000_01b3);
            k += 1;
        }
        Self {
            tokens,
            exact,
            by_pair,
            fingerprint: if fingerprint == 0 { 1 } else { fingerprint },
        }
    }

    /// The tokens found in `header` (its first [`SCAN_LIMIT`] bytes), bit `k` for
    /// token `k`.
    pub fn scan(&self, header: &[u8]) -> u64 {
        let text = header.get(..SCAN_LIMIT).unwrap_or(header);
        memo::remembered(self.fingerprint, text, || self.scan_once(text))
    }

    /// The scan itself, of at most [`SCAN_LIMIT`] bytes.
    fn scan_once(&self, text: &[u8]) -> u64 {
        let mut found = 0u64;
        for (i, pair) in text.windows(2).enumerate() {
            let mut candidates = self.by_pair[pair_bucket(pair[0], pair[1])] & !found;
            while candidates != 0 {
                let k = candidates.trailing_zeros() as usize;
                candidates &= candidates - 1;
                let token = self.tokens[k];
                let Some(window) = text.get(i..i + token.len()) else {
                    continue;
                };
                let matched = if self.exact & (1 << k) != 0 {
                    window == token
                } else {
                    window.eq_ignore_ascii_case(token)
                };
                if matched {
                    found |= 1 << k;
                }
            }
        }
        found
    }
}

/// The bits `from..to`: a group of consecutive tokens of a table.
pub const fn bits(from: u32, to: u32) -> u64 {
    let below_to = if to >= 64 { u64::MAX } else { (1u64 << to) - 1 };
    below_to & !((1u64 << from) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    static TABLE: TokenTable<4> =
        TokenTable::new([b"mozilla/", b"vlc", b"; AFT", b"hls.js"], 0b100);

    /// A second table (other tokens, one shared) using the same memo.
    static OTHER: TokenTable<2> = TokenTable::new([b"vlc", b"; aft"], 0);

    /// The same answer by searching for each token on its own.
    fn reference(header: &[u8]) -> u64 {
        let header = header.get(..SCAN_LIMIT).unwrap_or(header);
        let lower = header.to_ascii_lowercase();
        TABLE
            .tokens
            .iter()
            .enumerate()
            .filter(|(k, t)| {
                let hay = if TABLE.exact & (1 << k) != 0 {
                    header
                } else {
                    &lower
                };
                hay.windows(t.len()).any(|w| w == **t)
            })
            .fold(0, |found, (k, _)| found | 1 << k)
    }

    #[test]
    fn tokens_are_found_ignoring_case_but_exact_ones_are_not() {
        assert_eq!(TABLE.scan(b"Mozilla/5.0 (X11)"), 0b0001);
        assert_eq!(TABLE.scan(b"VLC/3.0.20 LibVLC/3.0.20"), 0b0010);
        assert_eq!(TABLE.scan(b"Linux; AFTMM Build"), 0b0100);
        assert_eq!(TABLE.scan(b"said; after that"), 0);
        assert_eq!(TABLE.scan(b"HLS.js mozilla/"), 0b1001);
        assert_eq!(TABLE.scan(b""), 0);
        assert_eq!(TABLE.scan(b"v"), 0);
    }

    #[test]
    fn only_the_first_scan_limit_bytes_count() {
        let mut header = vec![b'x'; SCAN_LIMIT - 3];
        header.extend_from_slice(b"vlc");
        assert_eq!(TABLE.scan(&header), 0b0010);
        header.insert(0, b'x');
        assert_eq!(TABLE.scan(&header), 0);
    }

    #[test]
    fn bits_select_a_range() {
        assert_eq!(bits(0, 3), 0b111);
        assert_eq!(bits(2, 4), 0b1100);
        assert_eq!(bits(63, 64), 1 << 63);
    }

    proptest::proptest! {
        #[test]
        fn the_scan_agrees_with_a_search_per_token(
            parts in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::string::string_regex("[ -~]{0,12}").unwrap(),
                    proptest::prop_oneof![
                        proptest::strategy::Just("MOZILLA/".to_owned()),
                        proptest::strategy::Just("vlc".to_owned()),
                        proptest::strategy::Just("; AFT".to_owned()),
                        proptest::strategy::Just("; aft".to_owned()),
                        proptest::strategy::Just("Hls.Js".to_owned()),
                    ],
                ],
                0..12,
            )
        ) {
            let header = parts.concat();
            proptest::prop_assert_eq!(TABLE.scan(header.as_bytes()), reference(header.as_bytes()));
        }

        /// Answers remembered by a thread are the answers: many headers, each scanned
        /// again in any order (and more headers than the memo has slots), by two
        /// tables that share the memo.
        #[test]
        fn remembered_answers_are_the_scans_answers(
            headers in proptest::collection::vec("[ -~]{0,40}(vlc|; AFT|MOZILLA/|hls.js)?[ -~]{0,8}([ -~]{240,250})?", 1..150),
            order in proptest::collection::vec(0usize..1000, 0..400),
        ) {
            for i in order.iter().copied().chain(0..headers.len()).map(|i| i % headers.len()) {
                let header = headers[i].as_bytes();
                proptest::prop_assert_eq!(TABLE.scan(header), reference(header));
                proptest::prop_assert_eq!(OTHER.scan(header), OTHER.scan_once(header));
            }
        }
    }
}
