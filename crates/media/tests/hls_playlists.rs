//! Golden playlists (exact text) and parse-back with an independent parser (m3u8-rs).

use m3u8_rs::{MediaPlaylistType, Playlist};
use media::hls::{
    AudioRendition, ClosedCaptions, LiveWindow, MasterPlaylist, MediaPlaylist, Personalisation,
    PlaylistSegment, PlaylistType, SubtitleRendition, Variant,
};

const T0: i64 = 1_714_564_800_000; // 2024-05-01T12:00:00.000Z

fn seg(msn: u64, seq: u64, disc: bool, ticks: u64, pdt: i64) -> PlaylistSegment {
    PlaylistSegment {
        msn,
        discontinuity_seq: seq,
        discontinuous: disc,
        duration_ticks: ticks,
        program_date_time_ms: pdt,
        gap: false,
    }
}

fn uri(msn: u64) -> String {
    format!("seg{msn}.ts")
}

fn parse_media(text: &str) -> m3u8_rs::MediaPlaylist {
    match m3u8_rs::parse_playlist_res(text.as_bytes()) {
        Ok(Playlist::MediaPlaylist(p)) => p,
        other => panic!("not a media playlist: {other:?}"),
    }
}

#[test]
fn live_window_golden_and_parse_back() {
    let mut window = LiveWindow::new(3, 2000);
    window.push(seg(99, 4, false, 180_000, T0 - 2000));
    window.push(seg(100, 4, false, 180_000, T0));
    window.push(seg(101, 4, false, 172_800, T0 + 2000));
    window.push(seg(102, 5, true, 183_150, T0 + 3920));
    let text = window.playlist().render(uri);
    let golden = "\
#EXTM3U
#EXT-X-VERSION:3
#EXT-X-TARGETDURATION:2
#EXT-X-MEDIA-SEQUENCE:100
#EXT-X-DISCONTINUITY-SEQUENCE:4
#EXT-X-INDEPENDENT-SEGMENTS
#EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:00.000Z
#EXTINF:2.000,
seg100.ts
#EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:02.000Z
#EXTINF:1.920,
seg101.ts
#EXT-X-DISCONTINUITY
#EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:03.920Z
#EXTINF:2.035,
seg102.ts
";
    assert_eq!(text, golden);
    let p = parse_media(&text);
    assert_eq!(p.target_duration, 2);
    assert_eq!(p.media_sequence, 100);
    assert_eq!(p.discontinuity_sequence, 4);
    assert!(p.independent_segments && !p.end_list && p.playlist_type.is_none());
    let uris: Vec<&str> = p.segments.iter().map(|s| s.uri.as_str()).collect();
    assert_eq!(uris, ["seg100.ts", "seg101.ts", "seg102.ts"]);
    assert!(p.segments[2].discontinuity && !p.segments[1].discontinuity);
    let pdt: Vec<i64> = p
        .segments
        .iter()
        .map(|s| {
            s.program_date_time
                .expect("pdt on every segment")
                .timestamp_millis()
        })
        .collect();
    assert_eq!(pdt, [T0, T0 + 2000, T0 + 3920]);
    assert!((p.segments[2].duration - 2.035).abs() < 1e-6);
}

#[test]
fn target_duration_only_grows_in_a_live_window() {
    let mut window = LiveWindow::new(2, 2000);
    window.push(seg(1, 0, false, 180_000, T0));
    window.push(seg(2, 0, false, 5 * 90_000 + 45_000, T0 + 2000)); // 5.5 s → 6
    assert_eq!(window.playlist().target_duration(), 6);
    window.push(seg(3, 0, false, 180_000, T0 + 7500));
    window.push(seg(4, 0, false, 180_000, T0 + 9500));
    // The long segment left the window; the announced target stays.
    assert_eq!(window.segments().count(), 2);
    assert_eq!(window.playlist().target_duration(), 6);
    // A 2.4 s segment rounds to 2 (rfc8216bis 4.4.3.1 compares rounded durations).
    let mut small = LiveWindow::new(5, 2000);
    small.push(seg(1, 0, false, 216_000, T0));
    assert_eq!(small.playlist().target_duration(), 2);
}

