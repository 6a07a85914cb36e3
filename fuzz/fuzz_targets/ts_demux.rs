//! Fuzzes the MPEG-TS demuxer and the codec probes with arbitrary bytes.
//!
//! The first byte picks a chunk size, so the reader's resynchronisation and partial
//! packet handling across chunk boundaries are exercised too, and the events must be
//! those of the same bytes in one piece (how bytes arrive never changes what comes
//! out). Every frame that comes out goes through the probes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use media::codec::probe::{is_keyframe, probe_audio, probe_video};
use media::ts::{DemuxEvent, Demuxer};

fuzz_target!(|data: &[u8]| {
    let Some((&chunk, data)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(chunk).max(1);
    let mut demuxer = Demuxer::new();
    let mut events = Vec::new();
    for piece in data.chunks(chunk) {
        demuxer.push(piece, &mut events);
    }
    demuxer.flush(&mut events);
    let mut frames = 0u64;
    for event in &events {
        if let DemuxEvent::Frame(frame) = event {
            frames += 1;
            let _ = probe_video(frame);
            let _ = probe_audio(frame);
            let _ = is_keyframe(frame.codec, &frame.data);
        }
    }
    assert_eq!(demuxer.stats().frames, frames);
    let mut whole = Demuxer::new();
    let mut in_one_piece = Vec::new();
    whole.push(data, &mut in_one_piece);
    whole.flush(&mut in_one_piece);
    assert_eq!(events, in_one_piece, "chunks of {chunk} change the events");
});
