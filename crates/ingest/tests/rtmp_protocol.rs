//! The sans-I/O RTMP core through its public interface: chunk reassembly at arbitrary
//! split points, a scripted publish through `Session`, FLV AVC/HEVC/AAC conversion
//! against hand-built records, and hostile input.

use std::net::{Ipv4Addr, SocketAddr};

use bytes::Bytes;
use ingest::publish::{PublishRejection, PublishRequest};
use ingest::rtmp::amf0::{self, Amf0Value};
use ingest::rtmp::chunk::{msg_type, ChunkDecoder, ChunkEncoder, Message};
use ingest::rtmp::commands::{command, set_chunk_size};
use ingest::rtmp::flv::{FlvConverter, FlvError, TagOutcome, UnsupportedCodec};
use ingest::rtmp::{Session, SessionEvent};
use media::codec::aac::AudioSpecificConfig;
use media::{Codec, Frame, PTS_MASK};
use proptest::prelude::*;

const SPS: &[u8] = &[0x67, 0x64, 0x00, 0x1f, 0xac, 0xd9];
const PPS: &[u8] = &[0x68, 0xeb, 0xe3, 0xcb];
const IDR: &[u8] = &[0x65, 0x88, 0x84, 0x00, 0x33];

fn peer() -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, 40_000))
}

fn avcc_record() -> Vec<u8> {
    let mut r = vec![1, 0x64, 0x00, 0x1f, 0xff, 0xe1];
    r.extend_from_slice(&(SPS.len() as u16).to_be_bytes());
    r.extend_from_slice(SPS);
    r.push(1);
    r.extend_from_slice(&(PPS.len() as u16).to_be_bytes());
    r.extend_from_slice(PPS);
    r
}

/// A legacy FLV AVC video tag body.
fn avc_tag(keyframe: bool, packet_type: u8, cts: i32, body: &[u8]) -> Vec<u8> {
    let mut t = vec![if keyframe { 0x17 } else { 0x27 }, packet_type];
    t.extend_from_slice(&cts.to_be_bytes()[1..]);
    t.extend_from_slice(body);
    t
}

fn length_prefixed(nals: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for nal in nals {
        out.extend_from_slice(&(nal.len() as u32).to_be_bytes());
        out.extend_from_slice(nal);
    }
    out
}

fn annexb(nals: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for nal in nals {
        out.extend_from_slice(&[0, 0, 0, 1]);
        out.extend_from_slice(nal);
    }
    out
}

fn frame(outcome: Result<TagOutcome, FlvError>) -> Frame {
    match outcome {
        Ok(TagOutcome::Frame(f)) => f,
        other => panic!("expected a frame, got {other:?}"),
    }
}

#[test]
fn avc_keyframes_get_parameter_sets_and_composition_time() {
    let mut c = FlvConverter::new();
    assert_eq!(
        c.video(0, &avc_tag(true, 1, 0, &length_prefixed(&[IDR]))),
        Ok(TagOutcome::NoConfig)
    );
    assert_eq!(
        c.video(0, &avc_tag(true, 0, 0, &avcc_record())),
        Ok(TagOutcome::Config)
    );
    let key = frame(c.video(1000, &avc_tag(true, 1, 80, &length_prefixed(&[IDR]))));
    assert_eq!(key.codec, Codec::H264);
    assert!(key.keyframe);
    assert_eq!(key.data.as_ref(), annexb(&[SPS, PPS, IDR]).as_slice());
    assert_eq!((key.dts, key.pts), (90_000, 97_200));

    let slice: &[u8] = &[0x41, 0x9a, 0x02];
    let inter = frame(c.video(1040, &avc_tag(false, 1, 0, &length_prefixed(&[slice]))));
    assert!(!inter.keyframe);
    assert_eq!(inter.data.as_ref(), annexb(&[slice]).as_slice());

    // A keyframe that carries its own SPS/PPS gets no second copy.
    let own = frame(c.video(
        1080,
        &avc_tag(true, 1, 0, &length_prefixed(&[SPS, PPS, IDR])),
    ));
    assert_eq!(own.data.as_ref(), annexb(&[SPS, PPS, IDR]).as_slice());

    // Negative composition time at timestamp 0: the PTS wraps below zero.
    let early = frame(c.video(0, &avc_tag(true, 1, -40, &length_prefixed(&[IDR]))));
    assert_eq!(early.dts, 0);
    assert_eq!(early.pts, PTS_MASK + 1 - 3600);
}