#[test]
fn vod_and_event_playlists_with_gaps() {
    let mut gap = seg(11, 0, false, 180_000, T0 + 2000);
    gap.gap = true;
    let vod = MediaPlaylist {
        playlist_type: PlaylistType::Vod,
        target_duration_secs: 2,
        segments: vec![
            seg(10, 0, false, 180_000, T0),
            gap,
            seg(12, 1, true, 90_000, T0 + 4000),
        ],
        ended: false,
    };
    let text = vod.render(|msn| format!("/live/stream/{msn}.ts"));
    let golden = "\
#EXTM3U
#EXT-X-VERSION:3
#EXT-X-TARGETDURATION:2
#EXT-X-MEDIA-SEQUENCE:10
#EXT-X-DISCONTINUITY-SEQUENCE:0
#EXT-X-PLAYLIST-TYPE:VOD
#EXT-X-INDEPENDENT-SEGMENTS
#EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:00.000Z
#EXTINF:2.000,
/live/stream/10.ts
#EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:02.000Z
#EXTINF:2.000,
#EXT-X-GAP
/live/stream/11.ts
#EXT-X-DISCONTINUITY
#EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:04.000Z
#EXTINF:1.000,
/live/stream/12.ts
#EXT-X-ENDLIST
";
    assert_eq!(text, golden);
    let p = parse_media(&text);
    assert_eq!(p.playlist_type, Some(MediaPlaylistType::Vod));
    assert!(p.end_list);
    assert_eq!(p.segments.len(), 3);
    assert!(p.segments[1].unknown_tags.iter().any(|t| t.tag == "X-GAP"));

    let event = MediaPlaylist {
        playlist_type: PlaylistType::Event,
        ..vod
    };
    let p = parse_media(&event.render(uri));
    assert_eq!(p.playlist_type, Some(MediaPlaylistType::Event));
    assert!(!p.end_list);
}

#[test]
fn first_segment_discontinuity_keeps_sequence_numbers_consistent() {
    // The first listed segment follows a discontinuity: its sequence number is the
    // playlist's EXT-X-DISCONTINUITY-SEQUENCE plus its own tag.
    let pl = MediaPlaylist {
        playlist_type: PlaylistType::Live,
        target_duration_secs: 2,
        segments: vec![
            seg(7, 3, true, 180_000, T0),
            seg(8, 3, false, 180_000, T0 + 2000),
        ],
        ended: false,
    };
    let p = parse_media(&pl.render(uri));
    assert_eq!(p.discontinuity_sequence, 2);
    assert!(p.segments[0].discontinuity);
}

#[test]
fn uris_cannot_inject_tags() {
    let pl = MediaPlaylist {
        playlist_type: PlaylistType::Live,
        target_duration_secs: 2,
        segments: vec![seg(1, 0, false, 180_000, T0)],
        ended: false,
    };
    let text = pl.render(|_| "a.ts\n#EXT-X-ENDLIST".to_string());
    assert!(text.contains("a.ts%0A#EXT-X-ENDLIST\n"));
    assert!(!parse_media(&text).end_list);
}

#[test]
fn master_playlist_golden_with_backup_variants() {
    let main = Variant {
        uri: "mono.m3u8".into(),
        bandwidth: 1_650_000,
        average_bandwidth: Some(1_200_000),
        codecs: vec!["avc1.64001f".into(), "mp4a.40.2".into()],
        resolution: Some((1280, 720)),
        frame_rate_milli: Some(29_970),
    };
    let backup = Variant {
        uri: "https://node-b.example.net/live/stream/mono.m3u8?pass=abc".into(),
        ..main.clone()
    };
    let master = MasterPlaylist {
        audio: Vec::new(),
        independent_segments: true,
        variants: vec![main, backup],
        ..Default::default()
    };
    let text = master.render();
    let golden = "\
#EXTM3U
#EXT-X-VERSION:3
#EXT-X-INDEPENDENT-SEGMENTS
#EXT-X-STREAM-INF:BANDWIDTH=1650000,AVERAGE-BANDWIDTH=1200000,CODECS=\"avc1.64001f,mp4a.40.2\",RESOLUTION=1280x720,FRAME-RATE=29.970
mono.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=1650000,AVERAGE-BANDWIDTH=1200000,CODECS=\"avc1.64001f,mp4a.40.2\",RESOLUTION=1280x720,FRAME-RATE=29.970
https://node-b.example.net/live/stream/mono.m3u8?pass=abc
";
    assert_eq!(text, golden);
    let p = match m3u8_rs::parse_playlist_res(text.as_bytes()) {
        Ok(Playlist::MasterPlaylist(p)) => p,
        other => panic!("not a master playlist: {other:?}"),
    };
    assert!(p.independent_segments);
    assert_eq!(p.variants.len(), 2);
    for v in &p.variants {
        assert_eq!(v.bandwidth, 1_650_000);
        assert_eq!(v.average_bandwidth, Some(1_200_000));
        assert_eq!(v.codecs.as_deref(), Some("avc1.64001f,mp4a.40.2"));
        let r = v.resolution.expect("resolution");
        assert_eq!((r.width, r.height), (1280, 720));
        assert_eq!(v.frame_rate, Some(29.97));
    }
    assert_eq!(
        p.variants[1].uri,
        "https://node-b.example.net/live/stream/mono.m3u8?pass=abc"
    );
}

