//! The RTMP handshake, server side (RTMP 1.0 spec, section 5.2): the "simple"
//! handshake. C0+C1 in, S0+S1+S2 out, then C2 in.
//!
//! ffmpeg's publisher sends a digest-style C1 but only checks the server's digest when
//! it plays, not when it publishes; with a zero version field in S1 it (and OBS,
//! librtmp) accept the simple handshake.

use thiserror::Error;

/// The only RTMP version (C0/S0 byte).
pub const RTMP_VERSION: u8 = 3;

/// Size of C1, S1, C2 and S2.
pub const HANDSHAKE_SIZE: usize = 1536;

/// Why a handshake was refused.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum HandshakeError {
    /// C0 asked for another version (6 would be RTMPE, encrypted).
    #[error("rtmp version {0} unsupported")]
    Version(u8),
    /// C0+C1 is not 1537 bytes.
    #[error("c0c1 must be {expected} bytes, got {got}")]
    Length {
        /// Bytes expected.
        expected: usize,
        /// Bytes given.
        got: usize,
    },
}

/// Builds S0+S1+S2 (3073 bytes) in answer to C0+C1.
///
/// `server_time` goes in S1's time field; `random` fills S1's random part (it need not
/// be cryptographic: the simple handshake authenticates nothing). S2 echoes C1.
///
/// # Errors
/// [`HandshakeError`] when `c0c1` has the wrong length or version.
pub fn server_response(
    c0c1: &[u8],
    server_time: u32,
    mut random: impl FnMut() -> u64,
) -> Result<Vec<u8>, HandshakeError> {
    if c0c1.len() != 1 + HANDSHAKE_SIZE {
        return Err(HandshakeError::Length {
            expected: 1 + HANDSHAKE_SIZE,
            got: c0c1.len(),
        });
    }
    let (&version, c1) = c0c1.split_first().expect("length checked above");
    if version != RTMP_VERSION {
        return Err(HandshakeError::Version(version));
    }
    let mut out = Vec::with_capacity(1 + 2 * HANDSHAKE_SIZE);
    out.push(RTMP_VERSION);
    out.extend_from_slice(&server_time.to_be_bytes());
    out.extend_from_slice(&[0; 4]); // zero version: the simple handshake
    while out.len() < 1 + HANDSHAKE_SIZE {
        out.extend_from_slice(&random().to_le_bytes());
    }
    out.truncate(1 + HANDSHAKE_SIZE);
    out.extend_from_slice(c1);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s2_echoes_c1_and_s1_is_simple() {
        let mut c0c1 = vec![3];
        c0c1.extend((0..HANDSHAKE_SIZE).map(|i| i as u8));
        let out = server_response(&c0c1, 42, || 0x0102_0304_0506_0708).unwrap();
        assert_eq!(out.len(), 1 + 2 * HANDSHAKE_SIZE);
        assert_eq!(out[0], 3);
        assert_eq!(&out[1..5], &42u32.to_be_bytes());
        assert_eq!(&out[5..9], &[0; 4]);
        assert_eq!(&out[1 + HANDSHAKE_SIZE..], &c0c1[1..]);
    }

    #[test]
    fn wrong_version_or_length_is_refused() {
        let mut c0c1 = vec![6];
        c0c1.resize(1 + HANDSHAKE_SIZE, 0);
        assert_eq!(
            server_response(&c0c1, 0, || 0),
            Err(HandshakeError::Version(6))
        );
        assert!(matches!(
            server_response(&c0c1[..10], 0, || 0),
            Err(HandshakeError::Length { got: 10, .. })
        ));
    }
}
