//! No open door by default, with real processes: an MC off loopback makes its node
//! token and refuses anonymous syncs; bad secrets stop a start with the reason; on an
//! MC pair a node's viewer report lives under an etcd lease and an MC reads a prefix
//! of more keys than one page.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::cluster::{self, McConfig};
use common::etcd::EtcdCluster;
use common::{http_request, start_role, wait_for, NodeProcess};
use serde_json::{json, Value};

const ADMIN: &str = "Bearer admin-token-for-the-door-tests";
const NODE: &str = "node-token-for-the-door-tests";

/// The loopback address of a process listening on `0.0.0.0`.
fn local(addr: SocketAddr) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], addr.port()))
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .expect("the file exists")
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn an_mc_off_loopback_creates_its_node_token_and_refuses_anonymous_syncs() {
    let dir = tempfile::tempdir().expect("dir");
    let data = dir.path().join("mc");
    let mc = start_role(
        dir.path(),
        "mc",
        "mc",
        &format!(
            "[mc]\nhttp = \"0.0.0.0:0\"\ndata_dir = \"{}\"\n[[meeting]]\nid = \"m\"\n",
            data.display()
        ),
    );
    let addr = local(mc.http);
    let node_file = data.join("node_token");
    let admin_file = data.join("admin_token");
    let node_token = std::fs::read_to_string(&node_file).expect("a node token was created");
    let admin_token = std::fs::read_to_string(&admin_file).expect("an admin token was created");
    let node_token = node_token.trim();
    assert!(node_token.len() >= 24, "{node_token:?}");
    assert_ne!(node_token, admin_token.trim(), "one key per job");
    #[cfg(unix)]
    {
        assert_eq!(mode(&node_file), 0o600);
        assert_eq!(mode(&admin_file), 0o600);
    }
    let log = std::fs::read_to_string(&mc.log).expect("log");
    assert!(
        log.contains(&node_file.display().to_string()),
        "the log says where the node token is: {log}"
    );
    // Anonymous: refused with its code; nothing listed, nothing counted.
    let sync = "/api/nodes/sync?node=evil&viewers=m:4000000000";
    let (status, body) = http_request(addr, "GET", sync, &[], "");
    assert_eq!(
        (status, body["code"].as_u64()),
        (401, Some(108_004)),
        "{body}"
    );
    let (status, _) = http_request(addr, "GET", "/api/meetings", &[], "");
    assert_eq!(status, 401);
    // With the created token: the node syncs; the forged count is still refused.
    let bearer = format!("Bearer {node_token}");
    let auth = [("Authorization", bearer.as_str())];
    let (status, body) = http_request(addr, "GET", sync, &auth, "");
    assert_eq!(
        (status, body["field"].as_str()),
        (400, Some("viewers")),
        "{body}"
    );
    let (status, body) = http_request(addr, "GET", "/api/nodes/sync?node=a&viewers=m:2", &auth, "");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["meetings"][0]["viewers"], 2);
    // The store with the stream keys is owner-only.
    #[cfg(unix)]
    assert_eq!(mode(&data.join("meetings.json")), 0o600);
    // A restart keeps the same token (nodes need not be told again).
    drop(mc);
    let again = start_role(
        dir.path(),
        "mc",
        "mc",
        &format!(
            "[mc]\nhttp = \"0.0.0.0:0\"\ndata_dir = \"{}\"\n",
            data.display()
        ),
    );
    let (status, _) = http_request(
        local(again.http),
        "GET",
        "/api/nodes/sync?node=a",
        &auth,
        "",
    );
    assert_eq!(status, 200);
}

#[test]
fn a_loopback_mc_trusts_nobody_unless_told() {
    let dir = tempfile::tempdir().expect("dir");
    let data = dir.path().join("mc");
    let mc = start_role(
        dir.path(),
        "mc",
        "mc",
        &format!(
            "[mc]\nhttp = \"127.0.0.1:0\"\ndata_dir = \"{}\"\ntrust_loopback = false\n",
            data.display()
        ),
    );
    assert!(data.join("node_token").exists() && data.join("admin_token").exists());
    let (status, _) = http_request(mc.http, "GET", "/api/nodes/sync?node=a", &[], "");
    assert_eq!(status, 401);
    let (status, _) = http_request(
        mc.http,
        "POST",
        "/api/meetings",
        &[("Content-Type", "application/json")],
        r#"{"id":"x"}"#,
    );
    assert_eq!(status, 401);
}

