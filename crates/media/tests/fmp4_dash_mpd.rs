//! DASH MPDs: golden text of a live two-period MPD with parse-back by dash-mpd-core,
//! and a static MPD of a fixture's fMP4 segments that ffprobe opens and ffmpeg decodes.

mod fmp4_util;

use fmp4_util::*;
use media::dash::{
    Mpd, MpdAudio, MpdKind, MpdLabel, MpdLanguage, MpdPeriod, MpdRung, MpdSegment, MpdUris,
    MpdVideo, ReloadEvents, ServiceLocation, ServiceLocations,
};
use media::fmp4::{frames_from_ts, package_ts_segment, write_init, InitConfig, NextDts};
use media::ts::PACKET_SIZE;
use media::{TimelineMarker, TrackKind};

const T0: i64 = 1_714_564_800_000; // 2024-05-01T12:00:00.000Z

struct Uris;

impl MpdUris for Uris {
    fn init(&self, seq: u64, track: TrackKind) -> String {
        format!("{}/init-d{seq}.mp4", dir(track))
    }
    fn media(&self, seq: u64, track: TrackKind) -> String {
        format!("{}/d{seq}-$Number$.m4s", dir(track))
    }
}

fn dir(track: TrackKind) -> &'static str {
    match track {
        TrackKind::Video => "video",
        TrackKind::Audio => "audio",
    }
}

fn seg(msn: u64, start_ts: u64, duration_ticks: u64) -> MpdSegment {
    MpdSegment {
        msn,
        start_ts,
        duration_ticks,
    }
}

fn video() -> Option<MpdVideo> {
    Some(MpdVideo {
        codecs: "avc1.64000d".into(),
        width: 320,
        height: 180,
        bandwidth: 400_000,
    })
}

fn audio() -> Option<MpdAudio> {
    Some(MpdAudio {
        codecs: "mp4a.40.2".into(),
        sample_rate: 48_000,
        channels: 2,
        bandwidth: 64_000,
    })
}

fn live() -> Mpd {
    Mpd {
        kind: MpdKind::Dynamic {
            publish_unix_ms: T0 + 9_920,
            minimum_update_period_ms: 2_000,
            time_shift_buffer_depth_ms: 60_000,
            suggested_presentation_delay_ms: 6_000,
            reload_events: Some(ReloadEvents {
                before_edge_ms: 1_000,
                every_ms: 400,
            }),
        },
        availability_start_unix_ms: T0 - 1_000,
        min_buffer_time_ms: 2_000,
        periods: vec![
            MpdPeriod {
                discontinuity_seq: 4,
                anchor_ts: 900_000,
                anchor_unix_ms: T0,
                segments: vec![
                    seg(100, 900_000, 180_000),
                    seg(101, 1_080_000, 180_000),
                    seg(102, 1_260_000, 172_800),
                ],
                video: video(),
                audio: audio(),
                rungs: Vec::new(),
                split: None,
                texts: Vec::new(),
                floor: None,
                languages: Vec::new(),
            },
            MpdPeriod {
                discontinuity_seq: 5,
                anchor_ts: 50_000,
                anchor_unix_ms: T0 + 5_920,
                segments: vec![seg(103, 50_000, 180_000), seg(104, 230_000, 180_000)],
                video: video(),
                audio: None,
                rungs: Vec::new(),
                split: None,
                texts: Vec::new(),
                floor: None,
                languages: Vec::new(),
            },
        ],
        utc_timing_uri: Some("https://node-a.example.net/time?iso&ms".into()),
    }
}

