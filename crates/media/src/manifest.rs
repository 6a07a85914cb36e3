//! Manifest text that knows where its URIs are, so that a private viewer's copy is the
//! shared text with the viewer's session after each URI — no parsing, no rewriting.
//!
//! The playlist and MPD writers write every URI a player will request (segments, parts,
//! preload hints, rendition reports, maps, media playlists, subtitles, segment
//! templates, `Location`) through [`ManifestWrite::uri`]; text that is not such a URI
//! (a steering server's URI, a DASH `BaseURL`, which template URIs are resolved
//! against) goes through `write_str`. Written into a `String`, that is plain text.
//! Written into a [`MarkedText`], the writer also records where each URI ends and how
//! a query is joined to it: the [`Manifest`] every viewer is answered from carries its
//! [`UriEnds`], and [`Manifest::with_query`] writes one viewer's copy.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;

/// How a query parameter is joined to a URI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Joint {
    /// The URI has no query yet: `?`.
    Question,
    /// The URI has a query: `&`.
    Ampersand,
    /// The URI has a query and sits in XML: `&amp;`.
    XmlAmpersand,
}

impl Joint {
    fn text(self) -> &'static str {
        match self {
            Joint::Question => "?",
            Joint::Ampersand => "&",
            Joint::XmlAmpersand => "&amp;",
        }
    }
}

/// Where one URI of a manifest ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct UriEnd {
    at: u32,
    joint: Joint,
}

/// A writer of manifest text that is told which of its text is a URI a player requests.
pub trait ManifestWrite: fmt::Write {
    /// Writes `uri` (already made safe for where it goes): a URI the player will request.
    ///
    /// # Errors
    /// As `write_str`.
    fn uri(&mut self, uri: &str) -> fmt::Result {
        self.write_str(uri)
    }
}

impl ManifestWrite for String {}

/// Manifest text with where its URIs end (see the module docs).
#[derive(Debug, Default)]
pub struct MarkedText {
    text: String,
    ends: Vec<UriEnd>,
    xml: bool,
}

impl MarkedText {
    /// Empty playlist text with room for `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            text: String::with_capacity(capacity),
            ..Self::default()
        }
    }

    /// Empty XML text (an MPD: a query is joined with `&amp;`).
    pub fn xml(capacity: usize) -> Self {
        Self {
            xml: true,
            ..Self::with_capacity(capacity)
        }
    }

    /// The finished manifest.
    pub fn finish(self) -> Manifest {
        Manifest {
            bytes: Bytes::from(self.text),
            uri_ends: UriEnds(self.ends.into()),
        }
    }
}

impl fmt::Write for MarkedText {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.text.push_str(s);
        Ok(())
    }
}

impl ManifestWrite for MarkedText {
    fn uri(&mut self, uri: &str) -> fmt::Result {
        self.text.push_str(uri);
        let joint = match (uri.contains('?'), self.xml) {
            (false, _) => Joint::Question,
            (true, false) => Joint::Ampersand,
            (true, true) => Joint::XmlAmpersand,
        };
        let at = u32::try_from(self.text.len()).map_err(|_| fmt::Error)?;
        self.ends.push(UriEnd { at, joint });
        Ok(())
    }
}

/// Where the URIs of one manifest end, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UriEnds(Arc<[UriEnd]>);

impl UriEnds {
    /// How many URIs the manifest has.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when the manifest has no URI.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A rendered manifest: the bytes every viewer without a query is answered, and where
/// its URIs end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    /// The text.
    pub bytes: Bytes,
    /// Where each URI in it ends.
    pub uri_ends: UriEnds,
}

impl Manifest {
    /// This playlist with `more` written after it (its URIs marked as in a
    /// [`MarkedText`]); unchanged when `more` fails or the text is not UTF-8 (the writers
    /// only write UTF-8).
    pub fn extended(&self, more: impl FnOnce(&mut MarkedText) -> fmt::Result) -> Manifest {
        let Ok(existing) = std::str::from_utf8(&self.bytes) else {
            return self.clone();
        };
        let mut text = MarkedText {
            text: String::with_capacity(existing.len() + 256),
            ends: self.uri_ends.0.to_vec(),
            xml: false,
        };
        text.text.push_str(existing);
        if more(&mut text).is_err() {
            return self.clone();
        }
        text.finish()
    }

