//! AMF0 (Action Message Format 0), the encoding of RTMP commands (`connect`,
//! `publish`, ...) and of `onMetaData`: a decoder that refuses hostile nesting and
//! an encoder for the replies this server sends.

use thiserror::Error;

/// Nesting deeper than this is refused (real commands nest two or three levels).
pub const MAX_DEPTH: usize = 16;

/// Why an AMF0 value could not be read.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum Amf0Error {
    /// The input ended inside a value.
    #[error("amf0 value truncated")]
    Truncated,
    /// A type marker this decoder does not handle (references, typed objects, AMF3 switch).
    #[error("amf0 type marker {0:#04x} unsupported")]
    Unsupported(u8),
    /// Objects nested deeper than [`MAX_DEPTH`].
    #[error("amf0 nesting too deep")]
    TooDeep,
}

/// One AMF0 value.
#[derive(Debug, Clone, PartialEq)]
pub enum Amf0Value {
    /// Marker 0x00: an IEEE 754 double.
    Number(f64),
    /// Marker 0x01.
    Boolean(bool),
    /// Marker 0x02 (or 0x0c, long string, when decoded). Invalid UTF-8 is replaced.
    String(String),
    /// Marker 0x03: ordered key/value pairs.
    Object(Vec<(String, Amf0Value)>),
    /// Marker 0x05.
    Null,
    /// Marker 0x06.
    Undefined,
    /// Marker 0x08: an associative array (how `onMetaData` is usually sent).
    EcmaArray(Vec<(String, Amf0Value)>),
    /// Marker 0x0a: a dense array.
    StrictArray(Vec<Amf0Value>),
    /// Marker 0x0b: milliseconds since the epoch and a (deprecated) time zone.
    Date {
        /// Milliseconds since 1970-01-01 UTC.
        millis: f64,
        /// Time zone offset in minutes; writers set 0.
        time_zone: i16,
    },
}

impl Amf0Value {
    /// The string, when this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Amf0Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The number, when this is one.
    pub fn as_number(&self) -> Option<f64> {
        match self {
            Amf0Value::Number(n) => Some(*n),
            _ => None,
        }
    }

    /// The value under `key`, when this is an object or associative array.
    pub fn get(&self, key: &str) -> Option<&Amf0Value> {
        match self {
            Amf0Value::Object(props) | Amf0Value::EcmaArray(props) => {
                props.iter().find(|(k, _)| k == key).map(|(_, v)| v)
            }
            _ => None,
        }
    }

    /// Builds an object from `(key, value)` pairs.
    pub fn object<'a>(props: impl IntoIterator<Item = (&'a str, Amf0Value)>) -> Self {
        Amf0Value::Object(props.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    }

    /// A string value.
    pub fn string(s: &str) -> Self {
        Amf0Value::String(s.to_owned())
    }
}

/// Decodes every value in `input` (a command body is a sequence of values).
///
/// # Errors
/// An [`Amf0Error`] when any value is malformed.
pub fn decode_all(mut input: &[u8]) -> Result<Vec<Amf0Value>, Amf0Error> {
    let mut values = Vec::new();
    while !input.is_empty() {
        values.push(decode(&mut input)?);
    }
    Ok(values)
}

/// Decodes one value from the front of `input` and advances it.
///
/// # Errors
/// An [`Amf0Error`] when the value is malformed.
pub fn decode(input: &mut &[u8]) -> Result<Amf0Value, Amf0Error> {
    decode_depth(input, 0)
}

fn take<'a>(input: &mut &'a [u8], n: usize) -> Result<&'a [u8], Amf0Error> {
    if input.len() < n {
        return Err(Amf0Error::Truncated);
    }
    let (head, tail) = input.split_at(n);
    *input = tail;
    Ok(head)
}

fn take_u8(input: &mut &[u8]) -> Result<u8, Amf0Error> {
    Ok(take(input, 1)?[0])
}

fn take_u16(input: &mut &[u8]) -> Result<u16, Amf0Error> {
    let b = take(input, 2)?;
    Ok(u16::from_be_bytes([b[0], b[1]]))
}

