//! LL-HLS playlists: golden text for a live edge with parts, a delta update, a
//! discontinuity with a new init, the end of a stream; parse-back of the non-LL parts
//! with m3u8-rs (which keeps the LL tags as unknown tags); ffmpeg plays a finished
//! playlist of real fMP4 segments.

mod fmp4_util;

use fmp4_util::{decode_clean, packet_count, segments, temp_dir};
use m3u8_rs::Playlist;
use media::fmp4::{frames_from_ts, package_ts_segment, write_init, InitConfig, NextDts};
use media::hls::{
    LlSegment, LlUris, LowLatencyPlaylist, PendingSegment, PlaylistPart, PlaylistSegment,
    RenditionReport,
};

const T0: i64 = 1_714_564_800_000; // 2024-05-01T12:00:00.000Z
const SEG: u64 = 180_000; // 2 s
const PART: u64 = 45_000; // 0.5 s

struct Uris;

impl LlUris for Uris {
    fn map(&self, discontinuity_seq: u64) -> String {
        format!("init-{discontinuity_seq}.mp4")
    }
    fn segment(&self, msn: u64) -> String {
        format!("seg{msn}.m4s")
    }
    fn part(&self, msn: u64, index: usize) -> String {
        format!("part{msn}.{index}.m4s")
    }
}

fn parts(n: usize) -> Vec<PlaylistPart> {
    (0..n)
        .map(|i| PlaylistPart {
            duration_ticks: PART,
            independent: i == 0,
        })
        .collect()
}

fn segment(msn: u64, first: u64, disc_seq: u64, discontinuous: bool) -> LlSegment {
    LlSegment {
        segment: PlaylistSegment {
            msn,
            discontinuity_seq: disc_seq,
            discontinuous,
            duration_ticks: SEG,
            program_date_time_ms: T0 + (msn - first) as i64 * 2000,
            gap: false,
        },
        parts: parts(4),
    }
}

fn live(count: u64, pending_parts: usize) -> LowLatencyPlaylist {
    LowLatencyPlaylist {
        segments: (10..10 + count).map(|m| segment(m, 10, 0, false)).collect(),
        pending: Some(PendingSegment {
            msn: 10 + count,
            discontinuity_seq: 0,
            discontinuous: false,
            program_date_time_ms: T0 + count as i64 * 2000,
            parts: parts(pending_parts),
        }),
        rendition_reports: vec![RenditionReport {
            uri: "../audio/ll.m3u8".into(),
            last_msn: 10 + count,
            last_part: Some(1),
        }],
        // PART-HOLD-BACK 1.5 s, CAN-SKIP-UNTIL 12 s.
        ..LowLatencyPlaylist::new(2, 500)
    }
}

fn parse_media(text: &str) -> m3u8_rs::MediaPlaylist {
    match m3u8_rs::parse_playlist_res(text.as_bytes()) {
        Ok(Playlist::MediaPlaylist(p)) => p,
        other => panic!("not a media playlist: {other:?}"),
    }
}

const LIVE_EDGE: &str = "\
#EXTM3U
#EXT-X-VERSION:9
#EXT-X-TARGETDURATION:2
#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=12.000,PART-HOLD-BACK=1.500
#EXT-X-PART-INF:PART-TARGET=0.500
#EXT-X-MEDIA-SEQUENCE:10
#EXT-X-DISCONTINUITY-SEQUENCE:0
#EXT-X-INDEPENDENT-SEGMENTS
#EXT-X-MAP:URI=\"init-0.mp4\"
#EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:00.000Z
#EXTINF:2.000,
seg10.m4s
#EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:02.000Z
#EXT-X-PART:DURATION=0.500,URI=\"part11.0.m4s\",INDEPENDENT=YES
#EXT-X-PART:DURATION=0.500,URI=\"part11.1.m4s\"
#EXT-X-PART:DURATION=0.500,URI=\"part11.2.m4s\"
#EXT-X-PART:DURATION=0.500,URI=\"part11.3.m4s\"
#EXTINF:2.000,
seg11.m4s
#EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:04.000Z
#EXT-X-PART:DURATION=0.500,URI=\"part12.0.m4s\",INDEPENDENT=YES
#EXT-X-PART:DURATION=0.500,URI=\"part12.1.m4s\"
#EXT-X-PART:DURATION=0.500,URI=\"part12.2.m4s\"
#EXT-X-PART:DURATION=0.500,URI=\"part12.3.m4s\"
#EXTINF:2.000,
seg12.m4s
#EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:06.000Z
#EXT-X-PART:DURATION=0.500,URI=\"part13.0.m4s\",INDEPENDENT=YES
#EXT-X-PART:DURATION=0.500,URI=\"part13.1.m4s\"
#EXT-X-PART:DURATION=0.500,URI=\"part13.2.m4s\"
#EXT-X-PART:DURATION=0.500,URI=\"part13.3.m4s\"
#EXTINF:2.000,
seg13.m4s
#EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:08.000Z
#EXT-X-PART:DURATION=0.500,URI=\"part14.0.m4s\",INDEPENDENT=YES
#EXT-X-PART:DURATION=0.500,URI=\"part14.1.m4s\"
#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"part14.2.m4s\"
#EXT-X-RENDITION-REPORT:URI=\"../audio/ll.m3u8\",LAST-MSN=14,LAST-PART=1
";

