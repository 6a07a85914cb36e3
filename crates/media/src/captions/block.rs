//! The caption block: a segment's captions, carried in-band in the segment itself so
//! that a downstream node writes the same subtitle bytes as its origin.
//!
//! The origin decides once, when it cuts segment `msn`, which pieces of which cues fall
//! in it; the block records that decision. Every node then renders its WebVTT (and the
//! archive its transcript) from the block alone: no clock, no arrival order.
//!
//! Layout (big-endian):
//!
//! ```text
//! 0   magic "BRDYCC"     6
//! 6   version (1)        1
//! 7   reserved (0)       1
//! 8   msn                8
//! 16  body length        4
//! 20  body: track count (1), per track: id, language, name (each a 1-byte length
//!     and UTF-8); cue count (2), per cue: track index (1), start_ts (8),
//!     end_ts (8), text (2-byte length and UTF-8)
//! ..  CRC-32/MPEG-2 of everything before it   4
//! ```

use thiserror::Error;

use super::text::{is_language_tag, normalize_text};
use crate::ts::psi::crc32_mpeg2;

/// The bytes every caption block starts with.
pub const BLOCK_MAGIC: [u8; 6] = *b"BRDYCC";
/// The block layout version this code writes and reads.
pub const BLOCK_VERSION: u8 = 1;
/// The most subtitle tracks a stream may have (languages and 608 channels together).
pub const MAX_TRACKS: usize = 8;
/// The most cue pieces one segment's block holds; more are left out (and counted).
pub const MAX_BLOCK_CUES: usize = 256;
/// The largest block accepted, header and CRC included.
pub const MAX_BLOCK_LEN: usize = 64 * 1024;
const HEADER_LEN: usize = 20;

/// Where a subtitle track's cues come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CueOrigin {
    /// The caption API (live transcription, human captioners, translations).
    Api,
    /// CEA-608 channel 1 in the source's video, decoded.
    Cea608,
}

/// One subtitle track of a stream: a rendition players list by `language` and `name`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CaptionTrack {
    /// The track's name in URLs (`[a-z0-9-]`, unique in the stream): the language
    /// tag in lower case for API tracks, `cc1` for the decoded 608 channel.
    pub id: String,
    /// BCP 47 language tag.
    pub language: String,
    /// What a player shows in its subtitle menu.
    pub name: String,
}

/// The part of a cue that falls in one segment.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cue {
    /// Index into the block's tracks.
    pub track: u8,
    /// Extended 90 kHz timestamp where the text appears (inside the segment).
    pub start_ts: u64,
    /// Extended 90 kHz timestamp where it goes (after `start_ts`, at most the segment's
    /// end).
    pub end_ts: u64,
    /// The text, normalised ([`normalize_text`]).
    pub text: String,
}

/// A segment's captions; see the module docs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct CaptionBlock {
    /// The segment the block belongs to.
    pub msn: u64,
    /// Every subtitle track the stream has at this segment, in the order players list
    /// them (even those with no cue here: players keep fetching their segments).
    pub tracks: Vec<CaptionTrack>,
    /// The cue pieces of this segment, ordered by start.
    pub cues: Vec<Cue>,
}

/// Why a block was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BlockError {
    /// Shorter than its header and CRC, or than its stated length.
    #[error("caption block truncated")]
    Truncated,
    /// Not a caption block, or a version this code cannot read.
    #[error("not a caption block of version {BLOCK_VERSION}")]
    Magic,
    /// The CRC does not match: the block was damaged on its way.
    #[error("caption block CRC mismatch")]
    Crc,
    /// The body does not follow the layout (lengths, indexes, times, text).
    #[error("caption block malformed: {0}")]
    Malformed(&'static str),
}

impl CaptionBlock {
    /// The track with `id`, with its index.
    pub fn track(&self, id: &str) -> Option<(u8, &CaptionTrack)> {
        let i = self.tracks.iter().position(|t| t.id == id)?;
        Some((u8::try_from(i).ok()?, &self.tracks[i]))
    }

