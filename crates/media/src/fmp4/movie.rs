//! The boxes of a `moov` that every MP4 brdyun writes shares: `mvhd`, and per track
//! `trak` → `tkhd`, `edts`, `mdia` (`mdhd`, `hdlr`, `minf`, `stbl` with the sample
//! entry). A fragmented init leaves durations unknown and the sample tables empty; a
//! progressive file gives both, so the sample tables are written by the caller.

use bytes::BufMut;

use super::bmff::{close, leaf, open, open_full};
use super::config::{AudioTrack, VideoTrack};
use super::records::{avcc, esds, hvcc};
use super::{AUDIO_TRACK_ID, TIMESCALE, VIDEO_TRACK_ID};
use crate::Codec;

/// The unity transformation matrix of `mvhd` and `tkhd`.
const MATRIX: [u32; 9] = [0x0001_0000, 0, 0, 0, 0x0001_0000, 0, 0, 0, 0x4000_0000];

/// ISO 639-2 "und" packed as three 5-bit letters.
const LANGUAGE_UND: u16 = 0x55c4;

/// How long a track lasts and where it starts on the movie's timeline (90 kHz both).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct TrackTiming {
    /// Sum of the sample durations (`mdhd`); 0 when unknown (fragmented).
    pub(crate) media_duration: u64,
    /// What the track spans on the movie's timeline (`tkhd`); 0 when unknown.
    pub(crate) track_duration: u64,
    /// The edit list, for a track that does not start presenting at the movie's start
    /// or whose first presented sample is not its first decoded one.
    pub(crate) edit: Option<Edit>,
}

/// One track's edit list: an empty edit of `delay` (when not zero), then the media from
/// `media_time` on for `duration`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Edit {
    /// Movie time before the track presents anything.
    pub(crate) delay: u64,
    /// Media (composition) time presented first.
    pub(crate) media_time: u64,
    /// How long the media is presented.
    pub(crate) duration: u64,
}

/// Whether a duration needs the 64-bit (version 1) form of its box.
fn wide(value: u64) -> bool {
    value > u64::from(u32::MAX)
}

/// Writes a 32- or 64-bit field by the box's version.
fn put_time(out: &mut Vec<u8>, wide: bool, value: u64) {
    if wide {
        out.put_u64(value);
    } else {
        out.put_u32(value as u32);
    }
}

/// Writes `mvhd`; `duration` 0 is unknown (fragmented).
pub(crate) fn mvhd(out: &mut Vec<u8>, duration: u64) {
    let v1 = wide(duration);
    let at = open_full(out, b"mvhd", u8::from(v1), 0);
    put_time(out, v1, 0); // creation_time
    put_time(out, v1, 0); // modification_time
    out.put_u32(TIMESCALE);
    put_time(out, v1, duration);
    out.put_u32(0x0001_0000); // rate 1.0
    out.put_u16(0x0100); // volume 1.0
    out.put_slice(&[0; 10]);
    for m in MATRIX {
        out.put_u32(m);
    }
    out.put_slice(&[0; 24]); // pre_defined
    out.put_u32(AUDIO_TRACK_ID + 1); // next_track_ID
    close(out, at);
}

/// Writes `tkhd`; `duration` 0 is unknown (fragmented).
pub(crate) fn tkhd(
    out: &mut Vec<u8>,
    track_id: u32,
    audio: bool,
    (width, height): (u32, u32),
    duration: u64,
) {
    let v1 = wide(duration);
    let at = open_full(out, b"tkhd", u8::from(v1), 0x000003); // enabled, in movie
    put_time(out, v1, 0);
    put_time(out, v1, 0);
    out.put_u32(track_id);
    out.put_u32(0); // reserved
    put_time(out, v1, duration);
    out.put_slice(&[0; 8]);
    out.put_u16(0); // layer
    out.put_u16(u16::from(audio)); // alternate_group
    out.put_u16(if audio { 0x0100 } else { 0 }); // volume
    out.put_u16(0);
    for m in MATRIX {
        out.put_u32(m);
    }
    // 16.16 fixed point; sizes past 65535 pixels do not exist in practice.
    out.put_u32(width.min(0xffff) << 16);
    out.put_u32(height.min(0xffff) << 16);
    close(out, at);
}