#[test]
fn live_edge_golden_and_parse_back() {
    let p = live(4, 2);
    let text = p.render(&Uris, false);
    assert_eq!(text, LIVE_EDGE);
    // Nothing to skip yet: 9 s listed, CAN-SKIP-UNTIL 12 s.
    assert_eq!(p.render(&Uris, true), LIVE_EDGE);
    assert_eq!(p.last_position(), Some((14, Some(1))));

    let parsed = parse_media(&text);
    assert_eq!(parsed.version, Some(9));
    assert_eq!(parsed.target_duration, 2);
    assert_eq!(parsed.media_sequence, 10);
    let uris: Vec<&str> = parsed.segments.iter().map(|s| s.uri.as_str()).collect();
    assert_eq!(uris, ["seg10.m4s", "seg11.m4s", "seg12.m4s", "seg13.m4s"]);
    assert!(parsed
        .segments
        .iter()
        .all(|s| (s.duration - 2.0).abs() < 1e-6));
    assert_eq!(
        parsed.segments[0].map.as_ref().map(|m| m.uri.as_str()),
        Some("init-0.mp4")
    );
    // m3u8-rs attaches the tags it does not know to the next segment.
    let header: Vec<&str> = parsed.segments[0]
        .unknown_tags
        .iter()
        .map(|t| t.tag.as_str())
        .collect();
    assert!(header.contains(&"X-SERVER-CONTROL"), "{header:?}");
    assert!(header.contains(&"X-PART-INF"), "{header:?}");
    let part_tags = parsed.segments[1]
        .unknown_tags
        .iter()
        .filter(|t| t.tag == "X-PART")
        .count();
    assert_eq!(part_tags, 4);
}

#[test]
fn delta_update_skips_segments_older_than_can_skip_until() {
    // 10 complete segments (20 s) and 1 s of parts: the skip boundary is 21 - 12 = 9 s,
    // so the four segments ending at 2, 4, 6 and 8 s are skipped.
    let p = live(10, 2);
    assert_eq!(p.skipped_segments(), 4);
    let full = p.render(&Uris, false);
    let delta = p.render(&Uris, true);
    assert!(!full.contains("EXT-X-SKIP"));
    assert!(delta.contains(
        "#EXT-X-INDEPENDENT-SEGMENTS\n#EXT-X-SKIP:SKIPPED-SEGMENTS=4\n#EXT-X-MAP:URI=\"init-0.mp4\"\n\
         #EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:08.000Z\n#EXTINF:2.000,\nseg14.m4s\n"
    ));
    assert!(!delta.contains("seg13.m4s"));
    // Parts are listed for the segments ending within 3 target durations (6 s) of the end.
    // The playlist ends at 21 s: segments 17 (ending at 16 s), 18 and 19 list parts.
    assert!(!full.contains("part16.0"));
    assert!(full.contains("part17.0"));
    // The delta is the full playlist without the skipped segments' lines.
    let parsed = parse_media(&delta);
    assert_eq!(parsed.media_sequence, 10);
    assert_eq!(parsed.segments.len(), 6);
    assert_eq!(parsed.segments[0].uri, "seg14.m4s");
    assert_eq!(parse_media(&full).segments.len(), 10);
    // Without CAN-SKIP-UNTIL there is no delta update.
    let no_skip = LowLatencyPlaylist {
        can_skip_until_ms: None,
        ..p.clone()
    };
    assert_eq!(no_skip.skipped_segments(), 0);
    let text = no_skip.render(&Uris, true);
    assert_eq!(text, no_skip.render(&Uris, false));
    assert!(text.starts_with(
        "#EXTM3U\n#EXT-X-VERSION:6\n#EXT-X-TARGETDURATION:2\n\
         #EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=1.500\n"
    ));
}

#[test]
fn a_discontinuity_brings_a_new_map_and_the_end_drops_the_hint() {
    let mut p = live(3, 0);
    p.segments[2].segment.discontinuous = true;
    p.segments[2].segment.discontinuity_seq = 1;
    let pending = p.pending.as_mut().unwrap();
    pending.discontinuity_seq = 1;
    let text = p.render(&Uris, false);
    assert!(text.contains(
        "seg11.m4s\n#EXT-X-DISCONTINUITY\n#EXT-X-MAP:URI=\"init-1.mp4\"\n#EXT-X-PROGRAM-DATE-TIME:"
    ));
    // No parts yet in the pending segment: only the hint for its first part.
    assert!(text.contains("seg12.m4s\n#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"part13.0.m4s\"\n"));
    assert_eq!(p.last_position(), Some((12, Some(3))));
    let parsed = parse_media(&text);
    assert!(parsed.segments[2].discontinuity);
    assert_eq!(
        parsed.segments[2].map.as_ref().map(|m| m.uri.as_str()),
        Some("init-1.mp4")
    );

    p.pending = None;
    p.rendition_reports.clear();
    p.ended = true;
    let text = p.render(&Uris, false);
    assert!(!text.contains("PRELOAD-HINT"));
    assert!(text.ends_with("seg12.m4s\n#EXT-X-ENDLIST\n"));
    assert!(parse_media(&text).end_list);
}

