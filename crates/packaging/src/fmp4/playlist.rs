//! fMP4 HLS media playlists: the TS playlist's text (same MSNs, dates, durations,
//! discontinuities, written by the same [`media::hls::MediaPlaylist`]) with
//! EXT-X-MAP before the first segment and wherever the init segment changes, and
//! EXT-X-VERSION 7 (EXT-X-MAP in a playlist that is not I-frame only needs 6 or more).

use media::hls::{MediaPlaylist, PlaylistType};

use crate::window::WindowSnapshot;

/// The live fMP4 HLS playlist of `window`: its segments that have an fMP4 view, with
/// the window's target duration and an EXT-X-MAP per init.
pub fn live(window: &WindowSnapshot) -> String {
    let listed: Vec<_> = window.fmp4_segments().collect();
    let playlist = MediaPlaylist {
        playlist_type: PlaylistType::Live,
        target_duration_secs: window.target_secs,
        segments: listed.iter().map(|(s, _)| s.playlist_segment()).collect(),
        ended: false,
    };
    let text = playlist.render(|msn| format!("seg-{msn}.m4s"));
    let maps: Vec<String> = listed
        .iter()
        .map(|(_, v)| format!("init-{}.mp4", v.init.discontinuity_seq))
        .collect();
    with_maps(&text, &maps)
}

/// Adds the EXT-X-MAP tags to a rendered TS media playlist.
///
/// `maps[i]` is the init URI of the i-th listed segment; a tag is written before a
/// segment whose map differs from the previous segment's (after its
/// EXT-X-DISCONTINUITY, before its EXT-X-PROGRAM-DATE-TIME). Every segment of a
/// brdyun playlist has exactly one EXT-X-PROGRAM-DATE-TIME, which is how segments are
/// found; segments beyond `maps` keep the last map.
pub fn with_maps(ts_playlist: &str, maps: &[String]) -> String {
    let mut out = String::with_capacity(ts_playlist.len() + maps.len() * 8 + 64);
    let mut index = 0usize;
    let mut current: Option<&str> = None;
    for line in ts_playlist.lines() {
        if line == "#EXT-X-VERSION:3" {
            out.push_str("#EXT-X-VERSION:7\n");
            continue;
        }
        if line.starts_with("#EXT-X-PROGRAM-DATE-TIME:") {
            if let Some(map) = maps.get(index).map(String::as_str) {
                if current != Some(map) {
                    out.push_str("#EXT-X-MAP:URI=\"");
                    out.push_str(&map.replace(['"', '\r', '\n'], ""));
                    out.push_str("\"\n");
                    current = Some(map);
                }
            }
            index += 1;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::with_maps;

    #[test]
    fn maps_go_before_the_date_of_each_new_init() {
        let ts = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n\
                  #EXT-X-MEDIA-SEQUENCE:7\n#EXT-X-DISCONTINUITY-SEQUENCE:0\n\
                  #EXT-X-INDEPENDENT-SEGMENTS\n\
                  #EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:00.000Z\n#EXTINF:2.000,\nseg-7.m4s\n\
                  #EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:02.000Z\n#EXTINF:2.000,\nseg-8.m4s\n\
                  #EXT-X-DISCONTINUITY\n\
                  #EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:01:00.000Z\n#EXTINF:2.000,\nseg-9.m4s\n";
        let maps = ["init-0.mp4", "init-0.mp4", "init-1.mp4"].map(String::from);
        let text = with_maps(ts, &maps);
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
