//! Classification of a request into a bucket and a priority (SHED-1).
//!
//! The default table (higher score = more important; adjustments are added, then the
//! result is clamped inside the route's bucket, so no adjustment changes the bucket):
//!
//! | route              | bucket       | base |
//! |--------------------|--------------|------|
//! | `relay`            | Critical     | 96   |
//! | `live_segment`     | Critical     | 92   |
//! | `live_playlist`    | Critical     | 90   |
//! | `playback_start`   | Critical     | 80   |
//! | `admin`            | Critical     | 75   |
//! | `anonymous_relay`  | Degraded     | 62   |
//! | `archive_segment`  | Degraded     | 60   |
//! | `archive_playlist` | Degraded     | 55   |
//! | `meeting_metadata` | Degraded     | 50   |
//! | `status`           | Degraded     | 45   |
//! | `thumbnail`        | Degraded     | 40   |
//! | `telemetry`        | NonCritical  | 20   |
//! | `prefetch`         | NonCritical  | 10   |
//! | `other`            | NonCritical  | 5    |
//!
//! Relay ranks first because one relay connection feeds every viewer of another node;
//! a relay asked without a credential is nobody's node, and ranks below every viewer's
//! live request.
//! Admin (operator control) is CRITICAL (low in it) so an operator can still reach an
//! overloaded node, and fault rules and experiments never shed it, so the API that
//! removes a rule is never shed by that rule. Status reads and metrics scrapes are
//! DEGRADED: they hurt no playback. Device adjustments (default): `smart_tv` +4 (TV players
//! rarely recover from a failed request), `apple` +2, `android` +2, `browser` 0,
//! `media_tool` −3, `unknown` −5. A member in playback: +5; an identified member: +2.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::device::DeviceType;
use crate::error::ConfigError;
use crate::priority::{Bucket, Priority};
use crate::request::{RequestFacts, RouteKind};

/// One row of the route table: which bucket a route belongs to and its base score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteRule {
    /// The route's bucket.
    pub bucket: Bucket,
    /// Base score; must lie inside the bucket's range.
    pub score: u8,
}

impl RouteRule {
    /// The built-in row for a route (the table in the module docs).
    pub const fn default_for(route: RouteKind) -> RouteRule {
        let (bucket, score) = match route {
            RouteKind::Relay => (Bucket::Critical, 96),
            RouteKind::AnonymousRelay => (Bucket::Degraded, 62),
            RouteKind::LiveSegment => (Bucket::Critical, 92),
            RouteKind::LivePlaylist => (Bucket::Critical, 90),
            RouteKind::PlaybackStart => (Bucket::Critical, 80),
            RouteKind::Admin => (Bucket::Critical, 75),
            RouteKind::ArchiveSegment => (Bucket::Degraded, 60),
            RouteKind::ArchivePlaylist => (Bucket::Degraded, 55),
            RouteKind::MeetingMetadata => (Bucket::Degraded, 50),
            RouteKind::Status => (Bucket::Degraded, 45),
            RouteKind::Thumbnail => (Bucket::Degraded, 40),
            RouteKind::Telemetry => (Bucket::NonCritical, 20),
            RouteKind::Prefetch => (Bucket::NonCritical, 10),
            RouteKind::Other => (Bucket::NonCritical, 5),
        };
        RouteRule { bucket, score }
    }
}

/// Built-in per-device adjustment (see the module docs).
pub const fn default_device_adjustment(device: DeviceType) -> i8 {
    match device {
        DeviceType::SmartTv => 4,
        DeviceType::Apple | DeviceType::Android => 2,
        DeviceType::Browser => 0,
        DeviceType::MediaTool => -3,
        DeviceType::Unknown => -5,
    }
}

/// The classification rules as configured (e.g. `[shed.classifier]` in TOML). Every
/// field has a default; routes and devices left out of a partial table keep theirs.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClassifierConfig {
    /// Route → bucket and base score.
    pub routes: BTreeMap<RouteKind, RouteRule>,
    /// Device → score adjustment.
    pub devices: BTreeMap<DeviceType, i8>,
    /// Added when the member has a running playback on this node.
    pub in_playback_bonus: i8,
    /// Added when the request identifies a member (pass, session or member header).
    pub member_bonus: i8,
}