#[test]
fn uris_cannot_break_out_of_their_attribute() {
    struct Evil;
    impl LlUris for Evil {
        fn map(&self, _: u64) -> String {
            "a\"b.mp4".into()
        }
        fn segment(&self, msn: u64) -> String {
            format!("s{msn}\n#EXT-X-ENDLIST")
        }
        fn part(&self, _: u64, _: usize) -> String {
            "p\",X=\"1".into()
        }
    }
    let text = live(1, 1).render(&Evil, false);
    assert!(text.contains("#EXT-X-MAP:URI=\"a%22b.mp4\"\n"));
    assert!(text.contains("URI=\"p%22,X=%221\""));
    assert!(!text.contains("\n#EXT-X-ENDLIST"));
}

/// A finished LL-HLS playlist of real fMP4 segments and parts: ffmpeg's HLS demuxer
/// (which ignores the LL tags) follows EXT-X-MAP and the segment URIs and reads every
/// packet the TS segments hold; the parts listed add up to their segments.
#[test]
fn ll_playlist_of_fixture_segments_plays_in_ffmpeg() {
    let segments = segments("h264_aac.ts", 1000);
    let first = frames_from_ts(&segments[0].data, segments[0].start_ts);
    let config = InitConfig::from_frames(first.iter().map(|t| &t.frame)).expect("config");
    let dir = temp_dir("ll-playlist");
    let mut init = Vec::new();
    write_init(&config, &mut init).expect("init");
    std::fs::write(dir.join(Uris.map(segments[0].discontinuity_seq)), &init).unwrap();
    let mut listed = Vec::new();
    for (i, s) in segments.iter().enumerate() {
        let next = segments.get(i + 1).map(NextDts::of_segment);
        let mut out = Vec::new();
        let parts = package_ts_segment(&config, s, next, Some(18_000), &mut out).expect("segment");
        std::fs::write(dir.join(Uris.segment(s.msn)), &out).unwrap();
        for (k, p) in parts.iter().enumerate() {
            std::fs::write(dir.join(Uris.part(s.msn, k)), &out[p.bytes.clone()]).unwrap();
        }
        let total: u64 = parts.iter().map(|p| p.duration_ticks).sum();
        assert_eq!(total, s.duration_ticks, "parts add up to segment {}", s.msn);
        listed.push(LlSegment {
            segment: PlaylistSegment::from(s),
            parts: parts
                .iter()
                .map(|p| PlaylistPart {
                    duration_ticks: p.duration_ticks,
                    independent: p.independent,
                })
                .collect(),
        });
    }
    let playlist = LowLatencyPlaylist {
        target_duration_secs: 1,
        part_target_ms: 200,
        part_hold_back_ms: 600,
        can_skip_until_ms: None,
        segments: listed,
        pending: None,
        rendition_reports: Vec::new(),
        ended: true,
    };
    let text = playlist.render(&Uris, false);
    assert!(text.contains("#EXT-X-PART:DURATION=0.200,URI=\"part"));
    let path = dir.join("ll.m3u8");
    std::fs::write(&path, &text).unwrap();
    let path = path.to_string_lossy().into_owned();
    let mut ts = Vec::new();
    for s in &segments {
        ts.extend_from_slice(&s.data);
    }
    let ts_path = dir.join("cat.ts");
    std::fs::write(&ts_path, &ts).unwrap();
    let ts_path = ts_path.to_string_lossy();
    for select in ["v", "a"] {
        assert_eq!(
            packet_count(&path, select),
            packet_count(&ts_path, select),
            "{select}"
        );
    }
    decode_clean(&path);
}

#[test]
fn a_session_goes_after_every_uri_of_an_ll_playlist() {
    let manifest = live(4, 2).manifest(&Uris, false);
    assert_eq!(manifest.bytes, LIVE_EDGE.as_bytes());
    let with = String::from_utf8(manifest.with_query("session", "S")).unwrap();
    // Every URI of this playlist ends in one of these (maps, parts, the hint, the
    // report and the segment lines), and nothing else does.
    let expected = LIVE_EDGE
        .replace(".mp4\"", ".mp4?session=S\"")
        .replace(".m4s\"", ".m4s?session=S\"")
        .replace(".m3u8\"", ".m3u8?session=S\"")
        .replace(".m4s\n", ".m4s?session=S\n");
    assert_eq!(with, expected);
    assert_eq!(manifest.uri_ends.len(), with.matches("session=S").count());
}
