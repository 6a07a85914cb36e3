//! A real S3-compatible server on loopback for tests: moto's server (`pip install
//! 'moto[server]'`, installed by `scripts/test`), which answers a create-only put on an
//! existing key with 412 as S3 does. Stopped by PID when dropped. Its objects live in
//! its memory: a test that plays an unreachable bucket puts a [`Gate`] in front of it
//! rather than stopping it.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A running server.
pub struct S3Server {
    pub addr: SocketAddr,
    child: Child,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// One raw HTTP/1.0 request; the status code, or `None` when nothing answers.
fn request(addr: SocketAddr, method: &str, path: &str) -> Option<u16> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let text = format!("{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Length: 0\r\n\r\n");
    stream.write_all(text.as_bytes()).ok()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).ok()?;
    let line = String::from_utf8_lossy(&raw);
    line.split_whitespace().nth(1)?.parse().ok()
}

impl S3Server {
    /// Starts the server on a free loopback port and waits until it answers (it takes
    /// under two seconds on the test machine).
    pub fn start() -> S3Server {
        let port = free_port();
        let child = Command::new("python3")
            .args([
                "-m",
                "moto.server",
                "-H",
                "127.0.0.1",
                "-p",
                &port.to_string(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 -m moto.server (scripts/test installs moto[server])");
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let server = S3Server { addr, child };
        let deadline = Instant::now() + Duration::from_secs(30);
        while request(addr, "GET", "/").is_none() {
            assert!(Instant::now() < deadline, "the S3 server did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    /// Creates a bucket.
    pub fn create_bucket(&self, name: &str) {
        assert_eq!(request(self.addr, "PUT", &format!("/{name}")), Some(200));
    }

    /// The server's endpoint URL.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A TCP relay in front of a server that can be shut: while shut it refuses every
/// connection and cuts the open ones, as an unreachable bucket does.
pub struct Gate {
    pub addr: SocketAddr,
    open: Arc<AtomicBool>,
}

impl Gate {
    /// A gate to `target`, open.
    pub fn new(target: SocketAddr) -> Gate {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let open = Arc::new(AtomicBool::new(true));
        let flag = Arc::clone(&open);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if !flag.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(target) else {
                    continue;
                };
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    let flag = Arc::clone(&flag);
                    std::thread::spawn(move || {
                        let _ = from.set_read_timeout(Some(Duration::from_millis(100)));
                        let mut buf = [0u8; 64 * 1024];
                        loop {
                            if !flag.load(Ordering::SeqCst) {
                                break;
                            }
                            match from.read(&mut buf) {
                                Ok(0) => break,
                                Ok(n) => {
                                    if to.write_all(&buf[..n]).is_err() {
                                        break;
                                    }
                                }
                                Err(e)
                                    if matches!(
                                        e.kind(),
                                        std::io::ErrorKind::WouldBlock
                                            | std::io::ErrorKind::TimedOut
                                    ) => {}
                                Err(_) => break,
                            }
                        }
                        let _ = to.shutdown(std::net::Shutdown::Both);
                        let _ = from.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        Gate { addr, open }
    }

    /// Opens or shuts the gate.
    pub fn set_open(&self, open: bool) {
        self.open.store(open, Ordering::SeqCst);
    }

    /// The gate's endpoint URL.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }
}
