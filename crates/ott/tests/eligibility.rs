//! OTT-ELIG-1..5 and OTT-GRP-5 with plain values.

mod common;

use common::*;
use ott::{eligibility_problems, eligible, Problem, Rung, Transport, Version};

fn check(this: &str, cand: &ott::NodeView, m: &ott::MemberView) -> Result<(), Problem> {
    let own = member(this);
    eligible(&node(this), cand, m, &own, NOW, Version::SEED_MINIMUM)
}

#[test]
fn a_healthy_member_is_eligible() {
    assert_eq!(check("a", &node("b"), &member("b")), Ok(()));
}

#[test]
fn elig_1_can_substitute_off_is_not_eligible() {
    let mut m = member("b");
    m.can_substitute = false;
    assert_eq!(
        check("a", &node("b"), &m),
        Err(Problem::CannotSubstitute { node: id("b") })
    );
}

#[test]
fn elig_1_live_window_must_be_within_10_minutes() {
    let mut m = member("b");
    m.live_window_at_ms = Some(NOW - 600_000);
    assert_eq!(
        check("a", &node("b"), &m),
        Ok(()),
        "exactly 10 min is still in"
    );
    m.live_window_at_ms = Some(NOW - 600_001);
    assert_eq!(
        check("a", &node("b"), &m),
        Err(Problem::LiveWindowStale { node: id("b") })
    );
    m.live_window_at_ms = None;
    assert_eq!(
        check("a", &node("b"), &m),
        Err(Problem::LiveWindowStale { node: id("b") })
    );
}

#[test]
fn elig_1_live_window_age_is_corrected_by_the_clock_offset() {
    // b's clock is 200 s ahead: its "9 min ago" in its clock is 12 min 20 s ago here.
    let mut b = node("b");
    b.clock_offset_ms = 200_000;
    let mut m = member("b");
    m.live_window_at_ms = Some(NOW + 200_000 - 540_000);
    assert_eq!(check("a", &b, &m), Ok(()));
    m.live_window_at_ms = Some(NOW - 540_000);
    assert_eq!(
        check("a", &b, &m),
        Err(Problem::LiveWindowStale { node: id("b") })
    );
}

#[test]
fn elig_2_timeline_fingerprints_must_match() {
    let mut m = member("b");
    m.timeline_fingerprint = Some(FINGERPRINT + 1);
    assert_eq!(
        check("a", &node("b"), &m),
        Err(Problem::NotSameTimeline { node: id("b") })
    );
    m.timeline_fingerprint = None;
    assert_eq!(
        check("a", &node("b"), &m),
        Err(Problem::NotSameTimeline { node: id("b") })
    );
}

#[test]
fn elig_3_needs_hls_over_mpeg_ts_of_the_same_codec() {
    let mut m = member("b");
    m.ladder.retain(|r| r.transport == Transport::Fmp4);
    assert_eq!(
        check("a", &node("b"), &m),
        Err(Problem::NotHlsTs { node: id("b") })
    );
    let mut m = member("b");
    m.ladder = vec![rung("h265", 2_000_000)];
    assert_eq!(
        check("a", &node("b"), &m),
        Err(Problem::CodecMismatch { node: id("b") })
    );
    m.ladder = vec![rung("H264", 2_000_000)];
    assert_eq!(
        check("a", &node("b"), &m),
        Ok(()),
        "codec case does not matter"
    );
    // The audio codec is part of the ladder too: another one is a mismatch; none
    // announced (an earlier node) is not told apart.
    for (audio, wanted) in [
        (
            Some("opus".to_owned()),
            Err(Problem::CodecMismatch { node: id("b") }),
        ),
        (Some("AAC".to_owned()), Ok(())),
        (None, Ok(())),
    ] {
        let mut other = rung("h264", 2_000_000);
        other.audio_codec = audio.clone();
        m.ladder = vec![other];
        assert_eq!(check("a", &node("b"), &m), wanted, "audio {audio:?}");
    }
}

#[test]
fn elig_3_adaptive_package_rungs_at_most_1_25_times_our_bitrate() {
    let ladder = |hi: u64, lo: u64| vec![rung("h264", hi), rung("h264", lo)];
    let mut own = member("a");
    own.ladder = ladder(4_000_000, 1_000_000);
    let mut m = member("b");
    let run =
        |m: &ott::MemberView| eligible(&node("a"), &node("b"), m, &own, NOW, Version::SEED_MINIMUM);
    m.ladder = ladder(5_000_000, 1_250_000);
    assert_eq!(run(&m), Ok(()), "exactly 1.25x is allowed");
    m.ladder = ladder(5_000_001, 1_000_000);
    assert_eq!(run(&m), Err(Problem::BitrateTooHigh { node: id("b") }));
    m.ladder = ladder(4_000_000, 1_250_001);
    assert_eq!(run(&m), Err(Problem::BitrateTooHigh { node: id("b") }));
    m.ladder = vec![rung("h264", 4_000_000)];
    assert_eq!(run(&m), Err(Problem::LadderMismatch { node: id("b") }));
    // Order of announcement does not matter: rungs pair up by bitrate.
    m.ladder = vec![rung("h264", 1_100_000), rung("h264", 4_100_000)];
    assert_eq!(run(&m), Ok(()));
}

fn codes(list: &[&str]) -> Vec<String> {
    list.iter().map(|c| (*c).to_owned()).collect()
}

fn check_languages(own: &[&str], theirs: &[&str]) -> Result<(), Problem> {
    let mut mine = member("a");
    mine.languages = codes(own);
    let mut m = member("b");
    m.languages = codes(theirs);
    eligible(
        &node("a"),
        &node("b"),
        &m,
        &mine,
        NOW,
        Version::SEED_MINIMUM,
    )
}

