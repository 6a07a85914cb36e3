//! WebVTT in fMP4 (ISO/IEC 14496-30, codec `wvtt`): the subtitle track of the DASH
//! MPD, which dash.js and Shaka both play as segmented text (dash.js reads segmented
//! text only inside MP4: `wvtt` or `stpp`; WebVTT keeps the cues the HLS renditions
//! carry, where IMSC1 would need a second text model).
//!
//! The init segment declares one text track (`wvtt` sample entry with its `vttC`
//! header). A segment is one fragment whose samples tile the segment's span: each
//! sample lasts while the set of cues on screen stays the same and holds one `vttc`
//! box per cue (its text in `payl`), or an empty `vtte` box when nothing shows. Times
//! are the media's 90 kHz timeline: `tfdt` is the segment's start, as the video's is
//! its first DTS, so the MPD's timeline serves both.

use bytes::BufMut;

use super::bmff::{close, file_type, leaf, open, open_full};
use super::movie::{empty_tables, mdia_head, mdia_tail, mvhd, tkhd};

/// The track id of the text track in its own init segment.
pub const TEXT_TRACK_ID: u32 = 1;

/// One cue as the fragment carries it: start and end in 90 kHz ticks from the
/// segment's start, and its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextCue<'a> {
    /// Start, ticks from the segment's start.
    pub start: u64,
    /// End, ticks from the segment's start.
    pub end: u64,
    /// The text (WebVTT cue payload: `&`, `<`, `>` escaped by the writer).
    pub text: &'a str,
}

/// Writes the init segment of a WebVTT text track.
pub fn write_wvtt_init(out: &mut Vec<u8>) {
    file_type(out, b"ftyp", b"iso6", &[b"iso6", b"isom", b"dash", b"cmfc"]);
    let moov = open(out, b"moov");
    mvhd(out, 0);
    let trak = open(out, b"trak");
    tkhd(out, TEXT_TRACK_ID, false, (0, 0), 0);
    let boxes = mdia_head(out, b"text", "brdyun subtitles", 0);
    let entry = open(out, b"wvtt");
    out.put_slice(&[0; 6]);
    out.put_u16(1); // data_reference_index
    leaf(out, b"vttC", b"WEBVTT");
    close(out, entry);
    mdia_tail(out, boxes, empty_tables);
    close(out, trak);
    let mvex = open(out, b"mvex");
    let trex = open_full(out, b"trex", 0, 0);
    out.put_u32(TEXT_TRACK_ID);
    out.put_u32(1); // default_sample_description_index
    out.put_u32(0); // default_sample_duration
    out.put_u32(0); // default_sample_size
    out.put_u32(0); // default_sample_flags: every sample is a sync sample
    close(out, trex);
    close(out, mvex);
    close(out, moov);
}

