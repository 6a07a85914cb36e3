//! The DASH MPDs of the fMP4 window, written by [`media::dash::Mpd`]: one Period per
//! discontinuity sequence, anchored like EXT-X-PROGRAM-DATE-TIME, `$Number$` = MSN,
//! `SegmentTimeline` on the TS timeline, one adaptation set per track. The routes serve
//! what is rendered here (the node's DASH routes).

use media::dash::{Mpd, MpdAudio, MpdKind, MpdPeriod, MpdSegment, MpdText, MpdVideo, ReloadEvents};
use media::fmp4::InitConfig;

use crate::segment::fmp4::Fmp4View;
use crate::window::WindowSnapshot;

pub use crate::live_mpd::{LiveMpd, LiveUris};

/// Bit rate announced for audio when a period has no measured audio bytes.
const DEFAULT_AUDIO_BPS: u64 = 128_000;

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

/// `availabilityStartTime` of every live MPD: the Unix epoch (as DASH-IF's live
/// simulator writes it). Each period starts at its timeline anchor's wall-clock time,
/// so the MPD depends on the timeline only: every node that follows it writes the same
/// MPD, whenever it joined, restarted or switched origin, and a DASH player can move
/// between nodes mid-play (`BaseURL`s, steering).
pub const LIVE_AVAILABILITY_START_MS: i64 = 0;

/// The spacing of the live MPD's reload events ([`ReloadEvents`]) before its edge: a
/// player that reached them retries its reload four times a second until one answers.
const RELOAD_EVENT_EVERY_MS: u64 = 250;

/// The dynamic MPD of a live window's fMP4 segments: `minimumUpdatePeriod` one target
/// duration, players starting [`presentation_delay_ms`] behind the live edge, the
/// window as the time-shift buffer.
pub fn live_mpd(window: &WindowSnapshot, target_ms: u64, now_ms: i64) -> LiveMpd {
    let views: Vec<&Fmp4View> = window.fmp4_segments().map(|(_, v)| v).collect();
    let mut periods = periods(&views, |_| None);
    with_texts(&mut periods, window);
    dynamic_mpd(periods, target_ms, now_ms)
}

/// Gives every period the stream's subtitle tracks (those of the live window: see
/// [`crate::captions::serve::tracks`]), each a text adaptation set of WebVTT in fMP4.
pub fn with_texts(periods: &mut [MpdPeriod], window: &WindowSnapshot) {
    let tracks = crate::captions::serve::tracks(window);
    let texts: Vec<MpdText> = crate::captions::serve::menu_order(tracks)
        .map(|t| MpdText {
            id: t.id.clone(),
            language: t.language.clone(),
            name: t.name.clone(),
        })
        .collect();
    for period in periods {
        period.texts.clone_from(&texts);
    }
}

/// The periods of `segments` (the fMP4 views to list, oldest first, consecutive): one
/// per discontinuity sequence, and a new one wherever `split` changes within a sequence
/// (`split` of a segment: the suffix of its period's id, `None` for the plain
/// `d<seq>`). The first period is anchored at its sequence's anchor, as is every period
/// that starts a sequence; one that splits a sequence starts at its first segment. The
/// video and audio bit rates are each period's peaks.
pub fn periods(
    segments: &[&Fmp4View],
    split: impl Fn(&Fmp4View) -> Option<String>,
) -> Vec<MpdPeriod> {
    let mut periods: Vec<MpdPeriod> = Vec::new();
    // Peak bit rates per period, from the frames' bytes.
    let mut peaks: Vec<(u64, u64)> = Vec::new();
    for s in segments {
        let state = &s.marker.state;
        let key = split(s);
        let (starts_sequence, starts_split) = match periods.last() {
            None => (true, false),
            Some(p) if p.discontinuity_seq != state.discontinuity_seq => (true, false),
            Some(p) => (false, p.split != key),
        };
        if starts_sequence || starts_split {
            let (video, audio) = representations(&s.init.config, 0, 0);
            // A split starts where its first segment does: Period@start and the
            // presentation time offset move together, so every segment keeps its time.
            let (anchor_ts, anchor_unix_ms) = if starts_split {
                let offset_ms = s.marker.start_ts.saturating_sub(state.anchor_ts) / 90;
                (
                    s.marker.start_ts,
                    state
                        .anchor_unix_ms
                        .saturating_add(i64::try_from(offset_ms).unwrap_or(i64::MAX)),
                )
            } else {
                (state.anchor_ts, state.anchor_unix_ms)
            };
            periods.push(MpdPeriod {
                discontinuity_seq: state.discontinuity_seq,
                anchor_ts,
                anchor_unix_ms,
                segments: Vec::new(),
                video,
                audio,
                rungs: Vec::new(),
                split: key,
                texts: Vec::new(),
                floor: None,
                languages: Vec::new(),
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
    periods
}

/// How far behind the live edge DASH players start: three target durations (HLS's
/// hold-back), and at least two plus 5 s. A node that hangs is known to the mesh and
/// steered away from within 2.5–3.5 s; a DASH player's reload in flight to it is only
/// replaced by the reload events just before the edge of the MPD it holds
/// ([`ReloadEvents`]), so its buffer must outlast that: the newest segment a player
/// knows lags the live edge by up to two target durations (the one being cut, and an
/// MPD up to one update old) and the relay's half second; the rest is the detection
/// and a second of margin.
pub fn presentation_delay_ms(target_ms: u64) -> u64 {
    target_ms
        .saturating_mul(3)
        .max(target_ms.saturating_mul(2).saturating_add(5_000))
}

/// How far before the edge of its MPD a player meets the reload events: a target
/// duration, at least 2 s (they must also fire after a detection that ends late in a
/// short buffer).
fn reload_events_span_ms(target_ms: u64) -> u64 {
    target_ms.max(2_000)
}

/// The dynamic MPD of `periods` (see [`live_mpd`]); the time-shift buffer is what they
/// list, and `publishTime` the wall-clock end of their newest segment (`now_ms` when
/// they list none), so it too is the same on every node.
pub fn dynamic_mpd(periods: Vec<MpdPeriod>, target_ms: u64, now_ms: i64) -> LiveMpd {
    let publish_unix_ms = periods
        .iter()
        .rev()
        .find_map(|p| {
            let last = p.segments.last()?;
            let end = last.start_ts.saturating_add(last.duration_ticks);
            let offset_ms = i64::try_from(end.saturating_sub(p.anchor_ts) / 90).ok()?;
            Some(p.anchor_unix_ms.saturating_add(offset_ms))
        })
        .unwrap_or(now_ms);
    let window_ticks: u64 = periods
        .iter()
        .flat_map(|p| &p.segments)
        .map(|s| s.duration_ticks)
        .sum();
    let mpd = Mpd {
        kind: MpdKind::Dynamic {
            publish_unix_ms,
            minimum_update_period_ms: target_ms,
            time_shift_buffer_depth_ms: window_ticks / 90,
            suggested_presentation_delay_ms: presentation_delay_ms(target_ms),
            reload_events: Some(ReloadEvents {
                before_edge_ms: reload_events_span_ms(target_ms),
                every_ms: RELOAD_EVENT_EVERY_MS,
            }),
        },
        availability_start_unix_ms: LIVE_AVAILABILITY_START_MS,
        min_buffer_time_ms: target_ms,
        periods,
        utc_timing_uri: Some(crate::url::UTC_TIMING_PATH.to_owned()),
    };
    LiveMpd::new(mpd)
}
