//! Base64url without padding (RFC 4648 §5), strict: the decoder rejects padding,
//! foreign characters and non-zero trailing bits, so every byte string has exactly
//! one accepted text (a pass cannot be altered without changing its bytes).

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Encodes bytes as base64url without padding.
pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for i in 0..chars {
            let idx = (n >> (18 - 6 * i)) & 0x3f;
            out.push(char::from(ALPHABET[idx as usize]));
        }
    }
    out
}

fn value(c: u8) -> Option<u32> {
    let v = match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'-' => 62,
        b'_' => 63,
        _ => return None,
    };
    Some(u32::from(v))
}

/// Decodes strict base64url without padding into `out` without allocating; the number
/// of bytes written, or `None` on any deviation or when `out` is too small.
pub fn decode_into(text: &str, out: &mut [u8]) -> Option<usize> {
    let text = text.as_bytes();
    if text.len() % 4 == 1 {
        return None;
    }
    let mut written = 0;
    for chunk in text.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= value(c)? << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        let keep = chunk.len() - 1;
        let unused_mask = (1u32 << (8 * (3 - keep))) - 1;
        if n & unused_mask != 0 {
            return None;
        }
        out.get_mut(written..written + keep)?
            .copy_from_slice(&bytes[1..=keep]);
        written += keep;
    }
    Some(written)
}

/// Decodes strict base64url without padding; `None` on any deviation.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let mut out = vec![0u8; text.len() / 4 * 3 + 2];
    let written = decode_into(text, &mut out)?;
    out.truncate(written);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::{decode, encode};
    use proptest::prelude::*;

    #[test]
    fn known_vectors() {
        assert_eq!(encode(b""), "");
        assert_eq!(encode(b"f"), "Zg");
        assert_eq!(encode(b"fo"), "Zm8");
        assert_eq!(encode(b"foo"), "Zm9v");
        assert_eq!(encode(&[0xfb, 0xff]), "-_8");
        assert_eq!(decode("Zm9vYg").as_deref(), Some(&b"foob"[..]));
        assert_eq!(decode("Zh"), None, "non-zero trailing bits");
        assert_eq!(decode("Zg=="), None, "padding");
        assert_eq!(decode("Z"), None, "impossible length");
        assert_eq!(decode("Zm+v"), None, "standard alphabet");
    }

    proptest! {
        #[test]
        fn round_trip(bytes in proptest::collection::vec(any::<u8>(), 0..100)) {
            prop_assert_eq!(decode(&encode(&bytes)), Some(bytes));
        }

        #[test]
        fn decode_is_canonical(text in "[A-Za-z0-9_=+/-]{0,40}") {
            if let Some(bytes) = decode(&text) {
                prop_assert_eq!(encode(&bytes), text);
            }
        }
    }
}
