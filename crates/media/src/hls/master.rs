//! The master (multivariant) playlist.

use std::fmt;

use super::line_safe;
use crate::manifest::{Manifest, ManifestWrite, MarkedText};

/// One EXT-X-STREAM-INF entry. Backup nodes are variants with identical attributes
/// and another URI; players switch between them on failure (OTT-PROT-1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    /// The media playlist's URI (relative or absolute).
    pub uri: String,
    /// Peak bit rate, bits per second (BANDWIDTH).
    pub bandwidth: u64,
    /// Average bit rate, bits per second (AVERAGE-BANDWIDTH), when measured.
    pub average_bandwidth: Option<u64>,
    /// RFC 6381 codec strings, e.g. `avc1.64001f`, `mp4a.40.2`.
    pub codecs: Vec<String>,
    /// Video width and height, when there is video.
    pub resolution: Option<(u32, u32)>,
    /// Frames per 1000 seconds (25 fps = 25000), written with three decimals.
    pub frame_rate_milli: Option<u32>,
}

/// A subtitle rendition (`EXT-X-MEDIA:TYPE=SUBTITLES`) every variant offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubtitleRendition {
    /// What a player shows in its menu.
    pub name: String,
    /// BCP 47 language tag.
    pub language: String,
    /// The WebVTT media playlist's URI.
    pub uri: String,
}

/// CEA-608 captions carried in the video (`EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClosedCaptions {
    /// What a player shows in its menu.
    pub name: String,
    /// BCP 47 language tag.
    pub language: String,
    /// The 608 channel (`CC1` … `CC4`).
    pub instream_id: String,
}

/// One audio language (`EXT-X-MEDIA:TYPE=AUDIO`) every variant offers: the floor
/// muxed in the variants (no URI, RFC 8216 §4.3.4.2.1: the audio is in every variant's
/// media playlist), or another language as an audio-only media playlist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AudioRendition {
    /// What a player shows in its menu.
    pub name: String,
    /// BCP 47 language tag.
    pub language: String,
    /// The audio-only media playlist's URI; `None` for the audio muxed in the variants.
    pub uri: Option<String>,
}

/// The group of every audio rendition (`AUDIO=` on each variant).
pub const AUDIO_GROUP: &str = "aud";

/// The group of every subtitle rendition (`SUBTITLES=` on each variant).
pub const SUBTITLES_GROUP: &str = "subs";

/// The group of the in-band captions (`CLOSED-CAPTIONS=` on each variant).
pub const CLOSED_CAPTIONS_GROUP: &str = "cc";

/// A master playlist: the variants a player may choose or fail over between.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MasterPlaylist {
    /// Every segment of every variant starts with a keyframe.
    pub independent_segments: bool,
    /// The audio languages every variant offers, the default (the floor) first; empty
    /// when the variants' own audio is the only one.
    pub audio: Vec<AudioRendition>,
    /// The subtitle renditions every variant offers, in menu order.
    pub subtitles: Vec<SubtitleRendition>,
    /// The 608 captions in every variant's video, when the source has them.
    pub closed_captions: Option<ClosedCaptions>,
    /// The variants, preferred first.
    pub variants: Vec<Variant>,
}

/// The rendition groups one copy of the variants names: this node's, or a backup's.
struct Groups {
    subtitles: String,
    audio: String,
}

/// A quoted-string attribute value: no quotes, no line breaks (RFC 8216 §4.2).
fn quoted(value: &str) -> String {
    value
        .chars()
        .filter(|c| !matches!(c, '"' | '\r' | '\n'))
        .collect()
}

/// Maps a URI of a master playlist to the same file on a backup node (with its pass).
pub type BackupUri<'a> = Box<dyn Fn(&str) -> String + 'a>;