    /// The block's bytes. Tracks past [`MAX_TRACKS`] and cues past [`MAX_BLOCK_CUES`]
    /// or past [`MAX_BLOCK_LEN`] are left out, so the result always parses.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(&BLOCK_MAGIC);
        out.push(BLOCK_VERSION);
        out.push(0);
        out.extend_from_slice(&self.msn.to_be_bytes());
        out.extend_from_slice(&[0; 4]);
        let tracks = &self.tracks[..self.tracks.len().min(MAX_TRACKS)];
        out.push(u8::try_from(tracks.len()).unwrap_or(0));
        for t in tracks {
            for s in [&t.id, &t.language, &t.name] {
                put_short(&mut out, s);
            }
        }
        let count_at = out.len();
        out.extend_from_slice(&[0; 2]);
        let mut count: u16 = 0;
        for cue in &self.cues {
            let len = cue.text.len().min(usize::from(u16::MAX));
            if usize::from(count) >= MAX_BLOCK_CUES
                || usize::from(cue.track) >= tracks.len()
                || out.len() + 19 + len + 4 > MAX_BLOCK_LEN
            {
                continue;
            }
            out.push(cue.track);
            out.extend_from_slice(&cue.start_ts.to_be_bytes());
            out.extend_from_slice(&cue.end_ts.to_be_bytes());
            out.extend_from_slice(&u16::try_from(len).unwrap_or(0).to_be_bytes());
            out.extend_from_slice(&cue.text.as_bytes()[..len]);
            count += 1;
        }
        out[count_at..count_at + 2].copy_from_slice(&count.to_be_bytes());
        let body = u32::try_from(out.len() - HEADER_LEN).unwrap_or(0);
        out[16..20].copy_from_slice(&body.to_be_bytes());
        let crc = crc32_mpeg2(&out);
        out.extend_from_slice(&crc.to_be_bytes());
        out
    }

    /// The total length of the block that `bytes` starts with, from its header alone
    /// (what a reassembler needs to know when it has all of it).
    ///
    /// # Errors
    /// [`BlockError::Truncated`] without a whole header, [`BlockError::Magic`] when it
    /// is not a block's, [`BlockError::Malformed`] when it states a length over
    /// [`MAX_BLOCK_LEN`].
    pub fn stated_len(bytes: &[u8]) -> Result<usize, BlockError> {
        let header = bytes.get(..HEADER_LEN).ok_or(BlockError::Truncated)?;
        if header[..6] != BLOCK_MAGIC || header[6] != BLOCK_VERSION || header[7] != 0 {
            return Err(BlockError::Magic);
        }
        let body = u32::from_be_bytes([header[16], header[17], header[18], header[19]]);
        let total = usize::try_from(body)
            .ok()
            .and_then(|b| b.checked_add(HEADER_LEN + 4))
            .filter(|&t| t <= MAX_BLOCK_LEN)
            .ok_or(BlockError::Malformed("length"))?;
        Ok(total)
    }

    /// Parses a block (trailing bytes after it are ignored).
    ///
    /// # Errors
    /// [`BlockError`] when it is not a whole, undamaged, well-formed block; a block's
    /// text must already be normalised and its times ordered.
    pub fn parse(bytes: &[u8]) -> Result<Self, BlockError> {
        let total = Self::stated_len(bytes)?;
        let whole = bytes.get(..total).ok_or(BlockError::Truncated)?;
        if crc32_mpeg2(whole) != 0 {
            return Err(BlockError::Crc);
        }
        let mut r = Reader {
            bytes: &whole[HEADER_LEN..total - 4],
        };
        let msn = u64::from_be_bytes(bytes[8..16].try_into().map_err(|_| BlockError::Truncated)?);
        let track_count = usize::from(r.u8()?);
        if track_count > MAX_TRACKS {
            return Err(BlockError::Malformed("track count"));
        }
        let mut tracks = Vec::with_capacity(track_count);
        for _ in 0..track_count {
            let track = CaptionTrack {
                id: r.short_text()?,
                language: r.short_text()?,
                name: r.short_text()?,
            };
            if !is_track_id(&track.id) || !is_language_tag(&track.language) || track.name.is_empty()
            {
                return Err(BlockError::Malformed("track"));
            }
            if tracks.iter().any(|t: &CaptionTrack| t.id == track.id) {
                return Err(BlockError::Malformed("track id repeated"));
            }
            tracks.push(track);
        }
        let cue_count = usize::from(r.u16()?);
        if cue_count > MAX_BLOCK_CUES {
            return Err(BlockError::Malformed("cue count"));
        }
        let mut cues = Vec::with_capacity(cue_count);
        for _ in 0..cue_count {
            let track = r.u8()?;
            let start_ts = r.u64()?;
            let end_ts = r.u64()?;
            let len = usize::from(r.u16()?);
            let text = std::str::from_utf8(r.take(len)?)
                .map_err(|_| BlockError::Malformed("text not UTF-8"))?
                .to_owned();
            if usize::from(track) >= tracks.len() {
                return Err(BlockError::Malformed("cue track"));
            }
            if end_ts <= start_ts {
                return Err(BlockError::Malformed("cue times"));
            }
            if normalize_text(&text).ok().as_deref() != Some(text.as_str()) {
                return Err(BlockError::Malformed("cue text"));
            }
            cues.push(Cue {
                track,
                start_ts,
                end_ts,
                text,
            });
        }
        if !r.bytes.is_empty() {
            return Err(BlockError::Malformed("trailing bytes"));
        }
        Ok(Self { msn, tracks, cues })
    }
}

