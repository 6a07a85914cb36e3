//! fMP4 file names of a stream: fMP4 HLS and DASH, live and from the DVR archive.
//!
//! | file | what |
//! |---|---|
//! | `fmp4-index.m3u8` | live fMP4 HLS master playlist (a package's ladder) |
//! | `fmp4.m3u8` | live fMP4 HLS media playlist |
//! | `fmp4-v.m3u8`, `fmp4-a.m3u8` | live fMP4 HLS media playlist of the video alone, the audio alone (a master with audio languages) |
//! | `index.mpd` | live DASH MPD |
//! | `init-{d}[-v\|-a].mp4` | init segment of discontinuity sequence `d`: muxed, video, audio |
//! | `seg-{msn}[-v\|-a].m4s` | fMP4 segment: muxed (HLS), video or audio (DASH) |
//! | `fmp4-{from}-{duration}.m3u8` | DVR: VOD fMP4 HLS playlist of a period |
//! | `index-{from}-{duration}.mpd` | DVR: static MPD of a period |
//! | `recording.mpd` | DVR: static MPD of the whole recording |
//! | `dvr-init-{msn}[-v\|-a].mp4`, `dvr-{msn}[-v\|-a].m4s` | DVR: init of the run of `msn`, archived segment `msn` |

use media::fmp4::Track;

use super::archive::{period, period_ms};
use super::number::sequence;

/// An fMP4 file name, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fmp4File {
    /// `fmp4-index.m3u8`.
    Master,
    /// `fmp4.m3u8` (muxed), `fmp4-v.m3u8` (video alone), `fmp4-a.m3u8` (audio alone).
    Playlist(Track),
    /// `index.mpd`.
    Mpd,
    /// `init-{d}[-v|-a].mp4`.
    Init {
        /// Discontinuity sequence.
        discontinuity_seq: u64,
        /// Which tracks.
        track: Track,
    },
    /// `seg-{msn}[-v|-a].m4s`.
    Segment {
        /// Media sequence number.
        msn: u64,
        /// Which tracks.
        track: Track,
    },
    /// `fmp4-{from}-{duration}.m3u8`.
    ArchivePlaylist {
        /// Start, Unix seconds.
        from_secs: i64,
        /// Length, seconds.
        duration_secs: u32,
    },
    /// `index-{from}-{duration}.mpd`.
    ArchiveMpd {
        /// Start, Unix seconds.
        from_secs: i64,
        /// Length, seconds.
        duration_secs: u32,
    },
    /// `recording.mpd`: the static MPD of the whole recording (its last day at most).
    RecordingMpd,
    /// `dvr-init-{msn}[-v|-a].mp4`.
    ArchiveInit {
        /// An archived segment of the run.
        msn: u64,
        /// Which tracks.
        track: Track,
    },
    /// `dvr-{msn}[-v|-a].m4s`.
    ArchiveSegment {
        /// The archived segment.
        msn: u64,
        /// Which tracks.
        track: Track,
    },
    /// An archive name with a malformed number (400).
    Malformed,
}

/// `{number}{-v|-a|}` → number and track.
fn numbered(text: &str) -> Option<(u64, Track)> {
    let (digits, track) = if let Some(d) = text.strip_suffix("-v") {
        (d, Track::Video)
    } else if let Some(d) = text.strip_suffix("-a") {
        (d, Track::Audio)
    } else {
        (text, Track::Muxed)
    };
    Some((sequence(digits)?, track))
}

/// `prefix{rest}suffix` → `rest`.
fn between<'a>(file: &'a str, prefix: &str, suffix: &str) -> Option<&'a str> {
    file.strip_prefix(prefix)?.strip_suffix(suffix)
}

impl Fmp4File {
    /// Parses a file name; `None` when it is not an fMP4 name at all.
    pub fn parse(file: &str) -> Option<Self> {
        match file {
            "fmp4-index.m3u8" => return Some(Self::Master),
            "fmp4.m3u8" => return Some(Self::Playlist(Track::Muxed)),
            "fmp4-v.m3u8" => return Some(Self::Playlist(Track::Video)),
            "fmp4-a.m3u8" => return Some(Self::Playlist(Track::Audio)),
            "index.mpd" => return Some(Self::Mpd),
            "recording.mpd" => return Some(Self::RecordingMpd),
            _ => {}
        }
        if let Some(rest) = between(file, "dvr-init-", ".mp4") {
            return Some(numbered(rest).map_or(Self::Malformed, |(msn, track)| {
                Self::ArchiveInit { msn, track }
            }));
        }
        if let Some(rest) = between(file, "dvr-", ".m4s") {
            return Some(numbered(rest).map_or(Self::Malformed, |(msn, track)| {
                Self::ArchiveSegment { msn, track }
            }));
        }
        if let Some(rest) = between(file, "fmp4-", ".m3u8") {
            return Some(
                period(rest).map_or(Self::Malformed, |(from_secs, duration_secs)| {
                    Self::ArchivePlaylist {
                        from_secs,
                        duration_secs,
                    }
                }),
            );
        }
        if let Some(rest) = between(file, "index-", ".mpd") {
            return Some(
                period(rest).map_or(Self::Malformed, |(from_secs, duration_secs)| {
                    Self::ArchiveMpd {
                        from_secs,
                        duration_secs,
                    }
                }),
            );
        }
        if let Some(rest) = between(file, "init-", ".mp4") {
            let (discontinuity_seq, track) = numbered(rest)?;
            return Some(Self::Init {
                discontinuity_seq,
                track,
            });
        }
        let (msn, track) = numbered(between(file, "seg-", ".m4s")?)?;
        Some(Self::Segment { msn, track })
    }