/// How one viewer's copy of a master playlist differs from the shared one: a login's
/// query on every variant, and the viewer's backups (OTT-PROT-1) with their pathways
/// (RFC 8216bis §7). Rendered from the typed parts ([`MasterPlaylist::render_for`]),
/// never by editing the shared text.
#[derive(Default)]
pub struct Personalisation<'a> {
    /// Appended to every variant's URI (a login's `login=…&token=…`).
    pub query: Option<&'a str>,
    /// `EXT-X-CONTENT-STEERING`'s server URI and the pathways: this node's first, then
    /// one per backup, each named by its copy of the variants.
    pub steering: Option<(String, Vec<String>)>,
    /// The viewer's backups, first backup first: each maps a URI of this playlist to the
    /// backup's (with its pass). Each backup gets a copy of every variant, byte for byte
    /// but for its URI, pathway and subtitle and audio groups: its own subtitle and
    /// audio renditions at its address, so the viewer's subtitles and language follow a
    /// player that moves.
    pub backups: Vec<BackupUri<'a>>,
}

impl std::fmt::Debug for Personalisation<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Personalisation")
            .field("query", &self.query)
            .field("steering", &self.steering)
            .field("backups", &self.backups.len())
            .finish()
    }
}

impl MasterPlaylist {
    /// Writes the playlist.
    pub fn write_to(&self, w: &mut impl ManifestWrite) -> fmt::Result {
        self.write_for(w, &Personalisation::default())
    }

    /// Writes the playlist as one viewer gets it (see [`Personalisation`]).
    pub fn write_for(&self, w: &mut impl ManifestWrite, p: &Personalisation<'_>) -> fmt::Result {
        let with_query = |uri: &str| match p.query {
            Some(q) if uri.contains('?') => format!("{uri}&{q}"),
            Some(q) => format!("{uri}?{q}"),
            None => uri.to_owned(),
        };
        w.write_str("#EXTM3U\n#EXT-X-VERSION:3\n")?;
        if self.independent_segments {
            w.write_str("#EXT-X-INDEPENDENT-SEGMENTS\n")?;
        }
        self.write_subtitles(w, SUBTITLES_GROUP, &|uri| uri.to_owned())?;
        self.write_audio(w, AUDIO_GROUP, &|uri| with_query(uri))?;
        if let Some(cc) = &self.closed_captions {
            writeln!(
                w,
                "#EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS,GROUP-ID=\"{CLOSED_CAPTIONS_GROUP}\",NAME=\"{}\",LANGUAGE=\"{}\",DEFAULT=NO,AUTOSELECT=YES,INSTREAM-ID=\"{}\"",
                quoted(&cc.name),
                quoted(&cc.language),
                quoted(&cc.instream_id),
            )?;
        }
        let pathways = p.steering.as_ref().map(|(_, pathways)| pathways);
        if let Some((uri, pathways)) = &p.steering {
            writeln!(
                w,
                "#EXT-X-CONTENT-STEERING:SERVER-URI=\"{}\",PATHWAY-ID=\"{}\"",
                quoted(uri),
                pathways.first().map_or("", |id| id.as_str()),
            )?;
        }
        let pathway = |i: usize| pathways.and_then(|p| p.get(i)).map(String::as_str);
        let own = Groups {
            subtitles: SUBTITLES_GROUP.to_owned(),
            audio: AUDIO_GROUP.to_owned(),
        };
        for v in &self.variants {
            self.write_variant(w, v, &own, pathway(0), &with_query(&v.uri))?;
        }
        for (i, backup) in p.backups.iter().enumerate() {
            let groups = Groups {
                subtitles: format!("{SUBTITLES_GROUP}-b{}", i + 1),
                audio: format!("{AUDIO_GROUP}-b{}", i + 1),
            };
            self.write_subtitles(w, &groups.subtitles, backup)?;
            self.write_audio(w, &groups.audio, &|uri| backup(&with_query(uri)))?;
            for v in &self.variants {
                let uri = backup(&with_query(&v.uri));
                self.write_variant(w, v, &groups, pathway(i + 1), &uri)?;
            }
        }
        Ok(())
    }

    /// The playlist as one viewer gets it (see [`Personalisation`]), with where its
    /// URIs end.
    pub fn manifest_for(&self, p: &Personalisation<'_>) -> Manifest {
        let copies = 1 + p.backups.len();
        let mut text = MarkedText::with_capacity(64 + copies * (self.variants.len() * 240 + 200));
        self.write_for(&mut text, p)
            .expect("writing to memory cannot fail");
        text.finish()
    }

