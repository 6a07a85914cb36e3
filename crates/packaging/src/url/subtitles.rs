//! Subtitle file names (WebVTT renditions of a stream's caption tracks, live and from
//! the archive). A track id is `[a-z0-9-]` (`en`, `pt-br`, `cc1`), so the numbers are
//! read from the right.

use super::archive::{duration_secs, from_secs, period};
use super::number::sequence;

/// A subtitle file, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubtitleFile {
    /// `sub-{track}.m3u8`: the track's live media playlist.
    Playlist(TrackName),
    /// `sub-{track}-{msn}.vtt`: the track's WebVTT for segment `msn` of the window.
    Segment(TrackName, u64),
    /// `sub-{track}-{from}-{duration}.m3u8`: the track's catch-up playlist.
    ArchivePlaylist {
        /// The track.
        track: TrackName,
        /// Start, Unix seconds.
        from_secs: i64,
        /// Length, seconds.
        duration_secs: u32,
    },
    /// `sub-{track}-init.mp4`: the init segment of the track as WebVTT in fMP4 (DASH).
    Fmp4Init(TrackName),
    /// `sub-{track}-{msn}.m4s`: the track's WebVTT-in-fMP4 segment `msn` (DASH).
    Fmp4Segment(TrackName, u64),
    /// `dvr-sub-{track}-{msn}.vtt`: the track's WebVTT for an archived segment.
    ArchiveSegment(TrackName, u64),
    /// `captions-{from}-{duration}.vtt` (the first track) or
    /// `captions-{track}-{from}-{duration}.vtt`: a period's transcript, one file.
    Transcript {
        /// The track; `None` for the stream's first.
        track: Option<TrackName>,
        /// Start, Unix seconds.
        from_secs: i64,
        /// Length, seconds.
        duration_secs: u32,
    },
    /// A subtitle name with a malformed number or track (400).
    Malformed,
}

impl SubtitleFile {
    /// Parses a file name; `None` when it is not a subtitle name at all.
    pub fn parse(file: &str) -> Option<Self> {
        if let Some(rest) = file.strip_prefix("sub-") {
            if let Some(rest) = rest.strip_suffix(".m3u8") {
                return Some(match period_of(rest) {
                    Some((track, from_secs, duration_secs)) => Self::ArchivePlaylist {
                        track,
                        from_secs,
                        duration_secs,
                    },
                    None => track(rest).map_or(Self::Malformed, Self::Playlist),
                });
            }
            if let Some(rest) = rest.strip_suffix("-init.mp4") {
                return Some(track(rest).map_or(Self::Malformed, Self::Fmp4Init));
            }
            if let Some(rest) = rest.strip_suffix(".m4s") {
                return Some(
                    numbered(rest).map_or(Self::Malformed, |(t, msn)| Self::Fmp4Segment(t, msn)),
                );
            }
            let rest = rest.strip_suffix(".vtt")?;
            return Some(numbered(rest).map_or(Self::Malformed, |(t, msn)| Self::Segment(t, msn)));
        }
        if let Some(rest) = file.strip_prefix("dvr-sub-") {
            let rest = rest.strip_suffix(".vtt")?;
            return Some(
                numbered(rest).map_or(Self::Malformed, |(t, msn)| Self::ArchiveSegment(t, msn)),
            );
        }
        let rest = file.strip_prefix("captions-")?.strip_suffix(".vtt")?;
        if let Some((from_secs, duration_secs)) = period(rest) {
            return Some(Self::Transcript {
                track: None,
                from_secs,
                duration_secs,
            });
        }
        Some(match period_of(rest) {
            Some((track, from_secs, duration_secs)) => Self::Transcript {
                track: Some(track),
                from_secs,
                duration_secs,
            },
            None => Self::Malformed,
        })
    }

