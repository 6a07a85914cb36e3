//! Writes a private meeting's session into every URI of a playlist or MPD answered to
//! its viewer, so that each request the player makes from it (media playlists, parts,
//! preload hints, rendition reports, inits, segments, subtitles, the next MPD) carries
//! the session, and a URI copied out of it stops working when the session ends.
//!
//! HLS: every URI line, and every `URI="…"` attribute of a tag (not `SERVER-URI`: the
//! steering server needs no session). DASH: `media`, `initialization` (segment
//! templates, `$Number$` and all) and `Location` (where the MPD is reloaded from);
//! `BaseURL`s are prefixes the template URIs are resolved against, and stay.

use ott::SESSION_QUERY_PARAM;

/// Appends `session=` to `uri` (`?` or `&`, XML-escaped for an MPD), unless it has one.
fn push_with_session(out: &mut Vec<u8>, uri: &[u8], session: &str, xml: bool) {
    out.extend_from_slice(uri);
    let text = String::from_utf8_lossy(uri);
    let has = text.split(['?', '&', ';']).skip(1).any(|p| {
        p.strip_prefix(SESSION_QUERY_PARAM)
            .is_some_and(|r| r.starts_with('='))
    });
    if has {
        return;
    }
    out.extend_from_slice(match (uri.contains(&b'?'), xml) {
        (false, _) => b"?",
        (true, false) => b"&",
        (true, true) => b"&amp;",
    });
    out.extend_from_slice(SESSION_QUERY_PARAM.as_bytes());
    out.push(b'=');
    out.extend_from_slice(session.as_bytes());
}

/// Copies `text`, writing the session into the value of every attribute `name="…"`
/// whose name starts at an attribute boundary (`:`, `,`, whitespace, or `<`).
fn rewrite_attributes(out: &mut Vec<u8>, text: &[u8], names: &[&[u8]], session: &str, xml: bool) {
    let mut i = 0;
    while i < text.len() {
        let at_boundary = i == 0 || matches!(text[i - 1], b':' | b',' | b' ' | b'\t' | b'\n');
        let name = names.iter().find(|n| {
            at_boundary && text[i..].starts_with(n) && text[i + n.len()..].starts_with(b"=\"")
        });
        let Some(name) = name else {
            out.push(text[i]);
            i += 1;
            continue;
        };
        let value_start = i + name.len() + 2;
        let Some(len) = text[value_start..].iter().position(|&c| c == b'"') else {
            out.extend_from_slice(&text[i..]);
            return;
        };
        out.extend_from_slice(&text[i..value_start]);
        push_with_session(out, &text[value_start..value_start + len], session, xml);
        out.push(b'"');
        i = value_start + len + 1;
    }
}

/// An HLS playlist (master, media, LL-HLS, subtitles, archive) with the session in
/// every URI.
pub fn m3u8(body: &[u8], session: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + body.len() / 8 + 64);
    for line in body.split_inclusive(|&c| c == b'\n') {
        let (content, end) = match line.strip_suffix(b"\r\n") {
            Some(c) => (c, &b"\r\n"[..]),
            None => match line.strip_suffix(b"\n") {
                Some(c) => (c, &b"\n"[..]),
                None => (line, &b""[..]),
            },
        };
        if content.starts_with(b"#") {
            rewrite_attributes(&mut out, content, &[b"URI"], session, false);
        } else if content.iter().all(u8::is_ascii_whitespace) {
            out.extend_from_slice(content);
        } else {
            push_with_session(&mut out, content, session, false);
        }
        out.extend_from_slice(end);
    }
    out
}