    /// The playlist as one viewer gets it (see [`Personalisation`]).
    pub fn render_for(&self, p: &Personalisation<'_>) -> String {
        let copies = 1 + p.backups.len();
        let mut s = String::with_capacity(64 + copies * (self.variants.len() * 240 + 200));
        self.write_for(&mut s, p)
            .expect("writing to a String cannot fail");
        s
    }

    /// The subtitle renditions in `group`, each at `uri(its URI)`.
    fn write_subtitles(
        &self,
        w: &mut impl ManifestWrite,
        group: &str,
        uri: &dyn Fn(&str) -> String,
    ) -> fmt::Result {
        for (i, sub) in self.subtitles.iter().enumerate() {
            write!(
                w,
                "#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID=\"{group}\",NAME=\"{}\",LANGUAGE=\"{}\",DEFAULT={},AUTOSELECT=YES,URI=\"",
                quoted(&sub.name),
                quoted(&sub.language),
                if i == 0 { "YES" } else { "NO" },
            )?;
            w.uri(&quoted(&uri(&sub.uri)))?;
            w.write_str("\"\n")?;
        }
        Ok(())
    }

    /// The audio renditions in `group`, the first the default; each one with a URI at
    /// `uri(its URI)`.
    fn write_audio(
        &self,
        w: &mut impl ManifestWrite,
        group: &str,
        uri: &dyn Fn(&str) -> String,
    ) -> fmt::Result {
        for (i, audio) in self.audio.iter().enumerate() {
            write!(
                w,
                "#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"{group}\",NAME=\"{}\",LANGUAGE=\"{}\",DEFAULT={},AUTOSELECT=YES",
                quoted(&audio.name),
                quoted(&audio.language),
                if i == 0 { "YES" } else { "NO" },
            )?;
            if let Some(own) = &audio.uri {
                w.write_str(",URI=\"")?;
                w.uri(&quoted(&uri(own)))?;
                w.write_char('"')?;
            }
            w.write_char('\n')?;
        }
        Ok(())
    }

    /// One `EXT-X-STREAM-INF` and its URI; `groups` names the groups of its subtitle
    /// and audio renditions, `pathway` its Content Steering pathway.
    fn write_variant(
        &self,
        w: &mut impl ManifestWrite,
        v: &Variant,
        groups: &Groups,
        pathway: Option<&str>,
        uri: &str,
    ) -> fmt::Result {
        write!(w, "#EXT-X-STREAM-INF:BANDWIDTH={}", v.bandwidth)?;
        if let Some(avg) = v.average_bandwidth {
            write!(w, ",AVERAGE-BANDWIDTH={avg}")?;
        }
        if !v.codecs.is_empty() {
            // A quoted-string may hold neither quotes nor line breaks.
            write!(w, ",CODECS=\"{}\"", quoted(&v.codecs.join(",")))?;
        }
        if let Some((width, height)) = v.resolution {
            write!(w, ",RESOLUTION={width}x{height}")?;
        }
        if let Some(fr) = v.frame_rate_milli {
            write!(w, ",FRAME-RATE={}.{:03}", fr / 1000, fr % 1000)?;
        }
        if !self.audio.is_empty() {
            write!(w, ",AUDIO=\"{}\"", groups.audio)?;
        }
        if !self.subtitles.is_empty() {
            write!(w, ",SUBTITLES=\"{}\"", groups.subtitles)?;
        }
        if self.closed_captions.is_some() {
            write!(w, ",CLOSED-CAPTIONS=\"{CLOSED_CAPTIONS_GROUP}\"")?;
        }
        if let Some(pathway) = pathway {
            write!(w, ",PATHWAY-ID=\"{}\"", quoted(pathway))?;
        }
        w.write_char('\n')?;
        w.uri(&line_safe(uri))?;
        w.write_char('\n')
    }

    /// The playlist as a `String`.
    pub fn render(&self) -> String {
        let mut s = String::with_capacity(64 + self.variants.len() * 160);
        self.write_to(&mut s)
            .expect("writing to a String cannot fail");
        s
    }
}
