//! The HTTP edge of real `brdyun node` and `brdyun mc` processes on loopback: a body
//! that stops arriving is cut with 408 (108011) within the configured body deadline on
//! both while a client beside it is served; the MC caps each client's connections as a
//! node does (429, 108009); and under a descriptor limit of 256 (`ulimit -n`), one
//! client holding as many connections as it can is stopped by the caps derived from
//! that limit, while a viewer of the node and a node's sync with the MC are served.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use common::cluster::McConfig;
use common::{
    http_get_with, http_request, media_playlist, start_role, start_role_with_nofile, wait_for,
    NodeProcess,
};

const ADMIN_TOKEN: &str = "edge-admin-token-0123456789abcdef";
const NODE_TOKEN: &str = "edge-node-token-0123456789abcdef";

/// The body deadline the processes are configured with.
const BODY_TIMEOUT: Duration = Duration::from_secs(2);

/// How long after a deadline a cut may still be on its way (scheduling).
const SLACK: Duration = Duration::from_secs(3);

/// The address of the client that holds connections (the viewer is on 127.0.0.1).
const HOLDER: [u8; 4] = [127, 0, 0, 2];

fn mc_config(dir: &Path, extra: &str) -> String {
    McConfig {
        rtmp: false,
        admin_token: Some(ADMIN_TOKEN.to_owned()),
        node_token: Some(NODE_TOKEN.to_owned()),
        lines: extra.to_owned(),
        defaults: None,
        ..McConfig::default()
    }
    .render(&dir.join("mc-data"))
}

fn node_config(dir: &Path, extra: &str) -> String {
    format!(
        "[node]\nname = \"edge\"\nhttp = \"127.0.0.1:0\"\ndata_dir = \"{}\"\n\
         admin_token = \"{ADMIN_TOKEN}\"\n{extra}\n[[stream]]\nname = \"m\"\n\
         inputs = [\"builtin://meeting\"]\n",
        dir.join("node-data").display()
    )
}

/// A node's sync with the MC, answered 200.
fn sync(mc: SocketAddr) -> u16 {
    let auth = format!("Bearer {NODE_TOKEN}");
    let (status, body) = http_request(
        mc,
        "GET",
        "/api/nodes/sync?node=edge&viewers=",
        &[("Authorization", &auth)],
        "",
    );
    assert_eq!(status, 200, "sync: {body}");
    status
}

/// Sends a POST head declaring 4096 bytes and one byte of them, then waits for the
/// server to answer and close: the answer and how long it took.
fn slow_body(addr: SocketAddr, path: &str) -> (String, Duration) {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    stream
        .set_read_timeout(Some(BODY_TIMEOUT + SLACK))
        .expect("timeout");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {ADMIN_TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: 4096\r\n\r\n{{"
    );
    stream.write_all(head.as_bytes()).expect("write");
    let start = Instant::now();
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .unwrap_or_else(|e| panic!("{path}: no answer and close within the deadline: {e}"));
    (answer, start.elapsed())
}

/// The `code` of an HTTP answer's JSON body.
fn code_of(answer: &str) -> u64 {
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    let json: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    json["code"].as_u64().unwrap_or(0)
}

/// A connection to `addr` from `client` (an address of 127.0.0.0/8), or `None` when
/// the connect itself fails.
fn connect_from(client: [u8; 4], addr: SocketAddr) -> Option<TcpStream> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).ok()?;
    socket.bind(&SocketAddr::from((client, 0)).into()).ok()?;
    socket
        .connect_timeout(&addr.into(), Duration::from_secs(2))
        .ok()?;
    Some(socket.into())
}

/// What the server says at once on a new connection without a request: a cap's
/// refusal, or `None` after 200 ms of silence (admitted).
fn refusal(stream: &mut TcpStream) -> Option<String> {
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    let mut answer = Vec::new();
    match stream.read_to_end(&mut answer) {
        Ok(_) => Some(String::from_utf8_lossy(&answer).into_owned()),
        Err(e) if answer.is_empty() && e.kind() != std::io::ErrorKind::ConnectionReset => None,
        Err(_) => Some(String::from_utf8_lossy(&answer).into_owned()),
    }
}