/// A DASH MPD with the session in its segment templates and `Location`s.
pub fn mpd(body: &[u8], session: &str) -> Vec<u8> {
    let mut templated = Vec::with_capacity(body.len() + 512);
    rewrite_attributes(
        &mut templated,
        body,
        &[b"media", b"initialization"],
        session,
        true,
    );
    // `<Location …>URI</Location>`: the URI is element content.
    let mut out = Vec::with_capacity(templated.len() + 256);
    let mut rest = &templated[..];
    while let Some(start) = find(rest, b"<Location") {
        let Some(open_end) = rest[start..].iter().position(|&c| c == b'>') else {
            break;
        };
        let content_start = start + open_end + 1;
        let Some(len) = find(&rest[content_start..], b"</Location>") else {
            break;
        };
        out.extend_from_slice(&rest[..content_start]);
        push_with_session(
            &mut out,
            &rest[content_start..content_start + len],
            session,
            true,
        );
        rest = &rest[content_start + len..];
    }
    out.extend_from_slice(rest);
    out
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::{m3u8, mpd};

    #[test]
    fn every_uri_of_a_playlist_carries_the_session() {
        let master = "#EXTM3U\n#EXT-X-CONTENT-STEERING:SERVER-URI=\"http://b/steering/m?p=a,b\",PATHWAY-ID=\"a\"\n\
#EXT-X-MEDIA:TYPE=SUBTITLES,GROUPID=\"s\",URI=\"sub-en.m3u8\"\n\
#EXT-X-STREAM-INF:BANDWIDTH=1\nmono.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=1\nhttp://b:8080/m/mono.m3u8?pass=P\n";
        let out = String::from_utf8(m3u8(master.as_bytes(), "S")).unwrap();
        assert!(
            out.contains("SERVER-URI=\"http://b/steering/m?p=a,b\""),
            "{out}"
        );
        assert!(out.contains("URI=\"sub-en.m3u8?session=S\""), "{out}");
        assert!(out.contains("\nmono.m3u8?session=S\n"), "{out}");
        assert!(
            out.contains("\nhttp://b:8080/m/mono.m3u8?pass=P&session=S\n"),
            "{out}"
        );
        let ll = "#EXT-X-MAP:URI=\"init-0.mp4\"\n#EXT-X-PART:DURATION=1.0,URI=\"part-1-0.m4s\",INDEPENDENT=YES\n\
#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"part-1-1.m4s\"\r\n#EXT-X-RENDITION-REPORT:URI=\"../240p/ll.m3u8\",LAST-MSN=1\nseg-1.m4s\n\n";
        let out = String::from_utf8(m3u8(ll.as_bytes(), "S")).unwrap();
        for uri in [
            "init-0.mp4",
            "part-1-0.m4s",
            "part-1-1.m4s",
            "../240p/ll.m3u8",
        ] {
            assert!(
                out.contains(&format!("URI=\"{uri}?session=S\"")),
                "{uri}: {out}"
            );
        }
        assert!(
            out.contains("\r\n#EXT-X-RENDITION"),
            "line ends kept: {out}"
        );
        assert!(out.ends_with("seg-1.m4s?session=S\n\n"), "{out}");
        // Rewriting twice changes nothing more.
        assert_eq!(m3u8(out.as_bytes(), "S"), out.as_bytes());
    }

    #[test]
    fn an_mpd_carries_the_session_in_its_templates_and_locations() {
        let text = "<MPD><Location serviceLocation=\"b\">http://b/m/index.mpd?pass=P</Location>\
<Location>http://a/m/index.mpd</Location><BaseURL>http://a/m/</BaseURL>\
<SegmentTemplate timescale=\"90000\" initialization=\"video/init-d0.mp4\" media=\"video/d0-$Number$.m4s\"/>\
<UTCTiming schemeIdUri=\"x\" value=\"/time?iso&amp;ms\"/></MPD>";
        let out = String::from_utf8(mpd(text.as_bytes(), "S")).unwrap();
        assert!(
            out.contains(">http://b/m/index.mpd?pass=P&amp;session=S</Location>"),
            "{out}"
        );
        assert!(
            out.contains(">http://a/m/index.mpd?session=S</Location>"),
            "{out}"
        );
        assert!(out.contains("<BaseURL>http://a/m/</BaseURL>"), "{out}");
        assert!(
            out.contains("initialization=\"video/init-d0.mp4?session=S\""),
            "{out}"
        );
        assert!(
            out.contains("media=\"video/d0-$Number$.m4s?session=S\""),
            "{out}"
        );
        assert!(out.contains("value=\"/time?iso&amp;ms\""), "{out}");
    }
}
