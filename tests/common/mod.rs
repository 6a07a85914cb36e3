//! Helpers for process-level tests: start `brdyun node` with a config, find its ports,
//! talk HTTP to it, kill it.

#![allow(dead_code)]

pub mod cluster;
pub mod etcd;
pub mod lossy_relay;
pub mod mp4_check;
pub mod recording_nodes;
pub mod supervisor;
pub mod tones;
pub mod ts_check;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A running `brdyun node` process, killed when dropped.
pub struct NodeProcess {
    pub child: Child,
    pub http: SocketAddr,
    pub rtmp: Option<SocketAddr>,
    /// The HTTPS address from the `listening` line, when the node serves HTTPS.
    pub https: Option<SocketAddr>,
    /// The RTMPS address from the `listening` line, when RTMPS is configured.
    pub rtmps: Option<SocketAddr>,
    /// Where the process's log goes: a file beside its config, so a failing test's
    /// panic message comes first in its output and the logs' tails follow it.
    pub log: PathBuf,
}

/// How many of a process's last log lines a failing test prints.
const LOG_TAIL_LINES: usize = 40;

impl Drop for NodeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            let tail = &lines[lines.len().saturating_sub(LOG_TAIL_LINES)..];
            eprintln!(
                "--- last {} lines of {} ---\n{}",
                tail.len(),
                self.log.display(),
                tail.join("\n")
            );
        }
    }
}

impl NodeProcess {
    /// Writes `config` to `dir/name.toml` and starts a node with it.
    pub fn start(dir: &Path, name: &str, config: &str) -> NodeProcess {
        start_role(dir, name, "node", config)
    }

    /// Sends SIGKILL and waits.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.http)
    }
}

/// A minimal HTTP/1.0 GET: (status, headers text, body).
pub fn http_get(addr: SocketAddr, path: &str) -> (u16, String, Vec<u8>) {
    http_get_with(addr, path, &[])
}

/// [`http_get`] with request headers.
pub fn http_get_with(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, String, Vec<u8>) {
    let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    get_on(stream, addr, path, headers)
}

/// [`http_get_with`] as the viewer `viewer`, from its own loopback address
/// ([`viewer_ip`]: a node counts viewers, and binds passes, by the address it sees).
pub fn http_get_as(
    viewer: &str,
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, String, Vec<u8>) {
    get_on(connect_from(addr, viewer_ip(viewer)), addr, path, headers)
}

/// One GET on `stream`: (status, head, body); status 0 when the answer has no head.
fn get_on(
    mut stream: TcpStream,
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, String, Vec<u8>) {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut request = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).expect("write");
    let mut raw = Vec::new();
    // A reset after a whole answer still leaves the answer.
    let _ = stream.read_to_end(&mut raw);
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(raw.len());
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head, raw[(split + 4).min(raw.len())..].to_vec())
}

/// Polls `f` until it returns `Some`, or panics after `limit`.
pub fn wait_for<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// One segment line of a media playlist: (msn, pdt, extinf, uri).
#[derive(Debug, Clone, PartialEq)]
pub struct PlaylistEntry {
    pub msn: u64,
    pub discontinuity_seq: u64,
    pub program_date_time: String,
    pub extinf: String,
    pub uri: String,
}

/// The URI of a media playlist's last `EXT-X-MAP` (the init of its newest segments).
pub fn last_map(playlist: &str) -> &str {
    playlist
        .lines()
        .filter_map(|l| l.strip_prefix("#EXT-X-MAP:URI=\""))
        .filter_map(|l| l.strip_suffix('"'))
        .next_back()
        .unwrap_or_else(|| panic!("a map in\n{playlist}"))
}

/// Parses a live media playlist into its segments, numbered from EXT-X-MEDIA-SEQUENCE.
pub fn parse_media_playlist(text: &str) -> Vec<PlaylistEntry> {
    let mut msn = 0;
    let mut disc = 0;
    let (mut pdt, mut extinf) = (String::new(), String::new());
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("#EXT-X-MEDIA-SEQUENCE:") {
            msn = v.trim().parse().expect("msn");
        } else if let Some(v) = line.strip_prefix("#EXT-X-DISCONTINUITY-SEQUENCE:") {
            disc = v.trim().parse().expect("disc");
        } else if line == "#EXT-X-DISCONTINUITY" {
            disc += 1;
        } else if let Some(v) = line.strip_prefix("#EXT-X-PROGRAM-DATE-TIME:") {
            pdt = v.to_owned();
        } else if let Some(v) = line.strip_prefix("#EXTINF:") {
            extinf = v.to_owned();
        } else if !line.starts_with('#') && !line.trim().is_empty() {
            out.push(PlaylistEntry {
                msn,
                discontinuity_seq: disc,
                program_date_time: std::mem::take(&mut pdt),
                extinf: std::mem::take(&mut extinf),
                uri: line.to_owned(),
            });
            msn += 1;
        }
    }
    out
}

