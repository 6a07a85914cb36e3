//! Fuzzes pass checking: any text in `?pass=` is parsed and verified without a
//! panic, and only a pass signed with the key verifies.

#![no_main]

use libfuzzer_sys::fuzz_target;
use ott::{KeyRing, Pass, ViewKey};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let ring = KeyRing::new(ViewKey::new(7, b"fuzzing view key"));
    let parsed = Pass::parse_unverified(&text);
    let verified = ring.verify(&text, "meeting", None, 1_700_000_000_000);
    // A verified pass always parses, and names the ring's key.
    if let Ok(pass) = verified {
        assert_eq!(parsed.as_ref().ok(), Some(&pass));
        assert_eq!(pass.key_id, 7);
    }
});