/// Writes `edts` with its `elst`: the empty edit, if any, then the media edit.
fn edts(out: &mut Vec<u8>, edit: &Edit) {
    let v1 = wide(edit.delay) || wide(edit.duration) || edit.media_time > i32::MAX as u64;
    let edts = open(out, b"edts");
    let elst = open_full(out, b"elst", u8::from(v1), 0);
    let entries: &[(u64, i64)] = &[
        (edit.delay, -1),
        (
            edit.duration,
            i64::try_from(edit.media_time).unwrap_or(i64::MAX),
        ),
    ];
    let entries = if edit.delay > 0 {
        entries
    } else {
        &entries[1..]
    };
    out.put_u32(entries.len() as u32);
    for &(duration, media_time) in entries {
        put_time(out, v1, duration);
        if v1 {
            out.put_i64(media_time);
        } else {
            out.put_i32(media_time as i32);
        }
        out.put_u32(0x0001_0000); // media_rate 1.0
    }
    close(out, elst);
    close(out, edts);
}

/// `mdia` up to and including the start of `stbl`'s `stsd`; returns the open boxes.
pub(crate) fn mdia_head(
    out: &mut Vec<u8>,
    handler: &[u8; 4],
    name: &str,
    media_duration: u64,
) -> [usize; 4] {
    let mdia = open(out, b"mdia");
    let v1 = wide(media_duration);
    let mdhd = open_full(out, b"mdhd", u8::from(v1), 0);
    put_time(out, v1, 0);
    put_time(out, v1, 0);
    out.put_u32(TIMESCALE);
    put_time(out, v1, media_duration);
    out.put_u16(LANGUAGE_UND);
    out.put_u16(0);
    close(out, mdhd);
    let hdlr = open_full(out, b"hdlr", 0, 0);
    out.put_u32(0);
    out.put_slice(handler);
    out.put_slice(&[0; 12]);
    out.put_slice(name.as_bytes());
    out.put_u8(0);
    close(out, hdlr);
    let minf = open(out, b"minf");
    if handler == b"vide" {
        let vmhd = open_full(out, b"vmhd", 0, 1);
        out.put_slice(&[0; 8]); // graphicsmode, opcolor
        close(out, vmhd);
    } else if handler == b"text" {
        let nmhd = open_full(out, b"nmhd", 0, 0);
        close(out, nmhd);
    } else {
        let smhd = open_full(out, b"smhd", 0, 0);
        out.put_u32(0); // balance, reserved
        close(out, smhd);
    }
    let dinf = open(out, b"dinf");
    let dref = open_full(out, b"dref", 0, 0);
    out.put_u32(1);
    let url = open_full(out, b"url ", 0, 1); // self-contained
    close(out, url);
    close(out, dref);
    close(out, dinf);
    let stbl = open(out, b"stbl");
    let stsd = open_full(out, b"stsd", 0, 0);
    out.put_u32(1);
    [mdia, minf, stbl, stsd]
}

/// Closes `stsd`, writes the sample tables and closes `stbl`, `minf`, `mdia`.
pub(crate) fn mdia_tail(
    out: &mut Vec<u8>,
    [mdia, minf, stbl, stsd]: [usize; 4],
    tables: impl FnOnce(&mut Vec<u8>),
) {
    close(out, stsd);
    tables(out);
    close(out, stbl);
    close(out, minf);
    close(out, mdia);
}

/// The sample tables of a fragmented file's track: every sample is in the fragments.
pub(crate) fn empty_tables(out: &mut Vec<u8>) {
    for kind in [b"stts", b"stsc", b"stco"] {
        leaf(out, kind, &[0; 8]); // version/flags, entry_count 0
    }
    leaf(out, b"stsz", &[0; 12]); // version/flags, sample_size 0, sample_count 0
}

