//! The RTMP test harness shared by this crate's socket tests: a server on
//! `127.0.0.1:0` with a key-checking authorizer, and a scripted RTMP client that can
//! bind any loopback source address (so tests can play several hosts).

#![allow(dead_code)] // each test file uses part of the harness

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use ingest::publish::{PublishAuthorizer, PublishRejection, PublishRequest};
use ingest::rtmp::amf0::{self, Amf0Value};
use ingest::rtmp::chunk::{msg_type, ChunkDecoder, ChunkEncoder, Message};
use ingest::rtmp::commands::command;
use ingest::rtmp::handshake::HANDSHAKE_SIZE;
use ingest::rtmp::{serve_with_stats, RtmpLimits, RtmpStats};
use ingest::{IngestEvent, IngestSender};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio::time::{timeout, Instant};

/// The key [`KeyAuthorizer`] accepts.
pub const KEY: &str = "SECRET";

/// Accepts any stream published with [`KEY`], as often as asked; every accepted
/// publisher's frames go to one channel.
pub struct KeyAuthorizer {
    tx: IngestSender,
}

impl KeyAuthorizer {
    /// An authorizer whose publishers' frames go to `tx`.
    pub fn new(tx: IngestSender) -> Self {
        Self { tx }
    }
}

impl PublishAuthorizer for KeyAuthorizer {
    fn authorize(&self, request: &PublishRequest) -> Result<IngestSender, PublishRejection> {
        if request.key.as_deref() == Some(KEY) {
            Ok(self.tx.clone())
        } else {
            Err(PublishRejection::WrongKey)
        }
    }
}

/// A running server and what a test reads from it.
pub struct Server {
    pub addr: SocketAddr,
    pub stats: Arc<RtmpStats>,
    pub frames: mpsc::Receiver<IngestEvent>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Server {
    /// Serves on `127.0.0.1:0` with `limits`.
    pub async fn start(limits: RtmpLimits) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let stats = Arc::new(RtmpStats::default());
        let (tx, frames) = mpsc::channel(1024);
        let (stop, stop_rx) = oneshot::channel::<()>();
        let task = tokio::spawn(serve_with_stats(
            listener,
            Arc::new(KeyAuthorizer { tx }),
            limits,
            stats.clone(),
            async {
                let _ = stop_rx.await;
            },
        ));
        Server {
            addr,
            stats,
            frames,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Asks the server to stop (its connections close) and waits for it.
    pub async fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            timeout(Duration::from_secs(5), task)
                .await
                .expect("shutdown in time")
                .expect("server task");
        }
    }

    /// Polls `condition` on the stats until it holds or `bound` passes.
    pub async fn wait_for(&self, bound: Duration, condition: impl Fn(&RtmpStats) -> bool) {
        let deadline = Instant::now() + bound;
        while !condition(&self.stats) {
            assert!(Instant::now() < deadline, "condition not met in {bound:?}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The count of one limit's code (111020…111024).
    pub fn limit_count(&self, code: u32) -> u64 {
        self.stats
            .limits
            .by_code()
            .iter()
            .find(|(c, _)| c.code() == code)
            .map_or(0, |(_, n)| *n)
    }
}

/// `127.0.0.N`: on Linux the whole of 127/8 is local, so each is another "host".
pub fn host(n: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, n))
}

/// A TCP connection to `server` from source address `from`.
pub async fn tcp_from(server: SocketAddr, from: IpAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("socket");
    socket.bind(SocketAddr::new(from, 0)).expect("bind source");
    socket.connect(server).await.expect("connect")
}

/// An AVC sequence header, then a keyframe of `size` payload bytes at `timestamp` ms,
/// on stream 1 in the default chunk size: one frame on the server's channel.
pub fn keyframe_bytes(timestamp: u32, size: usize) -> Vec<u8> {
    let mut config = vec![0x17, 0, 0, 0, 0, 1, 0x64, 0x00, 0x1f, 0xff, 0xe1];
    let sps = [0x67, 0x64, 0x00, 0x1f, 0xac, 0xd9];
    config.extend_from_slice(&(sps.len() as u16).to_be_bytes());
    config.extend_from_slice(&sps);
    let pps = [0x68, 0xeb, 0xe3, 0xcb];
    config.push(1);
    config.extend_from_slice(&(pps.len() as u16).to_be_bytes());
    config.extend_from_slice(&pps);
    let idr_len = size.max(2);
    let mut key = vec![0x17, 1, 0, 0, 0];
    key.extend_from_slice(&(idr_len as u32).to_be_bytes());
    key.push(0x65);
    key.resize(key.len() + idr_len - 1, 0x88);
    let mut bytes = Vec::new();
    for payload in [config, key] {
        let message = Message {
            csid: 6,
            timestamp,
            type_id: msg_type::VIDEO,
            stream_id: 1,
            payload: Bytes::from(payload),
        };
        ChunkEncoder::default().write(&message, &mut bytes);
    }
    bytes
}

/// Reads until EOF or error; returns how long that took (fails after `bound`).
pub async fn time_to_close(socket: &mut (impl AsyncRead + Unpin), bound: Duration) -> Duration {
    let started = Instant::now();
    let mut buf = [0u8; 8192];
    timeout(bound, async {
        while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
    })
    .await
    .expect("server did not close the connection in time");
    started.elapsed()
}

/// A scripted RTMP client.
pub struct Client {
    pub socket: TcpStream,
    decoder: ChunkDecoder,
    encoder: ChunkEncoder,
}

impl Client {
    /// Connects from `from` and completes the handshake.
    pub async fn handshaken(server: SocketAddr, from: IpAddr) -> Client {
        let mut socket = tcp_from(server, from).await;
        let mut c0c1 = vec![3u8];
        c0c1.resize(1 + HANDSHAKE_SIZE, 7);
        socket.write_all(&c0c1).await.expect("write c0c1");
        let mut s0s1s2 = vec![0u8; 1 + 2 * HANDSHAKE_SIZE];
        timeout(Duration::from_secs(5), socket.read_exact(&mut s0s1s2))
            .await
            .expect("s0s1s2 in time")
            .expect("read s0s1s2");
        assert_eq!(s0s1s2[0], 3);
        assert_eq!(&s0s1s2[1 + HANDSHAKE_SIZE..], &c0c1[1..], "s2 echoes c1");
        socket
            .write_all(&s0s1s2[1..=HANDSHAKE_SIZE])
            .await
            .expect("write c2");
        Client {
            socket,
            decoder: ChunkDecoder::new(1 << 20),
            encoder: ChunkEncoder::default(),
        }
    }