#[test]
fn enhanced_rtmp_hevc_becomes_annexb_with_vps_sps_pps() {
    let vps: &[u8] = &[0x40, 0x01, 0x0c];
    let sps: &[u8] = &[0x42, 0x01, 0x01];
    let pps: &[u8] = &[0x44, 0x01, 0xc1];
    let idr: &[u8] = &[0x26, 0x01, 0xaf];
    let mut record = vec![1];
    record.extend_from_slice(&[0; 20]);
    record.extend_from_slice(&[0xf3, 3]);
    for nal in [vps, sps, pps] {
        record.extend_from_slice(&[0x80 | ((nal[0] >> 1) & 0x3f), 0, 1]);
        record.extend_from_slice(&(nal.len() as u16).to_be_bytes());
        record.extend_from_slice(nal);
    }
    let mut c = FlvConverter::new();
    // IsExHeader | keyframe | SequenceStart, FourCC.
    let mut seq = vec![0x90];
    seq.extend_from_slice(b"hvc1");
    seq.extend_from_slice(&record);
    assert_eq!(c.video(0, &seq), Ok(TagOutcome::Config));
    // CodedFrames with a 3-byte composition time of 40 ms.
    let mut coded = vec![0x91];
    coded.extend_from_slice(b"hvc1");
    coded.extend_from_slice(&[0, 0, 40]);
    coded.extend_from_slice(&length_prefixed(&[idr]));
    let f = frame(c.video(2000, &coded));
    assert_eq!(f.codec, Codec::H265);
    assert!(f.keyframe);
    assert_eq!(f.data.as_ref(), annexb(&[vps, sps, pps, idr]).as_slice());
    assert_eq!((f.dts, f.pts), (180_000, 183_600));
    // CodedFramesX: no composition time field.
    let mut coded_x = vec![0xa3];
    coded_x.extend_from_slice(b"hvc1");
    coded_x.extend_from_slice(&length_prefixed(&[&[0x02, 0x01, 0xd0]]));
    let f = frame(c.video(2040, &coded_x));
    assert!(!f.keyframe && f.pts == f.dts);
    // Another FourCC is reported, not converted.
    let mut av1 = vec![0x90];
    av1.extend_from_slice(b"av01");
    assert_eq!(
        c.video(0, &av1),
        Ok(TagOutcome::Unsupported(UnsupportedCodec::FourCc(*b"av01")))
    );
}

#[test]
fn aac_frames_get_adts_headers() {
    let mut c = FlvConverter::new();
    assert_eq!(c.audio(0, &[0xaf, 1, 0x21]), Ok(TagOutcome::NoConfig));
    assert_eq!(c.audio(0, &[0xaf, 0, 0x12, 0x10]), Ok(TagOutcome::Config));
    let payload = [0x21, 0x10, 0x04, 0x60, 0x8c];
    let mut tag = vec![0xaf, 1];
    tag.extend_from_slice(&payload);
    let f = frame(c.audio(23, &tag));
    assert_eq!(f.codec, Codec::Aac);
    assert!(f.keyframe);
    assert_eq!((f.pts, f.dts), (23 * 90, 23 * 90));
    let asc = AudioSpecificConfig::from_adts(&f.data).expect("adts header");
    assert_eq!(
        (asc.object_type, asc.sample_rate(), asc.channels),
        (2, 44_100, 2)
    );
    assert_eq!(&f.data[7..], &payload);
    // MP3 (sound format 2) is reported, not converted.
    assert_eq!(
        c.audio(0, &[0x2f, 0xff]),
        Ok(TagOutcome::Unsupported(UnsupportedCodec::Audio(2)))
    );
}

#[test]
fn truncated_and_lying_tags_are_errors() {
    let mut c = FlvConverter::new();
    assert_eq!(c.video(0, &[]), Err(FlvError::Truncated));
    assert_eq!(c.video(0, &[0x17, 0]), Err(FlvError::Truncated));
    assert!(matches!(
        c.video(0, &avc_tag(true, 0, 0, &[1, 0x64, 0, 0x1f, 0xff, 0xe5])),
        Err(FlvError::Record(_))
    ));
    c.video(0, &avc_tag(true, 0, 0, &avcc_record()))
        .expect("valid record");
    // A NAL length far past the end of the tag.
    let mut body = 0x7fff_fff0u32.to_be_bytes().to_vec();
    body.extend_from_slice(IDR);
    assert!(matches!(
        c.video(0, &avc_tag(true, 1, 0, &body)),
        Err(FlvError::NalOverrun { .. })
    ));
    assert_eq!(c.audio(0, &[0xaf]), Err(FlvError::Truncated));
    assert!(matches!(
        c.audio(0, &[0xaf, 0, 0x17, 0x90]),
        Err(FlvError::Aac(_))
    ));
}

