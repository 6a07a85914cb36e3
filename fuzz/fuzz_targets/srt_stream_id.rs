//! The SRT streamid parser (`ingest::srt::streamid`) on arbitrary text: it reads or
//! refuses without a panic, never accepts more than 512 bytes, and what it reads names
//! a meeting.
#![no_main]

use ingest::srt::streamid::{parse, MAX_STREAM_ID};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(id) = parse(&text) {
        assert!(text.len() <= MAX_STREAM_ID);
        assert!(!id.stream.is_empty());
        assert!(!id.stream.contains(['/', '?', ',']));
    }
});
