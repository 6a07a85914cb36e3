//! The SRT listener's handshake state (srt-protocol's `MultiplexListener`, which
//! brdyun's SRT listener runs) against strangers, without sockets: a handshake it
//! cannot read is an error, never a panic that would end the listener and every
//! publisher on its port; an induction keeps nothing; a conclusion opens a session only
//! with the cookie of its address, which an off-path sender cannot compute (so a
//! spoofed address cannot complete a handshake nor dodge the per-address cap); a
//! session whose handshake does not end is forgotten, and only so many wait at once
//! (docs/security.md#listeners).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use srt_protocol::listener::{AccessControlResponse, Action, Input, MultiplexListener, SessionId};
use srt_protocol::options::{KeySize, PacketCount, PacketSize, SrtVersion};
use srt_protocol::packet::{
    ControlPacket, ControlTypes, HandshakeControlInfo, HandshakeVsInfo, HsV5Info, Packet,
    SeqNumber, ShakeType, SocketId, SrtControlPacket, SrtHandshake, SrtShakeFlags, TimeStamp,
};
use srt_protocol::settings::ConnInitSettings;

/// How many sessions may wait for the end of their handshake at once.
const MAX_PENDING: usize = 4096;
/// Longer than a pending session is kept.
const PAST_PENDING_TIMEOUT: Duration = Duration::from_secs(11);

fn listener(now: Instant) -> MultiplexListener {
    let local = SocketAddr::from(([127, 0, 0, 1], 9000));
    MultiplexListener::new(now, local, ConnInitSettings::default())
}

/// The `n`th caller's address: a distinct address and port for each.
fn caller(n: usize) -> SocketAddr {
    let ip = Ipv4Addr::from(0x0a00_0000 + n as u32);
    SocketAddr::new(IpAddr::V4(ip), 1024 + (n % 60_000) as u16)
}

fn handshake(shake_type: ShakeType, cookie: i32, ext_km: Option<SrtControlPacket>) -> Packet {
    let info = match shake_type {
        ShakeType::Induction => HandshakeVsInfo::V5(HsV5Info::default()),
        _ => HandshakeVsInfo::V5(HsV5Info {
            key_size: KeySize::Unspecified,
            ext_hs: Some(SrtControlPacket::HandshakeRequest(SrtHandshake {
                version: SrtVersion::CURRENT,
                flags: SrtShakeFlags::SUPPORTED,
                send_latency: Duration::from_millis(120),
                recv_latency: Duration::from_millis(120),
            })),
            ext_km,
            ext_group: None,
            sid: Some("m1?key=k".into()),
        }),
    };
    Packet::Control(ControlPacket {
        timestamp: TimeStamp::from_micros(0),
        dest_sockid: SocketId(0),
        control_type: ControlTypes::Handshake(HandshakeControlInfo {
            init_seq_num: SeqNumber::new_truncate(1),
            max_packet_size: PacketSize(1500),
            max_flow_size: PacketCount(8192),
            shake_type,
            socket_id: SocketId(0x1234),
            syn_cookie: cookie,
            peer_addr: IpAddr::V4(Ipv4Addr::LOCALHOST),
            info,
        }),
    })
}

fn feed(
    listener: &mut MultiplexListener,
    now: Instant,
    from: SocketAddr,
    packet: Packet,
) -> Action<'_> {
    listener.handle_input(now, Input::Packet(Ok((packet, from))))
}

/// The cookie of the listener's answer to an induction from `from`.
fn cookie(listener: &mut MultiplexListener, now: Instant, from: SocketAddr) -> i32 {
    let induction = handshake(ShakeType::Induction, 0, None);
    match feed(listener, now, from, induction) {
        Action::SendPacket((Packet::Control(control), to)) => {
            assert_eq!(to, from);
            match control.control_type {
                ControlTypes::Handshake(shake) => shake.syn_cookie,
                other => panic!("answered with {other:?}"),
            }
        }
        other => panic!("an induction answered with {other:?}"),
    }
}

