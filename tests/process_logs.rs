//! Logs an operator can ship, checked on the real binary: JSON lines that parse and
//! carry the request id, `X-Request-Id` on every kind of answer (served, refused with a
//! code, shed), an unsafe incoming id replaced, the access log (off by default; on,
//! each request once, secrets in the query redacted), and an input that keeps failing
//! costing a handful of lines, not two per attempt.

mod common;

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{free_tcp_port, http_get_with, http_request, wait_for, ChildGuard, NodeProcess};

/// The processes these tests start log at `info` (the access log's level).
fn log_at_info() {
    std::env::set_var("BRDYUN_TEST_LOG", "info");
}

fn node_config(dir: &Path, log: &str) -> String {
    format!(
        "[node]\nname = \"logs\"\nhttp = \"127.0.0.1:0\"\ndata_dir = \"{}\"\n{log}",
        dir.join("data").display()
    )
}

/// Every line of the process's log, each parsed as JSON (a line that is not JSON fails
/// the test).
fn json_lines(node: &NodeProcess) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(&node.log).expect("the log");
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect()
}

/// The value of `name` in an answer's head.
fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim()
            .eq_ignore_ascii_case(name)
            .then_some(value.trim())
    })
}

/// The access lines of the log.
fn access_lines(lines: &[serde_json::Value]) -> Vec<&serde_json::Value> {
    lines
        .iter()
        .filter(|line| line["target"] == "brdyun::access")
        .collect()
}

#[test]
fn json_lines_carry_the_request_id_of_the_request_they_were_written_for() {
    log_at_info();
    let dir = tempfile::tempdir().expect("tempdir");
    let node = NodeProcess::start(
        dir.path(),
        "json",
        &node_config(dir.path(), "[log]\nformat = \"json\"\n"),
    );
    // The operator door refuses another origin and logs it, inside the request.
    let (status, head, _) = http_get_with(
        node.http,
        "/api/node",
        &[
            ("X-Request-Id", "trace-4711.a"),
            ("Origin", "http://elsewhere.example"),
        ],
    );
    assert_eq!(status, 403, "{head}");
    assert_eq!(header(&head, "x-request-id"), Some("trace-4711.a"));
    let refused = wait_for("the door's line", Duration::from_secs(10), || {
        json_lines(&node)
            .into_iter()
            .find(|line| line["message"] == "operator api call refused at the door")
    });
    assert_eq!(refused["request_id"], "trace-4711.a", "{refused}");
    assert_eq!(refused["level"], "INFO");
    assert_eq!(refused["code"], 108_013);
    assert!(refused["timestamp"]
        .as_str()
        .is_some_and(|t| t.ends_with('Z')));
    assert!(refused["target"].is_string());
    // Lines outside a request carry none.
    let lines = json_lines(&node);
    let started = lines
        .iter()
        .find(|line| line["message"] == "node started")
        .expect("the start line");
    assert!(started.get("request_id").is_none(), "{started}");
    // The access log is off by default.
    assert!(access_lines(&lines).is_empty());
}

#[test]
fn every_answer_carries_its_request_id_and_an_unsafe_one_is_replaced() {
    log_at_info();
    let dir = tempfile::tempdir().expect("tempdir");
    let node = NodeProcess::start(dir.path(), "ids", &node_config(dir.path(), ""));
    let id_of = |path: &str, given: Option<&str>| {
        let headers: Vec<(&str, &str)> = given.map(|v| ("X-Request-Id", v)).into_iter().collect();
        let (status, head, _) = http_get_with(node.http, path, &headers);
        let id = header(&head, "x-request-id").map(str::to_owned);
        (
            status,
            id.unwrap_or_else(|| panic!("no X-Request-Id: {head}")),
        )
    };
    // Served.
    assert_eq!(
        id_of("/api/node", Some("served-1")),
        (200, "served-1".into())
    );
    // Refused with a code.
    assert_eq!(
        id_of("/no/such/path", Some("refused-1")),
        (404, "refused-1".into())
    );
    // Fresh ids when none is given: this process's prefix, a counter.
    let (_, first) = id_of("/api/node", None);
    let (_, second) = id_of("/api/node", None);
    let fresh = |id: &str| {
        id.split_once('-').is_some_and(|(prefix, count)| {
            prefix.len() == 8
                && prefix.bytes().all(|b| b.is_ascii_hexdigit())
                && !count.is_empty()
                && count.bytes().all(|b| b.is_ascii_hexdigit())
        })
    };
    assert!(fresh(&first) && fresh(&second), "{first} {second}");
    assert_ne!(first, second);
    assert_eq!(
        first.split_once('-').map(|p| p.0),
        second.split_once('-').map(|p| p.0)
    );
    // Unsafe ids are replaced, not echoed.
    let long = "x".repeat(65);
    for unsafe_id in ["two words", "quote\"d", "semi;colon{}", long.as_str()] {
        let (status, id) = id_of("/api/node", Some(unsafe_id));
        assert_eq!(status, 200);
        assert!(fresh(&id), "{unsafe_id:?} answered with {id:?}");
    }
    // Shed: a fault rule over every priority sheds the node's status route.
    let (status, doc) = http_request(
        node.http,
        "POST",
        "/api/fault-rules",
        &[],
        r#"{"duration_seconds":60}"#,
    );
    assert_eq!(status, 201, "{doc}");
    let (status, head, body) =
        http_get_with(node.http, "/api/streams", &[("X-Request-Id", "shed-1")]);
    assert_eq!(status, 503, "{}", String::from_utf8_lossy(&body));
    assert!(header(&head, "retry-after").is_some(), "{head}");
    assert_eq!(header(&head, "x-request-id"), Some("shed-1"));
}

