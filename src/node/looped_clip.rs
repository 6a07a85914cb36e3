//! The demo's built-in meeting source: a short committed H.264/AAC clip, re-stamped
//! into an endless live stream and paced in real time. It needs no external tool.
//! Its video carries CEA-608 captions (channel 1, pop-on) in SEI, as a broadcast
//! encoder's does, so the demo shows 608 passed through and decoded to WebVTT. It has
//! two audio languages, as an interpreted meeting's source does: the floor (a 440 Hz
//! tone, `eng`) and an interpretation (a 750 Hz tone, `spa`) on a second PID.

use std::time::Duration;

use anyhow::{bail, Context};
use ingest::{IngestEvent, IngestSender};
use media::codec::aac::{AudioSpecificConfig, SAMPLES_PER_FRAME};
use media::{Frame, TrackKind, PTS_MASK};

/// The clip: 9.6 s of 640x360 H.264 (25 fps, a keyframe every second) and two 48 kHz
/// AAC streams (PID 0x101 `eng`, PID 0x102 `spa`).
pub static DEMO_CLIP: &[u8] = include_bytes!("../../assets/demo-meeting.ts");

/// A clip ready to loop: frames in decode order with timestamps relative to the clip
/// start, and the loop period.
#[derive(Debug, Clone)]
pub struct LoopedClip {
    frames: Vec<ClipFrame>,
    period: u64,
}

/// One frame of the clip: of its main streams, or of another language.
#[derive(Debug, Clone)]
struct ClipFrame {
    frame: Frame,
    /// The PID and language of an alternate audio stream's frame.
    alternate: Option<(u16, Option<media::Language>)>,
}

impl LoopedClip {
    /// Demuxes a clip. Audio frames that would overlap the next loop are dropped, so the
    /// loop is seamless on the video's period.
    ///
    /// # Errors
    /// The clip has no video keyframe or no frames at all.
    pub fn from_ts(bytes: &[u8]) -> anyhow::Result<Self> {
        let mut demuxer = media::ts::Demuxer::new();
        let mut events = Vec::new();
        demuxer.push(bytes, &mut events);
        demuxer.flush(&mut events);
        let tracks = demuxer.audio_tracks();
        let mut frames = Vec::new();
        let mut alternates: Vec<(u16, Vec<Frame>)> = Vec::new();
        for event in events {
            match event {
                media::ts::DemuxEvent::Frame(frame) => frames.push(frame),
                media::ts::DemuxEvent::AlternateAudio { pid, frame } => {
                    match alternates.iter_mut().find(|(p, _)| *p == pid) {
                        Some((_, list)) => list.push(frame),
                        None => alternates.push((pid, vec![frame])),
                    }
                }
                _ => {}
            }
        }
        let video: Vec<&Frame> = frames
            .iter()
            .filter(|f| f.kind() == TrackKind::Video)
            .collect();
        let Some(first_key) = video.iter().find(|f| f.keyframe) else {
            bail!("demo clip has no video keyframe");
        };
        let origin = first_key.dts;
        let last = video.last().context("demo clip has no video")?;
        // Constant frame rate: the period is the video span plus one frame duration.
        let frame_ticks = if video.len() > 1 {
            (last.dts - video[0].dts) / (video.len() as u64 - 1)
        } else {
            3600
        };
        let period = last.dts - origin + frame_ticks;
        frames.retain(|f| f.dts >= origin.saturating_sub(frame_ticks));
        for frame in frames
            .iter_mut()
            .chain(alternates.iter_mut().flat_map(|(_, list)| list.iter_mut()))
        {
            frame.dts = frame.dts.wrapping_sub(origin) & PTS_MASK;
            frame.pts = frame.pts.wrapping_sub(origin) & PTS_MASK;
        }
        // Keep only what fits in one period, and put audio on an exact grid of frame
        // durations so that it continues across loops without a gap or an overlap.
        frames.retain(|f| f.kind() == TrackKind::Audio || f.dts < period || f.dts > PTS_MASK / 2);
        let audio_ticks = frames
            .iter()
            .find(|f| f.kind() == TrackKind::Audio)
            .and_then(|f| AudioSpecificConfig::from_adts(&f.data).ok())
            .map(|c| SAMPLES_PER_FRAME * media::CLOCK_HZ / u64::from(c.sample_rate()));
        if let Some(ticks) = audio_ticks {
            let fit = usize::try_from(period / ticks).unwrap_or(usize::MAX);
            let first = frames
                .iter()
                .find(|f| f.kind() == TrackKind::Audio)
                .map_or(0, |f| f.pts);
            // Every language on the floor's grid: the same frame times in every loop.
            on_grid(&mut frames, first, ticks, fit);
            for (_, list) in &mut alternates {
                on_grid(list, first, ticks, fit);
            }
        } else {
            alternates.clear();
        }
        add_captions(&mut frames);
        let mut frames: Vec<ClipFrame> = frames
            .into_iter()
            .map(|frame| ClipFrame {
                frame,
                alternate: None,
            })
            .collect();
        for (pid, list) in alternates {
            let language = tracks
                .iter()
                .find(|t| t.pid == pid)
                .and_then(|t| t.language);
            frames.extend(list.into_iter().map(|frame| ClipFrame {
                frame,
                alternate: Some((pid, language)),
            }));
        }
        frames.sort_by_key(|f| signed(f.frame.dts));
        Ok(Self { frames, period })
    }

