//! Per-session KPI state of observed members (EXP-1): turns beacons and request
//! outcomes into [`KpiEvent`]s, each session counted once per outcome
//! ([`SessionFlags`]), and infers starts and stalls of players that send no beacons
//! from their segment requests ([`StallDetector`]).
//!
//! A session is keyed by a 64-bit hash: of the player's session id (beacons and the
//! `X-Brdyun-Session` header carry the same one), or of member and device for players
//! that name no session. The table is bounded ([`SessionLimits::max_sessions`]; new
//! sessions beyond it are not tracked) and idle sessions expire.

use std::collections::HashMap;

use experiments::{KpiEvent, SegmentRequest, SessionFlags, StallDetector, StallDetectorConfig};
use shed::{DeviceType, MemberId};

/// Bounds of the session table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// Sessions tracked at most.
    pub max_sessions: usize,
    /// A session silent this long is forgotten, ms.
    pub idle_ms: u64,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max_sessions: 65_536,
            idle_ms: 10 * 60 * 1_000,
        }
    }
}

/// What a player reports (the beacon's `event`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observation {
    /// The first frame showed, `ttff_ms` after the start request.
    Started {
        /// Time to first frame, ms.
        ttff_ms: u64,
    },
    /// The player gave up starting.
    StartFailed,
    /// A fatal playback error after the start.
    Error,
    /// A stall (rebuffering) during playback.
    Stall,
    /// A CRITICAL request (playlist, segment) failed as the player saw it (network
    /// error, timeout) without a server answer this node could count.
    CriticalFailed,
}

#[derive(Debug, Clone)]
struct Session {
    member: MemberId,
    device: DeviceType,
    flags: SessionFlags,
    /// The session's start outcome was counted (one trial per session).
    start_counted: bool,
    /// When a beacon-less player asked for the master playlist, ms.
    start_requested_ms: Option<u64>,
    detector: StallDetector,
    last_seen_ms: u64,
}

/// The session table.
#[derive(Debug)]
pub struct Sessions {
    limits: SessionLimits,
    stall: StallDetectorConfig,
    map: HashMap<u64, Session>,
}

impl Sessions {
    /// An empty table.
    pub fn new(limits: SessionLimits, stall: StallDetectorConfig) -> Sessions {
        Sessions {
            limits,
            stall,
            map: HashMap::new(),
        }
    }

