//! The DASH MPDs of the fMP4 window, written by [`media::dash::Mpd`]: one Period per
//! discontinuity sequence, anchored like EXT-X-PROGRAM-DATE-TIME, `$Number$` = MSN,
//! `SegmentTimeline` on the TS timeline, one adaptation set per track. The routes serve
//! what is rendered here ([`crate::routes::dash`]).

use media::dash::{Mpd, MpdAudio, MpdKind, MpdPeriod, MpdSegment, MpdUris, MpdVideo};
use media::fmp4::InitConfig;
use media::TrackKind;

use super::Track;
use crate::url::Route;
use crate::window::WindowSnapshot;

/// Bit rate announced for audio when a period has no measured audio bytes.
const DEFAULT_AUDIO_BPS: u64 = 128_000;

/// Names of the live DASH files, relative to the MPD.
#[derive(Debug, Clone, Copy)]
pub struct LiveUris;

impl MpdUris for LiveUris {
    fn init(&self, discontinuity_seq: u64, track: TrackKind) -> String {
        format!(
            "init-{discontinuity_seq}{}.mp4",
            Track::of_kind(track).suffix()
        )
    }

    fn media(&self, _discontinuity_seq: u64, track: TrackKind) -> String {
        format!("seg-$Number${}.m4s", Track::of_kind(track).suffix())
    }
}

/// Bits per second of `bytes` over `ticks` of 90 kHz.
pub fn bps(bytes: u64, ticks: u64) -> u64 {
    bytes
        .saturating_mul(8 * media::CLOCK_HZ)
        .checked_div(ticks)
        .unwrap_or(0)
}

/// The video and audio representations of `config`, with these bit rates.
pub fn representations(
    config: &InitConfig,
    video_bps: u64,
    audio_bps: u64,
) -> (Option<MpdVideo>, Option<MpdAudio>) {
    let video = config.video.as_ref().map(|v| MpdVideo {
        codecs: v.codec_string.clone(),
        width: v.width,
        height: v.height,
        bandwidth: video_bps.max(1),
    });
    let audio = config.audio.as_ref().map(|a| MpdAudio {
        codecs: a.config.codec_string(),
        sample_rate: a.sample_rate(),
        channels: a.config.channels,
        bandwidth: if audio_bps > 0 {
            audio_bps
        } else {
            DEFAULT_AUDIO_BPS
        },
    });
    (video, audio)
}

/// The dynamic MPD of a live window's fMP4 segments: `availability_start_ms` fixed for
/// the stream's life, `minimumUpdatePeriod` one target duration, players starting
/// three target durations behind the live edge (as HLS's hold-back), the window as
/// the time-shift buffer.
pub fn live_mpd(
    window: &WindowSnapshot,
    availability_start_ms: i64,
    target_ms: u64,
    now_ms: i64,
) -> String {
    let mut periods: Vec<MpdPeriod> = Vec::new();
    // Peak bit rates per period, from the frames' bytes.
    let mut peaks: Vec<(u64, u64)> = Vec::new();
    for (_, s) in window.fmp4_segments() {
        let state = &s.marker.state;
        let starts_period = periods
            .last()
            .is_none_or(|p| p.discontinuity_seq != state.discontinuity_seq);
        if starts_period {
            let (video, audio) = representations(&s.init.config, 0, 0);
            periods.push(MpdPeriod {
                discontinuity_seq: state.discontinuity_seq,
                anchor_ts: state.anchor_ts,
                anchor_unix_ms: state.anchor_unix_ms,
                segments: Vec::new(),
                video,
                audio,
                rungs: Vec::new(),
            });
            peaks.push((0, 0));
        }
        if let (Some(period), Some(peak)) = (periods.last_mut(), peaks.last_mut()) {
            period.segments.push(MpdSegment {
                msn: state.msn,
                start_ts: s.marker.start_ts,
                duration_ticks: s.marker.duration_ticks,
            });
            peak.0 = peak.0.max(bps(s.media_bytes.0, s.marker.duration_ticks));
            peak.1 = peak.1.max(bps(s.media_bytes.1, s.marker.duration_ticks));
        }
    }
    for (period, (video_bps, audio_bps)) in periods.iter_mut().zip(peaks) {
        if let Some(v) = &mut period.video {
            v.bandwidth = video_bps.max(1);
        }
        if let Some(a) = &mut period.audio {
            if audio_bps > 0 {
                a.bandwidth = audio_bps;
            }
        }
    }
    let window_ticks: u64 = window
        .fmp4_segments()
        .map(|(_, s)| s.marker.duration_ticks)
        .sum();
    let mpd = Mpd {
        kind: MpdKind::Dynamic {
            publish_unix_ms: now_ms,
            minimum_update_period_ms: target_ms,
            time_shift_buffer_depth_ms: window_ticks / 90,
            suggested_presentation_delay_ms: target_ms.saturating_mul(3),
        },
        availability_start_unix_ms: availability_start_ms,
        min_buffer_time_ms: target_ms,
        periods,
        utc_timing_uri: Some(Route::UtcTiming.pattern().to_owned()),
    };
    mpd.render(&LiveUris)
}
