//! The DASH MPDs of the fMP4 window, written by [`media::dash::Mpd`]: one Period per
//! discontinuity sequence, anchored like EXT-X-PROGRAM-DATE-TIME, `$Number$` = MSN,
//! `SegmentTimeline` on the TS timeline, one adaptation set per track. The routes serve
//! what is rendered here ([`crate::routes::dash`]).

use media::dash::{Mpd, MpdAudio, MpdKind, MpdPeriod, MpdRung, MpdSegment, MpdUris, MpdVideo};
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

/// A rung's Representation in `period`: its segments of the period's MSNs that run, on
/// one discontinuity sequence, up to the period's newest one; `None` when the rung does
/// not have that one.
fn rung_of(name: &str, rung: &WindowSnapshot, period: &MpdPeriod) -> Option<MpdRung> {
    let newest = period.segments.last()?;
    let oldest = period.segments.first()?.msn;
    let theirs: Vec<(&crate::window::StoredSegment, &crate::fmp4::view::Fmp4View)> =
        rung.fmp4_segments().collect();
    let end = theirs.iter().position(|(s, _)| s.msn == newest.msn)?;
    let seq = theirs[end].1.marker.state.discontinuity_seq;
    let mut start = end;
    while start > 0 {
        let (s, view) = theirs[start - 1];
        if s.msn < oldest
            || s.msn + 1 != theirs[start].0.msn
            || view.marker.state.discontinuity_seq != seq
        {
            break;
        }
        start -= 1;
    }
    let run = &theirs[start..=end];
    let peak = run
        .iter()
        .map(|(_, v)| bps(v.media_bytes.0, v.marker.duration_ticks))
        .max()
        .unwrap_or(0);
    let (video, _) = representations(&theirs[end].1.init.config, peak, 0);
    Some(MpdRung {
        name: name.to_owned(),
        video: video?,
        discontinuity_seq: seq,
        segments: run
            .iter()
            .map(|(_, v)| MpdSegment {
                msn: v.marker.state.msn,
                start_ts: v.marker.start_ts,
                duration_ticks: v.marker.duration_ticks,
            })
            .collect(),
    })
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
    package_mpd(window, &[], availability_start_ms, target_ms, now_ms)
}

/// [`live_mpd`] of a package: the source's `window` and, as more video Representations
/// of each period, every rung of `rungs` (name and window) that has the period's
/// newest segment, from the first of its segments that continue to it on one
/// discontinuity sequence (dash.js and Shaka switch between them at any segment).
pub fn package_mpd(
    window: &WindowSnapshot,
    rungs: &[(&str, std::sync::Arc<WindowSnapshot>)],
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
    for period in &mut periods {
        period.rungs = rungs
            .iter()
            .filter_map(|(name, rung)| rung_of(name, rung, period))
            .collect();
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