#[test]
fn the_access_log_writes_each_request_once_with_its_secrets_redacted() {
    log_at_info();
    let dir = tempfile::tempdir().expect("tempdir");
    let node = NodeProcess::start(
        dir.path(),
        "access",
        &node_config(
            dir.path(),
            "[log]\nformat = \"json\"\naccess = true\naccess_sample = 1.0\n",
        ),
    );
    let requests = 12;
    for i in 0..requests {
        let id = format!("access-{i}");
        let path = format!("/api/node?login=ann&token=hunter2-{i}&stream_key=k{i}&n={i}");
        let (status, _, _) = http_get_with(node.http, &path, &[("X-Request-Id", id.as_str())]);
        assert_eq!(status, 200);
    }
    let (status, _, _) = http_get_with(node.http, "/missing", &[("X-Request-Id", "miss")]);
    assert_eq!(status, 404);
    let lines = wait_for("every access line", Duration::from_secs(10), || {
        let lines = json_lines(&node);
        (access_lines(&lines).len() > requests).then_some(lines)
    });
    let access = access_lines(&lines);
    assert_eq!(access.len(), requests + 1, "each request once");
    for i in 0..requests {
        let id = format!("access-{i}");
        let line = access
            .iter()
            .find(|line| line["request_id"] == id.as_str())
            .unwrap_or_else(|| panic!("no line for {id}"));
        assert_eq!(
            line["path"],
            format!("/api/node?login=ann&token=REDACTED&stream_key=REDACTED&n={i}"),
            "{line}"
        );
        assert_eq!(line["method"], "GET");
        assert_eq!(line["status"], 200);
        assert_eq!(line["route"], "status");
        assert!(line["bytes"].as_u64().is_some_and(|b| b > 0), "{line}");
        assert!(line["duration_ms"].is_number(), "{line}");
        assert!(line["priority"].is_number(), "{line}");
        assert_eq!(line["shed"], false);
        assert!(
            line["client"]
                .as_str()
                .is_some_and(|c| c.starts_with("127.0.0.1:")),
            "{line}"
        );
    }
    let missing = access
        .iter()
        .find(|line| line["request_id"] == "miss")
        .expect("the 404's line");
    assert_eq!(missing["status"], 404);
    let text = std::fs::read_to_string(&node.log).expect("the log");
    assert!(!text.contains("hunter2"), "a token reached the log");
}