/// Sends `from`'s conclusion with its cookie; true when the listener asks for access.
fn concludes(listener: &mut MultiplexListener, now: Instant, from: SocketAddr) -> bool {
    let cookie = cookie(listener, now, from);
    let conclusion = handshake(ShakeType::Conclusion, cookie, None);
    matches!(
        feed(listener, now, from, conclusion),
        Action::RequestAccess(..)
    )
}

#[test]
fn a_handshake_with_an_unsupported_extension_is_an_error_not_a_panic() {
    // A v5 conclusion carrying a congestion-control extension ("evil").
    let mut bytes = Vec::new();
    for word in [0x8000_0000u32, 0, 0, 0, 5] {
        bytes.extend_from_slice(&word.to_be_bytes());
    }
    bytes.extend_from_slice(&0u16.to_be_bytes());
    bytes.extend_from_slice(&4u16.to_be_bytes()); // extension flags: CONFIG
    for word in [1u32, 1500, 8192, 0xffff_ffff, 0x1234, 0] {
        bytes.extend_from_slice(&word.to_be_bytes());
    }
    bytes.extend_from_slice(&[127, 0, 0, 1]);
    bytes.extend_from_slice(&[0; 12]);
    bytes.extend_from_slice(&6u16.to_be_bytes()); // SRT_CMD_CONGESTION
    bytes.extend_from_slice(&1u16.to_be_bytes());
    bytes.extend_from_slice(b"evil");
    let parsed = std::panic::catch_unwind(|| Packet::parse(&mut &bytes[..], false));
    assert!(matches!(parsed, Ok(Err(_))), "{parsed:?}");
}

#[test]
fn key_material_that_does_not_match_the_answer_is_refused_not_a_panic() {
    let now = Instant::now();
    for (answer, ext_km) in [
        // Key material from a caller the listener accepts without encryption.
        (None, SrtControlPacket::StreamId("not key material".into())),
        // A caller accepted with encryption whose extension is not a KMREQ.
        (
            Some(srt_protocol::settings::KeySettings {
                key_size: KeySize::Unspecified,
                passphrase: "a passphrase of the meeting".to_owned().try_into().unwrap(),
            }),
            SrtControlPacket::StreamId("not key material".into()),
        ),
    ] {
        let mut listener = listener(now);
        let from = caller(1);
        let cookie = cookie(&mut listener, now, from);
        let conclusion = handshake(ShakeType::Conclusion, cookie, Some(ext_km));
        assert!(matches!(
            feed(&mut listener, now, from, conclusion),
            Action::RequestAccess(..)
        ));
        let response = Input::AccessResponse(Some((
            SessionId(from),
            AccessControlResponse::Accepted(answer),
        )));
        let action = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            matches!(
                listener.handle_input(now, response),
                Action::RejectConnection(..)
            )
        }));
        assert!(matches!(action, Ok(true)), "{action:?}");
    }
}

/// `packet` (a conclusion) without its HSREQ extension.
fn without_hsreq(mut packet: Packet) -> Packet {
    if let Packet::Control(ControlPacket {
        control_type: ControlTypes::Handshake(shake),
        ..
    }) = &mut packet
    {
        if let HandshakeVsInfo::V5(info) = &mut shake.info {
            info.ext_hs = None;
        }
    }
    packet
}

#[test]
fn an_accepted_handshake_that_cannot_be_taken_is_refused_not_left_waiting() {
    // srt-protocol 0.4.4 asked for access first and found the HSREQ missing only once
    // accepted; it then answered nothing, and the acceptor (brdyun's handshake task,
    // holding the meeting's publish slot) waited for ever.
    let now = Instant::now();
    let mut listener = listener(now);
    let from = caller(9);
    let cookie = cookie(&mut listener, now, from);
    let conclusion = without_hsreq(handshake(ShakeType::Conclusion, cookie, None));
    let action = feed(&mut listener, now, from, conclusion);
    assert!(matches!(action, Action::RequestAccess(..)), "{action:?}");
    let response = Input::AccessResponse(Some((
        SessionId(from),
        AccessControlResponse::Accepted(None),
    )));
    let action = listener.handle_input(now, response);
    assert!(matches!(action, Action::RejectConnection(..)), "{action:?}");
}