    /// Sessions tracked now.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no session is tracked.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    fn session(
        &mut self,
        key: u64,
        member: MemberId,
        device: DeviceType,
        now_ms: u64,
    ) -> Option<&mut Session> {
        if !self.map.contains_key(&key) && self.map.len() >= self.limits.max_sessions {
            self.expire(now_ms);
            if self.map.len() >= self.limits.max_sessions {
                return None;
            }
        }
        let stall = self.stall;
        let s = self.map.entry(key).or_insert_with(|| Session {
            member,
            device,
            flags: SessionFlags::default(),
            start_counted: false,
            start_requested_ms: None,
            detector: StallDetector::new(stall),
            last_seen_ms: now_ms,
        });
        // A session id reused by another member or device is a new session.
        if s.member != member || s.device != device {
            *s = Session {
                member,
                device,
                flags: SessionFlags::default(),
                start_counted: false,
                start_requested_ms: None,
                detector: StallDetector::new(stall),
                last_seen_ms: now_ms,
            };
        }
        s.last_seen_ms = s.last_seen_ms.max(now_ms);
        Some(s)
    }

    /// The KPI event of a player's report, if it counts (a second start outcome of a
    /// session does not).
    pub fn observe(
        &mut self,
        key: u64,
        member: MemberId,
        device: DeviceType,
        observation: Observation,
        now_ms: u64,
    ) -> Option<KpiEvent> {
        let s = self.session(key, member, device, now_ms)?;
        match observation {
            Observation::Started { ttff_ms } => (!std::mem::replace(&mut s.start_counted, true))
                .then_some(KpiEvent::PlaybackStarted { ttff_ms }),
            Observation::StartFailed => {
                (!std::mem::replace(&mut s.start_counted, true)).then_some(KpiEvent::StartFailed)
            }
            Observation::Error => Some(s.flags.playback_error()),
            Observation::Stall => Some(s.flags.stall()),
            Observation::CriticalFailed => Some(s.flags.critical_request(true)),
        }
    }

    /// The event of an answered CRITICAL request of the session.
    pub fn critical_request(
        &mut self,
        key: u64,
        member: MemberId,
        device: DeviceType,
        failed: bool,
        now_ms: u64,
    ) -> Option<KpiEvent> {
        let s = self.session(key, member, device, now_ms)?;
        Some(s.flags.critical_request(failed))
    }

    /// A beacon-less player asked for the master playlist: a start attempt begins.
    pub fn playback_requested(
        &mut self,
        key: u64,
        member: MemberId,
        device: DeviceType,
        now_ms: u64,
    ) {
        if let Some(s) = self.session(key, member, device, now_ms) {
            if s.start_requested_ms.is_none() {
                s.start_requested_ms = Some(now_ms);
            }
        }
    }

    /// A beacon-less player asked for a segment: its first one is the session's start
    /// (time to first frame ≈ from the master playlist request to this one, plus the
    /// assumed fetch time), a later one may reveal a stall.
    pub fn segment_requested(
        &mut self,
        key: u64,
        member: MemberId,
        device: DeviceType,
        sequence: u64,
        duration_ms: u64,
        now_ms: u64,
    ) -> Vec<KpiEvent> {
        let fetch_ms = self.stall.fetch_ms;
        let Some(s) = self.session(key, member, device, now_ms) else {
            return Vec::new();
        };
        let mut events = Vec::new();
        if !s.start_counted {
            s.start_counted = true;
            let from = s.start_requested_ms.unwrap_or(now_ms);
            events.push(KpiEvent::PlaybackStarted {
                ttff_ms: now_ms.saturating_sub(from).saturating_add(fetch_ms),
            });
        }
        let stalled = s.detector.on_segment(SegmentRequest {
            at_ms: now_ms,
            sequence,
            duration_ms,
        });
        if stalled {
            events.push(s.flags.stall());
        }
        events
    }

    /// Forgets sessions silent for longer than the idle limit.
    pub fn expire(&mut self, now_ms: u64) {
        let idle = self.limits.idle_ms;
        self.map
            .retain(|_, s| now_ms.saturating_sub(s.last_seen_ms) < idle);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: MemberId = MemberId(42);
    const D: DeviceType = DeviceType::Browser;

    fn table(max: usize) -> Sessions {
        Sessions::new(
            SessionLimits {
                max_sessions: max,
                idle_ms: 1_000,
            },
            StallDetectorConfig::default(),
        )
    }

    #[test]
    fn one_start_outcome_per_session() {
        let mut t = table(8);
        assert_eq!(
            t.observe(1, M, D, Observation::Started { ttff_ms: 800 }, 0),
            Some(KpiEvent::PlaybackStarted { ttff_ms: 800 })
        );
        assert_eq!(t.observe(1, M, D, Observation::StartFailed, 1), None);
        assert_eq!(
            t.observe(1, M, D, Observation::Stall, 2),
            Some(KpiEvent::Stall {
                first_in_session: true
            })
        );
        assert_eq!(
            t.observe(1, M, D, Observation::Stall, 3),
            Some(KpiEvent::Stall {
                first_in_session: false
            })
        );
        // The same id from another device is another session.
        assert_eq!(
            t.observe(1, M, DeviceType::SmartTv, Observation::StartFailed, 4),
            Some(KpiEvent::StartFailed)
        );
    }

    #[test]
    fn bounded_and_idle_sessions_expire() {
        let mut t = table(2);
        assert!(t.critical_request(1, M, D, false, 0).is_some());
        assert!(t.critical_request(2, M, D, false, 0).is_some());
        assert!(t.critical_request(3, M, D, false, 10).is_none(), "full");
        assert!(
            t.critical_request(3, M, D, false, 2_000).is_some(),
            "idle ones purged"
        );
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn beaconless_start_and_stall_are_inferred() {
        let mut t = table(8);
        t.playback_requested(9, M, D, 1_000);
        let first = t.segment_requested(9, M, D, 100, 2_000, 1_300);
        assert_eq!(first, vec![KpiEvent::PlaybackStarted { ttff_ms: 800 }]);
        assert!(t.segment_requested(9, M, D, 101, 2_000, 3_300).is_empty());
        // Ten seconds late with 4 s of buffer: a stall.
        let late = t.segment_requested(9, M, D, 102, 2_000, 13_300);
        assert_eq!(
            late,
            vec![KpiEvent::Stall {
                first_in_session: true
            }]
        );
    }
}
