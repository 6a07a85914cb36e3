//! OTT-PROT-1, OTT-PLAY-1: master playlist variants with backups.

mod common;

use common::*;
use media::hls::{MasterPlaylist, Variant};
use ott::{backups_for_viewer, master_variants, BackupLink, PlayerKind, ViewerContext};

fn own_variant() -> Variant {
    Variant {
        uri: "mono.m3u8".into(),
        bandwidth: 2_200_000,
        average_bandwidth: Some(1_900_000),
        codecs: vec!["avc1.64001f".into(), "mp4a.40.2".into()],
        resolution: Some((1280, 720)),
        frame_rate_milli: Some(25_000),
    }
}

fn link(node: &str, stream: &str) -> BackupLink {
    BackupLink {
        url_base: format!("https://{node}.example.net/"),
        stream: stream.into(),
        pass: format!("PASS-{node}"),
    }
}

#[test]
fn prot_1_own_variant_first_then_backups_with_byte_identical_attributes() {
    let variants = master_variants(&[own_variant()], &[link("b", "live"), link("c", "live 2")]);
    let uris: Vec<&str> = variants.iter().map(|v| v.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "mono.m3u8",
            "https://b.example.net/live/mono.m3u8?pass=PASS-b",
            "https://c.example.net/live%202/mono.m3u8?pass=PASS-c",
        ]
    );
    let text = MasterPlaylist {
        audio: Vec::new(),
        independent_segments: true,
        variants,
        ..Default::default()
    }
    .render();
    let attrs: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("#EXT-X-STREAM-INF:"))
        .collect();
    assert_eq!(attrs.len(), 3);
    assert!(attrs.iter().all(|a| *a == attrs[0]), "{text}");
    assert_eq!(
        attrs[0],
        "#EXT-X-STREAM-INF:BANDWIDTH=2200000,AVERAGE-BANDWIDTH=1900000,CODECS=\"avc1.64001f,mp4a.40.2\",RESOLUTION=1280x720,FRAME-RATE=25.000"
    );
    // An independent parser reads three variants with the same attributes.
    let parsed = m3u8_rs::parse_master_playlist_res(text.as_bytes()).expect("valid master");
    assert_eq!(parsed.variants.len(), 3);
    assert!(parsed
        .variants
        .iter()
        .all(|v| v.bandwidth == 2_200_000 && v.codecs.as_deref() == Some("avc1.64001f,mp4a.40.2")));
}

#[test]
fn prot_1_absolute_paths_and_queries_are_rebased_on_the_backup() {
    let mut v = own_variant();
    v.uri = "/live/mono.m3u8?token=1".into();
    let out = master_variants(&[v.clone()], &[link("b", "other")]);
    assert_eq!(
        out[1].uri,
        "https://b.example.net/live/mono.m3u8?token=1&pass=PASS-b"
    );
    v.uri = "http://a.example.net:8080/live/mono.m3u8".into();
    let out = master_variants(&[v], &[link("b", "other")]);
    assert_eq!(
        out[1].uri,
        "https://b.example.net/live/mono.m3u8?pass=PASS-b"
    );
}

#[test]
fn play_1_non_switching_players_get_only_the_own_variant() {
    // The route asks the player kind first; a non-switching player gets no backups.
    let snapshot = snapshot("a", &["b", "c"]);
    let viewer = ViewerContext {
        public: true,
        https: true,
    };
    for (ua, expected) in [("VLC/3.0.18 LibVLC/3.0.18", 1), ("hls.js Mozilla/5.0", 3)] {
        let backups = if PlayerKind::from_user_agent(ua).offers_backups() {
            backups_for_viewer(&snapshot, GROUP, viewer, b"session", NOW)
        } else {
            Vec::new()
        };
        let links: Vec<BackupLink> = backups.iter().map(|t| t.link("p".into())).collect();
        assert_eq!(
            master_variants(&[own_variant()], &links).len(),
            expected,
            "{ua}"
        );
    }
}
