//! Fuzzes what reaches a node from the gossip network: a datagram that does not open
//! under the domain key is dropped (never a panic), and the typed state decoders take
//! any text.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mesh::GossipCipher;

fuzz_target!(|data: &[u8]| {
    let cipher = GossipCipher::new(b"fuzzing domain secret");
    let mut datagram = data.to_vec();
    // Arbitrary bytes forge no seal (ChaCha20-Poly1305): they never open.
    assert!(cipher.open(&mut datagram).is_none());
    let text = String::from_utf8_lossy(data);
    let _ = mesh::state::decode_node(&text);
    let _ = mesh::state::decode_member(&text, ott::NodeId::new("fuzzed peer"));
});
