//! Low-Latency HLS media playlists (draft-pantos-hls-rfc8216bis: EXT-X-PART,
//! EXT-X-PART-INF, EXT-X-SERVER-CONTROL, EXT-X-PRELOAD-HINT, EXT-X-SKIP delta updates,
//! EXT-X-RENDITION-REPORT) of fMP4 segments, from values.
//!
//! The playlist is the TS playlist's timeline (same MSNs, durations and dates) plus the
//! parts of the most recent segments and of the segment being built. Which parts are
//! listed is a function of the values: the parts of every segment that ends within
//! three target durations of the playlist's end (rfc8216bis 6.2.2), and all parts of
//! the segment in progress.

use std::fmt;

use super::{format_rfc3339_ms, line_safe, PlaylistSegment};
use crate::manifest::{Manifest, ManifestWrite, MarkedText};

/// One part (partial segment) as a playlist lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlaylistPart {
    /// Duration in 90 kHz ticks.
    pub duration_ticks: u64,
    /// Starts with a sync sample: INDEPENDENT=YES.
    pub independent: bool,
}

/// A complete segment with its parts (empty for segments packaged without parts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlSegment {
    /// The segment as the TS playlist lists it.
    pub segment: PlaylistSegment,
    /// Its parts, in order.
    pub parts: Vec<PlaylistPart>,
}

/// The segment being built: its parts so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingSegment {
    /// Its media sequence number (the last complete segment's + 1).
    pub msn: u64,
    /// Its discontinuity sequence number.
    pub discontinuity_seq: u64,
    /// A discontinuity precedes it.
    pub discontinuous: bool,
    /// EXT-X-PROGRAM-DATE-TIME of its start, Unix milliseconds.
    pub program_date_time_ms: i64,
    /// The parts written so far.
    pub parts: Vec<PlaylistPart>,
}

/// Where another rendition's playlist ends (EXT-X-RENDITION-REPORT).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenditionReport {
    /// The rendition's playlist URI, relative to this playlist.
    pub uri: String,
    /// Its last media sequence number.
    pub last_msn: u64,
    /// Its last part index in that segment, if it lists parts.
    pub last_part: Option<usize>,
}

impl RenditionReport {
    /// Writes the `EXT-X-RENDITION-REPORT` line. A server that renders a rendition's
    /// playlist once per change appends its siblings' reports when it answers, so they
    /// are as current as the answer.
    ///
    /// # Errors
    /// Whatever `w` returns.
    pub fn write_to(&self, w: &mut impl ManifestWrite) -> fmt::Result {
        w.write_str("#EXT-X-RENDITION-REPORT:URI=\"")?;
        w.uri(&quoted_safe(&self.uri))?;
        write!(w, "\",LAST-MSN={}", self.last_msn)?;
        if let Some(part) = self.last_part {
            write!(w, ",LAST-PART={part}")?;
        }
        w.write_char('\n')
    }
}

/// How a playlist names its resources.
pub trait LlUris {
    /// The init segment of the given discontinuity sequence (EXT-X-MAP).
    fn map(&self, discontinuity_seq: u64) -> String;
    /// A complete segment.
    fn segment(&self, msn: u64) -> String;
    /// Part `index` of segment `msn`.
    fn part(&self, msn: u64, index: usize) -> String;
}

/// A live LL-HLS media playlist; see the module docs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LowLatencyPlaylist {
    /// The smallest EXT-X-TARGETDURATION to announce, seconds.
    pub target_duration_secs: u64,
    /// EXT-X-PART-INF PART-TARGET, milliseconds: at least the longest part.
    pub part_target_ms: u64,
    /// EXT-X-SERVER-CONTROL PART-HOLD-BACK, milliseconds (at least 2 × PART-TARGET;
    /// 3 × is what the draft recommends).
    pub part_hold_back_ms: u64,
    /// EXT-X-SERVER-CONTROL CAN-SKIP-UNTIL, milliseconds (at least 6 target durations);
    /// `None`: no delta updates.
    pub can_skip_until_ms: Option<u64>,
    /// Complete segments, oldest first, consecutive by MSN.
    pub segments: Vec<LlSegment>,
    /// The segment being built, if any.
    pub pending: Option<PendingSegment>,
    /// Other renditions' positions, for adaptive packages.
    pub rendition_reports: Vec<RenditionReport>,
    /// The stream has ended: no preload hint, EXT-X-ENDLIST.
    pub ended: bool,
}

/// Writes ticks as seconds with three decimals (rounded to the millisecond).
fn write_secs(w: &mut impl fmt::Write, ticks: u64) -> fmt::Result {
    let ms = ticks.saturating_add(45) / 90;
    write!(w, "{}.{:03}", ms / 1000, ms % 1000)
}

/// Writes milliseconds as seconds with three decimals.
fn write_ms(w: &mut impl fmt::Write, ms: u64) -> fmt::Result {
    write!(w, "{}.{:03}", ms / 1000, ms % 1000)
}

