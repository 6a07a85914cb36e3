//! Writes a private meeting's session into every URI of a playlist or MPD answered to
//! its viewer, so that each request the player makes from it (media playlists, parts,
//! preload hints, rendition reports, inits, segments, subtitles, the next MPD) carries
//! the session, and a URI copied out of it stops working when the session ends.
//!
//! HLS: every URI line, and every `URI="…"` attribute of a tag (not `SERVER-URI`: the
//! steering server needs no session). DASH: `media`, `initialization` (segment
//! templates, `$Number$` and all) and `Location` (where the MPD is reloaded from);
//! `BaseURL`s are prefixes the template URIs are resolved against, and stay.
//!
//! The rewriting is done once per rendered manifest, not per viewer: a manifest
//! answered a second time is cut into a [`SessionTemplate`] whose holes each viewer's
//! session fills ([`Templates`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use bytes::Bytes;
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

/// What a manifest this node renders never holds (a NUL byte): where a viewer's
/// session goes in a [`SessionTemplate`].
const HOLE: &str = "\0";

/// A playlist or MPD cut where a viewer's session goes: the text rewriting is done once
/// per rendered manifest, and each private viewer's copy is then the pieces with its
/// session between them — a copy, no parsing ([`SessionTemplate::fill`]).
#[derive(Debug)]
pub struct SessionTemplate {
    /// The manifest it was cut from, kept so that its bytes (and their address, the
    /// key of [`Templates`]) stay.
    _source: Bytes,
    /// The manifest with the session's holes written in.
    text: Vec<u8>,
    /// Where the holes are in `text`.
    holes: Vec<usize>,
}

impl SessionTemplate {
    /// The template of `body` (an MPD when `is_mpd`); `None` when `body` holds a NUL
    /// byte (never rendered here: such a body is rewritten as it is).
    pub fn cut(body: Bytes, is_mpd: bool) -> Option<Self> {
        if body.contains(&0) {
            return None;
        }
        let text = if is_mpd {
            mpd(&body, HOLE)
        } else {
            m3u8(&body, HOLE)
        };
        let holes = text
            .iter()
            .enumerate()
            .filter_map(|(i, &b)| (b == 0).then_some(i))
            .collect();
        Some(Self {
            _source: body,
            text,
            holes,
        })
    }

    /// The manifest with `session` in every hole: what [`m3u8`] or [`mpd`] answers.
    pub fn fill(&self, session: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.text.len() + self.holes.len() * session.len());
        let mut from = 0;
        for &hole in &self.holes {
            out.extend_from_slice(&self.text[from..hole]);
            out.extend_from_slice(session.as_bytes());
            from = hole + 1;
        }
        out.extend_from_slice(&self.text[from..]);
        out
    }
}

/// Manifests known, at most; past it the cache starts again empty.
const MAX_TEMPLATES: usize = 512;
/// Bytes of template text kept, at most (a long DVR window's playlist is large); past
/// it the cache starts again empty.
const MAX_TEMPLATE_BYTES: usize = 32 << 20;

/// What the cache knows of one manifest's bytes.
enum Slot {
    /// Answered once: rewritten as it was, its template not cut yet (a manifest made
    /// for one request, a personalised master, never pays for one).
    Seen,
    /// Answered more than once: its template.
    Cut(Arc<SessionTemplate>),
}

/// The session templates of the manifests a node answers its private viewers, by the
/// address and length of the manifest's bytes: a rendered manifest is one shared
/// allocation that every viewer is answered from until the next segment replaces it,
/// and a template keeps its bytes, so no other manifest can take their address while
/// it is cached.
#[derive(Default)]
pub struct Templates {
    slots: Mutex<HashMap<(usize, usize, bool), Slot>>,
    /// The bytes the cut templates hold (their text and their source).
    held: AtomicU64,
    cut: AtomicU64,
    filled: AtomicU64,
}