/// Writes the video `trak` (track 1): `avc1` or `hvc1` sample entry, then `tables`.
pub(crate) fn video_trak(
    out: &mut Vec<u8>,
    video: &VideoTrack,
    timing: &TrackTiming,
    tables: impl FnOnce(&mut Vec<u8>),
) {
    let trak = open(out, b"trak");
    let size = (video.width, video.height);
    tkhd(out, VIDEO_TRACK_ID, false, size, timing.track_duration);
    if let Some(edit) = &timing.edit {
        edts(out, edit);
    }
    let open_boxes = mdia_head(out, b"vide", "brdyun video", timing.media_duration);
    let (entry, name) = match video.codec {
        Codec::H265 => (b"hvc1", "HEVC Coding"),
        _ => (b"avc1", "AVC Coding"),
    };
    let se = open(out, entry);
    out.put_slice(&[0; 6]);
    out.put_u16(1); // data_reference_index
    out.put_slice(&[0; 16]); // pre_defined, reserved
    out.put_u16(video.width.min(0xffff) as u16);
    out.put_u16(video.height.min(0xffff) as u16);
    out.put_u32(0x0048_0000); // 72 dpi
    out.put_u32(0x0048_0000);
    out.put_u32(0);
    out.put_u16(1); // frame_count
    let mut compressor = [0u8; 32];
    compressor[0] = name.len() as u8;
    compressor[1..=name.len()].copy_from_slice(name.as_bytes());
    out.put_slice(&compressor);
    out.put_u16(0x0018); // depth
    out.put_i16(-1); // pre_defined
    match video.codec {
        Codec::H265 => hvcc(out, video),
        _ => avcc(out, video),
    }
    close(out, se);
    mdia_tail(out, open_boxes, tables);
    close(out, trak);
}

/// Writes the audio `trak` (track 2): `mp4a` sample entry, then `tables`.
pub(crate) fn audio_trak(
    out: &mut Vec<u8>,
    audio: &AudioTrack,
    timing: &TrackTiming,
    tables: impl FnOnce(&mut Vec<u8>),
) {
    let trak = open(out, b"trak");
    tkhd(out, AUDIO_TRACK_ID, true, (0, 0), timing.track_duration);
    if let Some(edit) = &timing.edit {
        edts(out, edit);
    }
    let open_boxes = mdia_head(out, b"soun", "brdyun audio", timing.media_duration);
    let se = open(out, b"mp4a");
    out.put_slice(&[0; 6]);
    out.put_u16(1); // data_reference_index
    out.put_slice(&[0; 8]);
    out.put_u16(u16::from(audio.config.channels.max(1)));
    out.put_u16(16); // samplesize
    out.put_u32(0); // pre_defined, reserved
                    // 16.16 fixed point: rates past 65535 Hz are written as 0 (the esds is authoritative).
    let rate = audio.sample_rate();
    out.put_u32(if rate <= 0xffff { rate << 16 } else { 0 });
    esds(out, audio);
    close(out, se);
    mdia_tail(out, open_boxes, tables);
    close(out, trak);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_durations_take_the_64_bit_form() {
        let mut short = Vec::new();
        mvhd(&mut short, 90_000);
        let mut long = Vec::new();
        mvhd(&mut long, u64::from(u32::MAX) + 1);
        assert_eq!((short[8], long[8]), (0, 1), "version");
        assert_eq!(long.len(), short.len() + 12);
        assert_eq!(&long[32..40], &(u64::from(u32::MAX) + 1).to_be_bytes());
    }

    #[test]
    fn the_edit_list_starts_with_an_empty_edit_only_when_delayed() {
        let mut out = Vec::new();
        let edit = Edit {
            delay: 0,
            media_time: 3600,
            duration: 90_000,
        };
        edts(&mut out, &edit);
        // edts(8) elst(12) count(4) + one entry of 12
        assert_eq!(out.len(), 36);
        assert_eq!(&out[20..24], &1u32.to_be_bytes());
        assert_eq!(&out[28..32], &3600u32.to_be_bytes());
        out.clear();
        edts(
            &mut out,
            &Edit {
                delay: 1800,
                ..edit
            },
        );
        assert_eq!(&out[20..24], &2u32.to_be_bytes());
        assert_eq!(&out[24..28], &1800u32.to_be_bytes());
        assert_eq!(&out[28..32], &(-1i32).to_be_bytes());
        assert_eq!(&out[40..44], &3600u32.to_be_bytes());
    }
}