impl LowLatencyPlaylist {
    /// An empty live playlist with the draft's recommended server control for these
    /// targets: PART-HOLD-BACK = 3 × PART-TARGET, CAN-SKIP-UNTIL = 6 × the target
    /// duration (the smallest the draft allows).
    pub fn new(target_duration_secs: u64, part_target_ms: u64) -> Self {
        Self {
            target_duration_secs,
            part_target_ms,
            part_hold_back_ms: part_target_ms.saturating_mul(3),
            can_skip_until_ms: Some(target_duration_secs.saturating_mul(6_000)),
            segments: Vec::new(),
            pending: None,
            rendition_reports: Vec::new(),
            ended: false,
        }
    }

    /// EXT-X-TARGETDURATION: the configured target or the longest segment rounded to the
    /// nearest second, whichever is larger.
    pub fn target_duration(&self) -> u64 {
        self.segments
            .iter()
            .map(|s| s.segment.duration_ms().saturating_add(500) / 1000)
            .max()
            .unwrap_or(0)
            .max(self.target_duration_secs)
            .max(1)
    }

    /// The last part or segment listed: `(msn, part index)`, the part `None` when the
    /// last segment has no parts. What a blocking reload waits for and what a rendition
    /// report of this playlist says.
    pub fn last_position(&self) -> Option<(u64, Option<usize>)> {
        if let Some(p) = self.pending.as_ref().filter(|p| !p.parts.is_empty()) {
            return Some((p.msn, Some(p.parts.len() - 1)));
        }
        self.segments
            .last()
            .map(|s| (s.segment.msn, s.parts.len().checked_sub(1)))
    }

    /// Total duration listed, 90 kHz: complete segments plus the pending parts.
    fn end_ticks(&self) -> u64 {
        let complete = self.segments.iter().map(|s| s.segment.duration_ticks);
        let pending = self
            .pending
            .iter()
            .flat_map(|p| &p.parts)
            .map(|p| p.duration_ticks);
        complete.chain(pending).fold(0u64, u64::saturating_add)
    }

    /// How many leading segments a delta update replaces by EXT-X-SKIP: those that end
    /// at least CAN-SKIP-UNTIL before the end of the playlist (0 without CAN-SKIP-UNTIL).
    pub fn skipped_segments(&self) -> usize {
        let Some(until_ms) = self.can_skip_until_ms else {
            return 0;
        };
        let Some(boundary) = self.end_ticks().checked_sub(until_ms.saturating_mul(90)) else {
            return 0;
        };
        let mut end = 0u64;
        self.segments
            .iter()
            .take_while(|s| {
                end = end.saturating_add(s.segment.duration_ticks);
                end <= boundary
            })
            .count()
    }

    /// Index of the first complete segment whose parts are listed: the first that ends
    /// within three target durations of the playlist's end.
    fn first_with_parts(&self) -> usize {
        let window = self.target_duration().saturating_mul(3 * 90_000);
        let boundary = self.end_ticks().saturating_sub(window);
        let mut end = 0u64;
        self.segments
            .iter()
            .take_while(|s| {
                end = end.saturating_add(s.segment.duration_ticks);
                end <= boundary
            })
            .count()
    }

    /// Writes the playlist; `delta` writes the delta update (`_HLS_skip=YES`) when the
    /// playlist allows skipping, else the full playlist.
    pub fn write_to(
        &self,
        w: &mut impl ManifestWrite,
        uris: &impl LlUris,
        delta: bool,
    ) -> fmt::Result {
        let first = self.segments.first().map(|s| &s.segment);
        let media_sequence = first
            .map(|s| s.msn)
            .or(self.pending.as_ref().map(|p| p.msn))
            .unwrap_or(0);
        let discontinuity_sequence = first
            .map(|s| (s.discontinuity_seq, s.discontinuous))
            .or(self
                .pending
                .as_ref()
                .map(|p| (p.discontinuity_seq, p.discontinuous)))
            .map_or(0, |(seq, disc)| seq.saturating_sub(u64::from(disc)));
        let version = if self.can_skip_until_ms.is_some() {
            9
        } else {
            6
        };
        writeln!(w, "#EXTM3U\n#EXT-X-VERSION:{version}")?;
        writeln!(w, "#EXT-X-TARGETDURATION:{}", self.target_duration())?;
        w.write_str("#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES")?;
        if let Some(until) = self.can_skip_until_ms {
            w.write_str(",CAN-SKIP-UNTIL=")?;
            write_ms(w, until)?;
        }
        w.write_str(",PART-HOLD-BACK=")?;
        write_ms(w, self.part_hold_back_ms)?;
        w.write_str("\n#EXT-X-PART-INF:PART-TARGET=")?;
        write_ms(w, self.part_target_ms)?;
        writeln!(w, "\n#EXT-X-MEDIA-SEQUENCE:{media_sequence}")?;
        writeln!(w, "#EXT-X-DISCONTINUITY-SEQUENCE:{discontinuity_sequence}")?;
        w.write_str("#EXT-X-INDEPENDENT-SEGMENTS\n")?;
        let skipped = if delta { self.skipped_segments() } else { 0 };
        if skipped > 0 {
            writeln!(w, "#EXT-X-SKIP:SKIPPED-SEGMENTS={skipped}")?;
        }
        let with_parts = self.first_with_parts();
        let mut map_written: Option<u64> = None;
        for (i, s) in self.segments.iter().enumerate().skip(skipped) {
            let seg = &s.segment;
            write_head(
                w,
                uris,
                seg.discontinuous,
                seg.discontinuity_seq,
                &mut map_written,
            )?;
            w.write_str("#EXT-X-PROGRAM-DATE-TIME:")?;
            format_rfc3339_ms(w, seg.program_date_time_ms)?;
            w.write_char('\n')?;
            if i >= with_parts {
                write_parts(w, uris, seg.msn, &s.parts)?;
            }
            w.write_str("#EXTINF:")?;
            write_secs(w, seg.duration_ticks)?;
            w.write_str(",\n")?;
            if seg.gap {
                w.write_str("#EXT-X-GAP\n")?;
            }
            w.uri(&line_safe(&uris.segment(seg.msn)))?;
            w.write_char('\n')?;
        }
        if !self.ended {
            self.write_live_edge(w, uris, media_sequence, &mut map_written)?;
        }
        for r in &self.rendition_reports {
            r.write_to(w)?;
        }
        if self.ended {
            w.write_str("#EXT-X-ENDLIST\n")?;
        }
        Ok(())
    }