/// A free TCP port on loopback (bound and released; good enough for tests).
pub fn free_tcp_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// A free UDP port on loopback (bound and released; good enough for tests).
pub fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// A child process (ffmpeg, curl, a failing node) killed and reaped when dropped, so no
/// test path leaves one running. Its stderr is collected by a thread when piped.
pub struct ChildGuard {
    pub child: Child,
    what: String,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        // Whether the child had ended by itself before the kill (a failing test says so).
        let ended = self.child.try_wait().ok().flatten();
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let stderr = self
                .stderr
                .take()
                .and_then(|h| h.join().ok())
                .unwrap_or_default();
            let state = ended.map_or_else(|| "running".to_owned(), |s| format!("ended: {s}"));
            eprintln!(
                "--- {} ({state}), stderr ---\n{}",
                self.what,
                stderr.trim_end()
            );
        }
    }
}

impl ChildGuard {
    /// Spawns `cmd` with stdin closed, stdout discarded and stderr collected.
    pub fn spawn(what: &str, cmd: &mut Command) -> ChildGuard {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {what} ({cmd:?}): {e}"));
        let stderr = child.stderr.take().map(|mut pipe| {
            std::thread::spawn(move || {
                let mut text = String::new();
                let _ = pipe.read_to_string(&mut text);
                text
            })
        });
        ChildGuard {
            child,
            what: what.to_owned(),
            stderr,
        }
    }