    /// Handshake and `connect` to app `live`; returns the client and the status code.
    pub async fn connected(server: SocketAddr, from: IpAddr) -> (Client, String) {
        let mut client = Client::handshaken(server, from).await;
        client
            .send(&command(
                3,
                0,
                &[
                    Amf0Value::string("connect"),
                    Amf0Value::Number(1.0),
                    Amf0Value::object([("app", Amf0Value::string("live"))]),
                ],
            ))
            .await;
        let code = client.next_status().await;
        (client, code)
    }

    /// `connect`, `createStream` and `publish` of `name` (`cam?key=…`); returns the
    /// client and the publish status code.
    pub async fn published(server: SocketAddr, from: IpAddr, name: &str) -> (Client, String) {
        let (mut client, code) = Client::connected(server, from).await;
        assert_eq!(code, "NetConnection.Connect.Success");
        let s = Amf0Value::string;
        client
            .send(&command(
                3,
                0,
                &[s("createStream"), Amf0Value::Number(2.0), Amf0Value::Null],
            ))
            .await;
        client
            .send(&command(
                8,
                1,
                &[
                    s("publish"),
                    Amf0Value::Number(3.0),
                    Amf0Value::Null,
                    s(name),
                    s("live"),
                ],
            ))
            .await;
        let code = client.next_status().await;
        (client, code)
    }

    /// Writes one message.
    pub async fn send(&mut self, message: &Message) {
        let mut bytes = Vec::new();
        self.encoder.write(message, &mut bytes);
        self.socket.write_all(&bytes).await.expect("write");
    }

    /// Writes [`keyframe_bytes`]; returns how many bytes that was.
    pub async fn send_keyframe(&mut self, timestamp: u32, size: usize) -> usize {
        let bytes = keyframe_bytes(timestamp, size);
        self.socket.write_all(&bytes).await.expect("write");
        bytes.len()
    }

    /// Reads until the server sends a command with a status code (`info.code`).
    pub async fn next_status(&mut self) -> String {
        let mut buf = [0u8; 4096];
        loop {
            while let Some(m) = self.decoder.poll().expect("valid server chunks") {
                if m.type_id != msg_type::COMMAND_AMF0 {
                    continue;
                }
                let values = amf0::decode_all(&m.payload).expect("amf0");
                let code = values
                    .get(3)
                    .and_then(|info| info.get("code"))
                    .and_then(Amf0Value::as_str);
                if let Some(code) = code {
                    return code.to_owned();
                }
            }
            let n = timeout(Duration::from_secs(5), self.socket.read(&mut buf))
                .await
                .expect("a status in time")
                .expect("read");
            assert!(n > 0, "server closed before sending a status");
            self.decoder.feed(&buf[..n]);
        }
    }
}