/// A master with subtitles, in-band captions and a two-rung ladder.
fn captioned_ladder() -> MasterPlaylist {
    let rung = |uri: &str, bandwidth: u64, height: u32| Variant {
        uri: uri.into(),
        bandwidth,
        average_bandwidth: None,
        codecs: vec!["avc1.64001f".into(), "mp4a.40.2".into()],
        resolution: Some((height * 16 / 9, height)),
        frame_rate_milli: Some(25_000),
    };
    MasterPlaylist {
        audio: Vec::new(),
        independent_segments: true,
        subtitles: vec![
            SubtitleRendition {
                name: "English".into(),
                language: "en".into(),
                uri: "sub-en.m3u8".into(),
            },
            SubtitleRendition {
                name: "Deutsch".into(),
                language: "de".into(),
                uri: "sub-de.m3u8".into(),
            },
        ],
        closed_captions: Some(ClosedCaptions {
            name: "CC".into(),
            language: "en".into(),
            instream_id: "CC1".into(),
        }),
        variants: vec![
            rung("mono.m3u8", 2_000_000, 720),
            rung("240p/mono.m3u8", 400_000, 240),
        ],
    }
}

/// A backup at `base` that maps a URI to its node's with a pass.
fn backup(base: &'static str) -> Box<dyn Fn(&str) -> String> {
    Box::new(move |uri: &str| {
        let sep = if uri.contains('?') { '&' } else { '?' };
        format!("{base}/m/{uri}{sep}pass=P")
    })
}

#[test]
fn a_viewers_master_is_rendered_from_the_parts() {
    let master = captioned_ladder();
    assert_eq!(
        master.render_for(&Personalisation::default()),
        master.render(),
        "no personalisation: the shared bytes"
    );
    let viewer = Personalisation {
        query: Some("login=v&token=t"),
        steering: Some((
            "http://b:1/steer?g=x".into(),
            vec!["a".into(), "b".into(), "c".into()],
        )),
        backups: vec![backup("http://b:1"), backup("http://c:2")],
    };
    let golden = "\
#EXTM3U
#EXT-X-VERSION:3
#EXT-X-INDEPENDENT-SEGMENTS
#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID=\"subs\",NAME=\"English\",LANGUAGE=\"en\",DEFAULT=YES,AUTOSELECT=YES,URI=\"sub-en.m3u8\"
#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID=\"subs\",NAME=\"Deutsch\",LANGUAGE=\"de\",DEFAULT=NO,AUTOSELECT=YES,URI=\"sub-de.m3u8\"
#EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS,GROUP-ID=\"cc\",NAME=\"CC\",LANGUAGE=\"en\",DEFAULT=NO,AUTOSELECT=YES,INSTREAM-ID=\"CC1\"
#EXT-X-CONTENT-STEERING:SERVER-URI=\"http://b:1/steer?g=x\",PATHWAY-ID=\"a\"
#EXT-X-STREAM-INF:BANDWIDTH=2000000,CODECS=\"avc1.64001f,mp4a.40.2\",RESOLUTION=1280x720,FRAME-RATE=25.000,SUBTITLES=\"subs\",CLOSED-CAPTIONS=\"cc\",PATHWAY-ID=\"a\"
mono.m3u8?login=v&token=t
#EXT-X-STREAM-INF:BANDWIDTH=400000,CODECS=\"avc1.64001f,mp4a.40.2\",RESOLUTION=426x240,FRAME-RATE=25.000,SUBTITLES=\"subs\",CLOSED-CAPTIONS=\"cc\",PATHWAY-ID=\"a\"
240p/mono.m3u8?login=v&token=t
#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID=\"subs-b1\",NAME=\"English\",LANGUAGE=\"en\",DEFAULT=YES,AUTOSELECT=YES,URI=\"http://b:1/m/sub-en.m3u8?pass=P\"
#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID=\"subs-b1\",NAME=\"Deutsch\",LANGUAGE=\"de\",DEFAULT=NO,AUTOSELECT=YES,URI=\"http://b:1/m/sub-de.m3u8?pass=P\"
#EXT-X-STREAM-INF:BANDWIDTH=2000000,CODECS=\"avc1.64001f,mp4a.40.2\",RESOLUTION=1280x720,FRAME-RATE=25.000,SUBTITLES=\"subs-b1\",CLOSED-CAPTIONS=\"cc\",PATHWAY-ID=\"b\"
http://b:1/m/mono.m3u8?login=v&token=t&pass=P
#EXT-X-STREAM-INF:BANDWIDTH=400000,CODECS=\"avc1.64001f,mp4a.40.2\",RESOLUTION=426x240,FRAME-RATE=25.000,SUBTITLES=\"subs-b1\",CLOSED-CAPTIONS=\"cc\",PATHWAY-ID=\"b\"
http://b:1/m/240p/mono.m3u8?login=v&token=t&pass=P
#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID=\"subs-b2\",NAME=\"English\",LANGUAGE=\"en\",DEFAULT=YES,AUTOSELECT=YES,URI=\"http://c:2/m/sub-en.m3u8?pass=P\"
#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID=\"subs-b2\",NAME=\"Deutsch\",LANGUAGE=\"de\",DEFAULT=NO,AUTOSELECT=YES,URI=\"http://c:2/m/sub-de.m3u8?pass=P\"
#EXT-X-STREAM-INF:BANDWIDTH=2000000,CODECS=\"avc1.64001f,mp4a.40.2\",RESOLUTION=1280x720,FRAME-RATE=25.000,SUBTITLES=\"subs-b2\",CLOSED-CAPTIONS=\"cc\",PATHWAY-ID=\"c\"
http://c:2/m/mono.m3u8?login=v&token=t&pass=P
#EXT-X-STREAM-INF:BANDWIDTH=400000,CODECS=\"avc1.64001f,mp4a.40.2\",RESOLUTION=426x240,FRAME-RATE=25.000,SUBTITLES=\"subs-b2\",CLOSED-CAPTIONS=\"cc\",PATHWAY-ID=\"c\"
http://c:2/m/240p/mono.m3u8?login=v&token=t&pass=P
";
    let text = master.render_for(&viewer);
    assert_eq!(text, golden);
    let p = match m3u8_rs::parse_playlist_res(text.as_bytes()) {
        Ok(Playlist::MasterPlaylist(p)) => p,
        other => panic!("not a master playlist: {other:?}"),
    };
    assert_eq!(p.variants.len(), 6);
    assert_eq!(p.alternatives.len(), 7);
}

