//! Chitchat's wire codec, reached through its public UDP socket.
//!
//! chitchat 0.13 keeps the (de)serialization of [`ChitchatEnvelope`] crate-private:
//! its only public encoder and decoder is its own [`chitchat::transport::UdpSocket`].
//! So the sealed transport runs that socket over a private loopback pair: to encode,
//! chitchat's socket sends the envelope to a "tap" socket, whose datagram is the wire
//! form; to decode, the tap sends plaintext to chitchat's socket, whose `recv` parses
//! it. This costs two loopback datagrams per gossip message (a few per second per
//! peer) and keeps chitchat's exact wire format without forking it.
//!
//! Both sockets listen on 127.0.0.1 and accept datagrams only from each other:
//! anything else (another local process) is dropped. Chitchat's decoder silently
//! skips a datagram it cannot parse, so every decode is followed by a sentinel (a
//! Syn of a cluster id no domain may use): seeing the sentinel first means the
//! plaintext was not a chitchat message.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use anyhow::{bail, Context};
use chitchat::transport::{RecvOutcome, Socket, UdpSocket as ChitchatUdp};
use chitchat::{ChitchatEnvelope, ChitchatMessage, ProtocolVersion};

/// The cluster id of the sentinel; [`crate::MeshConfig`] refuses it as a cluster id.
pub(crate) const SENTINEL_CLUSTER_ID: &str = "\u{0}brdyun-codec-sentinel";

/// A loopback hop never takes this long; past it the codec is broken.
const LOOPBACK_TIMEOUT: Duration = Duration::from_secs(2);

/// The largest datagram a loopback hop carries: chitchat's own datagram budget.
const MAX_DATAGRAM: usize = 65_507;

fn loopback() -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, 0))
}

/// Turns envelopes into chitchat's wire bytes.
pub(crate) struct Encoder {
    chitchat: ChitchatUdp,
    chitchat_addr: SocketAddr,
    tap: tokio::net::UdpSocket,
    tap_addr: SocketAddr,
    buf: Vec<u8>,
}

impl Encoder {
    pub(crate) async fn open() -> anyhow::Result<Self> {
        let chitchat = ChitchatUdp::open(loopback()).await?;
        let chitchat_addr = chitchat.local_addr()?;
        let tap = tokio::net::UdpSocket::bind(loopback())
            .await
            .context("binding the codec tap")?;
        let tap_addr = tap.local_addr()?;
        Ok(Self {
            chitchat,
            chitchat_addr,
            tap,
            tap_addr,
            buf: vec![0; MAX_DATAGRAM],
        })
    }

    /// The wire bytes of `envelope`.
    ///
    /// # Errors
    /// When the loopback hop fails: the envelope exceeds a datagram, or the socket
    /// broke.
    pub(crate) async fn encode(&mut self, envelope: ChitchatEnvelope) -> anyhow::Result<Vec<u8>> {
        // A datagram that arrived after an earlier timeout must not pass for this one.
        while self.tap.try_recv_from(&mut self.buf).is_ok() {}
        self.chitchat.send(self.tap_addr, envelope).await?;
        tokio::time::timeout(LOOPBACK_TIMEOUT, async {
            loop {
                let (n, from) = self.tap.recv_from(&mut self.buf).await?;
                if from == self.chitchat_addr {
                    return Ok::<_, anyhow::Error>(self.buf[..n].to_vec());
                }
            }
        })
        .await
        .context("codec loopback timed out")?
    }

    /// The wire bytes of the sentinel.
    pub(crate) async fn sentinel(&mut self) -> anyhow::Result<Vec<u8>> {
        self.encode(ChitchatEnvelope {
            version: ProtocolVersion::V0,
            message: ChitchatMessage::Syn {
                cluster_id: SENTINEL_CLUSTER_ID.to_owned(),
                digest: Default::default(),
            },
        })
        .await
    }
}