impl CaptionTrack {
    /// A track of this id, language tag and name.
    pub fn new(id: &str, language: &str, name: &str) -> Self {
        Self {
            id: id.into(),
            language: language.into(),
            name: name.into(),
        }
    }
}

/// Whether `id` can name a track in URLs: 1–16 of `a-z 0-9 -`.
pub fn is_track_id(id: &str) -> bool {
    (1..=16).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

fn put_short(out: &mut Vec<u8>, s: &str) {
    let mut end = s.len().min(255);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    out.push(u8::try_from(end).unwrap_or(0));
    out.extend_from_slice(&s.as_bytes()[..end]);
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], BlockError> {
        if self.bytes.len() < n {
            return Err(BlockError::Malformed("body truncated"));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, BlockError> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, BlockError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u64(&mut self) -> Result<u64, BlockError> {
        let b = self.take(8)?;
        let mut a = [0; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }

    fn short_text(&mut self) -> Result<String, BlockError> {
        let len = usize::from(self.u8()?);
        std::str::from_utf8(self.take(len)?)
            .map(str::to_owned)
            .map_err(|_| BlockError::Malformed("name not UTF-8"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> CaptionBlock {
        CaptionBlock {
            msn: 42,
            tracks: vec![
                CaptionTrack::new("en", "en", "English"),
                CaptionTrack::new("pt-br", "pt-BR", "Português"),
            ],
            cues: vec![
                Cue {
                    track: 0,
                    start_ts: 900_000,
                    end_ts: 990_000,
                    text: "Good morning".into(),
                },
                Cue {
                    track: 1,
                    start_ts: 905_000,
                    end_ts: 1_000_000,
                    text: "Bom dia\nà todos".into(),
                },
            ],
        }
    }

    #[test]
    fn a_block_parses_back_to_itself() {
        let block = sample();
        let bytes = block.encode();
        assert_eq!(CaptionBlock::stated_len(&bytes), Ok(bytes.len()));
        assert_eq!(CaptionBlock::parse(&bytes), Ok(block.clone()));
        let mut padded = bytes.clone();
        padded.extend_from_slice(&[0xff; 100]);
        assert_eq!(CaptionBlock::parse(&padded), Ok(block));
    }

    #[test]
    fn damage_and_lies_are_refused() {
        let bytes = sample().encode();
        for cut in 0..bytes.len() {
            assert!(CaptionBlock::parse(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(CaptionBlock::parse(&bad).is_err(), "flip at {i}");
        }
    }

    #[test]
    fn encoding_leaves_out_what_would_not_parse() {
        let mut block = sample();
        block.cues.push(Cue {
            track: 9,
            start_ts: 1,
            end_ts: 2,
            text: "orphan".into(),
        });
        for i in 0..400 {
            block.cues.push(Cue {
                track: 0,
                start_ts: i,
                end_ts: i + 1,
                text: "x".repeat(200),
            });
        }
        let parsed = CaptionBlock::parse(&block.encode()).expect("parses");
        assert!(parsed.cues.len() <= MAX_BLOCK_CUES);
        assert!(parsed.cues.iter().all(|c| c.track < 2));
    }

    #[test]
    fn track_ids_are_url_safe() {
        assert!(is_track_id("cc1") && is_track_id("pt-br"));
        assert!(!is_track_id("") && !is_track_id("PT") && !is_track_id("a/b"));
    }
}