    /// A live manifest: where a new viewer arrives (the door checks it, OTT-PROT-2).
    pub fn is_live_manifest(self) -> bool {
        matches!(self, Self::Master | Self::Playlist(_) | Self::Mpd)
    }

    /// Served from the archive (answered even before the live window has a segment).
    pub fn is_archive(self) -> bool {
        matches!(
            self,
            Self::ArchivePlaylist { .. }
                | Self::ArchiveMpd { .. }
                | Self::RecordingMpd
                | Self::ArchiveInit { .. }
                | Self::ArchiveSegment { .. }
                | Self::Malformed
        )
    }

    /// The catch-up period `[from, to]` (Unix ms) of an archive manifest.
    pub fn archive_period(self) -> Option<(i64, i64)> {
        match self {
            Self::ArchivePlaylist {
                from_secs,
                duration_secs,
            }
            | Self::ArchiveMpd {
                from_secs,
                duration_secs,
            } => Some(period_ms(from_secs, duration_secs)),
            _ => None,
        }
    }

    /// The protocol this file belongs to, for the OTT decisions: DASH for MPDs and
    /// per-track files, fMP4 HLS (counted with LL-HLS: same container) for the rest.
    pub fn protocol(self) -> ott::Protocol {
        match self {
            Self::Mpd | Self::ArchiveMpd { .. } | Self::RecordingMpd => ott::Protocol::Dash,
            Self::Init { track, .. }
            | Self::Segment { track, .. }
            | Self::ArchiveInit { track, .. }
            | Self::ArchiveSegment { track, .. }
                if track != Track::Muxed =>
            {
                ott::Protocol::Dash
            }
            _ => ott::Protocol::LlHls,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Fmp4File as F;
    use media::fmp4::Track;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn any_name_parses_without_panic(name in "\\PC{0,40}") {
            let _ = F::parse(&name);
        }

        #[test]
        fn numbered_names_round_trip(n in any::<u64>(), track in 0..3u8) {
            let (suffix, track) = match track {
                0 => ("", Track::Muxed),
                1 => ("-v", Track::Video),
                _ => ("-a", Track::Audio),
            };
            prop_assert_eq!(F::parse(&format!("seg-{n}{suffix}.m4s")), Some(F::Segment { msn: n, track }));
            prop_assert_eq!(
                F::parse(&format!("init-{n}{suffix}.mp4")),
                Some(F::Init { discontinuity_seq: n, track })
            );
            prop_assert_eq!(F::parse(&format!("dvr-{n}{suffix}.m4s")), Some(F::ArchiveSegment { msn: n, track }));
            prop_assert_eq!(F::parse(&format!("dvr-init-{n}{suffix}.mp4")), Some(F::ArchiveInit { msn: n, track }));
        }
    }

    #[test]
    fn names() {
        assert_eq!(F::parse("fmp4.m3u8"), Some(F::Playlist(Track::Muxed)));
        assert_eq!(F::parse("fmp4-v.m3u8"), Some(F::Playlist(Track::Video)));
        assert_eq!(F::parse("fmp4-a.m3u8"), Some(F::Playlist(Track::Audio)));
        assert_eq!(F::parse("fmp4-x.m3u8"), Some(F::Malformed));
        assert_eq!(F::parse("fmp4-index.m3u8"), Some(F::Master));
        assert_eq!(F::parse("index.mpd"), Some(F::Mpd));
        assert_eq!(F::parse("recording.mpd"), Some(F::RecordingMpd));
        assert!(F::RecordingMpd.is_archive());
        assert_eq!(F::RecordingMpd.archive_period(), None);
        assert_eq!(
            F::parse("init-3.mp4"),
            Some(F::Init {
                discontinuity_seq: 3,
                track: Track::Muxed
            })
        );
        assert_eq!(
            F::parse("seg-42-v.m4s"),
            Some(F::Segment {
                msn: 42,
                track: Track::Video
            })
        );
        assert_eq!(
            F::parse("seg-42-a.m4s"),
            Some(F::Segment {
                msn: 42,
                track: Track::Audio
            })
        );
        assert_eq!(
            F::parse("index-1700000000-3600.mpd"),
            Some(F::ArchiveMpd {
                from_secs: 1_700_000_000,
                duration_secs: 3600
            })
        );
        assert_eq!(
            F::parse("fmp4-1700000000-30.m3u8"),
            Some(F::ArchivePlaylist {
                from_secs: 1_700_000_000,
                duration_secs: 30
            })
        );
        assert_eq!(
            F::parse("dvr-init-7-a.mp4"),
            Some(F::ArchiveInit {
                msn: 7,
                track: Track::Audio
            })
        );
        assert_eq!(
            F::parse("dvr-7.m4s"),
            Some(F::ArchiveSegment {
                msn: 7,
                track: Track::Muxed
            })
        );
        for none in [
            "seg-.m4s",
            "seg-4-x.m4s",
            "init-v.mp4",
            "seg-1.ts",
            "index.m3u8",
        ] {
            assert_eq!(F::parse(none), None, "{none}");
        }
        for bad in [
            "index-5-0.mpd",
            "index-5-now.mpd",
            "fmp4--5-30.m3u8",
            "dvr-99999999999999999999.m4s",
            "dvr-init-x.mp4",
            "dvr-1-v-a.m4s",
        ] {
            assert_eq!(F::parse(bad), Some(F::Malformed), "{bad}");
        }
        assert_eq!(
            F::parse("index.mpd").map(F::protocol),
            Some(ott::Protocol::Dash)
        );
        assert_eq!(
            F::parse("fmp4.m3u8").map(F::protocol),
            Some(ott::Protocol::LlHls)
        );
    }
}