fn is_sentinel(envelope: &ChitchatEnvelope) -> bool {
    matches!(&envelope.message, ChitchatMessage::Syn { cluster_id, .. } if cluster_id == SENTINEL_CLUSTER_ID)
}

/// Turns chitchat's wire bytes into envelopes.
pub(crate) struct Decoder {
    chitchat: ChitchatUdp,
    chitchat_addr: SocketAddr,
    tap: tokio::net::UdpSocket,
    tap_addr: SocketAddr,
    sentinel: Vec<u8>,
}

impl Decoder {
    pub(crate) async fn open(sentinel: Vec<u8>) -> anyhow::Result<Self> {
        let chitchat = ChitchatUdp::open(loopback()).await?;
        let chitchat_addr = chitchat.local_addr()?;
        let tap = tokio::net::UdpSocket::bind(loopback())
            .await
            .context("binding the codec tap")?;
        let tap_addr = tap.local_addr()?;
        Ok(Self {
            chitchat,
            chitchat_addr,
            tap,
            tap_addr,
            sentinel,
        })
    }

    /// The envelope in `bytes`, or `None` when they are not a chitchat message.
    ///
    /// # Errors
    /// When the loopback hop fails: the decoder can no longer be trusted and must be
    /// replaced ([`Decoder::reopen`]).
    pub(crate) async fn decode(
        &mut self,
        bytes: &[u8],
    ) -> anyhow::Result<Option<ChitchatEnvelope>> {
        self.tap.send_to(bytes, self.chitchat_addr).await?;
        self.tap.send_to(&self.sentinel, self.chitchat_addr).await?;
        let first = self.next().await?;
        if is_sentinel(&first) {
            return Ok(None);
        }
        let second = self.next().await?;
        if !is_sentinel(&second) {
            bail!("codec loopback lost its sentinel");
        }
        Ok(Some(first))
    }

    /// A fresh decoder with the same sentinel, after a failure.
    pub(crate) async fn reopen(&self) -> anyhow::Result<Self> {
        Self::open(self.sentinel.clone()).await
    }

    async fn next(&mut self) -> anyhow::Result<ChitchatEnvelope> {
        tokio::time::timeout(LOOPBACK_TIMEOUT, async {
            loop {
                let RecvOutcome {
                    from_addr,
                    envelope,
                    ..
                } = self.chitchat.recv().await?;
                if from_addr == self.tap_addr {
                    return Ok::<_, anyhow::Error>(envelope);
                }
            }
        })
        .await
        .context("codec loopback timed out")?
    }
}

/// An encoder and a decoder with a shared sentinel.
pub(crate) async fn open_pair() -> anyhow::Result<(Encoder, Decoder)> {
    let mut encoder = Encoder::open().await?;
    let sentinel = encoder.sentinel().await?;
    let decoder = Decoder::open(sentinel).await?;
    Ok((encoder, decoder))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn syn(cluster: &str) -> ChitchatEnvelope {
        ChitchatEnvelope {
            version: ProtocolVersion::V1,
            message: ChitchatMessage::Syn {
                cluster_id: cluster.to_owned(),
                digest: Default::default(),
            },
        }
    }

    #[tokio::test]
    async fn roundtrip_and_garbage_keep_the_stream_aligned() {
        let (mut enc, mut dec) = open_pair().await.expect("open");
        let bytes = enc.encode(syn("brdyun")).await.expect("encode");
        assert_eq!(dec.decode(&bytes).await.expect("ok"), Some(syn("brdyun")));
        assert_eq!(dec.decode(b"not chitchat").await.expect("ok"), None);
        assert_eq!(
            dec.decode(&bytes[..bytes.len() - 1]).await.expect("ok"),
            None
        );
        let bytes2 = enc.encode(syn("second")).await.expect("encode");
        assert_eq!(dec.decode(&bytes2).await.expect("ok"), Some(syn("second")));
    }
}
