//! Catch-up file names of the DVR archive (MPEG-TS): periods, growing periods,
//! time-shift windows, downloads and archived segments.
//!
//! A playlist name with the `mono-` prefix (`mono-{from}-{duration}.m3u8`,
//! `mono-{from}-now.m3u8`, `mono-timeshift_rel-{seconds}.m3u8`) is always one
//! rendition's media playlist; without it, a package's stream answers a master playlist
//! listing its renditions' `mono-` playlists, and a one-rendition stream the media
//! playlist itself — as the live `index.m3u8` and `mono.m3u8` do.

use super::number::{digits, sequence};

/// The longest period a playlist or download may cover, seconds.
pub const MAX_PERIOD_SECS: u32 = 86_400;
/// The latest `from` accepted (9999-12-31), so milliseconds never overflow.
const MAX_FROM_SECS: i64 = 253_402_300_799;

/// The period `[from, from + duration)` of a catch-up request, Unix ms.
pub fn period_ms(from_secs: i64, duration_secs: u32) -> (i64, i64) {
    let from = from_secs.saturating_mul(1000);
    (from, from.saturating_add(i64::from(duration_secs) * 1000))
}

/// An archive file name, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchiveRequest {
    /// `index-{from}-{duration}.m3u8` (`mono-{from}-{duration}.m3u8`).
    Period {
        /// Start, Unix seconds.
        from_secs: i64,
        /// Length, seconds.
        duration_secs: u32,
        /// The `mono-` name: one rendition's media playlist, never a master.
        mono: bool,
    },
    /// `index-{from}-now.m3u8` (`mono-{from}-now.m3u8`).
    FromNow {
        /// Start, Unix seconds.
        from_secs: i64,
        /// The `mono-` name: one rendition's media playlist, never a master.
        mono: bool,
    },
    /// `timeshift_rel-{seconds}.m3u8` (`mono-timeshift_rel-{seconds}.m3u8`).
    Timeshift {
        /// How far behind now the window's live edge is, seconds.
        behind_secs: u32,
        /// The `mono-` name: one rendition's media playlist, never a master.
        mono: bool,
    },
    /// `archive-{from}-{duration}.ts`.
    Download {
        /// Start, Unix seconds.
        from_secs: i64,
        /// Length, seconds.
        duration_secs: u32,
    },
    /// `archive-{from}-{duration}.mp4`: the period as one fragmented MP4 file
    /// (`archive-{from}-{duration}-progressive.mp4`: a progressive one, its index first).
    Mp4Download {
        /// Start, Unix seconds.
        from_secs: i64,
        /// Length, seconds.
        duration_secs: u32,
        /// The `-progressive` name: `moov` ahead of `mdat`, for editors and players
        /// that read a file's index first.
        progressive: bool,
    },
    /// `recording.m3u8`, `mono-recording.m3u8`, `recording.ts`, `recording.mp4`,
    /// `recording-progressive.mp4`: the whole recording (at most its last
    /// [`MAX_PERIOD_SECS`]) as the period files above name it.
    Recording(RecordingFile),
    /// `dvr-{msn}.ts`.
    Segment(u64),
    /// An archive name with a malformed, negative or out-of-range number (400).
    Malformed,
}

/// Which file of a whole recording ([`ArchiveRequest::Recording`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordingFile {
    /// `recording.m3u8` (`mono-recording.m3u8`): its VOD playlist.
    Playlist {
        /// The `mono-` name: one rendition's media playlist, never a master.
        mono: bool,
    },
    /// `recording.ts`.
    Download,
    /// `recording.mp4` (`recording-progressive.mp4`).
    Mp4 {
        /// The index-first layout.
        progressive: bool,
    },
}

impl RecordingFile {
    /// The period request this file is once the recording's extent is known.
    pub fn as_period(self, from_secs: i64, duration_secs: u32) -> ArchiveRequest {
        match self {
            Self::Playlist { mono } => ArchiveRequest::Period {
                from_secs,
                duration_secs,
                mono,
            },
            Self::Download => ArchiveRequest::Download {
                from_secs,
                duration_secs,
            },
            Self::Mp4 { progressive } => ArchiveRequest::Mp4Download {
                from_secs,
                duration_secs,
                progressive,
            },
        }
    }