impl Default for ClassifierConfig {
    fn default() -> Self {
        ClassifierConfig {
            routes: RouteKind::ALL
                .into_iter()
                .map(|r| (r, RouteRule::default_for(r)))
                .collect(),
            devices: DeviceType::ALL
                .into_iter()
                .map(|d| (d, default_device_adjustment(d)))
                .collect(),
            in_playback_bonus: 5,
            member_bonus: 2,
        }
    }
}

/// The outcome of classification: what metrics are labelled with and what the shed
/// curve compares against its threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Classified {
    /// The request's bucket (the route's bucket; adjustments never change it).
    pub bucket: Bucket,
    /// The request's priority, inside `bucket`'s range.
    pub priority: Priority,
}

/// The compiled classification rules: fixed-size tables indexed by enum discriminant,
/// so [`Classifier::classify`] is O(1) and never allocates (DESIGN invariant 5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classifier {
    routes: [RouteRule; RouteKind::COUNT],
    devices: [i8; DeviceType::COUNT],
    in_playback_bonus: i8,
    member_bonus: i8,
}

impl Default for Classifier {
    fn default() -> Self {
        Classifier::new(&ClassifierConfig::default()).expect("the built-in table is valid")
    }
}

impl Classifier {
    /// Compile a config, filling routes and devices it leaves out with the defaults.
    ///
    /// # Errors
    /// [`ConfigError::ScoreOutsideBucket`] naming `routes.<route>.score` when a base
    /// score does not lie in its bucket's range.
    pub fn new(config: &ClassifierConfig) -> Result<Classifier, ConfigError> {
        let mut routes = [RouteRule::default_for(RouteKind::Other); RouteKind::COUNT];
        for route in RouteKind::ALL {
            let rule = config
                .routes
                .get(&route)
                .copied()
                .unwrap_or(RouteRule::default_for(route));
            let (min, max) = (rule.bucket.min().get(), rule.bucket.max().get());
            if !(min..=max).contains(&rule.score) {
                return Err(ConfigError::ScoreOutsideBucket {
                    key: format!("routes.{}.score", route.as_str()),
                    score: rule.score,
                    bucket: rule.bucket.as_str(),
                    min,
                    max,
                });
            }
            routes[route as usize] = rule;
        }
        let mut devices = [0i8; DeviceType::COUNT];
        for device in DeviceType::ALL {
            devices[device as usize] = config
                .devices
                .get(&device)
                .copied()
                .unwrap_or(default_device_adjustment(device));
        }
        Ok(Classifier {
            routes,
            devices,
            in_playback_bonus: config.in_playback_bonus,
            member_bonus: config.member_bonus,
        })
    }