    /// Emits the clip forever in real time, with timestamps continuing across loops from
    /// a base derived from the wall clock, until the receiver goes away.
    pub async fn run(self, tx: IngestSender, now_unix_ms: i64) {
        let base = (now_unix_ms.max(0) as u64).wrapping_mul(90) & PTS_MASK;
        let start = tokio::time::Instant::now();
        for lap in 0u64.. {
            let lap_offset = lap * self.period;
            for clip_frame in &self.frames {
                let frame = &clip_frame.frame;
                let offset = signed(frame.dts) + lap_offset as i64;
                let due = start + Duration::from_micros((offset.max(0) as u64) * 1000 / 90);
                tokio::time::sleep_until(due).await;
                let mut out = frame.clone();
                out.dts = base.wrapping_add(lap_offset).wrapping_add(frame.dts) & PTS_MASK;
                out.pts = base.wrapping_add(lap_offset).wrapping_add(frame.pts) & PTS_MASK;
                let event = match clip_frame.alternate {
                    Some((pid, language)) => IngestEvent::AlternateAudio {
                        pid,
                        language,
                        frame: out,
                    },
                    None => IngestEvent::Frame(out),
                };
                if tx.send(event).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Puts the audio frames among `frames` on a grid of `ticks` from `first`, keeping the
/// first `fit` (what fits in one loop without overlapping the next).
fn on_grid(frames: &mut Vec<Frame>, first: u64, ticks: u64, fit: usize) {
    let mut index = 0;
    frames.retain_mut(|f| {
        if f.kind() != TrackKind::Audio {
            return true;
        }
        index += 1;
        f.pts = first.wrapping_add((index as u64 - 1) * ticks) & PTS_MASK;
        f.dts = f.pts;
        index <= fit
    });
}

/// The clip's CEA-608 captions: (seconds into the loop, the caption, or `None` to
/// erase the one shown).
const CAPTIONS_608: [(f64, Option<&str>); 4] = [
    (0.2, Some("CEA-608 captions in the video")),
    (4.0, None),
    (4.8, Some("decoded to WebVTT by brdyun")),
    (8.8, None),
];

/// Puts [`CAPTIONS_608`] into the SEI of the video frames at their times.
fn add_captions(frames: &mut [Frame]) {
    use media::captions::cea608_encode::{erase_displayed, h264_with_cc, pop_on};
    for (at_secs, caption) in CAPTIONS_608 {
        let at = (at_secs * media::CLOCK_HZ as f64) as i64;
        let frame = frames
            .iter_mut()
            .filter(|f| f.kind() == TrackKind::Video && f.codec == media::Codec::H264)
            .find(|f| signed(f.pts) >= at);
        if let Some(frame) = frame {
            let pairs = caption.map_or_else(erase_displayed, pop_on);
            frame.data = bytes::Bytes::from(h264_with_cc(&frame.data, &pairs));
        }
    }
}

/// Reads a masked 33-bit timestamp that may hold a small negative value.
fn signed(ts: u64) -> i64 {
    if ts > PTS_MASK / 2 {
        ts as i64 - (PTS_MASK as i64 + 1)
    } else {
        ts as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The clip's frames of the main streams.
    fn main_frames(clip: &LoopedClip) -> Vec<Frame> {
        clip.frames
            .iter()
            .filter(|f| f.alternate.is_none())
            .map(|f| f.frame.clone())
            .collect()
    }

    #[test]
    fn the_clip_loops_on_its_video_period() {
        let clip = LoopedClip::from_ts(DEMO_CLIP).unwrap();
        assert_eq!(clip.period, 864_000, "9.6 s at 90 kHz");
        let frames = main_frames(&clip);
        let video = frames
            .iter()
            .filter(|f| f.kind() == TrackKind::Video)
            .count();
        assert_eq!(video, 240);
        let first_video = frames
            .iter()
            .find(|f| f.kind() == TrackKind::Video)
            .unwrap();
        assert!(first_video.keyframe);
        let audio: Vec<&Frame> = frames
            .iter()
            .filter(|f| f.kind() == TrackKind::Audio)
            .collect();
        // 450 AAC frames of 1920 ticks fill the 864,000-tick period exactly.
        let span: i64 = audio.iter().map(|f| signed(f.pts)).max().unwrap()
            - audio.iter().map(|f| signed(f.pts)).min().unwrap();
        assert!(
            span < 864_000,
            "audio does not overlap the next loop: {span}"
        );
        assert_eq!(audio.len(), 450, "450 frames of 1920 ticks fill the period");
        for pair in audio.windows(2) {
            assert_eq!(pair[1].pts - pair[0].pts, 1920, "audio on an exact grid");
        }
        // The interpretation: as many frames, on the same times, another encoding.
        let spanish: Vec<&ClipFrame> = clip
            .frames
            .iter()
            .filter(|f| f.alternate.is_some())
            .collect();
        assert_eq!(spanish.len(), 450);
        assert!(spanish
            .iter()
            .all(|f| f.alternate == Some((0x102, media::Language::parse("spa")))));
        assert!(spanish
            .iter()
            .zip(&audio)
            .all(|(s, a)| s.frame.pts == a.pts && s.frame.data != a.data));
    }

    #[test]
    fn the_clip_carries_its_608_captions() {
        use media::captions::cea608::Cea608Decoder;
        use media::captions::sei::{cc_pairs, CcCodec};
        let clip = LoopedClip::from_ts(DEMO_CLIP).unwrap();
        let mut decoder = Cea608Decoder::new();
        let screens: Vec<String> = main_frames(&clip)
            .iter()
            .filter(|f| f.kind() == TrackKind::Video)
            .flat_map(|f| cc_pairs(CcCodec::H264, &f.data))
            .filter_map(|pair| decoder.push(pair))
            .collect();
        assert_eq!(
            screens,
            [
                "CEA-608 captions in the video",
                "",
                "decoded to WebVTT by brdyun",
                ""
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn frames_continue_across_loops() {
        let clip = LoopedClip::from_ts(DEMO_CLIP).unwrap();
        let n = clip.frames.len();
        let (tx, mut rx) = tokio::sync::mpsc::channel(16);
        tokio::spawn(clip.run(tx, 1_000));
        let mut last_video_dts = None;
        for _ in 0..(n + 50) {
            let frame = match rx.recv().await {
                Some(IngestEvent::Frame(frame)) => frame,
                Some(IngestEvent::AlternateAudio { .. }) => continue,
                _ => panic!("source ended"),
            };
            if frame.kind() == TrackKind::Video {
                if let Some(prev) = last_video_dts {
                    assert_eq!(
                        (frame.dts.wrapping_sub(prev)) & PTS_MASK,
                        3600,
                        "25 fps without gaps across the loop"
                    );
                }
                last_video_dts = Some(frame.dts);
            }
        }
    }
}
