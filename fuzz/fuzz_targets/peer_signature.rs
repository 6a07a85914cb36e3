//! Fuzzes the signature a peer of an OTT domain sends when it pulls this node's
//! experiment report (`X-Brdyun-Peer`): any value is refused without a panic, and
//! nothing but the domain's own signature opens the report.

#![no_main]

use http::{HeaderMap, HeaderValue};
use libfuzzer_sys::fuzz_target;
use server::experiments::peer_auth::{PeerKey, PEER_HEADER};

fuzz_target!(|data: &[u8]| {
    let Ok(value) = HeaderValue::from_bytes(data) else {
        return;
    };
    let mut headers = HeaderMap::new();
    headers.insert(PEER_HEADER, value);
    let key = PeerKey::derive(b"fuzzing domain secret, long enough");
    assert!(!key.verify(&headers, "/api/experiments/report", 1_800_000_000));
});
