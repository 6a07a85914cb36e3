//! When experiments run (EXP-2): daily at a UTC time, or every N hours from an
//! anchor. Time is milliseconds since the Unix epoch (UTC), passed in by the caller.
//!
//! A run's identity is its scheduled start, so every node computes the same runs from
//! the same definition without talking to the others.

use serde::{Deserialize, Serialize};

const MINUTE_MS: u64 = 60_000;
const HOUR_MS: u64 = 60 * MINUTE_MS;
const DAY_MS: u64 = 24 * HOUR_MS;

/// A recurring start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawSchedule", into = "RawSchedule")]
pub enum Schedule {
    /// Every day at this minute of the UTC day (0..1440).
    Daily {
        /// Minutes after 00:00 UTC.
        minute_of_day: u16,
    },
    /// Every `hours` hours, starting at `anchor_ms` (and at every multiple before it,
    /// so an anchor in the past is fine).
    EveryHours {
        /// The period in hours (1..=8760).
        hours: u32,
        /// One start time, ms since the epoch.
        anchor_ms: u64,
    },
}

impl Schedule {
    /// The period between two starts, ms.
    pub fn period_ms(&self) -> u64 {
        match *self {
            Schedule::Daily { .. } => DAY_MS,
            Schedule::EveryHours { hours, .. } => u64::from(hours) * HOUR_MS,
        }
    }

    fn phase_ms(&self) -> u64 {
        match *self {
            Schedule::Daily { minute_of_day } => u64::from(minute_of_day) * MINUTE_MS,
            Schedule::EveryHours { anchor_ms, .. } => anchor_ms % self.period_ms(),
        }
    }

    /// The first start strictly after `t_ms`.
    pub fn next_run_after(&self, t_ms: u64) -> u64 {
        let (p, phase) = (self.period_ms(), self.phase_ms());
        if t_ms < phase {
            return phase;
        }
        phase + ((t_ms - phase) / p + 1) * p
    }

    /// The last start at or before `t_ms`, or `None` before the first one ever.
    pub fn last_run_at_or_before(&self, t_ms: u64) -> Option<u64> {
        let (p, phase) = (self.period_ms(), self.phase_ms());
        if t_ms < phase {
            return None;
        }
        Some(phase + (t_ms - phase) / p * p)
    }
}

/// The config form: exactly one of `daily_at = "HH:MM"` or `every_hours = N` (with an
/// optional `anchor = "YYYY-MM-DDTHH:MM[:SS]Z"`, default the epoch).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSchedule {
    #[serde(skip_serializing_if = "Option::is_none")]
    daily_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    every_hours: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    anchor: Option<String>,
}

impl TryFrom<RawSchedule> for Schedule {
    type Error = String;

    fn try_from(raw: RawSchedule) -> Result<Self, Self::Error> {
        match (raw.daily_at, raw.every_hours, raw.anchor) {
            (Some(at), None, None) => {
                let minute_of_day = parse_hh_mm(&at)
                    .ok_or_else(|| format!("schedule.daily_at: {at:?} is not HH:MM (UTC)"))?;
                Ok(Schedule::Daily { minute_of_day })
            }
            (None, Some(hours), anchor) => {
                if !(1..=8760).contains(&hours) {
                    return Err(format!("schedule.every_hours: {hours} is outside 1..=8760"));
                }
                let anchor_ms = match anchor {
                    None => 0,
                    Some(a) => parse_utc(&a).ok_or_else(|| {
                        format!("schedule.anchor: {a:?} is not YYYY-MM-DDTHH:MM[:SS]Z")
                    })?,
                };
                Ok(Schedule::EveryHours { hours, anchor_ms })
            }
            (Some(_), _, _) => {
                Err("schedule: daily_at excludes every_hours and anchor".to_string())
            }
            (None, None, _) => Err("schedule: needs daily_at or every_hours".to_string()),
        }
    }
}

impl From<Schedule> for RawSchedule {
    fn from(s: Schedule) -> Self {
        match s {
            Schedule::Daily { minute_of_day } => RawSchedule {
                daily_at: Some(format!(
                    "{:02}:{:02}",
                    minute_of_day / 60,
                    minute_of_day % 60
                )),
                ..RawSchedule::default()
            },
            Schedule::EveryHours { hours, anchor_ms } => RawSchedule {
                every_hours: Some(hours),
                anchor: Some(format_utc(anchor_ms)),
                ..RawSchedule::default()
            },
        }
    }
}

fn two_digits(s: &str) -> Option<u32> {
    if s.len() == 2 && s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse().ok()
    } else {
        None
    }
}

/// `HH:MM` (24 h) to minutes after midnight.
fn parse_hh_mm(s: &str) -> Option<u16> {
    let (h, m) = s.trim().split_once(':')?;
    let (h, m) = (two_digits(h)?, two_digits(m)?);
    (h < 24 && m < 60).then(|| (h * 60 + m) as u16)
}

/// `YYYY-MM-DDTHH:MM[:SS]Z` to ms since the epoch (years 1970..=9999).
pub fn parse_utc(s: &str) -> Option<u64> {
    let s = s.trim().strip_suffix('Z')?;
    let (date, time) = s.split_once('T')?;
    let mut d = date.split('-');
    let (y, mo, da) = (d.next()?, d.next()?, d.next()?);
    if d.next().is_some() || y.len() != 4 || !y.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let y: u32 = y.parse().ok()?;
    let (mo, da) = (two_digits(mo)?, two_digits(da)?);
    let mut t = time.split(':');
    let (h, mi) = (two_digits(t.next()?)?, two_digits(t.next()?)?);
    let sec = match t.next() {
        Some(sec) => two_digits(sec)?,
        None => 0,
    };
    if t.next().is_some() || y < 1970 || !(1..=12).contains(&mo) || h > 23 || mi > 59 || sec > 59 {
        return None;
    }
    if da < 1 || da > days_in_month(y, mo) {
        return None;
    }
    let days = days_from_civil(y, mo, da);
    Some(days * DAY_MS + u64::from(h) * HOUR_MS + u64::from(mi) * MINUTE_MS + u64::from(sec) * 1000)
}