impl Templates {
    /// `body` (an MPD when `is_mpd`) with `session` in every URI, from its template once
    /// the same bytes were answered before.
    pub fn answer(&self, body: &Bytes, is_mpd: bool, session: &str) -> Vec<u8> {
        let key = (body.as_ptr() as usize, body.len(), is_mpd);
        let template = {
            let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
            match slots.get(&key) {
                Some(Slot::Cut(template)) => Some(Arc::clone(template)),
                Some(Slot::Seen) => None,
                None => {
                    if slots.len() >= MAX_TEMPLATES {
                        slots.clear();
                        self.held.store(0, Ordering::Relaxed);
                    }
                    slots.insert(key, Slot::Seen);
                    drop(slots);
                    return rewrite(body, is_mpd, session);
                }
            }
        };
        if let Some(template) = template {
            self.filled.fetch_add(1, Ordering::Relaxed);
            return template.fill(session);
        }
        let Some(template) = SessionTemplate::cut(body.clone(), is_mpd) else {
            return rewrite(body, is_mpd, session);
        };
        let template = Arc::new(template);
        self.cut.fetch_add(1, Ordering::Relaxed);
        let size = (template.text.len() + body.len()) as u64;
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        if self.held.fetch_add(size, Ordering::Relaxed) + size > MAX_TEMPLATE_BYTES as u64 {
            slots.clear();
            self.held.store(size, Ordering::Relaxed);
        }
        slots.insert(key, Slot::Cut(Arc::clone(&template)));
        drop(slots);
        self.filled.fetch_add(1, Ordering::Relaxed);
        template.fill(session)
    }

    /// How many templates were cut and how many answers were filled from one.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.cut.load(Ordering::Relaxed),
            self.filled.load(Ordering::Relaxed),
        )
    }
}

/// The process's [`Templates`].
pub fn templates() -> &'static Templates {
    static TEMPLATES: OnceLock<Templates> = OnceLock::new();
    TEMPLATES.get_or_init(Templates::default)
}

fn rewrite(body: &[u8], is_mpd: bool, session: &str) -> Vec<u8> {
    if is_mpd {
        mpd(body, session)
    } else {
        m3u8(body, session)
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::{m3u8, mpd, SessionTemplate, Templates};

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

    const PLAYLIST: &str = "#EXTM3U\n#EXT-X-MAP:URI=\"init-0.mp4\"\n#EXT-X-PART:DURATION=1.0,URI=\"part-1-0.m4s\"\n\
#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"part-1-1.m4s\"\r\n#EXTINF:2.0,\nseg-1.m4s\nhttp://b:8080/m/seg-2.ts?pass=P\n\
already.ts?session=X\n\n";
    const MPD: &str = "<MPD><Location serviceLocation=\"b\">http://b/m/index.mpd?pass=P</Location>\
<SegmentTemplate initialization=\"video/init-d0.mp4\" media=\"video/d0-$Number$.m4s\"/></MPD>";

    proptest::proptest! {
        #[test]
        fn a_filled_template_is_the_rewritten_manifest(session in "[A-Za-z0-9_-]{1,48}") {
            for (body, is_mpd) in [(PLAYLIST, false), (MPD, true)] {
                let template = SessionTemplate::cut(Bytes::from_static(body.as_bytes()), is_mpd)
                    .expect("no NUL");
                let direct = if is_mpd {
                    mpd(body.as_bytes(), &session)
                } else {
                    m3u8(body.as_bytes(), &session)
                };
                proptest::prop_assert_eq!(template.fill(&session), direct);
            }
        }
    }

    #[test]
    fn the_same_bytes_answered_again_are_filled_from_their_template() {
        let templates = Templates::default();
        let body = Bytes::from(PLAYLIST.as_bytes().to_vec());
        let expected = m3u8(&body, "S");
        assert_eq!(templates.answer(&body, false, "S"), expected);
        assert_eq!(
            templates.counts(),
            (0, 0),
            "answered once: rewritten as it is"
        );
        assert_eq!(templates.answer(&body, false, "S"), expected);
        assert_eq!(templates.answer(&body.clone(), false, "S"), expected);
        assert_eq!(templates.counts(), (1, 2));
        // Equal bytes elsewhere are another manifest.
        let copy = Bytes::from(PLAYLIST.as_bytes().to_vec());
        assert_eq!(templates.answer(&copy, false, "T"), m3u8(&copy, "T"));
        assert_eq!(templates.counts(), (1, 2));
        // A NUL byte is never a hole: rewritten as it is.
        let odd = Bytes::from_static(b"#EXTM3U\nseg\0.ts\n");
        for _ in 0..3 {
            assert_eq!(templates.answer(&odd, false, "S"), m3u8(&odd, "S"));
        }
        assert_eq!(templates.counts(), (1, 2));
    }

    #[tokio::test]
    async fn a_manifest_read_back_from_its_answer_keeps_its_address() {
        // The route reads a private viewer's manifest back from the response body: the
        // templates are found by the bytes' address, so that read must not copy.
        let body = Bytes::from(PLAYLIST.as_bytes().to_vec());
        let read = axum::body::to_bytes(axum::body::Body::from(body.clone()), usize::MAX)
            .await
            .expect("a full body");
        assert_eq!(read.as_ptr(), body.as_ptr());
        assert_eq!(read.len(), body.len());
    }
}
