//! The file's head: `ftyp`, `moov` (`mvhd`, a `trak` per track with samples, each with
//! its timing and edit list) and the `mdat` header, chunk offsets made absolute.

use bytes::BufMut;

use super::stbl::{add_to_offsets, write_tables};
use super::track::Settled;
use crate::fmp4::bmff::{close, file_type, open};
use crate::fmp4::movie::{audio_trak, mvhd, video_trak, Edit, TrackTiming};
use crate::fmp4::InitConfig;

/// Writes the head of a file of `payload` sample bytes.
pub(super) fn write_head(
    config: &InitConfig,
    video: &Settled,
    audio: &Settled,
    payload: u64,
) -> Vec<u8> {
    let mut out =
        Vec::with_capacity(1024 + 16 * (video.table.sizes.len() + audio.table.sizes.len()));
    file_type(&mut out, b"ftyp", b"isom", &[b"isom", b"iso2", b"mp41"]);
    let start = [video, audio]
        .iter()
        .filter_map(|s| s.table.pts_range.map(|(lo, _)| lo))
        .min()
        .unwrap_or(0);
    let video_timing = timing(video, start);
    let audio_timing = timing(audio, start);
    let moov = open(&mut out, b"moov");
    mvhd(
        &mut out,
        video_timing.track_duration.max(audio_timing.track_duration),
    );
    let mut offsets = Vec::with_capacity(2);
    if let Some(track) = config.video.as_ref().filter(|_| has_samples(video)) {
        video_trak(&mut out, track, &video_timing, |out| {
            offsets.push((
                write_tables(out, &video.table, true),
                video.table.chunks.len(),
            ));
        });
    }
    if let Some(track) = config.audio.as_ref().filter(|_| has_samples(audio)) {
        audio_trak(&mut out, track, &audio_timing, |out| {
            offsets.push((
                write_tables(out, &audio.table, false),
                audio.table.chunks.len(),
            ));
        });
    }
    close(&mut out, moov);
    mdat_header(&mut out, payload);
    let head_len = out.len() as u64;
    for (at, count) in offsets {
        add_to_offsets(&mut out, at, count, head_len);
    }
    out
}

fn has_samples(track: &Settled) -> bool {
    !track.table.sizes.is_empty()
}

/// A track's durations and edit list when the file starts at PTS `start`: its first
/// presented sample shows at its PTS after `start`, from its composition time.
pub(super) fn timing(track: &Settled, start: u64) -> TrackTiming {
    let table = &track.table;
    let media_duration = table.media_duration();
    let (Some(first_dts), Some((earliest, latest))) = (table.first_dts, table.pts_range) else {
        return TrackTiming::default();
    };
    let span = (latest - earliest).saturating_add(u64::from(track.last_duration));
    let delay = earliest.saturating_sub(start);
    // A PTS before the first DTS (a negative composition offset) cannot be edited to;
    // presentation then starts at the first sample.
    let media_time = earliest.saturating_sub(first_dts);
    if delay == 0 && media_time == 0 {
        return TrackTiming {
            media_duration,
            track_duration: media_duration,
            edit: None,
        };
    }
    TrackTiming {
        media_duration,
        track_duration: delay.saturating_add(span),
        edit: Some(Edit {
            delay,
            media_time,
            duration: span,
        }),
    }
}

/// Writes the `mdat` header of `payload` bytes: the 64-bit size form past 4 GiB.
pub(super) fn mdat_header(out: &mut Vec<u8>, payload: u64) {
    match u32::try_from(payload + 8) {
        Ok(size) => {
            out.put_u32(size);
            out.put_slice(b"mdat");
        }
        Err(_) => {
            out.put_u32(1); // largesize follows
            out.put_slice(b"mdat");
            out.put_u64(payload + 16);
        }
    }
}
