//! A track that ends first: when the input ends (or breaks) with the audio behind the
//! video, the open segments get silent AAC frames from the audio's end to the video's,
//! so every segment carries both tracks to its end (docs/timeline.md, "A track that
//! ends first"). A function of the frames alone, like every cut.

use bytes::Bytes;

use super::segment::Timed;
use crate::codec::aac::{adts_frame_ranges, AudioSpecificConfig};
use crate::codec::aac_silence::{frames_later, silent_adts_frame};
use crate::{Codec, Frame, PTS_MASK};

/// Silent frames continuing the audio of `last` (the last audio frame taken) from its
/// end up to `end` (the last one starting before `end`), none before `from`; empty when
/// the audio ends less than a frame before `end`, when `last` is no ADTS, or when its
/// channel configuration has no fixed layout. At most `limit` frames.
pub(super) fn silence(last: &Timed, from: u64, end: u64, limit: usize) -> Vec<Timed> {
    let data = &last.frame.data;
    let ranges = adts_frame_ranges(data);
    let Some(first) = ranges.first() else {
        return Vec::new();
    };
    let header = &data[first.clone()];
    let (Ok(config), Some(silent)) = (
        AudioSpecificConfig::from_adts(header),
        silent_adts_frame(header),
    ) else {
        return Vec::new();
    };
    let rate = config.sample_rate();
    let audio_end = frames_later(last.ext_pts, ranges.len() as u64, rate);
    // Less than a frame short is how any two tracks end; players take that in stride.
    if end.saturating_sub(audio_end) < frames_later(0, 1, rate) {
        return Vec::new();
    }
    // The first frame on the audio's own sample grid at or after `from`.
    let mut index = from.saturating_sub(audio_end) / frames_later(0, 1, rate).max(1);
    while frames_later(audio_end, index, rate) < from {
        index += 1;
    }
    let silent = Bytes::from(silent);
    let mut out = Vec::new();
    while out.len() < limit {
        let ext = frames_later(audio_end, index, rate);
        if ext >= end {
            break;
        }
        out.push(Timed {
            ext_pts: ext,
            ext_dts: ext,
            frame: Frame {
                codec: Codec::Aac,
                pts: ext & PTS_MASK,
                dts: ext & PTS_MASK,
                keyframe: true,
                data: silent.clone(),
            },
        });
        index += 1;
    }
    out
}