#[test]
fn a_conclusion_the_listener_cannot_take_leaves_nothing() {
    let now = Instant::now();
    let mut listener = listener(now);
    // Conclusions of a version this listener does not speak, with good cookies, from
    // more addresses than handshakes may wait: none holds a place.
    for n in 0..MAX_PENDING + 10 {
        let from = caller(200_000 + n);
        let cookie = cookie(&mut listener, now, from);
        let mut conclusion = handshake(ShakeType::Conclusion, cookie, None);
        if let Packet::Control(ControlPacket {
            control_type: ControlTypes::Handshake(shake),
            ..
        }) = &mut conclusion
        {
            shake.info = HandshakeVsInfo::V4(srt_protocol::packet::SocketType::Datagram);
        }
        let _ = feed(&mut listener, now, from, conclusion);
    }
    assert!(concludes(&mut listener, now, caller(1)));
}

#[test]
fn the_cookie_is_not_the_one_anyone_can_compute() {
    // srt-protocol 0.4.4 hashed the address and the time with DefaultHasher::new(),
    // whose keys are fixed: anyone could compute the cookie of any address.
    let now = Instant::now();
    let mut listener = listener(now);
    let from = caller(7);
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let given = cookie(&mut listener, now, from);
    for t in secs - 1..=secs + 1 {
        for time in [t * 60, t / 60] {
            let mut hasher = DefaultHasher::new();
            from.hash(&mut hasher);
            time.hash(&mut hasher);
            assert_ne!(given, hasher.finish() as u32 as i32, "a computable cookie");
        }
    }
}

#[test]
fn a_conclusion_needs_its_addresses_cookie() {
    let now = Instant::now();
    let mut listener = listener(now);
    let from = caller(3);
    let cookie = cookie(&mut listener, now, from);
    let wrong = handshake(ShakeType::Conclusion, cookie.wrapping_add(1), None);
    assert!(matches!(
        feed(&mut listener, now, from, wrong),
        Action::WaitForInput
    ));
    // Another address's cookie does not open this one's session.
    let elsewhere = caller(4);
    let stolen = handshake(ShakeType::Conclusion, cookie, None);
    assert!(matches!(
        feed(&mut listener, now, elsewhere, stolen),
        Action::WaitForInput
    ));
    assert!(concludes(&mut listener, now, from));
}

#[test]
fn a_handshake_that_does_not_end_is_forgotten() {
    let start = Instant::now();
    let mut listener = listener(start);
    let from = caller(5);
    assert!(concludes(&mut listener, start, from));
    // No answer from the access control, ever: the caller repeats its conclusion.
    let later = start + PAST_PENDING_TIMEOUT;
    let _ = listener.handle_input(later, Input::Timer);
    assert!(
        concludes(&mut listener, later, from),
        "the stale session was kept: the caller's new handshake is not heard"
    );
}

#[test]
fn inductions_keep_nothing_and_waiting_handshakes_are_capped() {
    let start = Instant::now();
    let mut listener = listener(start);
    // Strangers' inductions (spoofed sources need no answer) hold no place.
    for n in 0..2 * MAX_PENDING {
        let _ = cookie(&mut listener, start, caller(100_000 + n));
    }
    for n in 0..MAX_PENDING {
        assert!(concludes(&mut listener, start, caller(n)), "caller {n}");
    }
    assert!(
        !concludes(&mut listener, start, caller(MAX_PENDING)),
        "more handshakes waiting than the cap"
    );
    // Once the waiting ones are forgotten, a new caller is heard.
    let later = start + PAST_PENDING_TIMEOUT;
    let _ = listener.handle_input(later, Input::Timer);
    assert!(concludes(&mut listener, later, caller(MAX_PENDING)));
}