fn take_u32(input: &mut &[u8]) -> Result<u32, Amf0Error> {
    let b = take(input, 4)?;
    Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

fn take_f64(input: &mut &[u8]) -> Result<f64, Amf0Error> {
    let b = take(input, 8)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Ok(f64::from_be_bytes(a))
}

fn take_string(input: &mut &[u8], len: usize) -> Result<String, Amf0Error> {
    Ok(String::from_utf8_lossy(take(input, len)?).into_owned())
}

fn decode_depth(input: &mut &[u8], depth: usize) -> Result<Amf0Value, Amf0Error> {
    if depth > MAX_DEPTH {
        return Err(Amf0Error::TooDeep);
    }
    let marker = take_u8(input)?;
    Ok(match marker {
        0x00 => Amf0Value::Number(take_f64(input)?),
        0x01 => Amf0Value::Boolean(take_u8(input)? != 0),
        0x02 => {
            let len = usize::from(take_u16(input)?);
            Amf0Value::String(take_string(input, len)?)
        }
        0x03 => Amf0Value::Object(decode_properties(input, depth)?),
        0x05 => Amf0Value::Null,
        0x06 => Amf0Value::Undefined,
        0x08 => {
            let _count = take_u32(input)?; // advisory only; the end marker is authoritative
            Amf0Value::EcmaArray(decode_properties(input, depth)?)
        }
        0x0a => {
            let count = take_u32(input)? as usize;
            // Each element takes at least one byte: a lying count cannot make us allocate.
            if count > input.len() {
                return Err(Amf0Error::Truncated);
            }
            let mut items = Vec::with_capacity(count);
            for _ in 0..count {
                items.push(decode_depth(input, depth + 1)?);
            }
            Amf0Value::StrictArray(items)
        }
        0x0b => {
            let millis = take_f64(input)?;
            let time_zone = take_u16(input)? as i16;
            Amf0Value::Date { millis, time_zone }
        }
        // Long string and XML document share one layout.
        0x0c | 0x0f => {
            let len = take_u32(input)? as usize;
            Amf0Value::String(take_string(input, len)?)
        }
        other => return Err(Amf0Error::Unsupported(other)),
    })
}

fn decode_properties(
    input: &mut &[u8],
    depth: usize,
) -> Result<Vec<(String, Amf0Value)>, Amf0Error> {
    let mut props = Vec::new();
    loop {
        let len = usize::from(take_u16(input)?);
        if len == 0 {
            // An empty key followed by the object-end marker closes the object.
            if input.first() == Some(&0x09) {
                *input = &input[1..];
                return Ok(props);
            }
        }
        let key = take_string(input, len)?;
        let value = decode_depth(input, depth + 1)?;
        props.push((key, value));
    }
}

/// Appends the encoding of `value` to `out`.
///
/// Strings of more than 65535 bytes are written as long strings (marker 0x0c).
pub fn encode(value: &Amf0Value, out: &mut Vec<u8>) {
    match value {
        Amf0Value::Number(n) => {
            out.push(0x00);
            out.extend_from_slice(&n.to_be_bytes());
        }
        Amf0Value::Boolean(b) => out.extend_from_slice(&[0x01, u8::from(*b)]),
        Amf0Value::String(s) => match u16::try_from(s.len()) {
            Ok(len) => {
                out.push(0x02);
                out.extend_from_slice(&len.to_be_bytes());
                out.extend_from_slice(s.as_bytes());
            }
            Err(_) => {
                out.push(0x0c);
                out.extend_from_slice(&(s.len() as u32).to_be_bytes());
                out.extend_from_slice(s.as_bytes());
            }
        },
        Amf0Value::Object(props) => {
            out.push(0x03);
            encode_properties(props, out);
        }
        Amf0Value::Null => out.push(0x05),
        Amf0Value::Undefined => out.push(0x06),
        Amf0Value::EcmaArray(props) => {
            out.push(0x08);
            out.extend_from_slice(&(props.len() as u32).to_be_bytes());
            encode_properties(props, out);
        }
        Amf0Value::StrictArray(items) => {
            out.push(0x0a);
            out.extend_from_slice(&(items.len() as u32).to_be_bytes());
            for item in items {
                encode(item, out);
            }
        }
        Amf0Value::Date { millis, time_zone } => {
            out.push(0x0b);
            out.extend_from_slice(&millis.to_be_bytes());
            out.extend_from_slice(&time_zone.to_be_bytes());
        }
    }
}

fn encode_properties(props: &[(String, Amf0Value)], out: &mut Vec<u8>) {
    for (key, value) in props {
        // Keys are short names; a longer one is cut at the u16 limit (on a char boundary).
        let mut end = key.len().min(usize::from(u16::MAX));
        while !key.is_char_boundary(end) {
            end -= 1;
        }
        let key = &key[..end];
        out.extend_from_slice(&(key.len() as u16).to_be_bytes());
        out.extend_from_slice(key.as_bytes());
        encode(value, out);
    }
    out.extend_from_slice(&[0x00, 0x00, 0x09]);
}

/// Encodes a sequence of values (a command: name, transaction id, arguments).
pub fn encode_all(values: &[Amf0Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for value in values {
        encode(value, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn value() -> impl Strategy<Value = Amf0Value> {
        let leaf = prop_oneof![
            (-1e15..1e15f64).prop_map(Amf0Value::Number),
            any::<bool>().prop_map(Amf0Value::Boolean),
            ".{0,20}".prop_map(Amf0Value::String),
            Just(Amf0Value::Null),
            Just(Amf0Value::Undefined),
            ((-1e13..1e13f64), any::<i16>())
                .prop_map(|(millis, time_zone)| Amf0Value::Date { millis, time_zone }),
        ];
        leaf.prop_recursive(4, 64, 6, |inner| {
            prop_oneof![
                prop::collection::vec(("[a-zA-Z]{1,8}", inner.clone()), 0..6)
                    .prop_map(Amf0Value::Object),
                prop::collection::vec(("[a-zA-Z]{1,8}", inner.clone()), 0..6)
                    .prop_map(Amf0Value::EcmaArray),
                prop::collection::vec(inner, 0..6).prop_map(Amf0Value::StrictArray),
            ]
        })
    }

    proptest! {
        #[test]
        fn encode_decode_round_trip(values in prop::collection::vec(value(), 0..5)) {
            let bytes = encode_all(&values);
            prop_assert_eq!(decode_all(&bytes).unwrap(), values);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
            let _ = decode_all(&bytes);
        }
    }

    #[test]
    fn decodes_an_ffmpeg_style_connect() {
        let cmd = encode_all(&[
            Amf0Value::string("connect"),
            Amf0Value::Number(1.0),
            Amf0Value::object([
                ("app", Amf0Value::string("live")),
                ("type", Amf0Value::string("nonprivate")),
                ("tcUrl", Amf0Value::string("rtmp://127.0.0.1:1935/live")),
            ]),
        ]);
        let values = decode_all(&cmd).unwrap();
        assert_eq!(values[0].as_str(), Some("connect"));
        assert_eq!(values[1].as_number(), Some(1.0));
        assert_eq!(
            values[2].get("app").and_then(Amf0Value::as_str),
            Some("live")
        );
    }

    #[test]
    fn hostile_inputs_are_errors() {
        // 17 nested objects.
        let mut deep = [0x03, 0x00, 0x01, b'a'].repeat(MAX_DEPTH + 1);
        deep.push(0x05);
        assert_eq!(decode_all(&deep), Err(Amf0Error::TooDeep));
        // A strict array claiming 4 billion elements.
        assert_eq!(
            decode_all(&[0x0a, 0xff, 0xff, 0xff, 0xff, 0x05]),
            Err(Amf0Error::Truncated)
        );
        assert_eq!(decode_all(&[0x11]), Err(Amf0Error::Unsupported(0x11)));
        assert_eq!(
            decode_all(&[0x02, 0x00, 0x05, b'a']),
            Err(Amf0Error::Truncated)
        );
    }
}