    /// Served from the archive.
    pub fn is_archive(self) -> bool {
        matches!(
            self,
            Self::ArchivePlaylist { .. } | Self::ArchiveSegment(..) | Self::Transcript { .. }
        )
    }

    /// A playlist (live or catch-up).
    pub fn is_playlist(self) -> bool {
        matches!(self, Self::Playlist(_) | Self::ArchivePlaylist { .. })
    }
}

/// A caption track's id as a URL carries it (`[a-z0-9-]`, 1–16 bytes), held by value.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct TrackName {
    bytes: [u8; 16],
    len: u8,
}

impl TrackName {
    /// The id.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }
}

impl std::fmt::Debug for TrackName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for TrackName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A track id as URLs carry it.
fn track(text: &str) -> Option<TrackName> {
    if !media::captions::block::is_track_id(text) {
        return None;
    }
    let mut bytes = [0; 16];
    bytes[..text.len()].copy_from_slice(text.as_bytes());
    Some(TrackName {
        bytes,
        len: u8::try_from(text.len()).ok()?,
    })
}

/// `{track}-{number}`.
fn numbered(rest: &str) -> Option<(TrackName, u64)> {
    let (t, msn) = rest.rsplit_once('-')?;
    Some((track(t)?, sequence(msn)?))
}

/// `{track}-{from}-{duration}`.
fn period_of(rest: &str) -> Option<(TrackName, i64, u32)> {
    let (head, duration) = rest.rsplit_once('-')?;
    let (t, from) = head.rsplit_once('-')?;
    Some((track(t)?, from_secs(from)?, duration_secs(duration)?))
}

/// The URI of a track's live playlist in a master playlist.
pub fn playlist_uri(track: &str) -> String {
    format!("sub-{track}.m3u8")
}

/// The URI of a track's WebVTT for segment `msn`, in its playlist.
pub fn segment_uri(track: &str, msn: u64) -> String {
    format!("sub-{track}-{msn}.vtt")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtitle_names() {
        use SubtitleFile as S;
        let t = |s: &str| track(s).expect("a track id");
        assert_eq!(S::parse("sub-en.m3u8"), Some(S::Playlist(t("en"))));
        assert_eq!(S::parse("sub-pt-br.m3u8"), Some(S::Playlist(t("pt-br"))));
        assert_eq!(S::parse("sub-es-419.m3u8"), Some(S::Playlist(t("es-419"))));
        assert_eq!(S::parse("sub-cc1-42.vtt"), Some(S::Segment(t("cc1"), 42)));
        assert_eq!(S::parse("sub-pt-br-7.vtt"), Some(S::Segment(t("pt-br"), 7)));
        assert_eq!(
            S::parse("sub-en-1700000000-30.m3u8"),
            Some(S::ArchivePlaylist {
                track: t("en"),
                from_secs: 1_700_000_000,
                duration_secs: 30
            })
        );
        assert_eq!(
            S::parse("dvr-sub-en-5.vtt"),
            Some(S::ArchiveSegment(t("en"), 5))
        );
        assert_eq!(
            S::parse("captions-1700000000-30.vtt"),
            Some(S::Transcript {
                track: None,
                from_secs: 1_700_000_000,
                duration_secs: 30
            })
        );
        assert_eq!(
            S::parse("captions-pt-br-1700000000-30.vtt"),
            Some(S::Transcript {
                track: Some(t("pt-br")),
                from_secs: 1_700_000_000,
                duration_secs: 30
            })
        );
        for bad in [
            "sub-EN.m3u8",
            "sub-.m3u8",
            "sub-en-+1.vtt",
            "sub-en.vtt",
            "dvr-sub-en.vtt",
            "captions-1-0.vtt",
            "captions-x.vtt",
        ] {
            assert_eq!(S::parse(bad), Some(S::Malformed), "{bad}");
        }
        assert_eq!(S::parse("sub-en.txt"), None);
        assert_eq!(S::parse("mono.m3u8"), None);
    }
}