/// Writes the fragment of one segment: `styp`, `moof` (`sequence` in `mfhd`, `tfdt`
/// = `start_ts`), `mdat`; its samples tile `[0, duration_ticks)` (see the module docs).
/// Cues are clipped to the segment.
pub fn write_wvtt_segment(
    sequence: u32,
    start_ts: u64,
    duration_ticks: u64,
    cues: &[TextCue<'_>],
    out: &mut Vec<u8>,
) {
    let duration = duration_ticks.max(1);
    let mut cuts: Vec<u64> = vec![0, duration];
    for cue in cues {
        cuts.push(cue.start.min(duration));
        cuts.push(cue.end.min(duration));
    }
    cuts.sort_unstable();
    cuts.dedup();
    let mut samples: Vec<(u32, Vec<u8>)> = Vec::with_capacity(cuts.len());
    for pair in cuts.windows(2) {
        let (from, to) = (pair[0], pair[1]);
        let mut body = Vec::new();
        for cue in cues
            .iter()
            .filter(|c| c.start <= from && c.end >= to && c.end > c.start)
        {
            let vttc = open(&mut body, b"vttc");
            leaf(&mut body, b"payl", escape(cue.text).as_bytes());
            close(&mut body, vttc);
        }
        if body.is_empty() {
            leaf(&mut body, b"vtte", &[]);
        }
        let ticks = u32::try_from(to - from).unwrap_or(u32::MAX);
        samples.push((ticks, body));
    }
    file_type(out, b"styp", b"msdh", &[b"msdh", b"cmfs"]);
    let moof = open(out, b"moof");
    let mfhd = open_full(out, b"mfhd", 0, 0);
    out.put_u32(sequence);
    close(out, mfhd);
    let traf = open(out, b"traf");
    let tfhd = open_full(out, b"tfhd", 0, 0x02_0000); // default-base-is-moof
    out.put_u32(TEXT_TRACK_ID);
    close(out, tfhd);
    let tfdt = open_full(out, b"tfdt", 1, 0);
    out.put_u64(start_ts);
    close(out, tfdt);
    // data-offset, sample-duration, sample-size present
    let trun = open_full(out, b"trun", 0, 0x0001 | 0x0100 | 0x0200);
    out.put_u32(u32::try_from(samples.len()).unwrap_or(0));
    let offset_at = out.len();
    out.put_u32(0);
    for (ticks, body) in &samples {
        out.put_u32(*ticks);
        out.put_u32(u32::try_from(body.len()).unwrap_or(0));
    }
    close(out, trun);
    close(out, traf);
    close(out, moof);
    let data_offset = u32::try_from(out.len() - moof + 8).unwrap_or(0);
    out[offset_at..offset_at + 4].copy_from_slice(&data_offset.to_be_bytes());
    let mdat = open(out, b"mdat");
    for (_, body) in &samples {
        out.put_slice(body);
    }
    close(out, mdat);
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The boxes at one level: (type, body).
    fn boxes(mut data: &[u8]) -> Vec<([u8; 4], &[u8])> {
        let mut out = Vec::new();
        while data.len() >= 8 {
            let size = u32::from_be_bytes([data[0], data[1], data[2], data[3]]) as usize;
            let kind = [data[4], data[5], data[6], data[7]];
            out.push((kind, &data[8..size]));
            data = &data[size..];
        }
        out
    }

    #[test]
    fn the_init_declares_a_wvtt_text_track() {
        let mut init = Vec::new();
        write_wvtt_init(&mut init);
        let top: Vec<_> = boxes(&init).iter().map(|b| b.0).collect();
        assert_eq!(top, [*b"ftyp", *b"moov"]);
        let text = String::from_utf8_lossy(&init);
        for needle in ["hdlr", "text", "nmhd", "wvtt", "vttCWEBVTT", "trex"] {
            assert!(text.contains(needle), "{needle}");
        }
    }

    #[test]
    fn samples_tile_the_segment_with_the_cues_on_screen() {
        let cues = [
            TextCue {
                start: 9_000,
                end: 90_000,
                text: "a < b",
            },
            TextCue {
                start: 45_000,
                end: 400_000,
                text: "second",
            },
        ];
        let mut out = Vec::new();
        write_wvtt_segment(7, 1_000_000, 180_000, &cues, &mut out);
        let top = boxes(&out);
        assert_eq!(
            top.iter().map(|b| b.0).collect::<Vec<_>>(),
            [*b"styp", *b"moof", *b"mdat"]
        );
        let traf = boxes(top[1].1)[1].1;
        let parts = boxes(traf);
        let tfdt = parts[1].1;
        assert_eq!(
            u64::from_be_bytes(tfdt[4..12].try_into().unwrap()),
            1_000_000
        );
        let trun = parts[2].1;
        let count = u32::from_be_bytes(trun[4..8].try_into().unwrap()) as usize;
        // [0,9000) empty, [9000,45000) a, [45000,90000) a+second, [90000,180000) second
        assert_eq!(count, 4);
        let offset = u32::from_be_bytes(trun[8..12].try_into().unwrap()) as usize;
        let moof_start = top[0].1.len() + 8;
        let mut at = moof_start + offset;
        let mut seen = Vec::new();
        let mut total = 0;
        for i in 0..count {
            let d = u32::from_be_bytes(trun[12 + i * 8..16 + i * 8].try_into().unwrap());
            let size =
                u32::from_be_bytes(trun[16 + i * 8..20 + i * 8].try_into().unwrap()) as usize;
            total += d;
            let sample = &out[at..at + size];
            at += size;
            let kinds: Vec<[u8; 4]> = boxes(sample).iter().map(|b| b.0).collect();
            seen.push((d, kinds));
        }
        assert_eq!(total, 180_000);
        assert_eq!(seen[0], (9_000, vec![*b"vtte"]));
        assert_eq!(seen[2], (45_000, vec![*b"vttc", *b"vttc"]));
        assert!(String::from_utf8_lossy(&out).contains("a &lt; b"));
        assert_eq!(at, out.len());
    }
}
