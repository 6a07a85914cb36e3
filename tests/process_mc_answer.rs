//! A node checks its MC's answer (docs/meetings.md, "What a node checks in its MC's
//! answer"): a real `brdyun node` syncs with a fake MC on loopback that answers a
//! rung named `../../../../escape`, an id that is a path, a ladder over the cap and a
//! list of meetings over the cap. The node serves the good meeting, starts none of the
//! bad ones, creates nothing outside its data directory and logs each refusal's code.
//! A node whose token would travel in clear refuses to start.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::cluster::NodeConfig;
use common::{http_get, wait_for, ChildGuard, NodeProcess};
use serde_json::{json, Value};

/// A live meeting of the answer, with `extra` fields.
fn live(id: &str, extra: Value) -> Value {
    let mut view = json!({"id": id, "state": "live", "locked": false, "viewers": 0});
    if let (Some(view), Some(extra)) = (view.as_object_mut(), extra.as_object()) {
        view.extend(extra.clone());
    }
    view
}

/// Answers one request: the sync answer on `/api/nodes/sync`, 404 elsewhere (the
/// node's relay pulls), then closes.
fn answer_one(mut stream: TcpStream, answer: &[u8]) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let sync = head.starts_with(b"GET /api/nodes/sync");
    let (status, body) = if sync {
        ("200 OK", answer)
    } else {
        ("404 Not Found", &b"{}"[..])
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(reply.as_bytes());
    let _ = stream.write_all(body);
}

/// A fake MC on loopback answering every sync with `answer`, for the test's life.
fn fake_mc(answer: Value) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake mc");
    let addr = listener.local_addr().expect("its address");
    let body = serde_json::to_vec(&answer).expect("json");
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            answer_one(stream, &body);
        }
    });
    addr
}

/// A log's text without its terminal colours (`ESC [ … m`).
fn plain(log: &str) -> String {
    let mut out = String::with_capacity(log.len());
    let mut chars = log.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Every file and directory under `dir`, recursively.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(next) = todo.pop() {
        for entry in std::fs::read_dir(&next).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path.clone());
            }
            out.push(path);
        }
    }
    out
}

#[test]
fn a_forged_mc_answer_starts_no_bad_meeting_and_writes_nothing_outside_the_data_dir() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    // Filler meetings that are not live take the answer past the 10,000 a node takes;
    // the live meeting listed after them is over the cap.
    let mut meetings = vec![
        live("good", json!({})),
        live(
            "escape",
            json!({"ladder": ["source", "../../../../escape"]}),
        ),
        live("../../../../escape-id", json!({})),
        live("hidden", json!({"ladder": ["source", ".hidden"]})),
        live(
            "tall",
            json!({"ladder": ["source", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8"]}),
        ),
    ];
    meetings.extend(
        (0..10_000).map(
            |i| json!({"id": format!("f{i}"), "state": "closed", "locked": false, "viewers": 0}),
        ),
    );
    meetings.push(live("late", json!({})));
    let mc = fake_mc(json!({ "meetings": meetings }));

    let data = dir.path().join("node").join("data");
    let config = NodeConfig {
        mc_urls: vec![format!("http://{mc}")],
        token: None,
        timeout: Some("2".to_owned()),
        stream: Some("segment_duration = 1\ndvr = { enabled = true }\n".to_owned()),
        ..NodeConfig::new("n")
    }
    .render(&data);
    let node = NodeProcess::start(dir.path(), "n", &config);

    // The good meeting is served: its stream runs and its archive is where it belongs.
    wait_for("the good meeting's stream", Duration::from_secs(20), || {
        (http_get(node.http, "/api/streams/good").0 == 200).then_some(())
    });
    assert!(data.join("archive").join("good").join("ts").is_dir());
    // Each refusal is logged with its code.
    let log = wait_for("the refusals in the log", Duration::from_secs(20), || {
        let log = plain(&std::fs::read_to_string(&node.log).unwrap_or_default());
        ["code=114001", "code=114002", "code=114003"]
            .iter()
            .all(|code| log.contains(code))
            .then_some(log)
    });
    assert!(
        log.contains("../../../../escape"),
        "the bad rung is named: {log}"
    );
    // None of the bad meetings runs, nor the one past the cap.
    for id in ["escape", "hidden", "tall", "late"] {
        let (status, _, _) = http_get(node.http, &format!("/api/streams/{id}"));
        assert_eq!(status, 404, "{id} must not run");
    }
    // Nothing was made outside the data directory but the test's own files.
    let outside: Vec<PathBuf> = tree(dir.path())
        .into_iter()
        .filter(|p| !p.starts_with(&data) && !data.starts_with(p))
        .filter(|p| !["n.toml", "n.log"].iter().any(|f| p.ends_with(f)))
        .collect();
    assert!(outside.is_empty(), "made outside the data dir: {outside:?}");
    let inside: Vec<PathBuf> = tree(&data);
    assert!(
        inside
            .iter()
            .all(|p| !p.to_string_lossy().contains("escape")
                && !p.to_string_lossy().contains("hidden")),
        "{inside:?}"
    );
}

#[test]
fn a_node_token_over_plain_http_off_loopback_stops_the_node() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("n.toml");
    let config = format!(
        "[node]\nname = \"n\"\nhttp = \"127.0.0.1:0\"\ndata_dir = \"{}\"\n[mc]\nurl = \"http://mc.example.net:9000\"\ntoken = \"node-secret\"\n",
        dir.path().join("data").display()
    );
    std::fs::write(&path, &config).expect("write the config");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_brdyun"));
    cmd.args(["node", "--config"]).arg(&path);
    let (status, stderr) =
        ChildGuard::spawn("brdyun node", &mut cmd).finish(Duration::from_secs(15));
    assert!(
        !status.success(),
        "the node started with its token in clear"
    );
    assert!(
        stderr.contains("mc.token would travel in clear"),
        "the error says why: {stderr}"
    );

    // Said explicitly, the operator's choice is taken: the node starts.
    let allowed = config.replace("token = ", "allow_insecure = true\ntoken = ");
    let node = NodeProcess::start(dir.path(), "allowed", &allowed);
    assert_eq!(http_get(node.http, "/api/node").0, 200);
}
