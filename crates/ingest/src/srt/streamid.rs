//! The SRT `streamid` a publisher sends in its handshake: which meeting it publishes
//! to, and with which stream key.
//!
//! Two forms are read:
//! - the SRT Access Control form, `#!::r=<meeting>,m=publish,s=<key>`: comma-separated
//!   `key=value` entries, of which brdyun reads `r` (the resource: the meeting, or
//!   `<meeting>@<slot>`), `m` (the mode: only `publish` is taken; absent means publish,
//!   since this listener takes nothing else), `s` (the session id: the stream key; `k`
//!   is read as a synonym), `t` (the type: only `stream`), `u` (the user, for logs)
//!   and `h` (the host, ignored); other keys are ignored, as the guidelines ask;
//! - the plain form `<meeting>?key=<key>`, optionally behind one application segment
//!   like an RTMP URL's (`live/<meeting>?key=<key>`), the key optional.
//!
//! Pure and bounded: at most [`MAX_STREAM_ID`] bytes (what SRT carries), every error a
//! value, never a panic.

use thiserror::Error;

/// The longest streamid SRT carries, in bytes.
pub const MAX_STREAM_ID: usize = 512;

/// What a publisher's streamid asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamId {
    /// The meeting's publish name (`<meeting>` or `<meeting>@<slot>`).
    pub stream: String,
    /// The application segment of the plain form (`live` in `live/<meeting>`), for
    /// logs; not checked, like RTMP's.
    pub app: Option<String>,
    /// The stream key, if given.
    pub key: Option<String>,
    /// The user (`u=`), for logs.
    pub user: Option<String>,
}

/// Why a streamid was not read; the listener refuses the handshake with code 111026.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StreamIdError {
    /// Longer than [`MAX_STREAM_ID`] bytes.
    #[error("the stream id is longer than {MAX_STREAM_ID} bytes")]
    TooLong,
    /// No meeting named (empty streamid, empty `r=`, or none).
    #[error("the stream id names no meeting")]
    NoStream,
    /// An entry of the access-control form is not `key=value`, or a key repeats.
    #[error("the stream id has a malformed or repeated entry")]
    BadEntry,
    /// A name or key holds a control character, a space, or a character that has a
    /// meaning in the forms (`/`, `?`, `&`, `,`, `#`).
    #[error("the stream id holds a character not allowed in a name or key")]
    BadCharacter,
    /// `m=` asks for something other than publishing.
    #[error("the stream id asks for mode {0:?}: this listener only takes publishers")]
    NotPublish(String),
    /// `t=` asks for something other than a live stream.
    #[error("the stream id asks for type {0:?}: this listener only takes streams")]
    NotStream(String),
    /// `s=` and `k=` both given, and different.
    #[error("the stream id gives two different keys")]
    TwoKeys,
    /// The publish name is not a meeting id (1 to 64 letters, digits, `-` or `_`),
    /// optionally with `@<slot>` of the same alphabet.
    #[error("the stream id's name is not a meeting id (1 to 64 letters, digits, '-' or '_'), with an optional @slot")]
    BadName,
}

/// Reads a streamid.
///
/// # Errors
/// A [`StreamIdError`] naming what is wrong.
pub fn parse(raw: &str) -> Result<StreamId, StreamIdError> {
    if raw.len() > MAX_STREAM_ID {
        return Err(StreamIdError::TooLong);
    }
    match raw.strip_prefix("#!::") {
        Some(entries) => parse_access_control(entries),
        None => parse_plain(raw),
    }
}

fn parse_access_control(entries: &str) -> Result<StreamId, StreamIdError> {
    let mut found: [Option<&str>; 6] = [None; 6];
    const KEYS: [&str; 6] = ["r", "m", "s", "k", "t", "u"];
    for entry in entries.split(',') {
        let (key, value) = entry.split_once('=').ok_or(StreamIdError::BadEntry)?;
        if key.is_empty() {
            return Err(StreamIdError::BadEntry);
        }
        if let Some(i) = KEYS.iter().position(|k| *k == key) {
            if found[i].replace(value).is_some() {
                return Err(StreamIdError::BadEntry);
            }
        }
    }
    let [resource, mode, session, k, kind, user] = found;
    if let Some(mode) = mode {
        if mode != "publish" {
            return Err(StreamIdError::NotPublish(printable(mode)));
        }
    }
    if let Some(kind) = kind {
        if kind != "stream" {
            return Err(StreamIdError::NotStream(printable(kind)));
        }
    }
    let key = match (session, k) {
        (Some(s), Some(k)) if s != k => return Err(StreamIdError::TwoKeys),
        (Some(key), _) | (None, Some(key)) => Some(checked(key)?),
        (None, None) => None,
    };
    let stream = publish_name(resource.unwrap_or_default())?;
    Ok(StreamId {
        stream,
        app: None,
        key,
        user: user.map(checked).transpose()?,
    })
}