const LIVE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" profiles="urn:mpeg:dash:profile:isoff-live:2011" type="dynamic" availabilityStartTime="2024-05-01T11:59:59.000Z" publishTime="2024-05-01T12:00:09.920Z" minimumUpdatePeriod="PT2.000S" timeShiftBufferDepth="PT60.000S" suggestedPresentationDelay="PT6.000S" maxSegmentDuration="PT2.000S" minBufferTime="PT2.000S">
  <Period id="d4" start="PT1.000S">
    <AdaptationSet id="1" contentType="video" mimeType="video/mp4" segmentAlignment="true" startWithSAP="1" maxWidth="320" maxHeight="180">
      <SegmentTemplate timescale="90000" presentationTimeOffset="900000" startNumber="100" initialization="video/init-d4.mp4" media="video/d4-$Number$.m4s">
        <SegmentTimeline>
          <S t="900000" d="180000" r="1"/>
          <S d="172800"/>
        </SegmentTimeline>
      </SegmentTemplate>
      <Representation id="v" codecs="avc1.64000d" bandwidth="400000" width="320" height="180"/>
    </AdaptationSet>
    <AdaptationSet id="2" contentType="audio" mimeType="audio/mp4" segmentAlignment="true" startWithSAP="1" lang="und">
      <SegmentTemplate timescale="90000" presentationTimeOffset="900000" startNumber="100" initialization="audio/init-d4.mp4" media="audio/d4-$Number$.m4s">
        <SegmentTimeline>
          <S t="900000" d="180000" r="1"/>
          <S d="172800"/>
        </SegmentTimeline>
      </SegmentTemplate>
      <Representation id="a" codecs="mp4a.40.2" bandwidth="64000" audioSamplingRate="48000">
        <AudioChannelConfiguration schemeIdUri="urn:mpeg:dash:23003:3:audio_channel_configuration:2011" value="2"/>
      </Representation>
    </AdaptationSet>
  </Period>
  <Period id="d5" start="PT6.920S">
    <EventStream schemeIdUri="urn:mpeg:dash:event:2012" value="1" timescale="1000">
      <Event presentationTime="3200" duration="400" id="3200"/>
      <Event presentationTime="3600" duration="400" id="3600"/>
      <Event presentationTime="4000" duration="400" id="4000"/>
    </EventStream>
    <AdaptationSet id="1" contentType="video" mimeType="video/mp4" segmentAlignment="true" startWithSAP="1" maxWidth="320" maxHeight="180">
      <SegmentTemplate timescale="90000" presentationTimeOffset="50000" startNumber="103" initialization="video/init-d5.mp4" media="video/d5-$Number$.m4s">
        <SegmentTimeline>
          <S t="50000" d="180000" r="1"/>
        </SegmentTimeline>
      </SegmentTemplate>
      <Representation id="v" codecs="avc1.64000d" bandwidth="400000" width="320" height="180"/>
    </AdaptationSet>
  </Period>
  <UTCTiming schemeIdUri="urn:mpeg:dash:utc:http-iso:2014" value="https://node-a.example.net/time?iso&amp;ms"/>
</MPD>
"#;

#[test]
fn live_mpd_golden_and_parse_back() {
    let text = live().render(&Uris);
    assert_eq!(text, LIVE);
    let mpd = dash_mpd_core::parse(&text).expect("dash-mpd-core parses the MPD");
    assert_eq!(mpd.mpdtype.as_deref(), Some("dynamic"));
    assert_eq!(
        mpd.availabilityStartTime.map(|t| t.timestamp_millis()),
        Some(T0 - 1_000)
    );
    assert_eq!(
        mpd.UTCTiming[0].value.as_deref(),
        Some("https://node-a.example.net/time?iso&ms")
    );
    assert_eq!(mpd.periods.len(), 2);
    let starts: Vec<u128> = mpd
        .periods
        .iter()
        .map(|p| p.start.expect("Period@start").as_millis())
        .collect();
    assert_eq!(starts, [1_000, 6_920]);
    let p = &mpd.periods[0];
    assert_eq!(p.adaptations.len(), 2);
    let template = p.adaptations[0].SegmentTemplate.as_ref().expect("template");
    assert_eq!(template.timescale, Some(90_000));
    assert_eq!(template.startNumber, Some(100));
    assert_eq!(template.presentationTimeOffset, Some(900_000));
    let timeline: Vec<(Option<u64>, u64, Option<i64>)> = template
        .SegmentTimeline
        .as_ref()
        .expect("timeline")
        .segments
        .iter()
        .map(|s| (s.t, s.d, s.r))
        .collect();
    assert_eq!(
        timeline,
        [(Some(900_000), 180_000, Some(1)), (None, 172_800, None)]
    );
    let v = &p.adaptations[0].representations[0];
    assert_eq!(
        (v.width, v.height, v.bandwidth),
        (Some(320), Some(180), Some(400_000))
    );
    assert_eq!(v.codecs.as_deref(), Some("avc1.64000d"));
    let a = &p.adaptations[1];
    assert_eq!(
        a.representations[0].audioSamplingRate.as_deref(),
        Some("48000")
    );
    assert_eq!(
        mpd.periods[1].adaptations.len(),
        1,
        "video only after the discontinuity"
    );
}

