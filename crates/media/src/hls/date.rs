//! RFC 3339 dates for EXT-X-PROGRAM-DATE-TIME, without a date-time dependency.

use std::fmt;

/// Writes Unix milliseconds as an RFC 3339 UTC date with milliseconds,
/// e.g. `2024-05-01T12:00:00.000Z` (proleptic Gregorian, years 0000..=9999 expected).
pub fn format_rfc3339_ms(w: &mut impl fmt::Write, unix_ms: i64) -> fmt::Result {
    let secs = unix_ms.div_euclid(1000);
    let ms = unix_ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    write!(
        w,
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

/// Days since 1970-01-01 → (year, month, day); Howard Hinnant's algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(ms: i64) -> String {
        let mut s = String::new();
        format_rfc3339_ms(&mut s, ms).expect("writing to a String cannot fail");
        s
    }

    #[test]
    fn formats_known_instants() {
        assert_eq!(fmt(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(fmt(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(fmt(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(fmt(1_714_564_800_000), "2024-05-01T12:00:00.000Z");
    }
}
