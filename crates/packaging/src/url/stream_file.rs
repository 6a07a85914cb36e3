//! The files of one stream, `/{stream}/{file}`: the live HLS files, the relay, and the
//! archive, fMP4 and LL-HLS families, each parsed by its own module.

use super::archive::ArchiveRequest;
use super::fmp4::Fmp4File;
use super::llhls::{BadQuery, LlFile};
use super::number::sequence;
use super::subtitles::SubtitleFile;

/// The files a stream serves, parsed from the last path segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamFile {
    /// `index.m3u8`: the master playlist.
    Master,
    /// `mono.m3u8`: the live media playlist.
    Media,
    /// `seg-{msn}.ts`: one segment.
    Segment(u64),
    /// `mpegts`: the continuous MPEG-TS relay.
    MpegTs,
    /// A catch-up file from the DVR archive (`index-{from}-{duration}.m3u8`, …).
    Archive(ArchiveRequest),
    /// An fMP4 HLS or DASH file, live or from the archive (`index.mpd`, `seg-{msn}.m4s`, …).
    Fmp4(Fmp4File),
    /// An LL-HLS file (`ll.m3u8`, `part-{msn}-{i}.m4s`, …).
    LowLatency(LlFile),
    /// A subtitle file (`sub-{track}.m3u8`, `sub-{track}-{msn}.vtt`, a transcript, …).
    Subtitles(SubtitleFile),
}

/// What kind of answer a stream file is, for shedding (SHED-1) and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileRole {
    /// A master playlist or live MPD: the start of a playback.
    PlaybackStart,
    /// A live media playlist a running playback reloads.
    LivePlaylist,
    /// A live segment, part or init.
    LiveSegment,
    /// The MPEG-TS relay another node pulls.
    Relay,
    /// A catch-up playlist or MPD.
    ArchivePlaylist,
    /// An archived segment or init, or a whole archive download.
    ArchiveMedia,
    /// A catch-up name with a malformed number.
    Malformed,
}

impl StreamFile {
    /// A live playlist or manifest a viewer opens and reloads (HLS, fMP4 HLS, DASH,
    /// LL-HLS): where viewers are admitted and counted.
    pub fn is_viewer_playlist(&self) -> bool {
        match self {
            Self::Master | Self::Media => true,
            Self::Fmp4(file) => file.is_live_manifest(),
            Self::LowLatency(file) => matches!(file, LlFile::Master | LlFile::Playlist),
            _ => false,
        }
    }

    /// A file each rendition of a package has of its own (`/{stream}/{rung}/{file}`):
    /// the live media playlists, segments, parts, inits and the relay, and its archive
    /// (catch-up media playlists, archived segments and downloads, in TS and fMP4) —
    /// not the live master playlists or the MPDs, which are the stream's.
    pub fn is_rendition_file(&self) -> bool {
        match self {
            Self::Media | Self::Segment(_) | Self::MpegTs | Self::Archive(_) => true,
            Self::Fmp4(file) => !matches!(
                file,
                Fmp4File::Master
                    | Fmp4File::Mpd
                    | Fmp4File::ArchiveMpd { .. }
                    | Fmp4File::RecordingMpd
            ),
            Self::LowLatency(file) => !matches!(file, LlFile::Master),
            // The stream's captions: one set for every rendition.
            Self::Master | Self::Subtitles(_) => false,
        }
    }

    /// Served from the archive: answered even before the live window has a segment.
    pub fn is_archive(&self) -> bool {
        match self {
            Self::Archive(_) => true,
            Self::Fmp4(file) => file.is_archive(),
            Self::Subtitles(file) => file.is_archive(),
            _ => false,
        }
    }

    /// What kind of answer this file is.
    pub fn role(&self) -> FileRole {
        match self {
            Self::Master => FileRole::PlaybackStart,
            Self::Media => FileRole::LivePlaylist,
            Self::Segment(_) => FileRole::LiveSegment,
            Self::MpegTs => FileRole::Relay,
            Self::Archive(ArchiveRequest::Malformed) => FileRole::Malformed,
            Self::Archive(archive) if archive.is_playlist() => FileRole::ArchivePlaylist,
            Self::Archive(_) => FileRole::ArchiveMedia,
            Self::Fmp4(file) => match file {
                Fmp4File::Master | Fmp4File::Mpd => FileRole::PlaybackStart,
                Fmp4File::Playlist(_) => FileRole::LivePlaylist,
                Fmp4File::Init { .. } | Fmp4File::Segment { .. } => FileRole::LiveSegment,
                Fmp4File::ArchivePlaylist { .. }
                | Fmp4File::ArchiveMpd { .. }
                | Fmp4File::RecordingMpd => FileRole::ArchivePlaylist,
                Fmp4File::ArchiveInit { .. } | Fmp4File::ArchiveSegment { .. } => {
                    FileRole::ArchiveMedia
                }
                Fmp4File::Malformed => FileRole::Malformed,
            },
            Self::LowLatency(file) => match file {
                LlFile::Master => FileRole::PlaybackStart,
                LlFile::Playlist => FileRole::LivePlaylist,
                LlFile::Part(..) | LlFile::Segment(_) | LlFile::Init(_) => FileRole::LiveSegment,
            },
            Self::Subtitles(file) => match file {
                SubtitleFile::Playlist(_) => FileRole::LivePlaylist,
                SubtitleFile::Segment(..)
                | SubtitleFile::Fmp4Init(_)
                | SubtitleFile::Fmp4Segment(..) => FileRole::LiveSegment,
                SubtitleFile::ArchivePlaylist { .. } => FileRole::ArchivePlaylist,
                SubtitleFile::ArchiveSegment(..) | SubtitleFile::Transcript { .. } => {
                    FileRole::ArchiveMedia
                }
                SubtitleFile::Malformed => FileRole::Malformed,
            },
        }
    }

