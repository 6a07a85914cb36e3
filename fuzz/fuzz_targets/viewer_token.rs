//! Fuzzes what a private meeting's viewer sends: any text as a viewer token or as a
//! session is refused or verified without a panic, and nothing but a real signature
//! verifies.

#![no_main]

use libfuzzer_sys::fuzz_target;
use ott::{SessionKey, SessionKeys, ViewerKey, ViewerKeySet};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // Any public key will do: the fuzzer holds no private half.
    let key = ViewerKey::from_base64url("k1", "0d2vdNSu7ryi0wrrrl4RLSQyLrA1Z4x5-qw8cPOUF6M")
        .expect("a 32-byte key");
    let keys = ViewerKeySet::new(vec![key]);
    // A fuzzer cannot sign with the key's secret half: nothing verifies.
    assert!(keys.verify(&text, 1_800_000_000).is_err());
    // Nor can it forge a session's HMAC, from any address.
    let sessions = SessionKeys::new(
        SessionKey::new(1, b"fuzzing session key, 32 bytes!!"),
        [SessionKey::new(2, b"fuzzing next session key, 32 b!")],
    );
    let address = Some(std::net::IpAddr::from([192, 0, 2, data.len() as u8]));
    assert!(sessions
        .verify(&text, "board", address, 1_800_000_000)
        .is_err());
});