#[test]
fn elig_3_a_backup_carries_every_language_of_ours() {
    let missing = |language: &str| {
        Err(Problem::LanguageMissing {
            node: id("b"),
            language: language.into(),
        })
    };
    assert_eq!(check_languages(&[], &[]), Ok(()), "one audio each");
    assert_eq!(
        check_languages(&[], &["eng", "spa"]),
        Ok(()),
        "more is fine"
    );
    assert_eq!(check_languages(&["eng", "spa"], &["eng", "spa"]), Ok(()));
    assert_eq!(
        check_languages(&["eng", "spa"], &["spa", "fra", "eng"]),
        Ok(()),
        "another floor, our languages among its renditions"
    );
    assert_eq!(
        check_languages(&["eng", "spa", "fra"], &["eng", "fra"]),
        missing("spa")
    );
    assert_eq!(
        check_languages(&["eng", "spa"], &[]),
        missing("spa"),
        "a member of one audio has no Spanish"
    );
    assert_eq!(
        check_languages(&["eng"], &[]),
        Ok(()),
        "a named floor alone is the other's one audio"
    );
    assert_eq!(
        check_languages(&["eng", "spa"], &["fra", "spa"]),
        missing("eng")
    );
    assert_eq!(check_languages(&["eng", "SPA"], &["eng", "spa"]), Ok(()));
    let text = missing("spa").unwrap_err().to_string();
    assert_eq!(
        text,
        "the member on node b does not carry the audio language spa"
    );
}

#[test]
fn elig_4_clock_within_240_s_and_view_key() {
    let mut b = node("b");
    b.clock_offset_ms = -240_000;
    assert_eq!(check("a", &b, &member("b")), Ok(()));
    b.clock_offset_ms = 240_001;
    assert_eq!(
        check("a", &b, &member("b")),
        Err(Problem::ClockSkew {
            node: id("b"),
            offset_ms: 240_001
        })
    );
    let mut b = node("b");
    b.has_view_key = false;
    assert_eq!(
        check("a", &b, &member("b")),
        Err(Problem::NoViewKey { node: id("b") })
    );
}

#[test]
fn elig_5_an_overloaded_node_is_not_eligible() {
    for overload in [
        |b: &mut ott::NodeView| b.load.cpu_percent = 86,
        |b: &mut ott::NodeView| b.load.net_percent = 90,
        |b: &mut ott::NodeView| b.load.backup_sessions = 1000,
    ] {
        let mut b = node("b");
        overload(&mut b);
        assert_eq!(
            check("a", &b, &member("b")),
            Err(Problem::Overloaded { node: id("b") })
        );
    }
}

#[test]
fn grp_5_a_node_below_the_minimum_version_is_not_eligible() {
    let mut b = node("b");
    b.version = "2.1.0.455".parse().expect("valid version");
    assert_eq!(
        check("a", &b, &member("b")),
        Err(Problem::VersionTooOld {
            node: id("b"),
            version: Version::new(2, 1, 0, 455),
            minimum: Version::SEED_MINIMUM
        })
    );
    b.version = "2.2.0".parse().expect("valid version");
    assert_eq!(check("a", &b, &member("b")), Ok(()));
}

#[test]
fn a_dead_node_is_not_eligible_and_all_problems_are_listed() {
    let mut b = node("b");
    b.alive = false;
    b.has_view_key = false;
    let mut m = member("b");
    m.can_substitute = false;
    let problems =
        eligibility_problems(&node("a"), &b, &m, &member("a"), NOW, Version::SEED_MINIMUM);
    let codes: Vec<&str> = problems.iter().map(Problem::code).collect();
    assert_eq!(codes, ["node-down", "cannot-substitute", "no-view-key"]);
}

#[test]
fn versions_parse_and_order() {
    let v = |s: &str| s.parse::<Version>();
    assert_eq!(v("2.1.0.456"), Ok(Version::new(2, 1, 0, 456)));
    assert_eq!(v("2.1.0"), Ok(Version::new(2, 1, 0, 0)));
    assert_eq!(v("0.1.0-beta+abc"), Ok(Version::new(0, 1, 0, 0)));
    for bad in [
        "",
        "2",
        "2.1",
        "2.1.x",
        "2.1.0.4.5",
        "2..1",
        "-1.0.0",
        "99999999999.0.0",
    ] {
        assert!(v(bad).is_err(), "{bad:?}");
    }
    assert!(Version::new(2, 1, 0, 456) < Version::new(2, 1, 1, 0));
    assert!(Version::new(2, 0, 9, 999) < Version::SEED_MINIMUM);
    assert_eq!(Version::SEED_MINIMUM.to_string(), "2.1.0.456");
}

proptest::proptest! {
    #[test]
    fn version_parse_never_panics(s in "\\PC{0,30}") {
        let _ = s.parse::<Version>();
    }

    #[test]
    fn version_display_round_trips(a: u32, b: u32, c: u32, d: u32) {
        let v = Version::new(a, b, c, d);
        proptest::prop_assert_eq!(v.to_string().parse::<Version>(), Ok(v));
    }
}

#[test]
fn rung_struct_is_plain_data() {
    // The ladder compares codec family text, not container: an fMP4 rung of another
    // codec does not matter to HLS over MPEG-TS eligibility.
    let mut m = member("b");
    m.ladder.push(Rung {
        codec: "av1".into(),
        audio_codec: Some("aac".into()),
        bitrate_bps: 9_000_000,
        transport: Transport::Fmp4,
    });
    assert_eq!(check("a", &node("b"), &m), Ok(()));
}
