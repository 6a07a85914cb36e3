//! The messages this server writes (control messages and AMF0 command replies) and
//! the parsing of the publish name (`name?key=value&...`).

use bytes::Bytes;

use super::amf0::{encode_all, Amf0Value};
use super::chunk::{msg_type, Message};

/// Chunk stream for protocol control messages (fixed by the spec).
pub const CSID_CONTROL: u32 = 2;
/// Chunk stream for connection-level command replies.
pub const CSID_COMMAND: u32 = 3;
/// Chunk stream for stream-level status messages.
pub const CSID_STATUS: u32 = 5;

/// The window acknowledgement size and peer bandwidth this server announces.
pub const WINDOW_SIZE: u32 = 2_500_000;
/// The chunk size this server sends with after `connect`.
pub const OUT_CHUNK_SIZE: u32 = 4096;

/// User control event: a stream begins (sent before the publish status).
pub const UC_STREAM_BEGIN: u16 = 0;
/// User control event: ping request from the peer.
pub const UC_PING_REQUEST: u16 = 6;
/// User control event: ping response.
pub const UC_PING_RESPONSE: u16 = 7;

fn control(type_id: u8, payload: Vec<u8>) -> Message {
    Message {
        csid: CSID_CONTROL,
        timestamp: 0,
        type_id,
        stream_id: 0,
        payload: Bytes::from(payload),
    }
}

/// Set Chunk Size.
pub fn set_chunk_size(size: u32) -> Message {
    control(msg_type::SET_CHUNK_SIZE, size.to_be_bytes().to_vec())
}

/// Window Acknowledgement Size.
pub fn window_ack_size(size: u32) -> Message {
    control(msg_type::WINDOW_ACK_SIZE, size.to_be_bytes().to_vec())
}

/// Set Peer Bandwidth with the dynamic limit type (2).
pub fn set_peer_bandwidth(size: u32) -> Message {
    let mut payload = size.to_be_bytes().to_vec();
    payload.push(2);
    control(msg_type::SET_PEER_BANDWIDTH, payload)
}

/// Acknowledgement of `sequence` bytes received.
pub fn acknowledgement(sequence: u32) -> Message {
    control(msg_type::ACKNOWLEDGEMENT, sequence.to_be_bytes().to_vec())
}

/// A user control event with a 4-byte argument.
pub fn user_control(event: u16, argument: u32) -> Message {
    let mut payload = event.to_be_bytes().to_vec();
    payload.extend_from_slice(&argument.to_be_bytes());
    control(msg_type::USER_CONTROL, payload)
}

/// An AMF0 command message.
pub fn command(csid: u32, stream_id: u32, values: &[Amf0Value]) -> Message {
    Message {
        csid,
        timestamp: 0,
        type_id: msg_type::COMMAND_AMF0,
        stream_id,
        payload: Bytes::from(encode_all(values)),
    }
}

/// The `_result` of `connect`.
pub fn connect_result(transaction: f64) -> Message {
    command(
        CSID_COMMAND,
        0,
        &[
            Amf0Value::string("_result"),
            Amf0Value::Number(transaction),
            Amf0Value::object([
                ("fmsVer", Amf0Value::string("FMS/3,0,1,123")),
                ("capabilities", Amf0Value::Number(31.0)),
            ]),
            Amf0Value::object([
                ("level", Amf0Value::string("status")),
                ("code", Amf0Value::string("NetConnection.Connect.Success")),
                ("description", Amf0Value::string("Connection succeeded.")),
                ("objectEncoding", Amf0Value::Number(0.0)),
            ]),
        ],
    )
}

/// A `_result` with a null command object and one value.
pub fn simple_result(transaction: f64, value: Amf0Value) -> Message {
    command(
        CSID_COMMAND,
        0,
        &[
            Amf0Value::string("_result"),
            Amf0Value::Number(transaction),
            Amf0Value::Null,
            value,
        ],
    )
}

/// An `onStatus` on message stream `stream_id`.
pub fn on_status(stream_id: u32, level: &str, code: &str, description: &str) -> Message {
    command(
        CSID_STATUS,
        stream_id,
        &[
            Amf0Value::string("onStatus"),
            Amf0Value::Number(0.0),
            Amf0Value::Null,
            Amf0Value::object([
                ("level", Amf0Value::string(level)),
                ("code", Amf0Value::string(code)),
                ("description", Amf0Value::string(description)),
            ]),
        ],
    )
}

/// The longest name a peer sends (`app`, publish name) that is kept whole, in
/// characters; a longer one is cut to [`CUT_NAME`] and marked `…`.
const MAX_PEER_NAME: usize = 256;
/// See [`MAX_PEER_NAME`].
const CUT_NAME: usize = 64;

/// A name a stranger sent, as the server keeps it (logged, matched against the
/// registry): every control character escaped (`\n`, `\u{1b}`), so no line break or
/// terminal sequence reaches a log line, and a name over [`MAX_PEER_NAME`]
/// characters cut. No registered name holds a control character, `…`, or is that long,
/// so a changed name matches none.
fn peer_name(name: &str) -> String {
    let long = name.chars().count() > MAX_PEER_NAME;
    let kept = if long { CUT_NAME } else { MAX_PEER_NAME };
    let mut out = String::with_capacity(name.len().min(4 * MAX_PEER_NAME));
    for c in name.chars().take(kept) {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    if long {
        out.push('…');
    }
    out
}

/// Splits a publish name `stream?key=value&...` into the stream name (see
/// [`peer_name`]) and the `key` parameter (percent-decoded). A leading `/` on the name
/// is dropped.
pub fn parse_publish_name(name: &str) -> (String, Option<String>) {
    let (stream, query) = match name.split_once('?') {
        Some((stream, query)) => (stream, Some(query)),
        None => (name, None),
    };
    let key = query.and_then(|q| {
        q.split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(k, _)| *k == "key")
            .map(|(_, v)| percent_decode(v))
    });
    (peer_name(stream.trim_start_matches('/')), key)
}

/// Removes a query and surrounding slashes from the `app` of `connect` (see
/// [`peer_name`]).
pub fn clean_app(app: &str) -> String {
    let app = app.split_once('?').map_or(app, |(a, _)| a);
    peer_name(app.trim_matches('/'))
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                let value = hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0);
                out.push(value as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_name_query_is_split() {
        assert_eq!(
            parse_publish_name("room1?foo=1&key=s%3Dcret&bar"),
            ("room1".to_owned(), Some("s=cret".to_owned()))
        );
        assert_eq!(parse_publish_name("room1"), ("room1".to_owned(), None));
        assert_eq!(
            parse_publish_name("/a?key=%zz%4"),
            ("a".to_owned(), Some("%zz%4".to_owned()))
        );
        assert_eq!(clean_app("live/?x=1"), "live");
    }

    #[test]
    fn a_strangers_names_never_break_a_log_line() {
        let forged = "m1\n2026-01-01T00:00:00Z  INFO publisher accepted\x1b[2J\r";
        let (stream, key) = parse_publish_name(&format!("{forged}?key=k"));
        assert_eq!(
            stream,
            "m1\\n2026-01-01T00:00:00Z  INFO publisher accepted\\u{1b}[2J\\r"
        );
        assert_eq!(key.as_deref(), Some("k"));
        assert!(!clean_app(forged).contains(char::is_control));
        let long = "a".repeat(10_000);
        let (stream, _) = parse_publish_name(&long);
        assert_eq!(stream, format!("{}…", "a".repeat(64)));
        assert_eq!(clean_app(&long), stream);
        let longest = "b".repeat(256);
        assert_eq!(parse_publish_name(&longest).0, longest);
    }
}