/// Opens connections from [`HOLDER`] to `addr` and keeps them until one is refused
/// (at most `attempts`): the connections held, and the refusal.
fn hold_what_it_can(addr: SocketAddr, attempts: usize) -> (Vec<TcpStream>, Option<String>) {
    let mut held = Vec::new();
    for _ in 0..attempts {
        let Some(mut stream) = connect_from(HOLDER, addr) else {
            return (held, Some("connect failed".into()));
        };
        match refusal(&mut stream) {
            Some(answer) => return (held, Some(answer)),
            None => held.push(stream),
        }
    }
    (held, None)
}

#[test]
fn slow_bodies_are_cut_on_a_node_and_an_mc_and_the_mc_caps_each_client() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mc = start_role(
        dir.path(),
        "mc",
        "mc",
        &mc_config(
            dir.path(),
            "body_timeout = 2\nmax_connections_per_client = 4\n",
        ),
    );
    let node = NodeProcess::start(
        dir.path(),
        "node",
        &node_config(dir.path(), "body_timeout = 2"),
    );

    for (what, addr, path) in [
        ("node", node.http, "/telemetry"),
        ("mc", mc.http, "/api/meetings"),
    ] {
        let slow = std::thread::spawn(move || slow_body(addr, path));
        // Beside it, the node's viewers and the MC's nodes are served at once.
        let asked = Instant::now();
        let auth = format!("Bearer {ADMIN_TOKEN}");
        let (status, _, _) = http_get_with(node.http, "/api/node", &[("Authorization", &auth)]);
        assert_eq!(status, 200);
        sync(mc.http);
        assert!(
            asked.elapsed() < Duration::from_secs(1),
            "{what}: {:?}",
            asked.elapsed()
        );
        let (answer, after) = slow.join().expect("slow client");
        assert!(answer.starts_with("HTTP/1.1 408"), "{what}: {answer}");
        assert_eq!(code_of(&answer), 108_011, "{what}: {answer}");
        assert!(
            after >= BODY_TIMEOUT - Duration::from_millis(200) && after < BODY_TIMEOUT + SLACK,
            "{what}: cut after {after:?}"
        );
    }

    // The MC's per-client cap: the holder gets 4, the fifth is refused with its code,
    // and a node syncing from another address is served.
    let (held, refused) = hold_what_it_can(mc.http, 10);
    let refused = refused.expect("a connection over the cap is refused");
    assert_eq!(held.len(), 4, "{refused}");
    assert!(refused.starts_with("HTTP/1.1 429"), "{refused}");
    assert_eq!(code_of(&refused), 108_009, "{refused}");
    sync(mc.http);
    drop(held);
}

#[test]
fn a_node_and_an_mc_keep_serving_a_viewer_and_a_sync_under_a_low_descriptor_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mc = start_role_with_nofile(dir.path(), "mc", "mc", &mc_config(dir.path(), ""), 256);
    let node = start_role_with_nofile(
        dir.path(),
        "node",
        "node",
        &node_config(dir.path(), ""),
        256,
    );
    wait_for("the node's playlist", Duration::from_secs(30), || {
        media_playlist(node.http, "m")
    });

    for (what, addr) in [("node", node.http), ("mc", mc.http)] {
        // More attempts than the process has descriptors: without caps below the
        // limit, the holder would take them all.
        let (held, refused) = hold_what_it_can(addr, 300);
        let refused = refused.unwrap_or_else(|| panic!("{what}: 300 connections held"));
        assert!(refused.starts_with("HTTP/1.1 429"), "{what}: {refused}");
        assert_eq!(code_of(&refused), 108_009, "{what}: {refused}");
        // 256 descriptors: 204 connections in all, 20 from one address.
        assert_eq!(held.len(), 20, "{what}");

        // The viewer and the sync are served while the holder holds.
        assert!(
            media_playlist(node.http, "m").is_some(),
            "{what}: the viewer is not served"
        );
        sync(mc.http);
        drop(held);
    }
}
