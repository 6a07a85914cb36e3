//! The one number grammar of every URL: unsigned decimals of ASCII digits only.

/// An unsigned decimal of 1 to `max_digits` ASCII digits: no sign, no space, no `+`
/// (which `str::parse` would accept), so every name has exactly one spelling.
pub fn digits(text: &str, max_digits: usize) -> Option<u64> {
    if text.is_empty() || text.len() > max_digits || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A media sequence number, discontinuity sequence or index: up to 20 digits.
pub fn sequence(text: &str) -> Option<u64> {
    digits(text, 20)
}

/// An index (a part number), up to 20 digits and within `usize`.
pub fn index(text: &str) -> Option<usize> {
    sequence(text).and_then(|n| usize::try_from(n).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_digits_are_numbers() {
        assert_eq!(sequence("42"), Some(42));
        assert_eq!(sequence("007"), Some(7));
        assert_eq!(sequence(""), None);
        assert_eq!(sequence("+4"), None);
        assert_eq!(sequence("-4"), None);
        assert_eq!(sequence(" 4"), None);
        assert_eq!(sequence("18446744073709551615"), Some(u64::MAX));
        assert_eq!(sequence("18446744073709551616"), None);
        assert_eq!(sequence("123456789012345678901"), None);
        assert_eq!(digits("1234567", 6), None);
        assert_eq!(index("3"), Some(3));
    }
}