    /// Waits for the exit, up to `limit`; `None` when it is still running.
    pub fn wait_timeout(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Ok(None) => return None,
                Err(e) => panic!("waiting for {}: {e}", self.what),
            }
        }
    }

    /// Waits for the exit (panics after `limit`, killing the child) and returns the
    /// status with everything the child wrote to stderr.
    pub fn finish(mut self, limit: Duration) -> (ExitStatus, String) {
        let status = self.wait_timeout(limit);
        let _ = self.child.kill();
        let _ = self.child.wait();
        let stderr = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        match status {
            Some(status) => (status, stderr),
            None => panic!(
                "{} still running after {limit:?}; stderr:\n{stderr}",
                self.what
            ),
        }
    }

    /// Kills the child now and returns its stderr.
    pub fn kill(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

/// An ffmpeg command that encodes `seconds` of a 320x180 25 fps test pattern with a
/// 440 Hz tone (H.264 with B-frames, one keyframe a second, AAC) in real time to
/// `format` at `url`.
pub fn ffmpeg_source(seconds: u32, format: &str, url: &str) -> Command {
    let mut cmd = ffmpeg_encoder(seconds, "testsrc2", 440);
    cmd.args(["-f", format, url]);
    cmd
}

/// The encoder of [`ffmpeg_source`] with another lavfi `pattern` and `tone` (Hz), its
/// output left to the caller: what a second, distinguishable encoder sends.
pub fn ffmpeg_encoder(seconds: u32, pattern: &str, tone: u32) -> Command {
    let mut cmd = Command::new("ffmpeg");
    cmd.args(["-nostdin", "-hide_banner", "-loglevel", "error"])
        .args(["-re", "-f", "lavfi", "-i"])
        .arg(format!("{pattern}=size=320x180:rate=25"))
        .args(["-re", "-f", "lavfi", "-i"])
        .arg(format!("sine=frequency={tone}"))
        .args([
            "-c:v", "libx264", "-preset", "veryfast", "-g", "25", "-bf", "2",
        ])
        .args(["-c:a", "aac", "-t", &seconds.to_string()]);
    cmd
}

/// Plays `url` with ffmpeg as an HLS client, decoding `seconds` of media to nowhere;
/// returns the exit status and the error lines ffmpeg printed. Bounded by `limit`.
pub fn ffmpeg_decode(url: &str, seconds: u32, limit: Duration) -> (ExitStatus, Vec<String>) {
    let mut cmd = Command::new("ffmpeg");
    cmd.args(["-nostdin", "-hide_banner", "-v", "error", "-i", url])
        .args(["-t", &seconds.to_string(), "-f", "null", "-"]);
    let (status, stderr) = ChildGuard::spawn("ffmpeg hls client", &mut cmd).finish(limit);
    let errors = stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect();
    (status, errors)
}

/// GET `path` and parse the body as JSON: (status, document).
pub fn http_get_json(addr: SocketAddr, path: &str) -> (u16, serde_json::Value) {
    let (status, head, body) = http_get(addr, path);
    let value = serde_json::from_slice(&body)
        .unwrap_or_else(|e| panic!("GET {path}: body is not JSON ({e}): {head}"));
    (status, value)
}

/// The live media playlist of `stream`, when the node serves one (HTTP 200).
pub fn media_playlist(addr: SocketAddr, stream: &str) -> Option<String> {
    let (status, _, body) = http_get(addr, &format!("/{stream}/mono.m3u8"));
    (status == 200).then(|| String::from_utf8_lossy(&body).into_owned())
}

/// Asserts that `stream` is configured but has not started: 503 with code 103002.
pub fn assert_not_started(addr: SocketAddr, stream: &str) {
    let (status, head, body) = http_get(addr, &format!("/{stream}/mono.m3u8"));
    let text = String::from_utf8_lossy(&body);
    assert_eq!(
        status, 503,
        "{stream} should not be started: {head}\n{text}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&body)
        .unwrap_or_else(|e| panic!("503 body is not JSON ({e}): {text}"));
    assert_eq!(doc["code"], 103002, "error document: {doc}");
}

/// Writes `config` to `dir/name.toml` and starts `brdyun <role> --config` with it
/// (`role` = "mc" or "node"); its `listening` line gives the addresses.
pub fn start_role(dir: &Path, name: &str, role: &str, config: &str) -> NodeProcess {
    start_command(
        Command::new(env!("CARGO_BIN_EXE_brdyun")),
        dir,
        name,
        role,
        config,
    )
}

/// [`start_role`] with the log filter `filter` in place of the tests' (`warn`): a test
/// that reads what a process logs at `info`.
pub fn start_role_logging(
    dir: &Path,
    name: &str,
    role: &str,
    config: &str,
    filter: &str,
) -> NodeProcess {
    let mut command = Command::new(env!("CARGO_BIN_EXE_brdyun"));
    command.env("RUST_LOG", filter);
    start_command(command, dir, name, role, config)
}

/// [`start_role`] under a descriptor limit of `nofile`, soft and hard (`ulimit -n` in
/// `sh`, which then execs the process): a host whose operator left a low limit.
pub fn start_role_with_nofile(
    dir: &Path,
    name: &str,
    role: &str,
    config: &str,
    nofile: u32,
) -> NodeProcess {
    let mut sh = Command::new("sh");
    sh.args([
        "-c",
        &format!("ulimit -n {nofile} && exec \"$0\" \"$@\""),
        env!("CARGO_BIN_EXE_brdyun"),
    ]);
    start_command(sh, dir, name, role, config)
}

/// Starts `brdyun node` on one CPU (`taskset -c cpu`): a node with a core of its own,
/// so a test's load generator on the other cores can offer it more than it serves.
pub fn start_node_on_cpu(dir: &Path, name: &str, config: &str, cpu: usize) -> NodeProcess {
    let mut taskset = Command::new("taskset");
    taskset
        .args(["-c", &cpu.to_string()])
        .arg(env!("CARGO_BIN_EXE_brdyun"));
    start_command(taskset, dir, name, "node", config)
}

/// The log filter of the processes a test starts: `warn`, or `BRDYUN_TEST_LOG` when set
/// (e.g. `info` to see why a failing run did what it did).
fn test_log_filter() -> String {
    std::env::var("BRDYUN_TEST_LOG").unwrap_or_else(|_| "warn".to_owned())
}

/// `config` with `trust_loopback = true` in the role's own section (`[node]` or `[mc]`),
/// unless it says otherwise: the test processes listen on loopback and call the
/// admin API and sync without tokens, as the demo does. A test of the default sets
/// `trust_loopback = false`.
fn trusting_loopback(role: &str, config: &str) -> String {
    if config.contains("trust_loopback") {
        return config.to_owned();
    }
    let section = format!("[{role}]\n");
    if config.starts_with(&section) {
        format!(
            "{section}trust_loopback = true\n{}",
            &config[section.len()..]
        )
    } else if let Some(at) = config.find(&format!("\n{section}")) {
        let end = at + 1 + section.len();
        format!(
            "{}trust_loopback = true\n{}",
            &config[..end],
            &config[end..]
        )
    } else {
        format!("{section}trust_loopback = true\n{config}")
    }
}

/// The `brdyun` binary under test.
fn brdyun_command() -> Command {
    Command::new(env!("CARGO_BIN_EXE_brdyun"))
}

/// Runs `command role --config dir/name.toml` and waits for its `listening` line.
fn start_command(
    mut command: Command,
    dir: &Path,
    name: &str,
    role: &str,
    config: &str,
) -> NodeProcess {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, trusting_loopback(role, config)).expect("write config");
    // Appended to: a restarted process's log follows its previous run's.
    let log = dir.join(format!("{name}.log"));
    let log_file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .expect("open the process log");
    if !command.get_envs().any(|(key, _)| key == "RUST_LOG") {
        command.env("RUST_LOG", test_log_filter());
    }
    let child = command
        .args([role, "--config"])
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(log_file)
        .spawn()
        .expect("spawn brdyun");
    // The guard kills the child on every path, including a failed start.
    let mut process = NodeProcess {
        child,
        http: SocketAddr::from(([0, 0, 0, 0], 0)),
        rtmp: None,
        https: None,
        rtmps: None,
        log,
    };
    let stdout = process.child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        assert!(Instant::now() < deadline, "{role} {name} did not start");
        let Some(Ok(line)) = lines.next() else {
            panic!("{role} {name} exited before listening")
        };
        if let Some(rest) = line.strip_prefix("listening ") {
            let field = |key: &str| {
                rest.split_whitespace()
                    .find_map(|kv| kv.strip_prefix(key))
                    .and_then(|v| v.parse::<SocketAddr>().ok())
            };
            process.http = field("http=").expect("http address");
            process.rtmp = field("rtmp=");
            process.https = field("https=");
            process.rtmps = field("rtmps=");
            // Keep draining stdout so the child never blocks on a full pipe.
            std::thread::spawn(move || for _ in lines {});
            return process;
        }
    }
}

