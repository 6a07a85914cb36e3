//! Learns a stream's codecs, resolution and frame rate from its frames, for the master
//! playlist (CODECS, RESOLUTION, FRAME-RATE) and the status API.

use media::codec::probe::{probe_audio, probe_video};
use media::{Frame, TrackKind};

use crate::window::TrackSummary;

/// Probes the first video keyframe and audio frame after each (re)start.
#[derive(Debug, Default)]
pub struct TrackProbe {
    video: Option<(String, u32, u32)>,
    audio: Option<String>,
    saw_video: bool,
    saw_audio: bool,
    last_video_dts: Option<u64>,
    frame_ticks: Option<u64>,
}

impl TrackProbe {
    /// Looks at one frame; cheap once both tracks are known.
    pub fn observe(&mut self, frame: &Frame) {
        match frame.kind() {
            TrackKind::Video => {
                self.saw_video = true;
                if let Some(prev) = self.last_video_dts {
                    let delta = frame.dts.wrapping_sub(prev) & media::PTS_MASK;
                    if delta > 0 && delta < media::CLOCK_HZ {
                        self.frame_ticks = Some(self.frame_ticks.map_or(delta, |t| t.min(delta)));
                    }
                }
                self.last_video_dts = Some(frame.dts);
                if self.video.is_none() && frame.keyframe {
                    self.video = probe_video(frame).map(|v| (v.codec_string, v.width, v.height));
                }
            }
            TrackKind::Audio => {
                self.saw_audio = true;
                if self.audio.is_none() {
                    self.audio = probe_audio(frame).map(|a| a.codec_string);
                }
            }
        }
    }

    /// Forgets what it learned: the source changed.
    pub fn reset(&mut self) {
        *self = Self::default();
    }

    /// What is known so far.
    pub fn summary(&self) -> TrackSummary {
        let mut codecs = Vec::new();
        if let Some((codec, _, _)) = &self.video {
            codecs.push(codec.clone());
        }
        if let Some(codec) = &self.audio {
            codecs.push(codec.clone());
        }
        TrackSummary {
            codecs,
            resolution: self.video.as_ref().map(|(_, w, h)| (*w, *h)),
            frame_rate_milli: self
                .frame_ticks
                .filter(|_| self.saw_video)
                .map(|t| (media::CLOCK_HZ * 1000 / t) as u32),
        }
    }
}