#[test]
fn a_viewers_mpd_names_every_node_from_the_parts() {
    let mpd = live();
    assert_eq!(mpd.render_for(&Uris, None), mpd.render(&Uris));
    let service = ServiceLocations {
        nodes: vec![
            ServiceLocation {
                pathway: "a".into(),
                base: "http://a:1/s/".into(),
                location: "http://a:1/s/index.mpd?login=l&token=t".into(),
            },
            ServiceLocation {
                pathway: "b".into(),
                base: "http://b:1/s-b/".into(),
                location: "http://b:1/s-b/index.mpd?login=l&token=t&pass=P".into(),
            },
        ],
        steering: "http://b:1/steering/g?p=a,b".into(),
    };
    let out = mpd.render_for(&Uris, Some(&service));
    // The shared MPD, with the DVB namespace and the nodes right after the root's tag.
    let plain = mpd.render(&Uris);
    let root = "<MPD xmlns=\"urn:mpeg:dash:schema:mpd:2011\"";
    let expected = plain.replacen(
        root,
        &format!("{root} xmlns:dvb=\"urn:dvb:dash-extensions:2014-1\""),
        1,
    );
    let tag_end = expected.find(">\n  <Period").expect("the root's tag") + 2;
    let nodes = "  <BaseURL serviceLocation=\"a\" dvb:priority=\"1\" dvb:weight=\"1\">http://a:1/s/</BaseURL>
  <BaseURL serviceLocation=\"b\" dvb:priority=\"2\" dvb:weight=\"1\">http://b:1/s-b/</BaseURL>
  <Location serviceLocation=\"a\">http://a:1/s/index.mpd?login=l&amp;token=t</Location>
  <Location serviceLocation=\"b\">http://b:1/s-b/index.mpd?login=l&amp;token=t&amp;pass=P</Location>
  <ContentSteering defaultServiceLocation=\"a\" queryBeforeStart=\"false\">http://b:1/steering/g?p=a,b</ContentSteering>
";
    assert_eq!(
        out,
        format!("{}{nodes}{}", &expected[..tag_end], &expected[tag_end..])
    );
    let parsed = dash_mpd_core::parse(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(parsed.base_url.len(), 2);
    assert_eq!(parsed.base_url[1].serviceLocation.as_deref(), Some("b"));
    assert_eq!(
        parsed.locations[1].url,
        "http://b:1/s-b/index.mpd?login=l&token=t&pass=P"
    );
}

#[test]
fn a_gap_in_the_timeline_restates_the_start() {
    let mut mpd = live();
    mpd.periods.truncate(1);
    // Segment 102 missing: 103 starts later than 101 ends.
    mpd.periods[0].segments = vec![
        seg(100, 900_000, 180_000),
        seg(101, 1_080_000, 180_000),
        seg(103, 1_440_000, 180_000),
    ];
    let text = mpd.render(&Uris);
    assert!(text.contains(
        "<S t=\"900000\" d=\"180000\" r=\"1\"/>\n          <S t=\"1440000\" d=\"180000\"/>\n"
    ));
}

#[test]
fn static_mpd_of_fixture_segments_plays_in_ffmpeg() {
    let segments = segments("h264_aac.ts", 1000);
    let marker = TimelineMarker::parse(&segments[0].data[4..PACKET_SIZE]).expect("marker");
    let first = frames_from_ts(&segments[0].data, segments[0].start_ts);
    let config = InitConfig::from_frames(first.iter().map(|t| &t.frame)).expect("config");
    let dir_path = temp_dir("dash-static");
    let seq = marker.state.discontinuity_seq;
    for (track, split) in [
        (TrackKind::Video, config.video_only()),
        (TrackKind::Audio, config.audio_only()),
    ] {
        std::fs::create_dir_all(dir_path.join(dir(track))).unwrap();
        let mut init = Vec::new();
        write_init(&split, &mut init).expect("init");
        std::fs::write(dir_path.join(Uris.init(seq, track)), &init).unwrap();
        for (i, s) in segments.iter().enumerate() {
            let next = segments.get(i + 1).map(NextDts::of_segment);
            let mut out = Vec::new();
            package_ts_segment(&split, s, next, None, &mut out).expect("segment");
            let name = Uris
                .media(seq, track)
                .replace("$Number$", &s.msn.to_string());
            std::fs::write(dir_path.join(name), &out).unwrap();
        }
    }
    let video = config.video.as_ref().unwrap();
    let audio = config.audio.as_ref().unwrap();
    let mpd = Mpd {
        kind: MpdKind::Static,
        availability_start_unix_ms: marker.state.anchor_unix_ms,
        min_buffer_time_ms: 2_000,
        periods: vec![MpdPeriod {
            discontinuity_seq: seq,
            anchor_ts: marker.state.anchor_ts,
            anchor_unix_ms: marker.state.anchor_unix_ms,
            segments: segments.iter().map(MpdSegment::from).collect(),
            video: Some(MpdVideo {
                codecs: video.codec_string.clone(),
                width: video.width,
                height: video.height,
                bandwidth: 300_000,
            }),
            audio: Some(MpdAudio {
                codecs: audio.config.codec_string(),
                sample_rate: audio.sample_rate(),
                channels: audio.config.channels,
                bandwidth: 64_000,
            }),
            rungs: Vec::new(),
            split: None,
            texts: Vec::new(),
            floor: None,
            languages: Vec::new(),
        }],
        utc_timing_uri: None,
    };
    let text = mpd.render(&Uris);
    let total: u64 = segments.iter().map(|s| s.duration_ticks).sum();
    assert!(text.contains(&format!(
        "type=\"static\" mediaPresentationDuration=\"PT{}.{:03}S\"",
        (total + 45) / 90 / 1000,
        (total + 45) / 90 % 1000
    )));
    let path = dir_path.join("stream.mpd");
    std::fs::write(&path, &text).unwrap();
    let path = path.to_string_lossy().into_owned();

    let mut ts = Vec::new();
    for s in &segments {
        ts.extend_from_slice(&s.data);
    }
    let ts_path = dir_path.join("cat.ts");
    std::fs::write(&ts_path, &ts).unwrap();
    let reference = probe(&ts_path.to_string_lossy());
    let got = probe(&path);
    let v = stream(&got, "video").expect("video from the MPD");
    assert_eq!(v["codec_name"], "h264");
    assert_eq!((v["width"].as_str(), v["height"].as_str()), ("320", "180"));
    let a = stream(&got, "audio").expect("audio from the MPD");
    assert_eq!(a["sample_rate"], "48000");
    assert!(reference.len() == 2);
    let ts_path = ts_path.to_string_lossy();
    for select in ["v", "a"] {
        assert_eq!(
            packet_count(&path, select),
            packet_count(&ts_path, select),
            "{select}"
        );
    }
    assert_eq!(packet_count(&path, "v"), 75);
    decode_clean(&path);
}

/// A ladder: the rungs are more video Representations of the one video adaptation set,
/// each with its own files (under its name) and timeline, on the period's anchor; the
/// source keeps the adaptation set's template, as without a ladder.
#[test]
fn a_ladders_rungs_are_representations_with_their_own_files() {
    let mut mpd = live();
    let rung = |name: &str, height: u32, seq: u64, msns: std::ops::Range<u64>| MpdRung {
        name: name.into(),
        video: MpdVideo {
            codecs: "avc1.4d4015".into(),
            width: height * 16 / 9,
            height,
            bandwidth: u64::from(height) * 1000,
        },
        discontinuity_seq: seq,
        segments: msns
            .map(|msn| seg(msn, 900_000 + (msn - 100) * 180_000, 180_000))
            .collect(),
    };
    mpd.periods[0].rungs = vec![
        rung("240p", 240, 7, 100..103),
        rung("144p", 144, 4, 101..103),
    ];
    mpd.periods[0].segments[2].duration_ticks = 180_000;
    let text = mpd.render(&Uris);
    let video_set = text
        .split("<AdaptationSet")
        .nth(1)
        .expect("the first period's video adaptation set");
    assert!(
        video_set.contains("maxWidth=\"426\" maxHeight=\"240\""),
        "{video_set}"
    );
    assert_eq!(
        video_set.matches("<Representation ").count(),
        3,
        "{video_set}"
    );
    assert_eq!(
        video_set.matches("<SegmentTemplate").count(),
        3,
        "one per Representation"
    );
    for needle in [
        "<Representation id=\"v\"",
        "initialization=\"video/init-d4.mp4\" media=\"video/d4-$Number$.m4s\"",
        "<Representation id=\"240p\" codecs=\"avc1.4d4015\" bandwidth=\"240000\" width=\"426\" height=\"240\">",
        "initialization=\"240p/video/init-d7.mp4\" media=\"240p/video/d7-$Number$.m4s\"",
        "startNumber=\"101\" initialization=\"144p/video/init-d4.mp4\"",
    ] {
        assert!(video_set.contains(needle), "{needle} in {video_set}");
    }
    // The audio adaptation set stays one, and a period without rungs is as before.
    assert_eq!(text.matches("contentType=\"audio\"").count(), 1);
    let second = text.split("<Period").nth(2).expect("the second period");
    assert_eq!(second.matches("<SegmentTemplate").count(), 1, "{second}");
}

#[test]
fn each_audio_language_is_an_adaptation_set_with_its_lang_label_and_files() {
    let mut mpd = live();
    let label = |language: &str, name: &str| MpdLabel {
        language: language.into(),
        name: name.into(),
    };
    mpd.periods[0].floor = Some(label("en", "English"));
    mpd.periods[0].languages = vec![MpdLanguage {
        folder: "audio-spa".into(),
        label: label("es", "Español \"interpretación\""),
        audio: audio().expect("audio"),
        discontinuity_seq: 2,
        segments: vec![seg(101, 1_080_000, 180_000), seg(102, 1_260_000, 172_800)],
        order: 0,
    }];
    let text = mpd.render(&Uris);
    let first = text.split("<Period").nth(1).expect("the first period");
    for needle in [
        "<AdaptationSet id=\"2\" contentType=\"audio\" mimeType=\"audio/mp4\" segmentAlignment=\"true\" startWithSAP=\"1\" lang=\"en\">\n      <Role schemeIdUri=\"urn:mpeg:dash:role:2011\" value=\"main\"/>\n      <Label>English</Label>",
        "<AdaptationSet id=\"200\" contentType=\"audio\" mimeType=\"audio/mp4\" segmentAlignment=\"true\" startWithSAP=\"1\" lang=\"es\">\n      <Role schemeIdUri=\"urn:mpeg:dash:role:2011\" value=\"dub\"/>\n      <Label>Español &quot;interpretación&quot;</Label>",
        "startNumber=\"101\" initialization=\"audio-spa/audio/init-d2.mp4\" media=\"audio-spa/audio/d2-$Number$.m4s\"",
        "<Representation id=\"audio-spa\" codecs=\"mp4a.40.2\"",
    ] {
        assert!(first.contains(needle), "{needle} in {first}");
    }
    // The second period names no language: its audio set stays as without languages.
    let second = text.split("<Period").nth(2).expect("the second period");
    assert!(!second.contains("lang=\"es\""), "{second}");

    let parsed = dash_mpd_core::parse(&text).expect("dash-mpd-core parses the MPD");
    let sets = &parsed.periods[0].adaptations;
    let audio: Vec<(Option<&str>, Option<&str>)> = sets
        .iter()
        .filter(|a| a.contentType.as_deref() == Some("audio"))
        .map(|a| {
            (
                a.lang.as_deref(),
                a.Role.first().and_then(|r| r.value.as_deref()),
            )
        })
        .collect();
    assert_eq!(
        audio,
        [(Some("en"), Some("main")), (Some("es"), Some("dub"))]
    );
    let spanish = &sets[2];
    assert_eq!(
        spanish.Label.first().map(|l| l.content.as_str()),
        Some("Español \"interpretación\"")
    );
    let template = spanish.SegmentTemplate.as_ref().expect("template");
    assert_eq!(template.startNumber, Some(101));
    assert_eq!(template.presentationTimeOffset, Some(900_000));
}

#[test]
fn a_session_goes_into_templates_and_locations_not_base_urls() {
    let mpd = live();
    let service = ServiceLocations {
        nodes: vec![ServiceLocation {
            pathway: "a".into(),
            base: "http://a:1/s/".into(),
            location: "http://a:1/s/index.mpd?login=l&token=t".into(),
        }],
        steering: "http://b:1/steering/g?p=a".into(),
    };
    let manifest = mpd.manifest_for(&Uris, Some(&service));
    assert_eq!(
        manifest.bytes,
        mpd.render_for(&Uris, Some(&service)).as_bytes()
    );
    let out = String::from_utf8(manifest.with_query("session", "S")).unwrap();
    let parsed = dash_mpd_core::parse(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(parsed.base_url[0].base, "http://a:1/s/");
    assert_eq!(
        parsed.locations[0].url,
        "http://a:1/s/index.mpd?login=l&token=t&session=S"
    );
    let mut templates = 0;
    for period in &parsed.periods {
        for set in &period.adaptations {
            let reps = set
                .representations
                .iter()
                .filter_map(|r| r.SegmentTemplate.as_ref());
            for t in set.SegmentTemplate.iter().chain(reps) {
                for uri in [&t.initialization, &t.media] {
                    let uri = uri.as_deref().expect("a template URI");
                    assert!(uri.ends_with("?session=S"), "{uri}");
                    templates += 1;
                }
            }
        }
    }
    assert!(templates >= 4, "{out}");
    assert!(
        out.contains(">http://b:1/steering/g?p=a</ContentSteering>"),
        "{out}"
    );
}