/// One HTTP/1.0 request with headers and a body: (status, body parsed as JSON, or
/// `Null` when it is not JSON).
pub fn http_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, serde_json::Value) {
    // A body is JSON unless the test says otherwise: the operator APIs take nothing else.
    let given = headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-type"));
    let mut all = headers.to_vec();
    if !body.is_empty() && !given {
        all.push(("Content-Type", "application/json"));
    }
    http_request_bytes(addr, method, path, &all, body.as_bytes())
}

/// [`http_request`] with a body of any bytes (not necessarily UTF-8).
pub fn http_request_bytes(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, serde_json::Value) {
    let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    exchange(stream, addr, method, path, headers, body)
}

/// The loopback address the test viewer `name` connects from: a node counts viewers
/// by the address it sees, so two named viewers are two addresses (127.0.x.y, never
/// 127.0.0.1).
pub fn viewer_ip(name: &str) -> std::net::IpAddr {
    let hash = name.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    let [_, _, x, y] = hash.to_be_bytes();
    std::net::IpAddr::from([127, 0, x.max(1), y.clamp(2, 254)])
}

/// A connection to `addr` from the local address `from` (any port).
pub fn connect_from(addr: SocketAddr, from: std::net::IpAddr) -> TcpStream {
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        None,
    )
    .expect("socket");
    socket
        .bind(&SocketAddr::new(from, 0).into())
        .expect("bind the client address");
    socket
        .connect_timeout(&addr.into(), Duration::from_secs(5))
        .expect("connect");
    socket.into()
}

/// [`http_request`] as the viewer `viewer` ([`viewer_ip`]).
pub fn http_request_as(
    viewer: &str,
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, serde_json::Value) {
    let stream = connect_from(addr, viewer_ip(viewer));
    exchange(stream, addr, method, path, headers, b"")
}

/// Writes one HTTP/1.0 request on `stream` and reads the whole answer: (status, JSON
/// body or null).
fn exchange(
    mut stream: TcpStream,
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, serde_json::Value) {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut head = format!(
        "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).expect("write head");
    stream.write_all(body).expect("write body");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read");
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("header end");
    let status = String::from_utf8_lossy(&raw[..split])
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status");
    let json = serde_json::from_slice(&raw[split + 4..]).unwrap_or(serde_json::Value::Null);
    (status, json)
}

/// Opens a meeting's master playlist on a node as `viewer` (from its own address,
/// [`viewer_ip`]): (status, code or 0).
pub fn open_meeting(node: SocketAddr, meeting: &str, viewer: &str) -> (u16, u64) {
    let (status, body) =
        http_request_as(viewer, node, "GET", &format!("/{meeting}/index.m3u8"), &[]);
    (status, body["code"].as_u64().unwrap_or(0))
}

/// Unix milliseconds of an RFC 3339 UTC time as the playlists write it
/// (`2026-11-30T10:39:47.146Z`).
pub fn parse_pdt(text: &str) -> i64 {
    let n = |range: std::ops::Range<usize>| -> i64 { text[range].parse().expect("pdt digits") };
    let (y, m, d) = (n(0..4), n(5..7), n(8..10));
    let (hh, mm, ss, ms) = (n(11..13), n(14..16), n(17..19), n(20..23));
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    ((days * 86_400 + hh * 3600 + mm * 60 + ss) * 1000) + ms
}

/// The node token the process tests' MCs are configured with.
pub const NODE_TOKEN: &str = "node-secret-for-these-tests";

/// GET `path` with the node token, as a node pulls from its MC (an MC's meeting files
/// are for its nodes); a node's own files answer the same with or without it.
pub fn http_get_as_node(addr: SocketAddr, path: &str) -> (u16, String, Vec<u8>) {
    let bearer = format!("Bearer {NODE_TOKEN}");
    http_get_with(addr, path, &[("Authorization", &bearer)])
}
