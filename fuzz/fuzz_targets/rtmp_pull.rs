//! The RTMP pull input without sockets: arbitrary text through the pull URL parser,
//! and arbitrary bytes from a "server" through the play session (chunks, command
//! replies, media).
//!
//! A URL that parses has an application, a stream name and a port, and its `tcUrl`
//! with the stream name parses back to the same URL. The play session never panics,
//! whatever the server sends, and stops at its first error.

#![no_main]

use ingest::rtmp::player::Player;
use ingest::rtmp::pull_url::PullUrl;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(url) = PullUrl::parse(text) {
            assert!(!url.app.is_empty() && !url.stream.is_empty() && url.port > 0);
            let again = PullUrl::parse(&format!("{}/{}", url.tc_url(), url.stream));
            assert_eq!(again.as_ref(), Ok(&url), "{text:?}");
        }
    }
    let url = PullUrl::parse("rtmp://127.0.0.1/live/x").expect("a fixed url");
    let mut player = Player::new(&url, 1 << 20);
    // The first byte picks the feed size, so messages split across reads are covered.
    let step = usize::from(data.first().copied().unwrap_or(0)).max(1);
    for chunk in data.chunks(step) {
        player.feed(chunk);
        loop {
            match player.poll_event() {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(_) => return,
            }
        }
        let _ = player.take_output();
    }
});