/// Two languages: the floor muxed in the variants (no URI) as the default, the
/// interpretation an audio-only playlist; a backup's copy names its own group at its
/// node, and the login's query reaches the audio playlist too.
#[test]
fn languages_are_an_audio_group_every_copy_of_the_variants_names() {
    let mut master = captioned_ladder();
    master.subtitles.clear();
    master.closed_captions = None;
    master.variants.truncate(1);
    master.audio = vec![
        AudioRendition {
            name: "English".into(),
            language: "en".into(),
            uri: None,
        },
        AudioRendition {
            name: "Español".into(),
            language: "es".into(),
            uri: Some("audio-spa/mono.m3u8".into()),
        },
    ];
    let viewer = Personalisation {
        query: Some("login=v&token=t"),
        backups: vec![backup("http://b:1")],
        ..Personalisation::default()
    };
    let golden = "\
#EXTM3U
#EXT-X-VERSION:3
#EXT-X-INDEPENDENT-SEGMENTS
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"aud\",NAME=\"English\",LANGUAGE=\"en\",DEFAULT=YES,AUTOSELECT=YES
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"aud\",NAME=\"Español\",LANGUAGE=\"es\",DEFAULT=NO,AUTOSELECT=YES,URI=\"audio-spa/mono.m3u8?login=v&token=t\"
#EXT-X-STREAM-INF:BANDWIDTH=2000000,CODECS=\"avc1.64001f,mp4a.40.2\",RESOLUTION=1280x720,FRAME-RATE=25.000,AUDIO=\"aud\"
mono.m3u8?login=v&token=t
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"aud-b1\",NAME=\"English\",LANGUAGE=\"en\",DEFAULT=YES,AUTOSELECT=YES
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"aud-b1\",NAME=\"Español\",LANGUAGE=\"es\",DEFAULT=NO,AUTOSELECT=YES,URI=\"http://b:1/m/audio-spa/mono.m3u8?login=v&token=t&pass=P\"
#EXT-X-STREAM-INF:BANDWIDTH=2000000,CODECS=\"avc1.64001f,mp4a.40.2\",RESOLUTION=1280x720,FRAME-RATE=25.000,AUDIO=\"aud-b1\"
http://b:1/m/mono.m3u8?login=v&token=t&pass=P
";
    let text = master.render_for(&viewer);
    assert_eq!(text, golden);
    let p = match m3u8_rs::parse_playlist_res(text.as_bytes()) {
        Ok(Playlist::MasterPlaylist(p)) => p,
        other => panic!("not a master playlist: {other:?}"),
    };
    assert_eq!(p.alternatives.len(), 4);
    assert_eq!(p.variants[1].audio.as_deref(), Some("aud-b1"));
}