/// The messages ffmpeg sends up to `publish`, encoded as a client would.
fn publish_preamble(name: &str) -> Vec<u8> {
    let s = Amf0Value::string;
    let n = Amf0Value::Number;
    let messages = [
        command(
            3,
            0,
            &[
                s("connect"),
                n(1.0),
                Amf0Value::object([("app", s("live")), ("tcUrl", s("rtmp://x/live"))]),
            ],
        ),
        command(
            3,
            0,
            &[s("releaseStream"), n(2.0), Amf0Value::Null, s(name)],
        ),
        command(3, 0, &[s("FCPublish"), n(3.0), Amf0Value::Null, s(name)]),
        command(3, 0, &[s("createStream"), n(4.0), Amf0Value::Null]),
        command(
            8,
            1,
            &[s("publish"), n(5.0), Amf0Value::Null, s(name), s("live")],
        ),
    ];
    let mut out = Vec::new();
    for m in &messages {
        ChunkEncoder::default().write(m, &mut out);
    }
    out
}

fn media_message(type_id: u8, timestamp: u32, payload: Vec<u8>) -> Message {
    Message {
        csid: if type_id == msg_type::VIDEO { 6 } else { 4 },
        timestamp,
        type_id,
        stream_id: 1,
        payload: Bytes::from(payload),
    }
}

/// Decodes what the server sent and returns the AMF0 commands in it.
fn server_commands(output: &[u8]) -> Vec<Vec<Amf0Value>> {
    let mut d = ChunkDecoder::new(1 << 20);
    d.feed(output);
    let mut commands = Vec::new();
    while let Some(m) = d.poll().expect("server output is a valid chunk stream") {
        if m.type_id == msg_type::COMMAND_AMF0 {
            commands.push(amf0::decode_all(&m.payload).expect("valid amf0"));
        }
    }
    commands
}

fn status_code(cmd: &[Amf0Value]) -> Option<&str> {
    cmd.get(3)?.get("code")?.as_str()
}

fn drain(session: &mut Session) -> Vec<SessionEvent> {
    let mut events = Vec::new();
    while let Some(e) = session.poll_event().expect("valid stream") {
        events.push(e);
    }
    events
}