fn parse_plain(raw: &str) -> Result<StreamId, StreamIdError> {
    let (path, query) = raw.split_once('?').unwrap_or((raw, ""));
    let (app, stream) = match path.split_once('/') {
        Some((app, stream)) => (Some(checked(app)?), stream),
        None => (None, path),
    };
    let stream = publish_name(stream)?;
    let mut key = None;
    if !query.is_empty() {
        for pair in query.split('&') {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            if name == "key" {
                if key.is_some() {
                    return Err(StreamIdError::BadEntry);
                }
                key = Some(checked(value)?);
            }
        }
    }
    Ok(StreamId {
        stream,
        app,
        key,
        user: None,
    })
}

/// `text` as a publish name, `<meeting>` or `<meeting>@<slot>`: both parts in the
/// meeting-id grammar, the one every node URL and the RTMP path name a stream with
/// (no look-alike or direction-changing character reaches a log or the authorizer).
fn publish_name(text: &str) -> Result<String, StreamIdError> {
    let name = checked(text)?;
    if name.is_empty() {
        return Err(StreamIdError::NoStream);
    }
    let (meeting, slot) = match name.split_once('@') {
        Some((meeting, slot)) => (meeting, Some(slot)),
        None => (name.as_str(), None),
    };
    let valid = |part: &str| meeting::MeetingId::parse(part).is_ok();
    if valid(meeting) && slot.is_none_or(valid) {
        Ok(name)
    } else {
        Err(StreamIdError::BadName)
    }
}

/// `text` as an owned name or key, if it holds no character that is not allowed.
fn checked(text: &str) -> Result<String, StreamIdError> {
    let bad = |c: char| c.is_control() || c.is_whitespace() || "/?&,#".contains(c);
    if text.contains(bad) {
        return Err(StreamIdError::BadCharacter);
    }
    Ok(text.to_owned())
}

/// A streamid for a log line, also one that is not read: the value of every entry that
/// may carry a stream key (`s=`, `k=`, `key=`, in any case) replaced by `REDACTED`,
/// then at most 64 characters, control characters escaped.
pub fn redacted(raw: &str) -> String {
    let mut shown = String::with_capacity(raw.len().min(128));
    for token in raw.split_inclusive([',', '?', '&', ':', '/']) {
        let (entry, separator) = match token.char_indices().last() {
            Some((at, c)) if ",?&:/".contains(c) => token.split_at(at),
            _ => (token, ""),
        };
        match entry.split_once('=') {
            Some((name, _))
                if ["s", "k", "key"].contains(&name.trim().to_ascii_lowercase().as_str()) =>
            {
                shown.push_str(name);
                shown.push_str("=REDACTED");
            }
            _ => shown.push_str(entry),
        }
        shown.push_str(separator);
    }
    shown
        .chars()
        .take(64)
        .flat_map(char::escape_debug)
        .collect()
}

