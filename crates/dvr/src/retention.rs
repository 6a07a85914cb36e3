//! How long and how much an archive keeps: a depth (e.g. `7d`) and a byte limit.

use serde::Serialize;

/// A stream's retention policy; `None` means no limit of that kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Retention {
    /// Keep segments that ended less than this long ago, milliseconds.
    pub depth_ms: Option<u64>,
    /// Keep at most this many bytes of segment data (whole files go, oldest first).
    pub max_bytes: Option<u64>,
}

/// Parses a depth: whole seconds (`3600`), or a number with a unit `s`, `m`, `h`, `d`
/// (`90s`, `30m`, `12h`, `7d`). Returns milliseconds; `None` for anything else, zero,
/// or more than 10 years.
pub fn parse_depth(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, unit_ms) = match text.as_bytes().last()? {
        b's' => (&text[..text.len() - 1], 1_000u64),
        b'm' => (&text[..text.len() - 1], 60_000),
        b'h' => (&text[..text.len() - 1], 3_600_000),
        b'd' => (&text[..text.len() - 1], 86_400_000),
        _ => (text, 1_000),
    };
    if digits.is_empty() || digits.len() > 12 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let ms = digits.parse::<u64>().ok()?.checked_mul(unit_ms)?;
    (ms > 0 && ms <= 10 * 366 * 86_400_000).then_some(ms)
}

/// Parses a size: bytes (`1000000`) or with a unit `K`, `M`, `G`, `T` (powers of 1024,
/// optionally followed by `B` or `iB`). `None` for anything else or zero.
pub fn parse_bytes(text: &str) -> Option<u64> {
    let text = text.trim();
    let text = text
        .strip_suffix("iB")
        .or_else(|| text.strip_suffix('B'))
        .unwrap_or(text);
    let (digits, unit) = match text.as_bytes().last()? {
        b'K' | b'k' => (&text[..text.len() - 1], 1u64 << 10),
        b'M' => (&text[..text.len() - 1], 1 << 20),
        b'G' => (&text[..text.len() - 1], 1 << 30),
        b'T' => (&text[..text.len() - 1], 1 << 40),
        _ => (text, 1),
    };
    if digits.is_empty() || digits.len() > 15 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let bytes = digits.parse::<u64>().ok()?.checked_mul(unit)?;
    (bytes > 0).then_some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depths() {
        assert_eq!(parse_depth("7d"), Some(7 * 86_400_000));
        assert_eq!(parse_depth("12h"), Some(12 * 3_600_000));
        assert_eq!(parse_depth("30m"), Some(1_800_000));
        assert_eq!(parse_depth("90s"), Some(90_000));
        assert_eq!(parse_depth("3600"), Some(3_600_000));
        for bad in [
            "",
            "d",
            "0",
            "-1d",
            "1.5h",
            "7w",
            "99999999999999d",
            "1 d",
            "+5",
        ] {
            assert_eq!(parse_depth(bad), None, "{bad}");
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("100"), Some(100));
        assert_eq!(parse_bytes("2M"), Some(2 << 20));
        assert_eq!(parse_bytes("20GB"), Some(20 << 30));
        assert_eq!(parse_bytes("1TiB"), Some(1 << 40));
        for bad in ["", "0", "-1", "1.5G", "G", "9999999999999999T"] {
            assert_eq!(parse_bytes(bad), None, "{bad}");
        }
    }
}
