//! The config's parsing and validation, key by key.

use super::*;

/// The defaults that docs/load-shedding.md spells out for a node that must hold its
/// viewers through an overload (SHED-1..3) are the node's defaults, and a node
/// accepts them.
#[test]
fn the_documented_overload_defaults_are_the_defaults() {
    let doc = include_str!("../../docs/load-shedding.md");
    let after = doc
        .split_once("Spelled out, the defaults are")
        .expect("docs/load-shedding.md spells out the shedding defaults")
        .1;
    let block = after
        .split_once("```toml\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .expect("a toml block follows")
        .0;
    let config = Config::parse(block).expect("docs/load-shedding.md's TOML block parses");
    let shedding = &config.shedding;
    assert_eq!(*shedding, server::shed::ShedSettings::default());
    assert_eq!(shedding.level_source, server::shed::LevelSource::Cut);
    assert_eq!(shedding.priority_lane, server::shed::LanePriority::Nice);
    server::shed::Shedder::new(shedding).expect("a node builds its shedder from it");
}

#[test]
fn a_short_admin_token_and_a_node_name_outside_the_grammar_are_refused() {
    let err = |t: &str| format!("{:#}", Config::parse(t).unwrap_err());
    let short = err("[node]\nadmin_token = \"tok\"\n");
    assert!(
        short.contains("node.admin_token") && short.contains("at least 24"),
        "{short}"
    );
    assert!(err("[node]\nname = \"node a\"\n").contains("node.name"));
    let ok = Config::parse(
        "[node]\nname = \"edge-1.eu:2\"\nadmin_token = \"0123456789abcdef01234567\"\n",
    )
    .expect("a good name and token");
    assert!(!ok.node.trust_loopback, "trust is off unless set");
}

#[test]
fn ll_hls_part_settings_apply_and_are_checked() {
    let stream = "[[stream]]\nname = \"a\"\ninputs = [\"publish://\"]\n";
    let config = Config::parse(&format!(
        "[defaults]\npart_duration = 0.5\n{stream}part_hold_back = 1.2"
    ))
    .unwrap();
    let settings = config.streams[0].settings(&config.defaults);
    assert_eq!(settings.part_duration_ms, 500);
    assert_eq!(settings.part_hold_back_ms, Some(1200));
    let err = |text: String| format!("{:#}", Config::parse(&text).unwrap_err());
    assert!(err(format!("{stream}part_duration = 3.0")).contains("stream[0].part_duration"));
    assert!(err(format!("{stream}part_duration = 0.1")).contains("part_duration"));
    assert!(err(format!("{stream}part_hold_back = 1.5")).contains("stream[0].part_hold_back"));
    assert!(err("[defaults]\npart_hold_back = 0.5".into()).contains("defaults.part_hold_back"));
}

#[test]
fn a_full_config_parses_with_defaults() {
    let config = Config::parse(
        r#"
        [node]
        name = "node-a"
        hostname = "node-a.example.net"
        http = "127.0.0.1:8080"
        [[stream]]
        name = "meeting"
        inputs = ["http://127.0.0.1:9000/meeting/mpegts", "publish://?key=k"]
        window = 30
        "#,
    )
    .unwrap();
    assert_eq!(config.node.name, "node-a");
    let settings = config.streams[0].settings(&config.defaults);
    assert_eq!(
        settings,
        StreamSettings {
            segment_duration_ms: 2000,
            window_segments: 15,
            part_duration_ms: 1000,
            part_hold_back_ms: None,
            source_timeout_ms: 5000,
            publish_timeout_ms: 1000,
            dvr: None,
            dvr_file_span_ms: 600_000,
            dvr_remote_depth_ms: None,
        }
    );
}

#[test]
fn a_608_language_must_be_a_language_tag() {
    let config = |language: &str| {
        Config::parse(&format!(
            "[[stream]]\nname = \"m\"\ninputs = [\"publish://?key=k\"]\ncc_language = \"{language}\"\n"
        ))
    };
    assert_eq!(
        config("pt-BR").unwrap().streams[0].cc_language.as_deref(),
        Some("pt-BR")
    );
    let error = format!("{:#}", config("portuguese").unwrap_err());
    assert!(
        error.contains("cc_language") && error.contains("BCP 47"),
        "{error}"
    );
}

#[test]
fn a_streams_languages_are_checked() {
    let config = |languages: &str| {
        Config::parse(&format!(
            "[[stream]]\nname = \"m\"\ninputs = [\"publish://?key=k\"]\n{languages}"
        ))
    };
    let entry =
        |code: &str, extra: &str| format!("[[stream.language]]\ncode = \"{code}\"\n{extra}");
    let good = config(&format!(
        "{}{}",
        entry("eng", ""),
        entry("SPA", "name = \"Español\"\npid = 258\n")
    ))
    .unwrap();
    let languages = super::audio_languages(&good.streams[0].languages);
    assert_eq!(languages[0].name, "English", "the default name");
    assert_eq!(
        (languages[1].language.as_str(), languages[1].name.as_str()),
        ("spa", "Español")
    );
    let sources = super::language_sources(&good.streams[0].languages);
    assert_eq!(sources.len(), 1, "the floor is the main audio");
    assert_eq!(sources[0].pid, Some(258));
    for (bad, expected) in [
        (entry("es", ""), "ISO 639-2"),
        (entry("und", ""), "ISO 639-2"),
        (format!("{}{}", entry("eng", ""), entry("eng", "")), "twice"),
        (entry("eng", "pid = 258\n"), "floor"),
        (
            format!("{}{}", entry("eng", ""), entry("spa", "pid = 8191\n")),
            "PID",
        ),
        (
            format!("{}{}", entry("eng", ""), entry("spa", "name = \"a\\nb\"\n")),
            "control",
        ),
        (
            [
                "eng", "spa", "fra", "deu", "ita", "por", "rus", "jpn", "kor",
            ]
            .iter()
            .map(|c| entry(c, ""))
            .collect::<String>(),
            "at most 8",
        ),
    ] {
        let error = format!("{:#}", config(&bad).unwrap_err());
        assert!(
            error.contains("language") && error.contains(expected),
            "{bad}: {error}"
        );
    }
}

#[test]
fn dvr_settings_merge_over_the_defaults() {
    let config = Config::parse(
        r#"
        [defaults.dvr]
        depth = "2d"
        max_bytes = "20G"
        [[stream]]
        name = "a"
        inputs = ["publish://"]
        dvr = { enabled = true }
        [[stream]]
        name = "b"
        inputs = ["publish://"]
        dvr = { enabled = true, depth = 3600, max_bytes = 1000000 }
        [[stream]]
        name = "c"
        inputs = ["publish://"]
        "#,
    )
    .unwrap();
    let dvr = |i: usize| config.streams[i].settings(&config.defaults).dvr;
    assert_eq!(
        dvr(0),
        Some(dvr::Retention {
            depth_ms: Some(2 * 86_400_000),
            max_bytes: Some(20 << 30)
        })
    );
    assert_eq!(
        dvr(1),
        Some(dvr::Retention {
            depth_ms: Some(3_600_000),
            max_bytes: Some(1_000_000)
        })
    );
    assert_eq!(dvr(2), None);
    let err = |text: &str| format!("{:#}", Config::parse(text).unwrap_err());
    let stream = "[[stream]]\nname = \"a\"\ninputs = [\"publish://\"]\n";
    assert!(err(&format!(
        "{stream}dvr = {{ enabled = true, depth = \"7w\" }}"
    ))
    .contains("depth"));
    assert!(err(&format!("{stream}dvr = {{ enabled = true, depth = -1 }}")).contains("dvr"));
    assert!(err(&format!("{stream}dvr = {{ max_bytes = \"lots\" }}")).contains("max_bytes"));
    assert!(err(&format!("{stream}dvr = {{ enable = true }}")).contains("enable"));
}

#[test]
fn bad_configs_name_the_key() {
    let err = |text: &str| format!("{:#}", Config::parse(text).unwrap_err());
    assert!(err("[node]\nnmae = \"x\"").contains("nmae"));
    assert!(err("[node]\nhttp = \"nowhere\"").contains("http"));
    assert!(err("[node]\nhttps = \"127.0.0.1:1\"").contains("node.https"));
    assert!(
        err("[[stream]]\nname = \"a/b\"\ninputs = [\"udp://1.2.3.4:5\"]")
            .contains("stream[0].name")
    );
    assert!(err("[[stream]]\nname = \"a\"\ninputs = []").contains("stream[0].inputs"));
    assert!(err(
        "[[stream]]\nname = \"a\"\ninputs = [\"udp://127.0.0.1:5000\"]\nsegment_duration = 0.1"
    )
    .contains("segment_duration"));
    assert!(err("[[stream]]\nname = \"a\"\ninputs = [\"publish://\"]\n[[stream]]\nname = \"a\"\ninputs = [\"publish://\"]").contains("twice"));
}

#[test]
fn experiments_parse_and_bad_ones_name_the_field() {
    let good = "[[experiment]]\nid = \"nc\"\npriorities = \"non_critical\"\ncontrol_share_bp = 50\nexperiment_share_bp = 50\nschedule = { daily_at = \"03:00\" }\n";
    let config = Config::parse(good).expect("valid");
    assert_eq!(config.experiments.len(), 1);
    assert_eq!(config.experiments[0].duration_minutes, 45);
    let err = |text: &str| format!("{:#}", Config::parse(text).unwrap_err());
    let bad_share = good.replace("experiment_share_bp = 50", "experiment_share_bp = 5000");
    assert!(
        err(&bad_share).contains("experiment[0].experiment_share_bp"),
        "{}",
        err(&bad_share)
    );
    assert!(err(&format!("{good}colour = \"red\"\n")).contains("colour"));
    assert!(err(&format!("{good}{good}")).contains("experiment[1].id"));
}

#[test]
fn logins_parse_and_bad_ones_name_the_key() {
    let good = "[[login]]\nname = \"alice\"\ntoken = \"alice-token\"\nmax_connections = 2\n";
    let config = Config::parse(good).unwrap();
    assert_eq!(config.logins[0].max_connections, 2);
    let err = |text: &str| format!("{:#}", Config::parse(text).unwrap_err());
    assert!(err(&good.replace("alice-token", "short")).contains("login[0].token"));
    assert!(err(&good.replace("\"alice\"", "\"a b\"")).contains("login[0].name"));
    assert!(err(&format!("{good}{good}")).contains("login[1].name"));
    assert!(err("[[login]]\nname = \"x\"\ntoken = \"12345678\"").contains("max_connections"));
}

#[test]
fn connection_caps_are_derived_unless_set_and_a_bad_one_names_its_key() {
    let node = Config::parse("").unwrap().node;
    assert_eq!(
        (node.max_connections, node.max_connections_per_client),
        (None, None)
    );
    assert!((node.body_timeout - 10.0).abs() < f64::EPSILON);
    let set =
        "[node]\nmax_connections = 300\nmax_connections_per_client = 30\nbody_timeout = 2.5\n";
    let node = Config::parse(set).unwrap().node;
    assert_eq!(node.max_connections, Some(300));
    assert_eq!(node.max_connections_per_client, Some(30));
    assert!((node.body_timeout - 2.5).abs() < f64::EPSILON);
    let err = |text: &str| format!("{:#}", Config::parse(text).unwrap_err());
    assert!(err("[node]\nmax_connections = 0\n").contains("node.max_connections"));
    assert!(
        err("[node]\nmax_connections_per_client = 0\n").contains("node.max_connections_per_client")
    );
    assert!(err("[node]\nbody_timeout = 0.1\n").contains("node.body_timeout"));
}

#[test]
fn the_shutdown_delay_is_off_by_default_and_bounded() {
    let node = Config::parse("[node]\n").unwrap().node;
    assert!(node.shutdown_delay.abs() < f64::EPSILON);
    let node = Config::parse("[node]\nshutdown_delay = 5\n").unwrap().node;
    assert!((node.shutdown_delay - 5.0).abs() < f64::EPSILON);
    let err = format!(
        "{:#}",
        Config::parse("[node]\nshutdown_delay = 301\n").unwrap_err()
    );
    assert!(err.contains("node.shutdown_delay"), "{err}");
    let err = format!(
        "{:#}",
        Config::parse("[node]\nshutdown_delay = -1\n").unwrap_err()
    );
    assert!(err.contains("node.shutdown_delay"), "{err}");
}
