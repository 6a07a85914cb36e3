//! The init segment: `ftyp`, then `moov` with `mvhd`, one `trak` per track (empty
//! sample tables: every sample is in the fragments) and `mvex` with a `trex` per track.

use bytes::BufMut;

use super::bmff::{close, file_type, leaf, open, open_full};
use super::config::{AudioTrack, InitConfig, VideoTrack};
use super::records::{avcc, esds, hvcc};
use super::{Fmp4Error, AUDIO_TRACK_ID, TIMESCALE, VIDEO_TRACK_ID};
use crate::Codec;

/// The unity transformation matrix of `mvhd` and `tkhd`.
const MATRIX: [u32; 9] = [0x0001_0000, 0, 0, 0, 0x0001_0000, 0, 0, 0, 0x4000_0000];

/// ISO 639-2 "und" packed as three 5-bit letters.
const LANGUAGE_UND: u16 = 0x55c4;

/// Writes the init segment of `config` into `out`.
///
/// The bytes are a pure function of the config, so every node with the same source
/// writes the same init segment.
///
/// # Errors
/// [`Fmp4Error::Empty`] when the config carries no track.
pub fn write_init(config: &InitConfig, out: &mut Vec<u8>) -> Result<(), Fmp4Error> {
    if config.track_count() == 0 {
        return Err(Fmp4Error::Empty);
    }
    if config.track_count() == 1 {
        file_type(out, b"ftyp", b"iso6", &[b"iso6", b"isom", b"dash", b"cmfc"]);
    } else {
        file_type(out, b"ftyp", b"iso6", &[b"iso6", b"isom", b"dash"]);
    }
    let moov = open(out, b"moov");
    mvhd(out);
    if let Some(video) = &config.video {
        video_trak(out, video);
    }
    if let Some(audio) = &config.audio {
        audio_trak(out, audio);
    }
    let mvex = open(out, b"mvex");
    for (id, present) in [
        (VIDEO_TRACK_ID, config.video.is_some()),
        (AUDIO_TRACK_ID, config.audio.is_some()),
    ] {
        if present {
            let trex = open_full(out, b"trex", 0, 0);
            out.put_u32(id);
            out.put_u32(1); // default_sample_description_index
            out.put_u32(0); // default_sample_duration
            out.put_u32(0); // default_sample_size
            out.put_u32(0); // default_sample_flags
            close(out, trex);
        }
    }
    close(out, mvex);
    close(out, moov);
    Ok(())
}

pub(super) fn mvhd(out: &mut Vec<u8>) {
    let at = open_full(out, b"mvhd", 0, 0);
    out.put_u32(0); // creation_time
    out.put_u32(0); // modification_time
    out.put_u32(TIMESCALE);
    out.put_u32(0); // duration: unknown (fragmented)
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

pub(super) fn tkhd(out: &mut Vec<u8>, track_id: u32, audio: bool, width: u32, height: u32) {
    let at = open_full(out, b"tkhd", 0, 0x000003); // enabled, in movie
    out.put_u32(0);
    out.put_u32(0);
    out.put_u32(track_id);
    out.put_u32(0); // reserved
    out.put_u32(0); // duration
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

/// `mdia` up to and including the start of `stbl`'s `stsd`; returns the open boxes.
pub(super) fn mdia_head(out: &mut Vec<u8>, handler: &[u8; 4], name: &str) -> [usize; 4] {
    let mdia = open(out, b"mdia");
    let mdhd = open_full(out, b"mdhd", 0, 0);
    out.put_u32(0);
    out.put_u32(0);
    out.put_u32(TIMESCALE);
    out.put_u32(0);
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

/// Closes `stsd`, writes the empty sample tables and closes `stbl`, `minf`, `mdia`.
pub(super) fn mdia_tail(out: &mut Vec<u8>, [mdia, minf, stbl, stsd]: [usize; 4]) {
    close(out, stsd);
    for kind in [b"stts", b"stsc", b"stco"] {
        leaf(out, kind, &[0; 8]); // version/flags, entry_count 0
    }
    leaf(out, b"stsz", &[0; 12]); // version/flags, sample_size 0, sample_count 0
    close(out, stbl);
    close(out, minf);
    close(out, mdia);
}

fn video_trak(out: &mut Vec<u8>, video: &VideoTrack) {
    let trak = open(out, b"trak");
    tkhd(out, VIDEO_TRACK_ID, false, video.width, video.height);
    let open_boxes = mdia_head(out, b"vide", "brdyun video");
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
    mdia_tail(out, open_boxes);
    close(out, trak);
}

fn audio_trak(out: &mut Vec<u8>, audio: &AudioTrack) {
    let trak = open(out, b"trak");
    tkhd(out, AUDIO_TRACK_ID, true, 0, 0);
    let open_boxes = mdia_head(out, b"soun", "brdyun audio");
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
    mdia_tail(out, open_boxes);
    close(out, trak);
}