    fn parse(file: &str) -> Option<Self> {
        Some(match file {
            "recording.m3u8" => Self::Playlist { mono: false },
            "mono-recording.m3u8" => Self::Playlist { mono: true },
            "recording.ts" => Self::Download,
            "recording.mp4" => Self::Mp4 { progressive: false },
            "recording-progressive.mp4" => Self::Mp4 { progressive: true },
            _ => return None,
        })
    }
}

/// A period's start: Unix seconds of up to 12 digits, at most 9999-12-31.
pub fn from_secs(text: &str) -> Option<i64> {
    digits(text, 12)
        .and_then(|n| i64::try_from(n).ok())
        .filter(|&n| n <= MAX_FROM_SECS)
}

/// A period's length: 1 to [`MAX_PERIOD_SECS`] seconds.
pub fn duration_secs(text: &str) -> Option<u32> {
    digits(text, 6)
        .and_then(|n| u32::try_from(n).ok())
        .filter(|&n| (1..=MAX_PERIOD_SECS).contains(&n))
}

/// A period name `{from}-{duration}` (the same for every protocol's catch-up files).
pub fn period(rest: &str) -> Option<(i64, u32)> {
    let (from, duration) = rest.split_once('-')?;
    Some((from_secs(from)?, duration_secs(duration)?))
}

impl ArchiveRequest {
    /// Parses a file name; `None` when it is not an archive name at all.
    pub fn parse(file: &str) -> Option<Self> {
        if let Some(recording) = RecordingFile::parse(file) {
            return Some(Self::Recording(recording));
        }
        let (mono, playlist) = match file.strip_prefix("mono-") {
            Some(rest) => (true, rest),
            None => (false, file),
        };
        let period_name = if mono {
            Some(playlist)
        } else {
            playlist.strip_prefix("index-")
        };
        if let Some(rest) = period_name
            .and_then(|r| r.strip_suffix(".m3u8"))
            .filter(|r| !r.starts_with("timeshift_rel-"))
        {
            let parsed = match rest.split_once('-') {
                Some((from, "now")) => {
                    from_secs(from).map(|from_secs| Self::FromNow { from_secs, mono })
                }
                _ => period(rest).map(|(from_secs, duration_secs)| Self::Period {
                    from_secs,
                    duration_secs,
                    mono,
                }),
            };
            return Some(parsed.unwrap_or(Self::Malformed));
        }
        if let Some(rest) = playlist
            .strip_prefix("timeshift_rel-")
            .and_then(|r| r.strip_suffix(".m3u8"))
        {
            let seconds = digits(rest, 10).and_then(|n| u32::try_from(n).ok());
            return Some(
                seconds.map_or(Self::Malformed, |behind_secs| Self::Timeshift {
                    behind_secs,
                    mono,
                }),
            );
        }
        if mono {
            return None;
        }
        if let Some(rest) = file.strip_prefix("archive-") {
            let parsed = if let Some(rest) = rest.strip_suffix(".ts") {
                period(rest).map(|(from_secs, duration_secs)| Self::Download {
                    from_secs,
                    duration_secs,
                })
            } else if let Some(rest) = rest.strip_suffix(".mp4") {
                let (rest, progressive) = match rest.strip_suffix("-progressive") {
                    Some(rest) => (rest, true),
                    None => (rest, false),
                };
                period(rest).map(|(from_secs, duration_secs)| Self::Mp4Download {
                    from_secs,
                    duration_secs,
                    progressive,
                })
            } else {
                return None;
            };
            return Some(parsed.unwrap_or(Self::Malformed));
        }
        if let Some(rest) = file
            .strip_prefix("dvr-")
            .and_then(|r| r.strip_suffix(".ts"))
        {
            return Some(sequence(rest).map_or(Self::Malformed, Self::Segment));
        }
        None
    }

    /// A playlist (as opposed to media bytes: a segment or a download).
    pub fn is_playlist(self) -> bool {
        matches!(
            self,
            Self::Period { .. }
                | Self::FromNow { .. }
                | Self::Timeshift { .. }
                | Self::Recording(RecordingFile::Playlist { .. })
        )
    }
}

#[cfg(test)]
mod tests {
    use super::ArchiveRequest as R;
    use super::RecordingFile;

