//! The master (multivariant) playlist.

use std::fmt;

use super::line_safe;

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

/// The group of every subtitle rendition (`SUBTITLES=` on each variant).
pub const SUBTITLES_GROUP: &str = "subs";

/// The group of the in-band captions (`CLOSED-CAPTIONS=` on each variant).
pub const CLOSED_CAPTIONS_GROUP: &str = "cc";

/// A master playlist: the variants a player may choose or fail over between.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MasterPlaylist {
    /// Every segment of every variant starts with a keyframe.
    pub independent_segments: bool,
    /// The subtitle renditions every variant offers, in menu order.
    pub subtitles: Vec<SubtitleRendition>,
    /// The 608 captions in every variant's video, when the source has them.
    pub closed_captions: Option<ClosedCaptions>,
    /// The variants, preferred first.
    pub variants: Vec<Variant>,
}

/// A quoted-string attribute value: no quotes, no line breaks (RFC 8216 §4.2).
fn quoted(value: &str) -> String {
    value
        .chars()
        .filter(|c| !matches!(c, '"' | '\r' | '\n'))
        .collect()
}

impl MasterPlaylist {
    /// Writes the playlist.
    pub fn write_to(&self, w: &mut impl fmt::Write) -> fmt::Result {
        w.write_str("#EXTM3U\n#EXT-X-VERSION:3\n")?;
        if self.independent_segments {
            w.write_str("#EXT-X-INDEPENDENT-SEGMENTS\n")?;
        }
        for (i, sub) in self.subtitles.iter().enumerate() {
            writeln!(
                w,
                "#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID=\"{SUBTITLES_GROUP}\",NAME=\"{}\",LANGUAGE=\"{}\",DEFAULT={},AUTOSELECT=YES,URI=\"{}\"",
                quoted(&sub.name),
                quoted(&sub.language),
                if i == 0 { "YES" } else { "NO" },
                quoted(&sub.uri),
            )?;
        }
        if let Some(cc) = &self.closed_captions {
            writeln!(
                w,
                "#EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS,GROUP-ID=\"{CLOSED_CAPTIONS_GROUP}\",NAME=\"{}\",LANGUAGE=\"{}\",DEFAULT=NO,AUTOSELECT=YES,INSTREAM-ID=\"{}\"",
                quoted(&cc.name),
                quoted(&cc.language),
                quoted(&cc.instream_id),
            )?;
        }
        for v in &self.variants {
            write!(w, "#EXT-X-STREAM-INF:BANDWIDTH={}", v.bandwidth)?;
            if let Some(avg) = v.average_bandwidth {
                write!(w, ",AVERAGE-BANDWIDTH={avg}")?;
            }
            if !v.codecs.is_empty() {
                // A quoted-string may hold neither quotes nor line breaks.
                let codecs: String = v
                    .codecs
                    .join(",")
                    .chars()
                    .filter(|c| !matches!(c, '"' | '\r' | '\n'))
                    .collect();
                write!(w, ",CODECS=\"{codecs}\"")?;
            }
            if let Some((width, height)) = v.resolution {
                write!(w, ",RESOLUTION={width}x{height}")?;
            }
            if let Some(fr) = v.frame_rate_milli {
                write!(w, ",FRAME-RATE={}.{:03}", fr / 1000, fr % 1000)?;
            }
            if !self.subtitles.is_empty() {
                write!(w, ",SUBTITLES=\"{SUBTITLES_GROUP}\"")?;
            }
            if self.closed_captions.is_some() {
                write!(w, ",CLOSED-CAPTIONS=\"{CLOSED_CAPTIONS_GROUP}\"")?;
            }
            writeln!(w, "\n{}", line_safe(&v.uri))?;
        }
        Ok(())
    }

    /// The playlist as a `String`.
    pub fn render(&self) -> String {
        let mut s = String::with_capacity(64 + self.variants.len() * 160);
        self.write_to(&mut s)
            .expect("writing to a String cannot fail");
        s
    }
}
