//! Frames with the extended (unwrapped) timestamps every writer of samples works in.

use crate::segmenter::unwrap_ts;
use crate::Frame;

/// A frame with its extended (unwrapped) 90 kHz timestamps, as the segmenter sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimedFrame {
    /// Extended presentation timestamp.
    pub ext_pts: u64,
    /// Extended decoding timestamp (`tfdt` and sample durations come from it).
    pub ext_dts: u64,
    /// The frame, with its 33-bit timestamps and elementary-stream bytes.
    pub frame: Frame,
}

impl TimedFrame {
    /// Unwraps the 33-bit timestamps of consecutive frames to extended values, the first
    /// nearest to `reference` (e.g. [`crate::Segment::start_ts`]) and each next one
    /// nearest to the previous, as the segmenter does.
    pub fn unwrap_all(frames: impl IntoIterator<Item = Frame>, reference: u64) -> Vec<Self> {
        let mut last = reference;
        frames
            .into_iter()
            .map(|frame| {
                let ext_dts = unwrap_ts(frame.dts, Some(last));
                let ext_pts = unwrap_ts(frame.pts, Some(ext_dts));
                last = ext_dts;
                Self {
                    ext_pts,
                    ext_dts,
                    frame,
                }
            })
            .collect()
    }
}