    #[test]
    fn names() {
        assert_eq!(
            R::parse("index-1700000000-30.m3u8"),
            Some(R::Period {
                from_secs: 1_700_000_000,
                duration_secs: 30,
                mono: false,
            })
        );
        assert_eq!(
            R::parse("mono-1700000000-30.m3u8"),
            Some(R::Period {
                from_secs: 1_700_000_000,
                duration_secs: 30,
                mono: true,
            })
        );
        assert_eq!(
            R::parse("index-1700000000-now.m3u8"),
            Some(R::FromNow {
                from_secs: 1_700_000_000,
                mono: false,
            })
        );
        assert_eq!(
            R::parse("mono-1700000000-now.m3u8"),
            Some(R::FromNow {
                from_secs: 1_700_000_000,
                mono: true,
            })
        );
        assert_eq!(
            R::parse("timeshift_rel-600.m3u8"),
            Some(R::Timeshift {
                behind_secs: 600,
                mono: false,
            })
        );
        assert_eq!(
            R::parse("mono-timeshift_rel-600.m3u8"),
            Some(R::Timeshift {
                behind_secs: 600,
                mono: true,
            })
        );
        // `mono-` names only playlists, and `mono.m3u8` is the live media playlist.
        assert_eq!(R::parse("mono.m3u8"), None);
        assert_eq!(R::parse("mono-dvr-4.ts"), None);
        assert_eq!(R::parse("mono-archive-1700000000-30.ts"), None);
        assert_eq!(
            R::parse("archive-1700000000-600.mp4"),
            Some(R::Mp4Download {
                from_secs: 1_700_000_000,
                duration_secs: 600,
                progressive: false,
            })
        );
        assert_eq!(
            R::parse("archive-1700000000-600-progressive.mp4"),
            Some(R::Mp4Download {
                from_secs: 1_700_000_000,
                duration_secs: 600,
                progressive: true,
            })
        );
        assert_eq!(
            R::parse("archive-1700000000-600-faststart.mp4"),
            Some(R::Malformed)
        );
        assert_eq!(
            R::parse("recording.m3u8"),
            Some(R::Recording(RecordingFile::Playlist { mono: false }))
        );
        assert_eq!(
            R::parse("mono-recording.m3u8"),
            Some(R::Recording(RecordingFile::Playlist { mono: true }))
        );
        assert_eq!(
            R::parse("recording-progressive.mp4"),
            Some(R::Recording(RecordingFile::Mp4 { progressive: true }))
        );
        assert_eq!(
            RecordingFile::Download.as_period(5, 30),
            R::Download {
                from_secs: 5,
                duration_secs: 30
            }
        );
        assert_eq!(R::parse("recording.mkv"), None);
        assert_eq!(R::parse("mono-recording.ts"), None);
        assert_eq!(R::parse("archive-1700000000-0.mp4"), Some(R::Malformed));
        assert_eq!(R::parse("archive-1700000000-30.mkv"), None);
        assert_eq!(
            R::parse("mono-index-1700000000-30.m3u8"),
            Some(R::Malformed)
        );
        assert_eq!(
            R::parse("archive-1700000000-3600.ts"),
            Some(R::Download {
                from_secs: 1_700_000_000,
                duration_secs: 3600
            })
        );
        assert_eq!(R::parse("dvr-42.ts"), Some(R::Segment(42)));
        assert_eq!(R::parse("index.m3u8"), None);
        assert_eq!(R::parse("seg-1.ts"), None);
        for bad in [
            "index--5-30.m3u8",
            "index-5--30.m3u8",
            "index-5-0.m3u8",
            "index-5-86401.m3u8",
            "index-99999999999999999999-30.m3u8",
            "index-253402300800-30.m3u8",
            "index-1-2-3.m3u8",
            "index-+5-30.m3u8",
            "index-5.m3u8",
            "index- 5-30.m3u8",
            "timeshift_rel--1.m3u8",
            "timeshift_rel-99999999999.m3u8",
            "archive-5.ts",
            "archive-5-99999999999999999999.ts",
            "dvr-..%2F..%2Fetc%2Fpasswd.ts",
            "dvr-99999999999999999999.ts",
            "dvr-.ts",
            "mono--5-30.m3u8",
            "mono-5-0.m3u8",
            "mono-timeshift_rel--1.m3u8",
        ] {
            assert_eq!(R::parse(bad), Some(R::Malformed), "{bad}");
        }
    }
}
