//! The demo's terminal stays readable: `brdyun demo` prints its URL block before
//! anything else on stdout, and in its first minute — with ffmpeg on `PATH` (the
//! ladder is encoded) and without it (the source alone) — logs at most a handful of
//! warnings, even at info (`-v`), while its `live` meeting waits for a publisher.

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the demo runs: its first minute, when a noisy demo shows.
const RUN: Duration = Duration::from_secs(60);
/// The most warnings a minute of the demo may log (none is expected: a handful
/// leaves room for a real one, such as a slow machine's late segment).
const MOST_WARNINGS: usize = 5;

/// The demo process, killed when dropped.
struct Demo(Child);

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A first port for the demo whose every port is free now: HTTP `port..port + 4`,
/// gossip (UDP) `port + 10..port + 13` and RTMP `1935 + port - 8080`. Below the
/// kernel's ephemeral range, so other tests' port-0 listeners do not take them; `salt`
/// keeps two demos of this file apart.
fn free_demo_port(salt: u16) -> u16 {
    let start = 10_000 + (std::process::id() % 500) as u16 * 20 + salt * 10_000;
    (start..start + 5_000)
        .step_by(20)
        .find(|&port| {
            let tcp = (port..port + 4).chain([1935 + port - 8080]);
            tcp.into_iter()
                .all(|p| TcpListener::bind(("127.0.0.1", p)).is_ok())
                && (port + 10..port + 13).all(|p| UdpSocket::bind(("127.0.0.1", p)).is_ok())
        })
        .expect("a free block of ports for the demo")
}

/// Runs the demo on `port` for [`RUN`] with `path` as its `PATH`; returns its stdout
/// lines until the URL block ends and its stderr.
fn run_demo(dir: &Path, port: u16, path: &str) -> (Vec<String>, String) {
    let stderr_path = dir.join("demo.stderr");
    let stderr = std::fs::File::create(&stderr_path).expect("the demo's stderr file");
    let mut demo = Demo(
        Command::new(env!("CARGO_BIN_EXE_brdyun"))
            .args(["demo", "--port", &port.to_string(), "-v"])
            .env("PATH", path)
            // Each demo its own data directory (it keeps it under the temp dir).
            .env("TMPDIR", dir)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("spawn the demo"),
    );
    let stdout = demo.0.stdout.take().expect("stdout");
    let started = Instant::now();
    let reader = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let last = line.starts_with("Ctrl-C");
            lines.push(line);
            if last {
                break;
            }
        }
        lines
    });
    let lines = reader.join().expect("stdout reader");
    assert!(
        lines.last().is_some_and(|l| l.starts_with("Ctrl-C")),
        "the demo printed its URL block: {lines:#?}"
    );
    std::thread::sleep(RUN.saturating_sub(started.elapsed()));
    drop(demo);
    let stderr = std::fs::read_to_string(&stderr_path).expect("the demo's stderr");
    (lines, stderr)
}

fn warnings(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "))
        .collect()
}

fn check(with_ffmpeg: bool) {
    let dir = tempfile::tempdir().unwrap();
    let port = free_demo_port(u16::from(with_ffmpeg));
    let path = if with_ffmpeg {
        std::env::var("PATH").unwrap_or_default()
    } else {
        // Nothing the demo runs is on it: ffmpeg is not found.
        dir.path().join("empty").display().to_string()
    };
    let (stdout, stderr) = run_demo(dir.path(), port, &path);
    assert!(
        stdout[0].is_empty() || stdout[0].starts_with("brdyun demo"),
        "the URL block comes first: {stdout:#?}"
    );
    assert!(
        stdout.iter().any(|l| l.contains("watch:")),
        "the URL block names where to watch: {stdout:#?}"
    );
    // The live meeting's RTMPS URL beside the RTMP one, its certificate flagged
    // (docs/ingest.md).
    let rtmps = stdout
        .iter()
        .find(|l| l.contains("'rtmps://localhost:"))
        .expect("an rtmps publish line");
    assert!(
        rtmps.contains("/live/live?key=") && rtmps.contains("self-signed"),
        "{rtmps}"
    );
    let ladder = stdout
        .iter()
        .find(|l| l.contains("ladder:"))
        .expect("a ladder line");
    assert_eq!(ladder.contains("off"), !with_ffmpeg, "{ladder}");
    // The meetings' recordings, in the store the three nodes share.
    assert!(
        stdout
            .iter()
            .any(|l| l.contains("recordings:") && l.contains("/api/meetings/meeting/recordings")),
        "a recordings line: {stdout:#?}"
    );
    assert!(
        stdout.iter().any(|l| l.contains("recording:")
            && l.contains("/meeting/recording.m3u8")
            && l.contains("recording-progressive.mp4")),
        "a whole-recording line: {stdout:#?}"
    );
    assert!(
        stderr.contains("recordings go to object storage store=file://"),
        "the nodes said where recordings go"
    );
    let warned = warnings(&stderr);
    assert!(
        warned.len() <= MOST_WARNINGS,
        "{} warnings in the demo's first minute (ffmpeg on PATH: {with_ffmpeg}):\n{}",
        warned.len(),
        warned.join("\n")
    );
    assert!(
        stderr.contains("meeting waiting for its publisher"),
        "the live meeting's wait is said at info"
    );
}

#[test]
fn the_demos_first_minute_with_ffmpeg_warns_at_most_a_handful_of_times() {
    check(true);
}

#[test]
fn the_demos_first_minute_without_ffmpeg_warns_at_most_a_handful_of_times() {
    check(false);
}
