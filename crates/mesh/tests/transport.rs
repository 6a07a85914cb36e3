//! The sealed transport on real sockets: what a node does with datagrams it did not
//! expect.

mod common;

use std::time::Duration;

use common::{config, node, wait_until};
use mesh::GossipCipher;
use tokio::net::UdpSocket;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tampered_truncated_foreign_and_garbage_datagrams_are_rejected_and_replays_are_harmless() {
    // A raw socket posing as a seed receives a's real sealed gossip.
    let raw = UdpSocket::bind(common::loopback()).await.expect("bind");
    let raw_addr = raw.local_addr().expect("addr");
    let a = node(config("a", &[raw_addr])).await;
    let mut buf = vec![0u8; 65_536];
    let (n, from) = tokio::time::timeout(Duration::from_secs(5), raw.recv_from(&mut buf))
        .await
        .expect("a gossips to its seed")
        .expect("recv");
    assert_eq!(from, a.gossip_addr());
    let real = buf[..n].to_vec();
    // Nothing readable on the wire: the node name does not appear in clear.
    assert!(!real
        .windows(b"meeting-group".len())
        .any(|w| w == b"meeting-group"));
    assert!(!real.windows(7).any(|w| w == b"brdyun\0" || w == b"a-strea"));

    let before = a.transport_counters();
    let mut tampered = real.clone();
    let mid = tampered.len() / 2;
    tampered[mid] ^= 0x40;
    let truncated = real[..real.len() - 1].to_vec();
    let foreign = GossipCipher::new(b"a guessed, wrong domain secret")
        .seal(b"anything")
        .expect("seal");
    let garbage: Vec<u8> = (0..300u32).map(|i| (i * 31 % 251) as u8).collect();
    for d in [
        &tampered,
        &truncated,
        &foreign,
        &garbage,
        &Vec::new(),
        &vec![0u8; 27],
    ] {
        raw.send_to(d, a.gossip_addr()).await.expect("send");
    }
    // Authentic, but not a chitchat message.
    let authentic_junk = GossipCipher::new(common::SECRET)
        .seal(b"not a chitchat envelope")
        .expect("seal");
    raw.send_to(&authentic_junk, a.gossip_addr())
        .await
        .expect("send");

    wait_until(Duration::from_secs(5), "all counted", || async {
        let c = a.transport_counters();
        c.rejected >= before.rejected + 6 && c.undecodable > before.undecodable
    })
    .await;
    let after = a.transport_counters();
    assert_eq!(after.rejected, before.rejected + 6);
    assert_eq!(after.undecodable, before.undecodable + 1);
    assert_eq!(a.rejected_datagrams(), after.rejected);

    // A replay of a's own Syn opens and decodes, and changes nothing.
    raw.send_to(&real, a.gossip_addr()).await.expect("send");
    wait_until(Duration::from_secs(5), "replay received", || async {
        a.transport_counters().received > after.received
    })
    .await;
    assert!(a.snapshot().nodes.is_empty());

    // The node still gossips normally after all that.
    let b = node(config("b", &[a.gossip_addr()])).await;
    wait_until(Duration::from_secs(10), "a and b converge", || async {
        common::alive_peers(&a) == ["b"] && common::alive_peers(&b) == ["a"]
    })
    .await;
}