    /// Parses a file name; `None` for anything this node does not serve.
    pub fn parse(file: &str) -> Option<Self> {
        match file {
            "index.m3u8" => Some(Self::Master),
            "mono.m3u8" => Some(Self::Media),
            "mpegts" => Some(Self::MpegTs),
            _ => {
                if let Some(subtitles) = SubtitleFile::parse(file) {
                    return Some(Self::Subtitles(subtitles));
                }
                if let Some(fmp4) = Fmp4File::parse(file) {
                    return Some(Self::Fmp4(fmp4));
                }
                if let Some(archive) = ArchiveRequest::parse(file) {
                    return Some(Self::Archive(archive));
                }
                if let Some(ll) = LlFile::parse(file) {
                    return Some(Self::LowLatency(ll));
                }
                let digits = file.strip_prefix("seg-")?.strip_suffix(".ts")?;
                sequence(digits).map(Self::Segment)
            }
        }
    }
}

/// The segment URI used inside media playlists (relative to the playlist).
pub fn segment_uri(msn: u64) -> String {
    format!("seg-{msn}.ts")
}

/// What a relay request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RelayQuery {
    /// `msn=N`: where to start (clamped into the window); without it, the oldest
    /// segment, so a pulling node gets the whole window at once.
    pub start: Option<u64>,
    /// `live=1`: after the window, frames as they are placed (the node's live relay).
    pub live: bool,
}

/// The relay's query: `msn=N` and `live=1`.
///
/// # Errors
/// [`BadQuery`] when `msn` is not a plain number or `live` is not `0` or `1`.
pub fn relay_query(query: Option<&str>) -> Result<RelayQuery, BadQuery> {
    let mut out = RelayQuery::default();
    for pair in query.unwrap_or("").split('&') {
        if let Some(value) = pair.strip_prefix("msn=") {
            out.start = Some(sequence(value).ok_or(BadQuery)?);
        } else if let Some(value) = pair.strip_prefix("live=") {
            out.live = match value {
                "1" => true,
                "0" => false,
                _ => return Err(BadQuery),
            };
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relay_queries() {
        let start = |q| relay_query(q).map(|r| r.start);
        assert_eq!(start(None), Ok(None));
        assert_eq!(start(Some("a=1&msn=42")), Ok(Some(42)));
        assert_eq!(start(Some("x=1")), Ok(None));
        assert!(start(Some("msn=-1")).is_err());
        assert!(start(Some("msn=+1")).is_err());
        assert!(start(Some("msn=99999999999999999999999")).is_err());
        assert_eq!(
            relay_query(Some("origin=peer&live=1&msn=7")),
            Ok(RelayQuery {
                start: Some(7),
                live: true
            })
        );
        assert_eq!(relay_query(Some("live=0")).map(|r| r.live), Ok(false));
        assert!(relay_query(Some("live=yes")).is_err());
    }

    #[test]
    fn file_names() {
        assert_eq!(StreamFile::parse("index.m3u8"), Some(StreamFile::Master));
        assert_eq!(StreamFile::parse("mono.m3u8"), Some(StreamFile::Media));
        assert_eq!(StreamFile::parse("mpegts"), Some(StreamFile::MpegTs));
        assert_eq!(
            StreamFile::parse("seg-42.ts"),
            Some(StreamFile::Segment(42))
        );
        assert_eq!(StreamFile::parse("seg-.ts"), None);
        assert_eq!(StreamFile::parse("seg-+4.ts"), None);
        assert_eq!(StreamFile::parse("seg-99999999999999999999.ts"), None);
        assert_eq!(StreamFile::parse("../etc/passwd"), None);
    }

    #[test]
    fn catch_up_files_are_archive_roles() {
        let role = |name: &str| StreamFile::parse(name).map(|f| f.role());
        for playlist in [
            "index-1700000000-30.m3u8",
            "index-1700000000-now.m3u8",
            "timeshift_rel-60.m3u8",
            "fmp4-1700000000-30.m3u8",
            "index-1700000000-30.mpd",
        ] {
            assert_eq!(
                role(playlist),
                Some(FileRole::ArchivePlaylist),
                "{playlist}"
            );
        }
        for media in [
            "dvr-5.ts",
            "archive-1700000000-3600.ts",
            "dvr-5.m4s",
            "dvr-5-v.m4s",
            "dvr-init-5-a.mp4",
        ] {
            assert_eq!(role(media), Some(FileRole::ArchiveMedia), "{media}");
        }
        assert_eq!(role("index.m3u8"), Some(FileRole::PlaybackStart));
        assert_eq!(role("index.mpd"), Some(FileRole::PlaybackStart));
        assert_eq!(role("ll-index.m3u8"), Some(FileRole::PlaybackStart));
        assert_eq!(role("mono.m3u8"), Some(FileRole::LivePlaylist));
        assert_eq!(role("ll.m3u8"), Some(FileRole::LivePlaylist));
        assert_eq!(role("part-3-1.m4s"), Some(FileRole::LiveSegment));
        assert_eq!(role("seg-3-v.m4s"), Some(FileRole::LiveSegment));
        assert_eq!(role("mpegts"), Some(FileRole::Relay));
        assert_eq!(role("index-5-0.m3u8"), Some(FileRole::Malformed));
    }
}
