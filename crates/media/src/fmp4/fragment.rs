//! One movie fragment: [`styp`], [`prft`], `moof` (`mfhd`, a `traf` per track with
//! `tfhd`, `tfdt`, `trun`) and `mdat` (video samples, then audio samples).

use bytes::BufMut;

use super::bmff::{close, file_type, open, open_full, MAX_BOX_BODY};
use super::config::InitConfig;
use super::samples::{collect, default_duration, Run};
use super::timed::TimedFrame;
use super::{Fmp4Error, AUDIO_TRACK_ID, VIDEO_TRACK_ID};
use crate::TrackKind;

/// Sample flags (ISO/IEC 14496-12 8.8.3.1) of a sync sample: depends on no other.
const SYNC: u32 = 0x0200_0000;
/// Sample flags of a non-sync sample: depends on others, is_non_sync_sample.
const NON_SYNC: u32 = 0x0101_0000;

/// The wall-clock time of a media time, written as a `prft` box.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerTime {
    /// Wall-clock time, Unix milliseconds (EXT-X-PROGRAM-DATE-TIME of `media_time`).
    pub unix_ms: i64,
    /// The media time it belongs to, 90 kHz, on the reference (first) track's timeline.
    pub media_time: u64,
}

/// How to write one fragment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FragmentOptions {
    /// `mfhd` sequence number (see [`super::sequence_number`]).
    pub sequence_number: u32,
    /// Start with a `styp` (the first fragment of a segment).
    pub styp: bool,
    /// Write a `prft` before the `moof`.
    pub producer_time: Option<ProducerTime>,
    /// Extended DTS of the video sample after this fragment, when known: it gives the
    /// last video sample's duration.
    pub next_video_dts: Option<u64>,
    /// Extended DTS of the audio sample after this fragment, when known.
    pub next_audio_dts: Option<u64>,
}

/// What a fragment holds, measured on its primary track (video when it has video).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragmentInfo {
    /// Extended DTS of the primary track's first sample (its `tfdt`).
    pub first_dts: u64,
    /// Sum of the primary track's sample durations, 90 kHz.
    pub duration_ticks: u64,
    /// The primary track starts with a sync sample (LL-HLS INDEPENDENT=YES).
    pub independent: bool,
    /// Video samples written.
    pub video_samples: u32,
    /// Audio samples written.
    pub audio_samples: u32,
}

/// Writes one fragment of `frames` (in decode order per track) into `out`.
///
/// Frames of a track `config` does not carry are left out. Each track's `tfdt` is the
/// extended DTS of its first sample in this fragment.
///
/// # Errors
/// [`Fmp4Error::Empty`] when no frame belongs to a configured track,
/// [`Fmp4Error::TooLarge`] when the samples exceed what a 32-bit `mdat` holds.
pub fn write_fragment(
    config: &InitConfig,
    frames: &[TimedFrame],
    options: &FragmentOptions,
    out: &mut Vec<u8>,
) -> Result<FragmentInfo, Fmp4Error> {
    let (mut video, mut audio) = collect(config, frames);
    if video.samples.is_empty() && audio.samples.is_empty() {
        return Err(Fmp4Error::Empty);
    }
    if video.bytes + audio.bytes > MAX_BOX_BODY {
        return Err(Fmp4Error::TooLarge);
    }
    video.finish_durations(
        options.next_video_dts,
        default_duration(config, TrackKind::Video),
    );
    audio.finish_durations(
        options.next_audio_dts,
        default_duration(config, TrackKind::Audio),
    );

    let tracks = usize::from(!video.samples.is_empty()) + usize::from(!audio.samples.is_empty());
    if options.styp {
        if tracks == 1 {
            file_type(out, b"styp", b"msdh", &[b"msdh", b"cmfs"]);
        } else {
            file_type(out, b"styp", b"msdh", &[b"msdh"]);
        }
    }
    let primary_id = if video.samples.is_empty() {
        AUDIO_TRACK_ID
    } else {
        VIDEO_TRACK_ID
    };
    if let Some(p) = options.producer_time {
        prft(out, primary_id, p);
    }

    let moof = open(out, b"moof");
    let mfhd = open_full(out, b"mfhd", 0, 0);
    out.put_u32(options.sequence_number);
    close(out, mfhd);
    let mut patches = Vec::with_capacity(2);
    let mut offset_in_mdat = 0usize;
    for (id, run) in [(VIDEO_TRACK_ID, &video), (AUDIO_TRACK_ID, &audio)] {
        if run.samples.is_empty() {
            continue;
        }
        let at = traf(out, id, run);
        patches.push((at, offset_in_mdat));
        offset_in_mdat += run.bytes;
    }
    close(out, moof);
    let moof_size = out.len() - moof;
    for (at, offset) in patches {
        let data_offset = i32::try_from(moof_size + 8 + offset).map_err(|_| Fmp4Error::TooLarge)?;
        out[at..at + 4].copy_from_slice(&data_offset.to_be_bytes());
    }
    out.reserve(8 + video.bytes + audio.bytes);
    let mdat = open(out, b"mdat");
    video.write_payload(out);
    audio.write_payload(out);
    close(out, mdat);

    let primary = if video.samples.is_empty() {
        &audio
    } else {
        &video
    };
    Ok(FragmentInfo {
        first_dts: primary.samples.first().map_or(0, |s| s.dts),
        duration_ticks: primary
            .durations
            .iter()
            .fold(0u64, |sum, &d| sum.saturating_add(u64::from(d))),
        independent: primary.samples.first().is_some_and(|s| s.sync),
        video_samples: video.samples.len() as u32,
        audio_samples: audio.samples.len() as u32,
    })
}