    /// The manifest with `name=value` in the query of every URI. `value` must be safe in
    /// a URI and in XML (a session token is: letters, digits, `-`, `_`).
    pub fn with_query(&self, name: &str, value: &str) -> Vec<u8> {
        let ends = &self.uri_ends.0;
        // The three suffixes (`?name=value`, `&…`, `&amp;…`) in one buffer: two copies
        // per URI.
        let pair = name.len() + 1 + value.len();
        let mut suffixes = Vec::with_capacity(3 * pair + 7);
        let mut spans = [0..0, 0..0, 0..0];
        for (span, joint) in
            spans
                .iter_mut()
                .zip([Joint::Question, Joint::Ampersand, Joint::XmlAmpersand])
        {
            let start = suffixes.len();
            suffixes.extend_from_slice(joint.text().as_bytes());
            suffixes.extend_from_slice(name.as_bytes());
            suffixes.push(b'=');
            suffixes.extend_from_slice(value.as_bytes());
            *span = start..suffixes.len();
        }
        let mut out = Vec::with_capacity(self.bytes.len() + ends.len() * spans[2].len());
        let mut from = 0;
        for end in ends.iter() {
            let at = (end.at as usize).clamp(from, self.bytes.len());
            out.extend_from_slice(&self.bytes[from..at]);
            let span = match end.joint {
                Joint::Question => &spans[0],
                Joint::Ampersand => &spans[1],
                Joint::XmlAmpersand => &spans[2],
            };
            out.extend_from_slice(&suffixes[span.clone()]);
            from = at;
        }
        out.extend_from_slice(&self.bytes[from..]);
        out
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;

    #[test]
    fn a_query_goes_after_every_uri_and_nowhere_else() {
        let mut text = MarkedText::with_capacity(64);
        text.write_str("#EXTM3U\n#EXT-X-MAP:URI=\"").unwrap();
        text.uri("init-0.mp4").unwrap();
        text.write_str("\"\n#EXTINF:2.000,\n").unwrap();
        text.uri("http://b/m/seg-1.ts?pass=P").unwrap();
        text.write_str("\n").unwrap();
        let m = text.finish();
        assert_eq!(m.uri_ends.len(), 2);
        assert_eq!(
            String::from_utf8(m.with_query("session", "S")).unwrap(),
            "#EXTM3U\n#EXT-X-MAP:URI=\"init-0.mp4?session=S\"\n#EXTINF:2.000,\nhttp://b/m/seg-1.ts?pass=P&session=S\n"
        );
        let mut xml = MarkedText::xml(64);
        xml.write_str("<Location>").unwrap();
        xml.uri("http://b/m/index.mpd?pass=P").unwrap();
        xml.write_str("</Location><BaseURL>http://a/</BaseURL>")
            .unwrap();
        assert_eq!(
            String::from_utf8(xml.finish().with_query("session", "S")).unwrap(),
            "<Location>http://b/m/index.mpd?pass=P&amp;session=S</Location><BaseURL>http://a/</BaseURL>"
        );
    }

    #[test]
    fn an_extended_manifest_keeps_its_uris() {
        let mut text = MarkedText::with_capacity(16);
        text.uri("a.m3u8").unwrap();
        let m = text.finish().extended(|t| {
            t.write_str("\n")?;
            t.uri("b.m3u8")
        });
        assert_eq!(m.with_query("s", "1"), b"a.m3u8?s=1\nb.m3u8?s=1");
        let plain = Manifest {
            bytes: Bytes::from_static(b"#EXTM3U\n"),
            uri_ends: UriEnds::default(),
        };
        assert_eq!(plain.with_query("s", "1"), b"#EXTM3U\n");
    }
}