    /// The parts of the segment being cut and the preload hint of the next part.
    fn write_live_edge(
        &self,
        w: &mut impl ManifestWrite,
        uris: &impl LlUris,
        media_sequence: u64,
        map_written: &mut Option<u64>,
    ) -> fmt::Result {
        let next_msn = self
            .segments
            .last()
            .map_or(media_sequence, |s| s.segment.msn.saturating_add(1));
        let (hint_msn, hint_part) = match &self.pending {
            Some(p) => {
                if !p.parts.is_empty() {
                    write_head(w, uris, p.discontinuous, p.discontinuity_seq, map_written)?;
                    w.write_str("#EXT-X-PROGRAM-DATE-TIME:")?;
                    format_rfc3339_ms(w, p.program_date_time_ms)?;
                    w.write_char('\n')?;
                    write_parts(w, uris, p.msn, &p.parts)?;
                }
                (p.msn, p.parts.len())
            }
            None => (next_msn, 0),
        };
        w.write_str("#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"")?;
        w.uri(&quoted_safe(&uris.part(hint_msn, hint_part)))?;
        w.write_str("\"\n")
    }

    /// The playlist (or its delta update) with where its URIs end.
    pub fn manifest(&self, uris: &impl LlUris, delta: bool) -> Manifest {
        let parts: usize = self.segments.iter().map(|s| s.parts.len()).sum();
        let mut text = MarkedText::with_capacity(512 + self.segments.len() * 112 + parts * 80);
        self.write_to(&mut text, uris, delta)
            .expect("writing to memory cannot fail");
        text.finish()
    }

    /// The playlist (or its delta update) as a `String`.
    pub fn render(&self, uris: &impl LlUris, delta: bool) -> String {
        let parts: usize = self.segments.iter().map(|s| s.parts.len()).sum();
        let mut s = String::with_capacity(512 + self.segments.len() * 112 + parts * 80);
        self.write_to(&mut s, uris, delta)
            .expect("writing to a String cannot fail");
        s
    }
}

/// EXT-X-DISCONTINUITY and, when the init segment changes (first listed segment, or a
/// new discontinuity sequence), EXT-X-MAP.
fn write_head(
    w: &mut impl ManifestWrite,
    uris: &impl LlUris,
    discontinuous: bool,
    discontinuity_seq: u64,
    map_written: &mut Option<u64>,
) -> fmt::Result {
    if discontinuous {
        w.write_str("#EXT-X-DISCONTINUITY\n")?;
    }
    if *map_written != Some(discontinuity_seq) {
        w.write_str("#EXT-X-MAP:URI=\"")?;
        w.uri(&quoted_safe(&uris.map(discontinuity_seq)))?;
        w.write_str("\"\n")?;
        *map_written = Some(discontinuity_seq);
    }
    Ok(())
}

fn write_parts(
    w: &mut impl ManifestWrite,
    uris: &impl LlUris,
    msn: u64,
    parts: &[PlaylistPart],
) -> fmt::Result {
    for (i, p) in parts.iter().enumerate() {
        w.write_str("#EXT-X-PART:DURATION=")?;
        write_secs(w, p.duration_ticks)?;
        w.write_str(",URI=\"")?;
        w.uri(&quoted_safe(&uris.part(msn, i)))?;
        w.write_char('"')?;
        if p.independent {
            w.write_str(",INDEPENDENT=YES")?;
        }
        w.write_char('\n')?;
    }
    Ok(())
}

/// Makes a URI safe inside a quoted attribute: no line breaks, no double quote.
fn quoted_safe(uri: &str) -> std::borrow::Cow<'_, str> {
    if uri.contains(['\r', '\n', '"']) {
        uri.replace('\r', "%0D")
            .replace('\n', "%0A")
            .replace('"', "%22")
            .into()
    } else {
        uri.into()
    }
}