#[test]
fn scripted_publish_yields_frames_after_acceptance() {
    let mut session = Session::new(peer(), 1 << 20);
    session.feed(&publish_preamble("cam?key=k1"));
    let events = drain(&mut session);
    assert_eq!(
        events,
        vec![SessionEvent::Publish(PublishRequest {
            app: "live".into(),
            stream: "cam".into(),
            key: Some("k1".into()),
            peer: peer(),
        })]
    );
    let replies = server_commands(&session.take_output());
    assert_eq!(
        status_code(&replies[0]),
        Some("NetConnection.Connect.Success")
    );
    // createStream's result names stream 1.
    assert!(replies
        .iter()
        .any(|r| r.get(1) == Some(&Amf0Value::Number(4.0))
            && r.get(3) == Some(&Amf0Value::Number(1.0))));
    session.accept_publish();
    let replies = server_commands(&session.take_output());
    assert_eq!(status_code(&replies[0]), Some("NetStream.Publish.Start"));

    // The client switches to a 60-byte chunk size, then sends media.
    let mut enc = ChunkEncoder::default();
    let mut bytes = Vec::new();
    enc.write(&set_chunk_size(60), &mut bytes);
    enc.set_chunk_size(60);
    for m in [
        media_message(msg_type::VIDEO, 0, avc_tag(true, 0, 0, &avcc_record())),
        media_message(msg_type::AUDIO, 0, vec![0xaf, 0, 0x12, 0x10]),
        media_message(
            msg_type::VIDEO,
            0x0100_0000,
            avc_tag(true, 1, 0, &length_prefixed(&[IDR; 30])),
        ),
        media_message(msg_type::AUDIO, 0x0100_0005, vec![0xaf, 1, 1, 2, 3]),
    ] {
        enc.write(&m, &mut bytes);
    }
    session.feed(&bytes);
    let frames: Vec<Frame> = drain(&mut session)
        .into_iter()
        .map(|e| match e {
            SessionEvent::Frame(f) => f,
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[0].codec, Codec::H264);
    assert_eq!(frames[0].dts, (0x0100_0000u64 * 90) & PTS_MASK);
    let mut expected = annexb(&[SPS, PPS]);
    expected.extend(annexb(&[IDR; 30]));
    assert_eq!(frames[0].data.as_ref(), expected.as_slice());
    assert_eq!(frames[1].codec, Codec::Aac);
    assert_eq!(&frames[1].data[7..], &[1, 2, 3]);

    // FCUnpublish ends the publish.
    let mut bytes = Vec::new();
    enc.write(
        &command(
            3,
            0,
            &[
                Amf0Value::string("FCUnpublish"),
                Amf0Value::Number(6.0),
                Amf0Value::Null,
            ],
        ),
        &mut bytes,
    );
    session.feed(&bytes);
    assert_eq!(drain(&mut session), vec![SessionEvent::Unpublish]);
    assert!(!session.is_publishing());
}

#[test]
fn rejected_publish_answers_the_reason_and_closes() {
    for (rejection, code) in [
        (PublishRejection::WrongKey, "NetStream.Publish.Unauthorized"),
        (PublishRejection::UnknownStream, "NetStream.Publish.BadName"),
        (PublishRejection::Busy, "NetStream.Publish.BadName"),
    ] {
        let mut session = Session::new(peer(), 1 << 20);
        session.feed(&publish_preamble("cam"));
        assert!(matches!(
            drain(&mut session).as_slice(),
            [SessionEvent::Publish(_)]
        ));
        let _ = session.take_output();
        session.reject_publish(&rejection);
        let replies = server_commands(&session.take_output());
        assert_eq!(status_code(&replies[0]), Some(code));
        assert_eq!(
            replies[0][3].get("level").and_then(Amf0Value::as_str),
            Some("error")
        );
        assert!(session.is_closed());
        // Media sent anyway goes nowhere.
        let mut bytes = Vec::new();
        ChunkEncoder::default().write(
            &media_message(msg_type::AUDIO, 0, vec![0xaf, 0, 0x12, 0x10]),
            &mut bytes,
        );
        session.feed(&bytes);
        assert!(drain(&mut session).is_empty());
    }
}

#[test]
fn media_before_publish_is_ignored_and_bad_tags_do_not_end_the_session() {
    let mut session = Session::new(peer(), 1 << 20);
    let mut bytes = Vec::new();
    let enc = ChunkEncoder::default();
    enc.write(
        &media_message(msg_type::VIDEO, 0, avc_tag(true, 0, 0, &avcc_record())),
        &mut bytes,
    );
    session.feed(&bytes);
    assert!(drain(&mut session).is_empty());
    session.feed(&publish_preamble("cam"));
    drain(&mut session);
    session.accept_publish();
    let mut bytes = Vec::new();
    enc.write(&media_message(msg_type::VIDEO, 0, vec![0x17]), &mut bytes);
    enc.write(
        &media_message(msg_type::AUDIO, 0, vec![0x2f, 1]),
        &mut bytes,
    );
    enc.write(
        &media_message(msg_type::AUDIO, 0, vec![0x2f, 2]),
        &mut bytes,
    );
    enc.write(
        &media_message(msg_type::AUDIO, 0, vec![0xaf, 0, 0x12, 0x10]),
        &mut bytes,
    );
    enc.write(
        &media_message(msg_type::AUDIO, 9, vec![0xaf, 1, 7]),
        &mut bytes,
    );
    session.feed(&bytes);
    let events = drain(&mut session);
    assert!(matches!(
        events[0],
        SessionEvent::MediaError(FlvError::Truncated)
    ));
    // The unsupported codec is announced once and counted every time.
    assert_eq!(
        events[1],
        SessionEvent::Unsupported(UnsupportedCodec::Audio(2))
    );
    assert!(matches!(&events[2], SessionEvent::Frame(f) if f.pts == 9 * 90));
    assert_eq!(events.len(), 3);
    assert_eq!(session.unsupported_tags(), 2);
}

#[test]
fn protocol_violations_end_the_session() {
    // Type 3 header on a chunk stream never seen.
    let mut session = Session::new(peer(), 1 << 20);
    session.feed(&[0xc9, 1, 2, 3]);
    assert!(session.poll_event().is_err());
    // A message longer than the limit.
    let mut session = Session::new(peer(), 1000);
    session.feed(&[0x03, 0, 0, 0, 0, 0x10, 0, 20, 0, 0, 0, 0]);
    assert!(session.poll_event().is_err());
    // publish before connect.
    let mut session = Session::new(peer(), 1 << 20);
    let mut bytes = Vec::new();
    ChunkEncoder::default().write(
        &command(
            3,
            0,
            &[
                Amf0Value::string("publish"),
                Amf0Value::Number(1.0),
                Amf0Value::Null,
                Amf0Value::string("x"),
            ],
        ),
        &mut bytes,
    );
    session.feed(&bytes);
    assert!(session.poll_event().is_err());
}

#[test]
fn ping_requests_are_answered() {
    let mut session = Session::new(peer(), 1 << 20);
    let mut bytes = Vec::new();
    let ping = Message {
        csid: 2,
        timestamp: 0,
        type_id: msg_type::USER_CONTROL,
        stream_id: 0,
        payload: Bytes::from_static(&[0, 6, 0, 0, 0x12, 0x34]),
    };
    ChunkEncoder::default().write(&ping, &mut bytes);
    session.feed(&bytes);
    assert!(drain(&mut session).is_empty());
    let mut d = ChunkDecoder::new(1 << 20);
    d.feed(&session.take_output());
    let pong = d.poll().expect("valid").expect("a reply");
    assert_eq!(pong.type_id, msg_type::USER_CONTROL);
    assert_eq!(pong.payload.as_ref(), &[0, 7, 0, 0, 0x12, 0x34]);
}

fn message_strategy() -> impl Strategy<Value = Message> {
    (
        prop_oneof![3u32..64, 64u32..320, 320u32..65_600],
        prop_oneof![0u32..0xff_ffff, 0xff_ffffu32..=u32::MAX],
        prop::sample::select(vec![8u8, 9, 18, 20]),
        0u32..4,
        prop::collection::vec(any::<u8>(), 0..700),
    )
        .prop_map(|(csid, timestamp, type_id, stream_id, payload)| Message {
            csid,
            timestamp,
            type_id,
            stream_id,
            payload: Bytes::from(payload),
        })
}

proptest! {
    /// Messages survive chunking at any chunk size and any split of the byte stream.
    #[test]
    fn chunk_stream_round_trips_at_any_split(
        messages in prop::collection::vec(message_strategy(), 1..8),
        chunk_size in 1u32..300,
        splits in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let mut enc = ChunkEncoder::default();
        let mut bytes = Vec::new();
        let resize = set_chunk_size(chunk_size);
        enc.write(&resize, &mut bytes);
        enc.set_chunk_size(chunk_size);
        for m in &messages {
            enc.write(m, &mut bytes);
        }
        let mut cuts: Vec<usize> = splits.iter().map(|i| i.index(bytes.len() + 1)).collect();
        cuts.push(0);
        cuts.push(bytes.len());
        cuts.sort_unstable();
        let mut decoder = ChunkDecoder::new(1 << 20);
        let mut got = Vec::new();
        for w in cuts.windows(2) {
            decoder.feed(&bytes[w[0]..w[1]]);
            while let Some(m) = decoder.poll().expect("valid stream") {
                got.push(m);
            }
        }
        prop_assert_eq!(decoder.chunk_size(), chunk_size);
        prop_assert_eq!(decoder.pending(), 0);
        let mut expected = vec![resize];
        expected.extend(messages);
        prop_assert_eq!(got, expected);
    }

    /// Arbitrary bytes, alone or after a valid publish, never panic the session.
    #[test]
    fn arbitrary_bytes_never_panic(
        garbage in prop::collection::vec(any::<u8>(), 0..2048),
        after_publish in any::<bool>(),
        step in 1usize..64,
    ) {
        let mut session = Session::new(peer(), 1 << 16);
        if after_publish {
            session.feed(&publish_preamble("cam"));
        }
        'feed: for piece in std::iter::once(&[][..]).chain(garbage.chunks(step)) {
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
    }

    /// A valid publish stream with some bytes corrupted and a random truncation never panics.
    #[test]
    fn corrupted_publish_streams_never_panic(
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bytes = publish_preamble("cam?key=x");
        let enc = ChunkEncoder::default();
        enc.write(&media_message(msg_type::VIDEO, 0, avc_tag(true, 0, 0, &avcc_record())), &mut bytes);
        enc.write(&media_message(msg_type::VIDEO, 40, avc_tag(true, 1, 40, &length_prefixed(&[IDR, IDR]))), &mut bytes);
        enc.write(&media_message(msg_type::AUDIO, 0, vec![0xaf, 0, 0x12, 0x10]), &mut bytes);
        enc.write(&media_message(msg_type::AUDIO, 23, vec![0xaf, 1, 9, 9, 9]), &mut bytes);
        for (at, value) in flips {
            let i = at.index(bytes.len());
            bytes[i] = value;
        }
        bytes.truncate(cut.index(bytes.len() + 1));
        let mut session = Session::new(peer(), 1 << 16);
        session.feed(&bytes);
        while let Ok(Some(event)) = session.poll_event() {
            if let SessionEvent::Publish(_) = event {
                session.accept_publish();
            }
        }
    }
}
