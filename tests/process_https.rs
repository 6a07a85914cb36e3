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

/// GET over HTTPS with curl forcing `version` (`--http2` or `--http1.1`): (HTTP version
/// curl used, status, body).
fn curl_version(ca: &Path, url: &str, version: &str) -> (String, u16, String) {
    let output = Command::new("curl")
        .args(["-sS", "--max-time", "15", version, "--cacert"])
        .arg(ca)
        .args(["-w", "\n%{http_version} %{http_code}"])
        .arg(url)
        .output()
        .expect("curl runs");
    assert!(
        output.status.success(),
        "curl {url}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, last) = text.rsplit_once('\n').expect("curl's -w line");
    let (http, code) = last.split_once(' ').expect("version and code");
    (
        http.to_owned(),
        code.parse().expect("code"),
        body.to_owned(),
    )
}

/// HTTP/2 and TLS: the HTTPS listener negotiates h2 by ALPN (HTTP/1.1 still
/// offered), and an LL-HLS blocking reload answers over h2 once the part it asks for is
/// listed.
#[test]
fn https_negotiates_h2_and_llhls_blocking_reloads_work_over_it() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed(dir.path());
    let node = NodeProcess::start(dir.path(), "tls", &config(dir.path(), &cert, &key));
    let https = node.https.expect("an https address");
    let base = format!("https://127.0.0.1:{}", https.port());
    let playlist = wait_for(
        "an LL-HLS playlist over h2",
        Duration::from_secs(30),
        || {
            let (http, status, body) = curl_version(&cert, &format!("{base}/m/ll.m3u8"), "--http2");
            assert_eq!(http, "2", "ALPN chose h2");
            (status == 200 && body.contains("#EXT-X-PART:")).then_some(body)
        },
    );
    let (http, status, _) = curl_version(&cert, &format!("{base}/m/index.m3u8"), "--http1.1");
    assert_eq!(
        (http.as_str(), status),
        ("1.1", 200),
        "HTTP/1.1 is still offered"
    );
    // The next segment's first part: the reload blocks until it is cut.
    let next_msn = playlist
        .lines()
        .filter_map(|l| l.strip_prefix("#EXT-X-MEDIA-SEQUENCE:"))
        .find_map(|n| n.trim().parse::<u64>().ok())
        .expect("a media sequence")
        + playlist.matches("#EXTINF").count() as u64;
    let started = std::time::Instant::now();
    let (http, status, body) = curl_version(
        &cert,
        &format!("{base}/m/ll.m3u8?_HLS_msn={next_msn}&_HLS_part=0"),
        "--http2",
    );
    assert_eq!((http.as_str(), status), ("2", 200), "{body}");
    assert!(
        body.contains(&format!("part-{next_msn}-0.m4s")),
        "the answer lists part 0 of segment {next_msn}:\n{body}"
    );
    println!(
        "blocking reload over h2 answered after {:?}",
        started.elapsed()
    );
}

/// TLS: a renewed certificate is served after SIGHUP without a restart (the
/// new one verifies, the old CA no longer does); a pair that does not load is refused
/// and the one in use stays.
#[test]
fn sighup_reloads_the_certificate_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first");
    let second = dir.path().join("second");
    std::fs::create_dir_all(&first).unwrap();
    std::fs::create_dir_all(&second).unwrap();
    let (cert, key) = self_signed(&first);
    let (new_cert, new_key) = self_signed(&second);
    let node = NodeProcess::start(dir.path(), "tls", &config(dir.path(), &cert, &key));
    let url = format!(
        "https://127.0.0.1:{}/api/node",
        node.https.expect("https").port()
    );
    let trusted = |ca: &Path| {
        Command::new("curl")
            .args(["-sS", "-o", "/dev/null", "--max-time", "5", "--cacert"])
            .arg(ca)
            .arg(&url)
            .status()
            .expect("curl runs")
            .success()
    };
    let pid = node.child.id().to_string();
    let hangup = || {
        let status = Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .expect("kill");
        assert!(status.success());
    };
    let old_ca = dir.path().join("old-ca.pem");
    std::fs::copy(&cert, &old_ca).unwrap();
    assert!(
        trusted(&old_ca) && !trusted(&new_cert),
        "the first certificate is served"
    );
    // A broken pair (the new certificate with the old key) is refused: the old one stays.
    std::fs::copy(&new_cert, &cert).unwrap();
    hangup();
    // The reload was tried and refused (its log line), and the old pair is still served.
    wait_for("the refused reload", Duration::from_secs(10), || {
        let log = std::fs::read_to_string(&node.log).ok()?;
        log.contains("certificate not reloaded").then_some(())
    });
    assert!(
        trusted(&old_ca) && !trusted(&new_cert),
        "a bad pair is not loaded"
    );
    // The whole renewed pair: served from the next handshake on, by the same process.
    std::fs::copy(&new_key, &key).unwrap();
    hangup();
    wait_for("the renewed certificate", Duration::from_secs(10), || {
        trusted(&new_cert).then_some(())
    });
    assert!(!trusted(&old_ca), "the old certificate is gone");
    assert_eq!(node.child.id().to_string(), pid);
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
