//! Fuzzes the RTMP receive path without sockets: arbitrary bytes through chunk
//! reassembly, command dispatch and FLV → frame conversion.
//!
//! The first byte picks the feed size (upper 7 bits) and, with bit 0 set, starts the
//! session from an accepted publish (connect, createStream, publish already sent), so
//! the fuzzer's bytes reach the audio/video path quickly. The bytes also go straight
//! to the FLV converter as one audio and one video tag.

#![no_main]

use std::net::{Ipv4Addr, SocketAddr};

use ingest::rtmp::amf0::Amf0Value;
use ingest::rtmp::chunk::ChunkEncoder;
use ingest::rtmp::commands::command;
use ingest::rtmp::flv::FlvConverter;
use ingest::rtmp::{Session, SessionEvent};
use libfuzzer_sys::fuzz_target;

fn preamble() -> Vec<u8> {
    let encoder = ChunkEncoder::default();
    let mut out = Vec::new();
    let s = Amf0Value::string;
    let messages = [
        command(
            3,
            0,
            &[
                s("connect"),
                Amf0Value::Number(1.0),
                Amf0Value::object([("app", s("live"))]),
            ],
        ),
        command(
            3,
            0,
            &[s("createStream"), Amf0Value::Number(2.0), Amf0Value::Null],
        ),
        command(
            4,
            1,
            &[
                s("publish"),
                Amf0Value::Number(3.0),
                Amf0Value::Null,
                s("cam?key=k"),
                s("live"),
            ],
        ),
    ];
    for message in &messages {
        encoder.write(message, &mut out);
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, data)) = data.split_first() else {
        return;
    };
    let peer = SocketAddr::from((Ipv4Addr::LOCALHOST, 1935));
    let mut session = Session::new(peer, 1 << 20);
    if mode & 1 == 1 {
        session.feed(&preamble());
    }
    let chunk = usize::from(mode >> 1).max(1);
    'feed: for piece in std::iter::once(&[][..]).chain(data.chunks(chunk)) {
        session.feed(piece);
        loop {
            match session.poll_event() {
                Ok(Some(SessionEvent::Publish(_))) => session.accept_publish(),
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(_) => break 'feed,
            }
        }
        let _ = session.take_output();
    }

    let mut converter = FlvConverter::new();
    let _ = converter.video(0, data);
    let _ = converter.audio(0, data);
});
