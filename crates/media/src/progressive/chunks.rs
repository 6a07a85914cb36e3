//! Pass 2: one segment's sample bytes, as pass 1 measured them.

use crate::fmp4::samples::collect;
use crate::fmp4::{InitConfig, TimedFrame};

/// Appends the `mdat` bytes of one segment to `out`: its video chunk, then its audio
/// chunk, exactly the samples [`super::SampleTables::push_segment`] listed for the same
/// `frames`; returns how many bytes it wrote (compare with
/// [`super::ProgressiveHead::segment_lens`]).
pub fn write_chunks(config: &InitConfig, frames: &[TimedFrame], out: &mut Vec<u8>) -> u64 {
    let (video, audio) = collect(config, frames);
    out.reserve(video.bytes + audio.bytes);
    video.write_payload(out);
    audio.write_payload(out);
    (video.bytes + audio.bytes) as u64
}