#[test]
fn playlists_from_real_segments() {
    use media::{Codec, Frame, Segmenter, SegmenterConfig, StartPoint};
    let mut s = Segmenter::new(
        SegmenterConfig::default(),
        StartPoint::Fresh {
            min_msn: 0,
            min_discontinuity_seq: 0,
        },
    );
    let mut window = LiveWindow::new(4, 2000);
    for i in 0..300u64 {
        let f = Frame {
            codec: Codec::H264,
            pts: i * 3600,
            dts: i * 3600,
            keyframe: i % 25 == 0,
            data: bytes::Bytes::from_static(&[0, 0, 0, 1, 0x65, 0x88, 0x84]),
        };
        if let Some(seg) = s.push(f, T0 + (i * 40) as i64) {
            window.push(PlaylistSegment::from(&seg));
        }
    }
    let p = parse_media(&window.playlist().render(uri));
    assert_eq!(p.segments.len(), 4);
    assert_eq!(p.media_sequence, 1);
    for (i, seg) in p.segments.iter().enumerate() {
        assert!((seg.duration - 2.0).abs() < 1e-6);
        let pdt = seg.program_date_time.expect("pdt").timestamp_millis();
        assert_eq!(pdt, T0 + 2000 * (i as i64 + 1));
    }
}

/// What a viewer's session does to a playlist, written independently of the writers:
/// `?session=S` (or `&session=S`) after every URI line and every `URI="…"` attribute.
fn with_session_oracle(text: &str) -> String {
    let join = |uri: &str| {
        let sep = if uri.contains('?') { '&' } else { '?' };
        format!("{uri}{sep}session=S")
    };
    let mut out = String::new();
    for line in text.lines() {
        if !line.starts_with('#') {
            out.push_str(&join(line));
        } else if let Some((head, rest)) = line.split_once(",URI=\"").or(line.split_once(":URI=\""))
        {
            let (uri, tail) = rest.split_once('"').expect("a closing quote");
            let sep = &line[head.len()..head.len() + 6];
            out.push_str(&format!("{head}{sep}{}\"{tail}", join(uri)));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

#[test]
fn a_session_goes_after_every_uri_a_player_requests_and_nowhere_else() {
    let master = captioned_ladder();
    let viewer = Personalisation {
        query: Some("login=v&token=t"),
        steering: Some(("http://b:1/steer?g=x".into(), vec!["a".into(), "b".into()])),
        backups: vec![backup("http://b:1")],
    };
    let manifest = master.manifest_for(&viewer);
    let text = master.render_for(&viewer);
    assert_eq!(manifest.bytes, text.as_bytes(), "the same text as rendered");
    let with = String::from_utf8(manifest.with_query("session", "S")).unwrap();
    assert_eq!(with, with_session_oracle(&text));
    assert!(
        with.contains("SERVER-URI=\"http://b:1/steer?g=x\""),
        "{with}"
    );
    assert!(
        with.contains("\nhttp://b:1/m/mono.m3u8?login=v&token=t&pass=P&session=S\n"),
        "{with}"
    );
    // A media playlist, TS and fMP4 (with its maps).
    let playlist = MediaPlaylist {
        playlist_type: PlaylistType::Live,
        target_duration_secs: 2,
        segments: (0..3)
            .map(|i| seg(i, 0, false, 180_000, T0 + i as i64 * 2000))
            .collect(),
        ended: false,
    };
    let ts = playlist.manifest(uri);
    assert_eq!(ts.bytes, playlist.render(uri).as_bytes());
    let with = String::from_utf8(ts.with_query("session", "S")).unwrap();
    assert_eq!(with, with_session_oracle(&playlist.render(uri)));
    let maps = vec!["init-0.mp4".to_owned(); 3];
    let fmp4 = playlist.manifest_with_maps(uri, &maps);
    let text = std::str::from_utf8(&fmp4.bytes).unwrap().to_owned();
    assert_eq!(
        text.matches("#EXT-X-MAP:URI=\"init-0.mp4\"").count(),
        1,
        "{text}"
    );
    assert!(text.starts_with("#EXTM3U\n#EXT-X-VERSION:7\n"), "{text}");
    assert_eq!(parse_media(&text).segments.len(), 3);
    let with = String::from_utf8(fmp4.with_query("session", "S")).unwrap();
    assert_eq!(with, with_session_oracle(&text));
}
