//! Fuzzes what a private meeting's viewer sends: any text as a viewer token or as a
//! session is refused or verified without a panic, and nothing but a real signature
//! verifies.

#![no_main]

use libfuzzer_sys::fuzz_target;
use ott::{SessionKey, ViewerKey, ViewerKeySet};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let key = ViewerKey::from_base64url("k1", "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
        .expect("a 32-byte key");
    let keys = ViewerKeySet::new(vec![key]);
    // A fuzzer cannot sign with the key's secret half: nothing verifies.
    assert!(keys.verify(&text, 1_800_000_000).is_err());
    // Nor can it forge a session's HMAC.
    let sessions = SessionKey::derive(b"fuzzing domain secret");
    assert!(sessions.verify(&text, "board", 1_800_000_000).is_err());
});
