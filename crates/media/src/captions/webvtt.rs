//! WebVTT out of caption blocks: one file per media segment for the live and catch-up
//! subtitle playlists, and one file for a whole period (the transcript download).
//!
//! A segment's file maps its cue times onto the media with
//! `X-TIMESTAMP-MAP=MPEGTS:{segment start PTS},LOCAL:00:00:00.000`, cue times counted
//! from the segment's start, so a player places each cue on the TS timestamps it was
//! stamped for (RFC 8216 §3.5). The bytes depend on the block and the segment's start
//! only: every node writes the same file for the same segment.

use std::fmt::Write as _;

use super::block::CaptionBlock;
use crate::PTS_MASK;

/// The `Content-Type` of WebVTT.
pub const CONTENT_TYPE: &str = "text/vtt; charset=utf-8";

/// The WebVTT file of one segment for track `track_id`: the header, the timestamp map,
/// and the block's cues of that track (none when `block` is `None` or lacks the track:
/// an empty segment keeps players fetching, not stalling).
pub fn segment_vtt(block: Option<&CaptionBlock>, track_id: &str, segment_start_ts: u64) -> String {
    let mut out = String::with_capacity(128);
    let _ = write!(
        out,
        "WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:{},LOCAL:00:00:00.000\n",
        segment_start_ts & PTS_MASK
    );
    let Some((index, _)) = block.and_then(|b| b.track(track_id)) else {
        return out;
    };
    for cue in block.into_iter().flat_map(|b| &b.cues) {
        if cue.track != index {
            continue;
        }
        let start = cue.start_ts.saturating_sub(segment_start_ts);
        let end = cue.end_ts.saturating_sub(segment_start_ts);
        write_cue(&mut out, start, end, &cue.text);
    }
    out
}

/// How close the end of one piece and the start of the next must be for the two to be
/// one cue cut by a segment boundary: 1 ms (segment dates are whole milliseconds).
const JOIN_TOLERANCE_TICKS: u64 = 90;

/// One transcript cue: text shown from `start_ts` to `end_ts`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptCue {
    /// Extended 90 kHz timestamp where it appears.
    pub start_ts: u64,
    /// Extended 90 kHz timestamp where it goes.
    pub end_ts: u64,
    /// The text.
    pub text: String,
}

/// The cues of track `track_id` in `blocks` (segments in order), a cue cut by segment
/// boundaries joined back into one, and clipped to `[from_ts, to_ts)`.
pub fn transcript_cues<'a>(
    blocks: impl IntoIterator<Item = &'a CaptionBlock>,
    track_id: &str,
    from_ts: u64,
    to_ts: u64,
) -> Vec<TranscriptCue> {
    let mut cues: Vec<TranscriptCue> = Vec::new();
    for block in blocks {
        let Some((index, _)) = block.track(track_id) else {
            continue;
        };
        for cue in block.cues.iter().filter(|c| c.track == index) {
            let start = cue.start_ts.max(from_ts);
            let end = cue.end_ts.min(to_ts);
            if end <= start {
                continue;
            }
            if let Some(last) = cues
                .iter_mut()
                .rev()
                .find(|c| c.text == cue.text && c.end_ts.abs_diff(start) <= JOIN_TOLERANCE_TICKS)
            {
                last.end_ts = end;
                continue;
            }
            cues.push(TranscriptCue {
                start_ts: start,
                end_ts: end,
                text: cue.text.clone(),
            });
        }
    }
    cues.sort_by_key(|c| (c.start_ts, c.end_ts));
    cues
}

/// A whole period as one WebVTT file, cue times counted from `from_ts` (the period's
/// first moment is 00:00:00.000), for reading and for players given the file alone.
pub fn transcript_vtt(cues: &[TranscriptCue], from_ts: u64) -> String {
    let mut out = String::from("WEBVTT\n");
    for cue in cues {
        write_cue(
            &mut out,
            cue.start_ts.saturating_sub(from_ts),
            cue.end_ts.saturating_sub(from_ts),
            &cue.text,
        );
    }
    out
}

fn write_cue(out: &mut String, start_ticks: u64, end_ticks: u64, text: &str) {
    out.push('\n');
    write_time(out, start_ticks);
    out.push_str(" --> ");
    write_time(out, end_ticks.max(start_ticks + 90));
    out.push('\n');
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out.push('\n');
}

/// `hh:mm:ss.mmm` of a 90 kHz duration, milliseconds rounded down.
fn write_time(out: &mut String, ticks: u64) {
    let ms = ticks / 90;
    let _ = write!(
        out,
        "{:02}:{:02}:{:02}.{:03}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::captions::block::{CaptionTrack, Cue};

    fn block(msn: u64, cues: &[(u8, u64, u64, &str)]) -> CaptionBlock {
        CaptionBlock {
            msn,
            tracks: vec![
                CaptionTrack::new("en", "en", "English"),
                CaptionTrack::new("fr", "fr", "Français"),
            ],
            cues: cues
                .iter()
                .map(|&(track, start_ts, end_ts, text)| Cue {
                    track,
                    start_ts,
                    end_ts,
                    text: text.into(),
                })
                .collect(),
        }
    }

    #[test]
    fn a_segment_file_maps_its_cues_onto_the_segment_start() {
        let start = (1 << 33) + 900_000; // past one wrap: the map carries the 33-bit PTS
        let b = block(
            1,
            &[
                (0, start + 45_000, start + 180_000, "Hello <all> & you"),
                (1, start, start + 90, "Bonjour"),
            ],
        );
        assert_eq!(
            segment_vtt(Some(&b), "en", start),
            "WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:900000,LOCAL:00:00:00.000\n\
             \n00:00:00.500 --> 00:00:02.000\nHello &lt;all&gt; &amp; you\n"
        );
        assert!(segment_vtt(Some(&b), "fr", start)
            .ends_with("00:00:00.000 --> 00:00:00.001\nBonjour\n"));
        let empty = "WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:900000,LOCAL:00:00:00.000\n";
        assert_eq!(segment_vtt(Some(&b), "de", start), empty);
        assert_eq!(segment_vtt(None, "en", start), empty);
    }

    #[test]
    fn a_transcript_joins_a_cue_cut_by_segments_and_keeps_to_its_period() {
        let blocks = [
            block(1, &[(0, 100, 180_000, "one"), (0, 170_000, 180_000, "two")]),
            block(
                2,
                &[
                    (0, 180_000, 270_000, "one"),
                    (0, 180_000, 200_000, "two"),
                    (1, 0, 9, "x"),
                ],
            ),
            block(3, &[(0, 400_000, 500_000, "three")]),
        ];
        let cues = transcript_cues(&blocks, "en", 90_000, 450_000);
        let texts: Vec<_> = cues
            .iter()
            .map(|c| (c.start_ts, c.end_ts, c.text.as_str()))
            .collect();
        assert_eq!(
            texts,
            [
                (90_000, 270_000, "one"),
                (170_000, 200_000, "two"),
                (400_000, 450_000, "three")
            ]
        );
        let vtt = transcript_vtt(&cues, 90_000);
        assert!(
            vtt.starts_with("WEBVTT\n\n00:00:00.000 --> 00:00:02.000\none\n"),
            "{vtt}"
        );
        assert!(
            vtt.ends_with("00:00:03.444 --> 00:00:04.000\nthree\n"),
            "{vtt}"
        );
    }
}