    /// Bucket and priority of a request: base score of its route plus the device,
    /// member and in-playback adjustments, clamped inside the route's bucket.
    pub fn classify(&self, facts: &RequestFacts) -> Classified {
        let rule = self.routes[facts.route as usize];
        let mut score = i16::from(rule.score) + i16::from(self.devices[facts.device as usize]);
        if facts.in_playback {
            score += i16::from(self.in_playback_bonus);
        }
        if facts.member.is_some() {
            score += i16::from(self.member_bonus);
        }
        Classified {
            bucket: rule.bucket,
            priority: rule.bucket.clamp(score),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::MemberId;

    fn facts(route: RouteKind, device: DeviceType) -> RequestFacts {
        RequestFacts {
            route,
            device,
            member: None,
            in_playback: false,
        }
    }

    #[test]
    fn default_table_matches_shed_1_buckets() {
        let c = Classifier::default();
        let b = |r| c.classify(&facts(r, DeviceType::Browser)).bucket;
        for r in [
            RouteKind::LivePlaylist,
            RouteKind::LiveSegment,
            RouteKind::PlaybackStart,
        ] {
            assert_eq!(b(r), Bucket::Critical, "{r:?}");
        }
        for r in [
            RouteKind::ArchivePlaylist,
            RouteKind::Thumbnail,
            RouteKind::MeetingMetadata,
        ] {
            assert_eq!(b(r), Bucket::Degraded, "{r:?}");
        }
        for r in [RouteKind::Telemetry, RouteKind::Prefetch] {
            assert_eq!(b(r), Bucket::NonCritical, "{r:?}");
        }
    }

    #[test]
    fn adjustments_add_and_clamp_inside_bucket() {
        let c = Classifier::default();
        let base = c.classify(&facts(RouteKind::MeetingMetadata, DeviceType::Browser));
        assert_eq!(base.priority.get(), 50);
        let watching = RequestFacts {
            member: Some(MemberId(7)),
            in_playback: true,
            device: DeviceType::SmartTv,
            ..facts(RouteKind::MeetingMetadata, DeviceType::Browser)
        };
        assert_eq!(c.classify(&watching).priority.get(), 50 + 4 + 5 + 2);
        // Relay 96 + 4 + 5 + 2 would be 107: clamped to the top of CRITICAL.
        let relay = RequestFacts {
            route: RouteKind::Relay,
            ..watching
        };
        assert_eq!(c.classify(&relay).priority, Priority::TOP);
        // Other 5 - 5 clamps at the bottom of NON_CRITICAL, not below.
        let low = c.classify(&facts(RouteKind::Other, DeviceType::Unknown));
        assert_eq!(low.priority.get(), 0);
    }

    #[test]
    fn partial_toml_keeps_defaults_and_validation_names_the_key() {
        let cfg: ClassifierConfig = toml::from_str(
            "in_playback_bonus = 8\n[routes.thumbnail]\nbucket = \"non_critical\"\nscore = 25\n[devices]\nsmart_tv = 10\n",
        )
        .expect("valid toml");
        let c = Classifier::new(&cfg).expect("valid config");
        let t = c.classify(&facts(RouteKind::Thumbnail, DeviceType::SmartTv));
        assert_eq!(t.bucket, Bucket::NonCritical);
        assert_eq!(t.priority.get(), 29, "25 + 10 clamped to the bucket top");
        let seg = c.classify(&facts(RouteKind::LiveSegment, DeviceType::Apple));
        assert_eq!(seg.priority.get(), 94, "untouched rows keep their defaults");

        let bad: ClassifierConfig =
            toml::from_str("[routes.telemetry]\nbucket = \"critical\"\nscore = 20\n")
                .expect("valid toml");
        let err = Classifier::new(&bad).expect_err("score outside bucket");
        assert!(
            err.to_string().starts_with("routes.telemetry.score:"),
            "{err}"
        );

        assert!(toml::from_str::<ClassifierConfig>("in_playbak_bonus = 1").is_err());
    }

    proptest::proptest! {
        /// SHED-1: whatever the adjustments, a request stays in its route's bucket, and
        /// being in playback or identified never lowers its priority (default config).
        #[test]
        fn priority_stays_in_route_bucket(
            r in 0usize..RouteKind::COUNT,
            d in 0usize..DeviceType::COUNT,
            member in proptest::option::of(proptest::num::u64::ANY),
            in_playback in proptest::bool::ANY,
            dev_adj in proptest::num::i8::ANY,
            play in proptest::num::i8::ANY,
            mem in proptest::num::i8::ANY,
        ) {
            let route = RouteKind::ALL[r];
            let device = DeviceType::ALL[d];
            let f = RequestFacts { route, device, member: member.map(MemberId), in_playback };
            let mut cfg = ClassifierConfig { in_playback_bonus: play, member_bonus: mem, ..ClassifierConfig::default() };
            cfg.devices.insert(device, dev_adj);
            let c = Classifier::new(&cfg).expect("defaults are valid").classify(&f);
            proptest::prop_assert_eq!(c.bucket, RouteRule::default_for(route).bucket);
            proptest::prop_assert_eq!(c.priority.bucket(), c.bucket);

            let d = Classifier::default();
            let plain = d.classify(&RequestFacts { member: None, in_playback: false, ..f });
            proptest::prop_assert!(d.classify(&f).priority >= plain.priority);
        }
    }
}
