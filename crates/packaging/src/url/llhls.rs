//! LL-HLS file names of a stream.

use super::number::{index, sequence};

/// The LL-HLS files of a stream, parsed from the last path segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LlFile {
    /// `ll-index.m3u8`: a master playlist naming `ll.m3u8`.
    Master,
    /// `ll.m3u8`: the LL-HLS media playlist.
    Playlist,
    /// `part-{msn}-{index}.m4s`.
    Part(u64, usize),
    /// `llseg-{msn}.m4s`.
    Segment(u64),
    /// `ll-init-{discontinuity seq}.mp4`.
    Init(u64),
}

impl LlFile {
    /// Parses a file name; `None` for anything else.
    pub fn parse(file: &str) -> Option<Self> {
        match file {
            "ll-index.m3u8" => return Some(Self::Master),
            "ll.m3u8" => return Some(Self::Playlist),
            _ => {}
        }
        if let Some(rest) = file
            .strip_prefix("part-")
            .and_then(|r| r.strip_suffix(".m4s"))
        {
            let (msn, part) = rest.split_once('-')?;
            return Some(Self::Part(sequence(msn)?, index(part)?));
        }
        if let Some(msn) = file
            .strip_prefix("llseg-")
            .and_then(|r| r.strip_suffix(".m4s"))
        {
            return sequence(msn).map(Self::Segment);
        }
        let seq = file.strip_prefix("ll-init-")?.strip_suffix(".mp4")?;
        sequence(seq).map(Self::Init)
    }
}

/// A query that breaks the URL grammar (a 400).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadQuery;

/// The blocking-reload and delta-update directives of a playlist request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Directives {
    /// `_HLS_msn`.
    pub msn: Option<u64>,
    /// `_HLS_part` (only with `_HLS_msn`).
    pub part: Option<usize>,
    /// `_HLS_skip=YES` or `v2`.
    pub skip: bool,
}

impl Directives {
    /// Parses the query; unknown parameters are ignored.
    ///
    /// # Errors
    /// [`BadQuery`] for a malformed number, or `_HLS_part` without `_HLS_msn` (the
    /// draft makes that a 400).
    pub fn parse(query: Option<&str>) -> Result<Self, BadQuery> {
        let mut d = Self::default();
        for pair in query.unwrap_or("").split('&') {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "_HLS_msn" => d.msn = Some(sequence(value).ok_or(BadQuery)?),
                "_HLS_part" => d.part = Some(index(value).ok_or(BadQuery)?),
                "_HLS_skip" => d.skip = value == "YES" || value == "v2",
                _ => {}
            }
        }
        if d.part.is_some() && d.msn.is_none() {
            return Err(BadQuery);
        }
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::{Directives, LlFile};

    #[test]
    fn file_names() {
        assert_eq!(LlFile::parse("ll.m3u8"), Some(LlFile::Playlist));
        assert_eq!(LlFile::parse("ll-index.m3u8"), Some(LlFile::Master));
        assert_eq!(LlFile::parse("part-12-3.m4s"), Some(LlFile::Part(12, 3)));
        assert_eq!(LlFile::parse("llseg-12.m4s"), Some(LlFile::Segment(12)));
        assert_eq!(LlFile::parse("ll-init-2.mp4"), Some(LlFile::Init(2)));
        for bad in [
            "part-12.m4s",
            "part--1.m4s",
            "part-1-+2.m4s",
            "llseg-.m4s",
            "llseg-99999999999999999999.m4s",
            "ll-init-x.mp4",
            "ll.m3u",
        ] {
            assert_eq!(LlFile::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn directives() {
        assert_eq!(Directives::parse(None), Ok(Directives::default()));
        assert_eq!(
            Directives::parse(Some("_HLS_msn=5&_HLS_part=2&_HLS_skip=YES&x=1")),
            Ok(Directives {
                msn: Some(5),
                part: Some(2),
                skip: true
            })
        );
        assert!(Directives::parse(Some("_HLS_skip=v2")).is_ok_and(|d| d.skip));
        assert!(Directives::parse(Some("_HLS_skip=NO")).is_ok_and(|d| !d.skip));
        assert!(Directives::parse(Some("_HLS_part=1")).is_err());
        assert!(Directives::parse(Some("_HLS_msn=-1")).is_err());
        assert!(Directives::parse(Some("_HLS_msn=1&_HLS_part=x")).is_err());
    }
}