/// Writes a `traf`; returns where its `trun` data_offset is, to patch once the `moof`
/// size is known.
fn traf(out: &mut Vec<u8>, id: u32, run: &Run<'_>) -> usize {
    let at = open(out, b"traf");
    let video = id == VIDEO_TRACK_ID;
    // default-base-is-moof; audio also sets default_sample_flags (every sample is sync).
    let tfhd = open_full(out, b"tfhd", 0, if video { 0x02_0000 } else { 0x02_0020 });
    out.put_u32(id);
    if !video {
        out.put_u32(SYNC);
    }
    close(out, tfhd);
    let tfdt = open_full(out, b"tfdt", 1, 0);
    out.put_u64(run.samples.first().map_or(0, |s| s.dts));
    close(out, tfdt);
    let cto = video && run.has_cto();
    // data-offset, sample-duration, sample-size (+ sample-flags, + composition offsets).
    let mut flags = 0x00_0001 | 0x00_0100 | 0x00_0200;
    if video {
        flags |= 0x00_0400;
    }
    if cto {
        flags |= 0x00_0800;
    }
    let trun = open_full(out, b"trun", 1, flags);
    out.put_u32(run.samples.len() as u32);
    let data_offset_at = out.len();
    out.put_i32(0);
    for (s, &d) in run.samples.iter().zip(&run.durations) {
        out.put_u32(d);
        out.put_u32(s.size as u32);
        if video {
            out.put_u32(if s.sync { SYNC } else { NON_SYNC });
        }
        if cto {
            out.put_i32(s.cto.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32);
        }
    }
    close(out, trun);
    close(out, at);
    data_offset_at
}

/// Writes `prft` version 1: the NTP time of `media_time` on track `track_id`.
fn prft(out: &mut Vec<u8>, track_id: u32, p: ProducerTime) {
    /// Seconds from the NTP epoch (1900) to the Unix epoch (1970).
    const NTP_UNIX_OFFSET: i64 = 2_208_988_800;
    let secs = (p.unix_ms.div_euclid(1000))
        .saturating_add(NTP_UNIX_OFFSET)
        .max(0) as u64;
    let frac = ((p.unix_ms.rem_euclid(1000) as u64) << 32) / 1000;
    let at = open_full(out, b"prft", 1, 0);
    out.put_u32(track_id);
    out.put_u64((secs << 32) | frac);
    out.put_u64(p.media_time);
    close(out, at);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prft_carries_ntp_time() {
        let mut out = Vec::new();
        prft(
            &mut out,
            1,
            ProducerTime {
                unix_ms: 1_500,
                media_time: 42,
            },
        );
        assert_eq!(out.len(), 32);
        assert_eq!(&out[16..20], &(2_208_988_801u32).to_be_bytes());
        assert_eq!(&out[20..24], &(1u32 << 31).to_be_bytes());
        assert_eq!(&out[24..], &42u64.to_be_bytes());
    }
}
