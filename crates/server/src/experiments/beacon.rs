//! The player beacon format of `POST /telemetry` (EXP-1), parsed strictly enough that a
//! bad beacon is a `400` with a code and never a panic:
//!
//! ```json
//! {"session":"3f9a…","member":"b71c…","device":"browser","event":"start","ttff_ms":1830}
//! ```
//!
//! - `session` (required): the player's id of this playback, 1–128 bytes; the same
//!   value the player sends as `X-Brdyun-Session` on its media requests.
//! - `member` (optional): the member id; without it the `X-Brdyun-Member` header is
//!   used, and a beacon of nobody is accepted but not counted.
//! - `device` (optional): a device type name (`browser`, `apple`, `android`,
//!   `smart_tv`, `media_tool`, `unknown`); without it `X-Brdyun-Device` or the
//!   `User-Agent` decides, as for every request.
//! - `event`: `start` (needs `ttff_ms`, the time from the start request to the first
//!   frame), `start_failed`, `error` (fatal playback error), `stall`, or
//!   `critical_failed` (a playlist or segment request the player lost to the network).
//!
//! Unknown keys are ignored, so newer players can add fields; a JSON object with no
//! `event` or another event (a heartbeat, a log line) is accepted and not counted, as
//! `/telemetry` is also the players' log sink. Only a body that is not a JSON object,
//! or a KPI event with a missing or unusable field, is refused.

use serde::Deserialize;
use shed::DeviceType;

use super::sessions::Observation;

/// Largest beacon body accepted, bytes.
pub const MAX_BEACON_BYTES: usize = 4 * 1024;

/// Longest `session` or `member` value, bytes.
pub const MAX_ID_BYTES: usize = 128;

/// Longest accepted time to first frame (beyond it the player measured nonsense), ms.
pub const MAX_TTFF_MS: u64 = 10 * 60 * 1_000;

/// A parsed beacon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Beacon {
    /// The playback session id.
    pub session: String,
    /// The member id, when the body names it.
    pub member: Option<String>,
    /// The device type, when the body names it.
    pub device: Option<DeviceType>,
    /// What happened.
    pub observation: Observation,
}

/// Why a beacon was refused; the message names the field (it is the player's own
/// input, no internal detail).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BeaconError {
    /// Not JSON, or a field of the wrong type.
    #[error("beacon is not valid JSON of the beacon format")]
    Malformed,
    /// A field is missing or out of range.
    #[error("beacon field {0}: missing or out of range")]
    Field(&'static str),
}

#[derive(Deserialize)]
struct Raw {
    session: Option<String>,
    member: Option<String>,
    device: Option<String>,
    event: Option<String>,
    ttff_ms: Option<u64>,
}

fn id(value: Option<String>, field: &'static str) -> Result<Option<String>, BeaconError> {
    match value {
        None => Ok(None),
        Some(v) if !v.is_empty() && v.len() <= MAX_ID_BYTES => Ok(Some(v)),
        Some(_) => Err(BeaconError::Field(field)),
    }
}

impl Beacon {
    /// Parses one telemetry body; `None` for a JSON object that is no KPI event.
    ///
    /// # Errors
    /// [`BeaconError::Malformed`] for anything that is not a JSON object of the
    /// format, [`BeaconError::Field`] naming a missing or unusable field of a KPI event.
    pub fn parse(body: &[u8]) -> Result<Option<Beacon>, BeaconError> {
        let raw: Raw = serde_json::from_slice(body).map_err(|_| BeaconError::Malformed)?;
        if !matches!(
            raw.event.as_deref(),
            Some("start" | "start_failed" | "error" | "stall" | "critical_failed")
        ) {
            return Ok(None);
        }
        let session = id(raw.session, "session")?.ok_or(BeaconError::Field("session"))?;
        let member = id(raw.member, "member")?;
        let device = match raw.device {
            None => None,
            Some(name) => Some(DeviceType::from_name(&name).ok_or(BeaconError::Field("device"))?),
        };
        let observation = match raw.event.as_deref() {
            Some("start") => Observation::Started {
                ttff_ms: raw
                    .ttff_ms
                    .filter(|t| *t <= MAX_TTFF_MS)
                    .ok_or(BeaconError::Field("ttff_ms"))?,
            },
            Some("start_failed") => Observation::StartFailed,
            Some("error") => Observation::Error,
            Some("stall") => Observation::Stall,
            Some("critical_failed") => Observation::CriticalFailed,
            _ => return Ok(None),
        };
        Ok(Some(Beacon {
            session,
            member,
            device,
            observation,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_kind_parses() {
        let b = Beacon::parse(
            br#"{"session":"s1","member":"m","device":"smart_tv","event":"start","ttff_ms":900,"extra":1}"#,
        )
        .expect("valid")
        .expect("a KPI event");
        assert_eq!(b.session, "s1");
        assert_eq!(b.member.as_deref(), Some("m"));
        assert_eq!(b.device, Some(DeviceType::SmartTv));
        assert_eq!(b.observation, Observation::Started { ttff_ms: 900 });
        for (name, obs) in [
            ("start_failed", Observation::StartFailed),
            ("error", Observation::Error),
            ("stall", Observation::Stall),
            ("critical_failed", Observation::CriticalFailed),
        ] {
            let body = format!(r#"{{"session":"s","event":"{name}"}}"#);
            let b = Beacon::parse(body.as_bytes())
                .expect(name)
                .expect("a KPI event");
            assert_eq!((b.observation, b.member, b.device), (obs, None, None));
        }
    }

    #[test]
    fn bad_beacons_name_the_problem() {
        for ignored in [
            &b"{}"[..],
            br#"{"event":"heartbeat","bufferSeconds":8.1}"#,
            br#"{"session":"s","event":"dance"}"#,
        ] {
            assert_eq!(Beacon::parse(ignored), Ok(None));
        }
        let cases: [(&[u8], BeaconError); 8] = [
            (b"", BeaconError::Malformed),
            (b"[1,2]", BeaconError::Malformed),
            (br#"{"session":5,"event":"stall"}"#, BeaconError::Malformed),
            (br#"{"event":"stall"}"#, BeaconError::Field("session")),
            (
                br#"{"session":"","event":"stall"}"#,
                BeaconError::Field("session"),
            ),
            (
                br#"{"session":"s","event":"start"}"#,
                BeaconError::Field("ttff_ms"),
            ),
            (
                br#"{"session":"s","event":"start","ttff_ms":-3}"#,
                BeaconError::Malformed,
            ),
            (
                br#"{"session":"s","device":"fridge","event":"stall"}"#,
                BeaconError::Field("device"),
            ),
        ];
        for (body, want) in cases {
            assert_eq!(
                Beacon::parse(body),
                Err(want.clone()),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        let long = format!(r#"{{"session":"{}","event":"stall"}}"#, "x".repeat(129));
        assert_eq!(
            Beacon::parse(long.as_bytes()),
            Err(BeaconError::Field("session"))
        );
    }
}
