//! Secure defaults at process level: a node listening beyond loopback with no
//! `admin_token` creates one on its first start (owner-only file in its data
//! directory), refuses its admin, fault and pause APIs without it, and keeps the same
//! token across restarts; a node on loopback only stays zero-config.
//!
//! The wildcard listener is only ever reached over 127.0.0.1.

mod common;

use std::net::SocketAddr;
use std::path::Path;

use common::{http_get_with, http_request, NodeProcess};

fn config(dir: &Path, http: &str) -> String {
    format!(
        r#"
[node]
name = "secure"
http = "{http}"
data_dir = "{}"
[[stream]]
name = "m"
inputs = ["builtin://meeting"]
"#,
        dir.join("data").display()
    )
}

/// The node's HTTP port over loopback.
fn loopback(node: &NodeProcess) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], node.http.port()))
}

#[test]
fn a_node_on_a_public_address_creates_an_admin_token_and_refuses_the_api_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("data").join("admin_token");
    let token = {
        let node = NodeProcess::start(dir.path(), "secure", &config(dir.path(), "0.0.0.0:0"));
        let addr = loopback(&node);
        let token = std::fs::read_to_string(&token_file)
            .expect("the token file is created on the first start")
            .trim()
            .to_owned();
        assert_eq!(token.len(), 64, "{token}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&token_file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "only its owner reads it");
        }
        let (status, _, _) = http_get_with(addr, "/api/node", &[]);
        assert_eq!(status, 401, "no token, no admin API");
        let bearer = format!("Bearer {token}");
        let (status, _, _) = http_get_with(addr, "/api/node", &[("Authorization", &bearer)]);
        assert_eq!(status, 200);
        let (status, _) = http_request(addr, "POST", "/api/streams/m/pause", &[], "");
        assert_eq!(status, 401, "nor the input pause");
        let (status, _) = http_request(addr, "POST", "/api/fault-rules", &[], "{}");
        assert_eq!(status, 401, "nor the fault rules");
        // Viewers need no token.
        let (status, _, _) = http_get_with(addr, "/m/index.m3u8", &[]);
        assert_ne!(status, 401);
        token
    };
    // A restart reads the same token.
    let node = NodeProcess::start(dir.path(), "secure", &config(dir.path(), "0.0.0.0:0"));
    let bearer = format!("Bearer {token}");
    let (status, _, _) = http_get_with(loopback(&node), "/api/node", &[("Authorization", &bearer)]);
    assert_eq!(status, 200, "the token is kept across restarts");
}

#[test]
fn a_node_on_loopback_needs_a_token_unless_told_to_trust_loopback() {
    // The default: loopback is not trusted (a proxy in front puts the internet there).
    let dir = tempfile::tempdir().unwrap();
    let strict =
        config(dir.path(), "127.0.0.1:0").replace("[node]\n", "[node]\ntrust_loopback = false\n");
    let node = NodeProcess::start(dir.path(), "secure", &strict);
    let (status, _, _) = http_get_with(node.http, "/api/node", &[]);
    assert_eq!(status, 401);
    assert!(dir.path().join("data").join("admin_token").exists());
    drop(node);
    // trust_loopback = true (as the demo, and the test harness by default): open here.
    let dir = tempfile::tempdir().unwrap();
    let trusting =
        config(dir.path(), "127.0.0.1:0").replace("[node]\n", "[node]\ntrust_loopback = true\n");
    let node = NodeProcess::start(dir.path(), "secure", &trusting);
    let (status, _, _) = http_get_with(node.http, "/api/node", &[]);
    assert_eq!(status, 200);
    assert!(!dir.path().join("data").join("admin_token").exists());
}
