//! Media playlists: live window, EVENT and VOD.

use std::collections::VecDeque;
use std::fmt;

use super::{format_rfc3339_ms, line_safe};
use crate::manifest::{Manifest, ManifestWrite, MarkedText};
use crate::segmenter::Segment;

/// Which kind of media playlist to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlaylistType {
    /// A sliding live window: no EXT-X-PLAYLIST-TYPE, segments drop off the front.
    Live,
    /// A growing playlist (e.g. a DVR recording in progress): EXT-X-PLAYLIST-TYPE:EVENT.
    Event,
    /// A finished archive: EXT-X-PLAYLIST-TYPE:VOD.
    Vod,
}

/// One segment as a playlist lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlaylistSegment {
    /// Media sequence number (also what the URI is made from).
    pub msn: u64,
    /// Discontinuity sequence number of this segment.
    pub discontinuity_seq: u64,
    /// Preceded by EXT-X-DISCONTINUITY.
    pub discontinuous: bool,
    /// Duration in 90 kHz ticks.
    pub duration_ticks: u64,
    /// EXT-X-PROGRAM-DATE-TIME, Unix milliseconds.
    pub program_date_time_ms: i64,
    /// The segment is missing (EXT-X-GAP): players skip it instead of failing.
    pub gap: bool,
}

impl From<&Segment> for PlaylistSegment {
    fn from(s: &Segment) -> Self {
        Self {
            msn: s.msn,
            discontinuity_seq: s.discontinuity_seq,
            discontinuous: s.discontinuous,
            duration_ticks: s.duration_ticks,
            program_date_time_ms: s.program_date_time_ms,
            gap: false,
        }
    }
}

impl PlaylistSegment {
    /// The duration in whole milliseconds (ticks / 90, rounded to nearest).
    pub fn duration_ms(&self) -> u64 {
        self.duration_ticks.saturating_add(45) / 90
    }

    /// The duration rounded to the nearest second, as EXT-X-TARGETDURATION compares it.
    pub fn rounded_secs(&self) -> u64 {
        self.duration_ms().saturating_add(500) / 1000
    }
}

/// A media playlist of MPEG-TS segments, consecutive by MSN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaPlaylist {
    /// Live, EVENT or VOD.
    pub playlist_type: PlaylistType,
    /// The smallest EXT-X-TARGETDURATION to announce, seconds (the configured target;
    /// [`LiveWindow`] keeps it from ever decreasing).
    pub target_duration_secs: u64,
    /// The segments, oldest first.
    pub segments: Vec<PlaylistSegment>,
    /// The stream has ended: EXT-X-ENDLIST (always written for VOD).
    pub ended: bool,
}

impl MediaPlaylist {
    /// EXT-X-TARGETDURATION: the configured target or the longest segment rounded to
    /// the nearest second (rfc8216bis 4.4.3.1), whichever is larger.
    pub fn target_duration(&self) -> u64 {
        self.segments
            .iter()
            .map(PlaylistSegment::rounded_secs)
            .max()
            .unwrap_or(0)
            .max(self.target_duration_secs)
            .max(1)
    }

    /// Writes the playlist; `uri` names the segment with the given MSN.
    pub fn write_to(&self, w: &mut impl ManifestWrite, uri: impl Fn(u64) -> String) -> fmt::Result {
        self.write_with_maps(w, uri, &[])
    }

