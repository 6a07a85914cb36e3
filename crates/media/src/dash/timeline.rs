//! The timeline of a Representation as the MPD writes it: its segments (`$Number$` =
//! MSN, 90 kHz starts and durations) folded into a `SegmentTemplate` with a run-length
//! `SegmentTimeline`, and XML attribute escaping, shared by every adaptation set.

use std::fmt;

use crate::manifest::ManifestWrite;
use crate::segmenter::Segment;
use crate::CLOCK_HZ;

/// One segment as the MPD lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MpdSegment {
    /// Media sequence number: `$Number$`.
    pub msn: u64,
    /// Extended 90 kHz start (the PTS of its first frame): `S@t`.
    pub start_ts: u64,
    /// Duration in 90 kHz ticks: `S@d`.
    pub duration_ticks: u64,
}

impl From<&Segment> for MpdSegment {
    fn from(s: &Segment) -> Self {
        Self {
            msn: s.msn,
            start_ts: s.start_ts,
            duration_ticks: s.duration_ticks,
        }
    }
}

/// Escapes caller-supplied text for an XML attribute value.
pub fn xml_attr(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains(['&', '<', '>', '"', '\'', '\r', '\n', '\t']) {
        return s.into();
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\r' => out.push_str("&#13;"),
            '\n' => out.push_str("&#10;"),
            '\t' => out.push_str("&#9;"),
            c => out.push(c),
        }
    }
    out.into()
}

/// Where `count` segments of `s`'s duration starting at `s` end (`None` past `u64`).
fn end_after(s: &MpdSegment, count: usize) -> Option<u64> {
    s.duration_ticks
        .checked_mul(count as u64)
        .and_then(|d| s.start_ts.checked_add(d))
}

/// Where a Representation's segments are on the period's timeline.
pub struct Timeline<'a> {
    /// The period's anchor (`presentationTimeOffset`).
    pub anchor_ts: u64,
    /// The segments, oldest first, consecutive by MSN.
    pub segments: &'a [MpdSegment],
}

/// `SegmentTemplate` with its `SegmentTimeline`: `S@t` on the first entry and after a
/// gap, equal consecutive durations folded into `S@r`.
pub fn template(
    w: &mut impl ManifestWrite,
    indent: &str,
    timeline: &Timeline<'_>,
    init: &str,
    media: &str,
) -> fmt::Result {
    let segments = timeline.segments;
    let start_number = segments.first().map_or(0, |s| s.msn);
    write!(
        w,
        "{indent}<SegmentTemplate timescale=\"{CLOCK_HZ}\" presentationTimeOffset=\"{}\" \
         startNumber=\"{start_number}\" initialization=\"",
        timeline.anchor_ts,
    )?;
    w.uri(&xml_attr(init))?;
    w.write_str("\" media=\"")?;
    w.uri(&xml_attr(media))?;
    w.write_str("\">\n")?;
    writeln!(w, "{indent}  <SegmentTimeline>")?;
    let mut i = 0;
    let mut expected_start = None;
    while let Some(s) = segments.get(i) {
        let mut repeat = 0usize;
        while segments.get(i + repeat + 1).is_some_and(|n| {
            n.duration_ticks == s.duration_ticks && Some(n.start_ts) == end_after(s, repeat + 1)
        }) {
            repeat += 1;
        }
        write!(w, "{indent}    <S")?;
        if expected_start != Some(s.start_ts) {
            write!(w, " t=\"{}\"", s.start_ts)?;
        }
        write!(w, " d=\"{}\"", s.duration_ticks)?;
        if repeat > 0 {
            write!(w, " r=\"{repeat}\"")?;
        }
        w.write_str("/>\n")?;
        expected_start = end_after(s, repeat + 1);
        i += repeat + 1;
    }
    writeln!(
        w,
        "{indent}  </SegmentTimeline>\n{indent}</SegmentTemplate>"
    )
}