/// ms since the epoch to `YYYY-MM-DDTHH:MM:SSZ` (seconds truncated).
pub fn format_utc(ms: u64) -> String {
    let days = ms / DAY_MS;
    let rem = ms % DAY_MS;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / HOUR_MS,
        rem % HOUR_MS / MINUTE_MS,
        rem % MINUTE_MS / 1000
    )
}

fn is_leap(y: u32) -> bool {
    (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400)
}

fn days_in_month(y: u32, m: u32) -> u32 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a civil date (H. Hinnant's algorithm, years ≥ 1970).
fn days_from_civil(y: u32, m: u32, d: u32) -> u64 {
    let y = u64::from(if m <= 2 { y - 1 } else { y });
    let era = y / 400;
    let yoe = y - era * 400;
    let m = u64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + u64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count since 1970-01-01.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> u64 {
        parse_utc(s).expect("valid date")
    }

    #[test]
    fn civil_dates_round_trip() {
        assert_eq!(utc("1970-01-01T00:00Z"), 0);
        // date -u -d 2026-11-30T12:22:52Z +%s
        assert_eq!(utc("2026-11-30T12:22:52Z"), 1_796_041_372_000);
        assert_eq!(utc("2024-02-29T23:59:59Z"), 1_709_251_199_000);
        for s in [
            "2026-11-30T12:22:52Z",
            "2000-03-01T00:00:00Z",
            "2100-12-31T23:59:00Z",
        ] {
            assert_eq!(format_utc(utc(s)), s);
        }
        for bad in [
            "2023-02-29T00:00Z",
            "2026-13-01T00:00Z",
            "2026-1-01T00:00Z",
            "2026-01-01T24:00Z",
            "2026-01-01T00:00",
            "1969-12-31T23:59Z",
        ] {
            assert_eq!(parse_utc(bad), None, "{bad}");
        }
    }

    #[test]
    fn daily_crosses_day_boundaries() {
        let s = Schedule::Daily {
            minute_of_day: 23 * 60 + 30,
        };
        let day = utc("2026-11-30T00:00Z");
        assert_eq!(s.next_run_after(day), utc("2026-11-30T23:30Z"));
        assert_eq!(
            s.next_run_after(utc("2026-11-30T23:30Z")),
            utc("2026-12-01T23:30Z")
        );
        assert_eq!(
            s.next_run_after(utc("2026-12-31T23:45Z")),
            utc("2027-01-01T23:30Z")
        );
        assert_eq!(
            s.last_run_at_or_before(utc("2026-12-01T00:10Z")),
            Some(utc("2026-11-30T23:30Z"))
        );
        assert_eq!(
            s.last_run_at_or_before(utc("2026-11-30T23:30Z")),
            Some(utc("2026-11-30T23:30Z"))
        );
        assert_eq!(s.last_run_at_or_before(1_000), None);
    }

    #[test]
    fn every_n_hours_from_an_anchor() {
        let s = Schedule::EveryHours {
            hours: 5,
            anchor_ms: utc("2026-11-30T22:00Z"),
        };
        // 5 h does not divide a day: starts drift across midnight.
        assert_eq!(
            s.next_run_after(utc("2026-11-30T22:00Z")),
            utc("2026-12-01T03:00Z")
        );
        assert_eq!(
            s.next_run_after(utc("2026-12-01T03:00Z")),
            utc("2026-12-01T08:00Z")
        );
        // An anchor in the future also fixes the starts before it.
        assert_eq!(
            s.next_run_after(utc("2026-11-30T16:59Z")),
            utc("2026-11-30T17:00Z")
        );
        assert_eq!(
            s.last_run_at_or_before(utc("2026-12-01T02:59Z")),
            Some(utc("2026-11-30T22:00Z"))
        );
    }

    #[test]
    fn config_form_round_trips_and_names_fields() {
        let s: Schedule = serde_json::from_str(r#"{"daily_at":"03:05"}"#).expect("valid");
        assert_eq!(s, Schedule::Daily { minute_of_day: 185 });
        assert_eq!(
            serde_json::to_string(&s).expect("serializes"),
            r#"{"daily_at":"03:05"}"#
        );
        let e: Schedule = serde_json::from_str(r#"{"every_hours":6,"anchor":"2026-01-01T00:30Z"}"#)
            .expect("valid");
        let back: Schedule =
            serde_json::from_str(&serde_json::to_string(&e).expect("serializes")).expect("valid");
        assert_eq!(back, e);
        for (bad, field) in [
            (r#"{"daily_at":"25:00"}"#, "schedule.daily_at"),
            (r#"{"every_hours":0}"#, "schedule.every_hours"),
            (r#"{"every_hours":2,"anchor":"soon"}"#, "schedule.anchor"),
            (r#"{"daily_at":"01:00","every_hours":2}"#, "schedule:"),
            (r#"{}"#, "schedule:"),
        ] {
            let err = serde_json::from_str::<Schedule>(bad)
                .expect_err(bad)
                .to_string();
            assert!(err.contains(field), "{bad}: {err}");
        }
    }
}