    /// Writes the playlist of fMP4 segments: `maps[i]` is the init segment's URI of the
    /// i-th segment (later segments keep the last), written as an EXT-X-MAP before each
    /// segment whose init differs from the previous one's (after its
    /// EXT-X-DISCONTINUITY); with maps the version is 7 (EXT-X-MAP in a playlist that is
    /// not I-frame only needs 6 or more), else 3.
    pub fn write_with_maps(
        &self,
        w: &mut impl ManifestWrite,
        uri: impl Fn(u64) -> String,
        maps: &[String],
    ) -> fmt::Result {
        let first = self.segments.first();
        let media_sequence = first.map_or(0, |s| s.msn);
        let discontinuity_sequence = first.map_or(0, |s| {
            s.discontinuity_seq
                .saturating_sub(u64::from(s.discontinuous))
        });
        let version = if maps.is_empty() { 3 } else { 7 };
        writeln!(w, "#EXTM3U\n#EXT-X-VERSION:{version}")?;
        writeln!(w, "#EXT-X-TARGETDURATION:{}", self.target_duration())?;
        writeln!(w, "#EXT-X-MEDIA-SEQUENCE:{media_sequence}")?;
        writeln!(w, "#EXT-X-DISCONTINUITY-SEQUENCE:{discontinuity_sequence}")?;
        match self.playlist_type {
            PlaylistType::Live => {}
            PlaylistType::Event => w.write_str("#EXT-X-PLAYLIST-TYPE:EVENT\n")?,
            PlaylistType::Vod => w.write_str("#EXT-X-PLAYLIST-TYPE:VOD\n")?,
        }
        w.write_str("#EXT-X-INDEPENDENT-SEGMENTS\n")?;
        let mut current_map: Option<&str> = None;
        for (i, s) in self.segments.iter().enumerate() {
            if s.discontinuous {
                w.write_str("#EXT-X-DISCONTINUITY\n")?;
            }
            if let Some(map) = maps.get(i).map(String::as_str) {
                if current_map != Some(map) {
                    w.write_str("#EXT-X-MAP:URI=\"")?;
                    w.uri(&map.replace(['"', '\r', '\n'], ""))?;
                    w.write_str("\"\n")?;
                    current_map = Some(map);
                }
            }
            w.write_str("#EXT-X-PROGRAM-DATE-TIME:")?;
            format_rfc3339_ms(w, s.program_date_time_ms)?;
            let ms = s.duration_ms();
            write!(w, "\n#EXTINF:{}.{:03},\n", ms / 1000, ms % 1000)?;
            if s.gap {
                w.write_str("#EXT-X-GAP\n")?;
            }
            w.uri(&line_safe(&uri(s.msn)))?;
            w.write_char('\n')?;
        }
        if self.ended || self.playlist_type == PlaylistType::Vod {
            w.write_str("#EXT-X-ENDLIST\n")?;
        }
        Ok(())
    }

    /// The playlist with where its URIs end (what viewers are answered from).
    pub fn manifest(&self, uri: impl Fn(u64) -> String) -> Manifest {
        self.manifest_with_maps(uri, &[])
    }

    /// The playlist of fMP4 segments (see [`MediaPlaylist::write_with_maps`]) with where
    /// its URIs end.
    pub fn manifest_with_maps(&self, uri: impl Fn(u64) -> String, maps: &[String]) -> Manifest {
        let mut text = MarkedText::with_capacity(256 + self.segments.len() * 104);
        self.write_with_maps(&mut text, uri, maps)
            .expect("writing to memory cannot fail");
        text.finish()
    }

    /// The playlist as a `String`.
    pub fn render(&self, uri: impl Fn(u64) -> String) -> String {
        let mut s = String::with_capacity(256 + self.segments.len() * 96);
        self.write_to(&mut s, uri)
            .expect("writing to a String cannot fail");
        s
    }
}

/// The live window of a channel: the newest `capacity` segments, with a target
/// duration that only grows (a live playlist's EXT-X-TARGETDURATION must stay stable).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveWindow {
    capacity: usize,
    target_duration_secs: u64,
    segments: VecDeque<PlaylistSegment>,
    ended: bool,
}

impl LiveWindow {
    /// A window of `capacity` segments (at least 1) for a configured target duration.
    pub fn new(capacity: usize, target_duration_ms: u32) -> Self {
        Self {
            capacity: capacity.max(1),
            target_duration_secs: u64::from(target_duration_ms).div_ceil(1000).max(1),
            segments: VecDeque::new(),
            ended: false,
        }
    }

    /// Adds the newest segment, dropping the oldest beyond the capacity.
    pub fn push(&mut self, segment: PlaylistSegment) {
        self.target_duration_secs = self.target_duration_secs.max(segment.rounded_secs());
        self.segments.push_back(segment);
        while self.segments.len() > self.capacity {
            self.segments.pop_front();
        }
    }

    /// Marks the stream as ended (EXT-X-ENDLIST).
    pub fn end(&mut self) {
        self.ended = true;
    }

    /// The segments in the window, oldest first.
    pub fn segments(&self) -> impl Iterator<Item = &PlaylistSegment> {
        self.segments.iter()
    }

    /// The window as a live media playlist.
    pub fn playlist(&self) -> MediaPlaylist {
        MediaPlaylist {
            playlist_type: PlaylistType::Live,
            target_duration_secs: self.target_duration_secs,
            segments: self.segments.iter().copied().collect(),
            ended: self.ended,
        }
    }
}
