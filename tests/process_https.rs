//! HTTPS at process level: a node serves playlists and ranged segments over TLS with
//! a certificate from the `openssl` CLI, checked by `curl` against that certificate;
//! a node whose key file is missing refuses to start and says which file.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{parse_media_playlist, wait_for, ChildGuard, NodeProcess};

/// Writes a self-signed certificate for `localhost` and 127.0.0.1 into `dir`.
fn self_signed(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let mut cmd = Command::new("openssl");
    cmd.args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .args(["-days", "2", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"]);
    let (status, stderr) = ChildGuard::spawn("openssl", &mut cmd).finish(Duration::from_secs(30));
    assert!(status.success(), "openssl failed: {stderr}");
    (cert, key)
}

fn config(dir: &Path, cert: &Path, key: &Path) -> String {
    format!(
        r#"
[node]
name = "tls"
http = "127.0.0.1:0"
https = "127.0.0.1:0"
tls_cert = "{}"
tls_key = "{}"
data_dir = "{}"
[[stream]]
name = "m"
inputs = ["builtin://meeting"]
"#,
        cert.display(),
        key.display(),
        dir.join("data").display()
    )
}

/// GET over HTTPS with curl, trusting only `ca`: (status, body).
fn curl(ca: &Path, url: &str, range: Option<&str>) -> (u16, Vec<u8>) {
    let out = tempfile::NamedTempFile::new().unwrap();
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "--max-time", "10", "--cacert"])
        .arg(ca)
        .arg("-o")
        .arg(out.path())
        .args(["-w", "%{http_code}"]);
    if let Some(range) = range {
        cmd.args(["-H", &format!("Range: {range}")]);
    }
    cmd.arg(url);
    let output = match cmd.output() {
        Ok(output) => output,
        Err(e) => panic!("curl is needed for the HTTPS test and could not run: {e}"),
    };
    assert!(
        output.status.success(),
        "curl {url}: {}: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let code = String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("curl printed no status code ({e})"));
    (code, std::fs::read(out.path()).unwrap())
}

#[test]
fn playlists_and_ranged_segments_are_served_over_https() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed(dir.path());
    let node = NodeProcess::start(dir.path(), "tls", &config(dir.path(), &cert, &key));
    let https = node
        .https
        .expect("the listening line names the https address");
    let base = format!("https://127.0.0.1:{}", https.port());

    let (status, body) = wait_for("a playlist over https", Duration::from_secs(20), || {
        let (status, body) = curl(&cert, &format!("{base}/m/index.m3u8"), None);
        (status != 503).then_some((status, body))
    });
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert!(
        body.starts_with(b"#EXTM3U"),
        "{}",
        String::from_utf8_lossy(&body)
    );

    let (status, body) = curl(&cert, &format!("{base}/m/mono.m3u8"), None);
    assert_eq!(status, 200);
    let entries = parse_media_playlist(&String::from_utf8_lossy(&body));
    let segment = entries.first().expect("a live window with a segment");
    let (status, body) = curl(
        &cert,
        &format!("{base}/m/{}", segment.uri),
        Some("bytes=0-187"),
    );
    assert_eq!(status, 206, "a ranged segment request");
    assert_eq!(body.len(), 188, "exactly the requested range");
    assert_eq!(body[0], 0x47, "the range starts on a TS sync byte");
}

#[test]
fn a_missing_key_file_stops_the_node_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, _) = self_signed(dir.path());
    let missing = dir.path().join("no-such-key.pem");
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, config(dir.path(), &cert, &missing)).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_brdyun"));
    cmd.args(["node", "--config"]).arg(&path);
    let (status, stderr) =
        ChildGuard::spawn("brdyun node", &mut cmd).finish(Duration::from_secs(15));
    assert!(!status.success(), "the node started without its key");
    assert!(
        stderr.contains(&missing.display().to_string()),
        "the error does not name the key file: {stderr}"
    );
}