#[test]
fn a_sampled_access_log_still_writes_every_shed_answer() {
    log_at_info();
    let dir = tempfile::tempdir().expect("tempdir");
    let node = NodeProcess::start(
        dir.path(),
        "sampled",
        &node_config(
            dir.path(),
            "[log]\nformat = \"json\"\naccess = true\naccess_sample = 0.0\n",
        ),
    );
    for _ in 0..5 {
        assert_eq!(http_get_with(node.http, "/api/node", &[]).0, 200);
    }
    let (status, doc) = http_request(
        node.http,
        "POST",
        "/api/fault-rules",
        &[],
        r#"{"duration_seconds":60}"#,
    );
    assert_eq!(status, 201, "{doc}");
    for i in 0..3 {
        let id = format!("shed-{i}");
        let (status, _, _) = http_get_with(node.http, "/api/streams", &[("X-Request-Id", &id)]);
        assert_eq!(status, 503);
    }
    let lines = wait_for("the shed answers' lines", Duration::from_secs(10), || {
        let lines = json_lines(&node);
        (access_lines(&lines).len() >= 3).then_some(lines)
    });
    let access = access_lines(&lines);
    assert_eq!(access.len(), 3, "only the shed answers: {access:?}");
    for line in access {
        assert_eq!(line["status"], 503);
        assert_eq!(line["shed"], true, "{line}");
        assert!(line["request_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("shed-")));
    }
}

/// An HTTP origin answering every request `503` until dropped; counts the requests.
struct FailingOrigin {
    addr: SocketAddr,
    requests: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl FailingOrigin {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr");
        let requests = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (count, stopped) = (Arc::clone(&requests), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((mut stream, _)) => {
                        let _ = stream.set_nonblocking(false);
                        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                        let mut head = [0u8; 2048];
                        let _ = stream.read(&mut head);
                        count.fetch_add(1, Ordering::Relaxed);
                        let _ = stream.write_all(
                            b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                        );
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        Self {
            addr,
            requests,
            stop,
        }
    }
}

impl Drop for FailingOrigin {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[test]
fn an_input_failing_for_seconds_costs_a_handful_of_lines() {
    log_at_info();
    let origin = FailingOrigin::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("http://{}/m/mpegts", origin.addr);
    let node = NodeProcess::start(
        dir.path(),
        "failing",
        &node_config(
            dir.path(),
            &format!("[log]\nformat = \"json\"\n[[stream]]\nname = \"m\"\ninputs = [\"{url}\"]\n"),
        ),
    );
    // The pull retries with backoff (0.25 s doubling to 2 s): at least 6 attempts in
    // the first ten seconds.
    let started = Instant::now();
    wait_for("six failed pulls", Duration::from_secs(30), || {
        (origin.requests.load(Ordering::Relaxed) >= 6).then_some(())
    });
    let attempts = origin.requests.load(Ordering::Relaxed);
    let lines = json_lines(&node);
    let about_the_input: Vec<_> = lines
        .iter()
        .filter(|line| line.to_string().contains(&url))
        .collect();
    // One line when it went down; a reminder comes only after a minute.
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(
        about_the_input.len(),
        1,
        "{attempts} attempts: {about_the_input:?}"
    );
    assert_eq!(about_the_input[0]["message"], "input down");
    assert_eq!(about_the_input[0]["level"], "WARN");
    assert!(
        about_the_input[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("503")),
        "{}",
        about_the_input[0]
    );
}

#[test]
fn the_flag_wins_over_the_config_and_a_config_error_is_plain_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let addr = SocketAddr::from(([127, 0, 0, 1], free_tcp_port()));
    let config = dir.path().join("node.toml");
    std::fs::write(
        &config,
        format!(
            "[node]\nname = \"flag\"\nhttp = \"{addr}\"\ndata_dir = \"{}\"\ntrust_loopback = true\n[log]\nformat = \"json\"\n",
            dir.path().join("data").display()
        ),
    )
    .expect("write config");
    let node = ChildGuard::spawn(
        "node --log-format text",
        Command::new(env!("CARGO_BIN_EXE_brdyun"))
            .args(["node", "--config"])
            .arg(&config)
            .args(["--log-format", "text"])
            .env("RUST_LOG", "info"),
    );
    wait_for("the node's listener", Duration::from_secs(20), || {
        TcpStream::connect(addr).ok()
    });
    let (status, _, _) = http_get_with(
        addr,
        "/api/node",
        &[
            ("X-Request-Id", "text-7"),
            ("Origin", "http://elsewhere.example"),
        ],
    );
    assert_eq!(status, 403);
    let stderr = node.kill();
    let refused = stderr
        .lines()
        .find(|line| line.contains("operator api call refused at the door"))
        .unwrap_or_else(|| panic!("no refusal line in:\n{stderr}"));
    assert!(!refused.starts_with('{'), "text, not JSON: {refused}");
    assert!(refused.contains(" INFO request_id=text-7 "), "{refused}");
    assert!(
        stderr.lines().all(|line| !line.starts_with('{')),
        "{stderr}"
    );

    // A config the process cannot use: the reason in plain words, no log line.
    std::fs::write(
        &config,
        format!("[node]\nname = \"flag\"\nhttp = \"{addr}\"\n[log]\naccess_sample = 2.0\n"),
    )
    .expect("write config");
    let (status, stderr) = ChildGuard::spawn(
        "node with a bad [log]",
        Command::new(env!("CARGO_BIN_EXE_brdyun"))
            .args(["--log-format", "json", "node", "--config"])
            .arg(&config),
    )
    .finish(Duration::from_secs(20));
    assert!(!status.success());
    assert!(
        stderr.contains("access_sample must be between 0.0 and 1.0"),
        "{stderr}"
    );
    assert!(!stderr.contains("\"level\""), "{stderr}");
}