/// A value for an error message: at most 32 characters, control characters escaped.
fn printable(text: &str) -> String {
    text.chars().take(32).flat_map(char::escape_debug).collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn any_text_is_read_or_refused_without_a_panic(raw in "(#!::)?[a-z=,?&/@ \\x00-\\x7f]{0,600}") {
            if let Ok(id) = parse(&raw) {
                prop_assert!(raw.len() <= MAX_STREAM_ID);
                prop_assert!(!id.stream.is_empty());
            }
        }
    }

    #[test]
    fn a_refused_streamid_is_logged_without_its_key() {
        let cases = [
            (
                "#!::r=m1,m=request,s=SECRET1",
                "#!::r=m1,m=request,s=REDACTED",
            ),
            ("#!::k=SECRET1,r=m1", "#!::k=REDACTED,r=m1"),
            (
                "live/m1?key=SECRET1&key=SECRET2",
                "live/m1?key=REDACTED&key=REDACTED",
            ),
            ("m1?KEY=SECRET1&x=1", "m1?KEY=REDACTED&x=1"),
            ("m1?key=SECRET 1", "m1?key=REDACTED"),
            ("#!::s=", "#!::s=REDACTED"),
            ("m1", "m1"),
        ];
        for (raw, shown) in cases {
            assert_eq!(redacted(raw), shown, "{raw}");
        }
        let long = format!("#!::r={},s=SECRET1", "m".repeat(100));
        assert!(!redacted(&long).contains("SECRET"));
        assert_eq!(redacted("m1\n?key=x"), "m1\\n?key=REDACTED");
    }

    fn id(stream: &str, app: Option<&str>, key: Option<&str>) -> StreamId {
        StreamId {
            stream: stream.into(),
            app: app.map(Into::into),
            key: key.map(Into::into),
            user: None,
        }
    }

    #[test]
    fn the_access_control_form_names_the_meeting_and_the_key() {
        assert_eq!(
            parse("#!::r=town-hall,m=publish,s=k3y"),
            Ok(id("town-hall", None, Some("k3y")))
        );
        // Order does not matter; `k` is a synonym of `s`; unknown keys are ignored.
        assert_eq!(
            parse("#!::m=publish,k=k3y,x-custom=1,r=town-hall,h=example.org"),
            Ok(id("town-hall", None, Some("k3y")))
        );
        assert_eq!(
            parse("#!::r=a,s=same,k=same,t=stream"),
            Ok(id("a", None, Some("same")))
        );
        let with_user = parse("#!::u=alice,r=a@backup").unwrap();
        assert_eq!(with_user.stream, "a@backup");
        assert_eq!(with_user.user.as_deref(), Some("alice"));
        assert_eq!(with_user.key, None);
    }

    #[test]
    fn the_access_control_form_takes_only_publishers_of_streams() {
        assert_eq!(
            parse("#!::r=a,m=request"),
            Err(StreamIdError::NotPublish("request".into()))
        );
        assert_eq!(
            parse("#!::r=a,m=bidirectional"),
            Err(StreamIdError::NotPublish("bidirectional".into()))
        );
        assert_eq!(
            parse("#!::r=a,t=file"),
            Err(StreamIdError::NotStream("file".into()))
        );
        assert_eq!(parse("#!::r=a,s=1,k=2"), Err(StreamIdError::TwoKeys));
        assert_eq!(parse("#!::r=a,r=b"), Err(StreamIdError::BadEntry));
        assert_eq!(parse("#!::r=a,junk"), Err(StreamIdError::BadEntry));
        assert_eq!(parse("#!::=a"), Err(StreamIdError::BadEntry));
        assert_eq!(parse("#!::"), Err(StreamIdError::BadEntry));
        assert_eq!(parse("#!::m=publish"), Err(StreamIdError::NoStream));
        assert_eq!(parse("#!::r="), Err(StreamIdError::NoStream));
        assert_eq!(parse("#!::r=a b"), Err(StreamIdError::BadCharacter));
        assert_eq!(parse("#!::r=a/b"), Err(StreamIdError::BadCharacter));
    }

    #[test]
    fn the_plain_form_reads_the_meeting_the_app_and_the_key() {
        assert_eq!(parse("town-hall"), Ok(id("town-hall", None, None)));
        assert_eq!(
            parse("town-hall?key=k3y"),
            Ok(id("town-hall", None, Some("k3y")))
        );
        assert_eq!(
            parse("live/town-hall?other=1&key=k3y"),
            Ok(id("town-hall", Some("live"), Some("k3y")))
        );
        assert_eq!(parse("live/a?key="), Ok(id("a", Some("live"), Some(""))));
        assert_eq!(parse(""), Err(StreamIdError::NoStream));
        assert_eq!(parse("live/"), Err(StreamIdError::NoStream));
        assert_eq!(parse("?key=x"), Err(StreamIdError::NoStream));
        assert_eq!(parse("a/b/c"), Err(StreamIdError::BadCharacter));
        assert_eq!(parse("a?key=1&key=2"), Err(StreamIdError::BadEntry));
        assert_eq!(parse("a\u{0}b"), Err(StreamIdError::BadCharacter));
        assert_eq!(parse("a?key=x\ny"), Err(StreamIdError::BadCharacter));
    }

    #[test]
    fn a_stream_id_is_at_most_512_bytes() {
        let key = "k".repeat(MAX_STREAM_ID - "a?key=".len());
        let raw = format!("a?key={key}");
        assert_eq!(raw.len(), MAX_STREAM_ID);
        assert_eq!(
            parse(&raw).map(|id| id.key.map(|k| k.len())),
            Ok(Some(key.len()))
        );
        let longer = format!("{raw}k");
        assert_eq!(parse(&longer), Err(StreamIdError::TooLong));
    }

    #[test]
    fn a_publish_name_is_a_meeting_id_with_an_optional_slot() {
        assert_eq!(
            parse("Town_hall-2@backup").map(|id| id.stream),
            Ok("Town_hall-2@backup".into())
        );
        assert_eq!(parse(&"m".repeat(64)).map(|id| id.stream.len()), Ok(64));
        for name in [
            "m1\u{202e}",
            "m1\u{fffd}",
            "caf\u{e9}",
            "m.1",
            "m1@",
            "@backup",
            "m1@backup@x",
            "m1@back:up",
            &"m".repeat(65),
        ] {
            assert_eq!(parse(name), Err(StreamIdError::BadName), "{name:?}");
            let access = format!("#!::r={name},s=k");
            assert_eq!(parse(&access), Err(StreamIdError::BadName), "{access:?}");
            assert_eq!(
                parse(&format!("live/{name}?key=k")),
                Err(StreamIdError::BadName)
            );
        }
    }

    #[test]
    fn an_error_message_shows_a_bounded_escaped_value() {
        let mode = format!("x\u{1b}{}", "y".repeat(100));
        let Err(StreamIdError::NotPublish(shown)) = parse(&format!("#!::r=a,m={mode}")) else {
            panic!("not refused");
        };
        assert!(shown.starts_with("x\\u{1b}y"));
        assert!(shown.len() < 48);
    }
}
