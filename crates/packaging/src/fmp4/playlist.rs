//! fMP4 HLS media playlists: the TS playlist (same MSNs, dates, durations,
//! discontinuities, written by the same [`media::hls::MediaPlaylist`]) with EXT-X-MAP
//! before the first segment and wherever the init segment changes
//! ([`MediaPlaylist::write_with_maps`]).

use media::fmp4::Track;
use media::hls::{MediaPlaylist, PlaylistType};
use media::manifest::Manifest;

use crate::window::WindowSnapshot;

/// The live fMP4 HLS playlist of `window`: its segments that have an fMP4 view, with
/// the window's target duration and an EXT-X-MAP per init.
pub fn live(window: &WindowSnapshot) -> Manifest {
    live_track(window, Track::Muxed)
}

/// The fMP4 HLS media playlist of `track` of `window`: `fmp4.m3u8`, or the video's or
/// audio's alone, rendered once per window when first asked for (kept in its
/// `fmp4_track_playlists`).
pub fn of_track(window: &WindowSnapshot, track: Track) -> Manifest {
    let slot = match track {
        Track::Muxed => return window.fmp4_playlist.clone(),
        Track::Video => &window.fmp4_track_playlists[0],
        Track::Audio => &window.fmp4_track_playlists[1],
    };
    slot.get_or_init(|| live_track(window, track)).clone()
}

/// The live fMP4 HLS playlist of `track` of `window` (`fmp4-v.m3u8`, `fmp4-a.m3u8`): the
/// muxed playlist's timeline over the track's own files, `init-{d}-v.mp4` and
/// `seg-{msn}-v.m4s` (the DASH files), for a master whose audio is a rendition group.
pub fn live_track(window: &WindowSnapshot, track: Track) -> Manifest {
    let suffix = track.suffix();
    let listed: Vec<_> = window.fmp4_segments().collect();
    let playlist = MediaPlaylist {
        playlist_type: PlaylistType::Live,
        target_duration_secs: window.target_secs,
        segments: listed.iter().map(|(s, _)| s.playlist_segment()).collect(),
        ended: false,
    };
    let maps: Vec<String> = listed
        .iter()
        .map(|(_, v)| format!("init-{}{suffix}.mp4", v.init.discontinuity_seq))
        .collect();
    playlist.manifest_with_maps(|msn| format!("seg-{msn}{suffix}.m4s"), &maps)
}

#[cfg(test)]
mod tests {
    use media::hls::{MediaPlaylist, PlaylistSegment, PlaylistType};

    #[test]
    fn maps_go_before_the_date_of_each_new_init() {
        const T0: i64 = 1_714_564_800_000; // 2024-05-01T12:00:00.000Z
        let seg = |msn: u64, seq: u64, at_ms: i64| PlaylistSegment {
            msn,
            discontinuity_seq: seq,
            discontinuous: msn == 9,
            duration_ticks: 180_000,
            program_date_time_ms: T0 + at_ms,
            gap: false,
        };
        let playlist = MediaPlaylist {
            playlist_type: PlaylistType::Live,
            target_duration_secs: 2,
            segments: vec![seg(7, 0, 0), seg(8, 0, 2000), seg(9, 1, 60_000)],
            ended: false,
        };
        let maps = ["init-0.mp4", "init-0.mp4", "init-1.mp4"].map(String::from);
        let manifest = playlist.manifest_with_maps(|msn| format!("seg-{msn}.m4s"), &maps);
        let text = std::str::from_utf8(&manifest.bytes)
            .expect("utf-8")
            .to_owned();
        assert_eq!(
            text,
            "#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-TARGETDURATION:2\n\
             #EXT-X-MEDIA-SEQUENCE:7\n#EXT-X-DISCONTINUITY-SEQUENCE:0\n\
             #EXT-X-INDEPENDENT-SEGMENTS\n\
             #EXT-X-MAP:URI=\"init-0.mp4\"\n\
             #EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:00.000Z\n#EXTINF:2.000,\nseg-7.m4s\n\
             #EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:02.000Z\n#EXTINF:2.000,\nseg-8.m4s\n\
             #EXT-X-DISCONTINUITY\n\
             #EXT-X-MAP:URI=\"init-1.mp4\"\n\
             #EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:01:00.000Z\n#EXTINF:2.000,\nseg-9.m4s\n"
        );
        let parsed = m3u8_rs::parse_media_playlist_res(text.as_bytes()).expect("parses");
        assert_eq!(parsed.version, Some(7));
        let maps: Vec<Option<String>> = parsed
            .segments
            .iter()
            .map(|s| s.map.as_ref().map(|m| m.uri.clone()))
            .collect();
        assert_eq!(
            maps,
            [Some("init-0.mp4".into()), None, Some("init-1.mp4".into())]
        );
    }
}