/// Starts `brdyun mc` with `config` and returns what it printed when it refused to run.
fn refused_start(dir: &Path, config: &str) -> String {
    let path = dir.join("refused.toml");
    std::fs::write(&path, config).expect("write config");
    let out = Command::new(env!("CARGO_BIN_EXE_brdyun"))
        .args(["mc", "--config"])
        .arg(&path)
        .output()
        .expect("run brdyun");
    assert!(!out.status.success(), "it must not start: {config}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_short_token_or_a_published_example_key_stops_the_start_with_the_reason() {
    let dir = tempfile::tempdir().expect("dir");
    let base = format!(
        "[mc]\nhttp = \"127.0.0.1:0\"\ndata_dir = \"{}\"\n",
        dir.path().join("mc").display()
    );
    let short = refused_start(
        dir.path(),
        &format!("{base}admin_token = \"admin-secret\"\n"),
    );
    assert!(
        short.contains("mc.admin_token") && short.contains("at least 24"),
        "{short}"
    );
    let rfc = refused_start(
        dir.path(),
        &format!(
            "{base}[[mc.viewer_keys]]\nkid = \"platform\"\npublic = \"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo\"\n"
        ),
    );
    assert!(
        rfc.contains("RFC 8037") && rfc.contains("published"),
        "{rfc}"
    );
    assert!(!dir.path().join("mc").join("meetings.json").exists());
}

fn start_pair_mc(dir: &Path, name: &str, etcd: &EtcdCluster) -> NodeProcess {
    let config = McConfig {
        name: Some(name.to_owned()),
        rtmp: false,
        admin_token: Some(ADMIN.trim_start_matches("Bearer ").to_owned()),
        node_token: Some(NODE.to_owned()),
        lines: format!("etcd = {}\nviewer_report_ttl = 1\n", etcd.toml_urls()),
        defaults: None,
        ..McConfig::default()
    };
    cluster::start_mc(dir, name, &config)
}

/// Standard base64 (etcd's JSON gateway speaks keys in it).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The key `key` as etcd holds it now (`None`: absent).
fn etcd_key(etcd: &EtcdCluster, key: &str) -> Option<Value> {
    let addr: SocketAddr = etcd.urls()[0]
        .trim_start_matches("http://")
        .parse()
        .expect("etcd address");
    let (status, answer) = http_request(
        addr,
        "POST",
        "/v3/kv/range",
        &[],
        &json!({"key": base64(key.as_bytes())}).to_string(),
    );
    assert_eq!(status, 200, "{answer}");
    answer["kvs"]
        .as_array()
        .and_then(|kvs| kvs.first().cloned())
}

#[test]
fn a_pairs_viewer_reports_expire_with_their_lease_and_many_keys_are_read_in_pages() {
    let dir = tempfile::tempdir().expect("dir");
    let etcd = EtcdCluster::start(&dir.path().join("etcd"), 1);
    let mc1 = start_pair_mc(dir.path(), "mc1", &etcd);
    let admin = [
        ("Authorization", ADMIN),
        ("Content-Type", "application/json"),
    ];
    // More meetings than one page of a prefix read (256 keys).
    for i in 0..300 {
        let (status, body) = http_request(
            mc1.http,
            "POST",
            "/api/meetings",
            &admin,
            &json!({"id": format!("m{i:03}")}).to_string(),
        );
        assert_eq!(status, 201, "{body}");
    }
    // A node reports: the report is kept under a lease.
    let bearer = format!("Bearer {NODE}");
    let (status, _) = http_request(
        mc1.http,
        "GET",
        "/api/nodes/sync?node=gone-node&viewers=m000:2",
        &[("Authorization", bearer.as_str())],
        "",
    );
    assert_eq!(status, 200);
    let key = "/brdyun/viewers/gone-node";
    let kv = wait_for("the shared report", Duration::from_secs(10), || {
        etcd_key(&etcd, key)
    });
    let lease = kv["lease"]
        .as_str()
        .and_then(|l| l.parse::<i64>().ok())
        .unwrap_or(0);
    assert_ne!(lease, 0, "the report is under a lease: {kv}");
    // A second MC reads every meeting (two pages and more) from etcd.
    let mc2 = start_pair_mc(dir.path(), "mc2", &etcd);
    let (status, list) = http_request(mc2.http, "GET", "/api/meetings", &admin[..1], "");
    assert_eq!(status, 200);
    assert_eq!(list["meetings"].as_array().map(Vec::len), Some(300));
    // The node stopped reporting: its key goes with the lease (5 s at least).
    wait_for(
        "the report's key to expire",
        Duration::from_secs(30),
        || etcd_key(&etcd, key).is_none().then_some(()),
    );
}
