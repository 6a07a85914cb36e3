//! RTMPS at process level: ffmpeg publishes a meeting to an MC over `rtmps://` (and a
//! stream to a node), with the certificate verified against its CA; a wrong key is
//! refused; a connection that never completes its TLS handshake is cut at the publish
//! deadline (111022) and counted, one that speaks plain RTMP to the TLS port is closed
//! with 111025, the per-address cap holds, and the publisher beside them plays on;
//! SIGHUP serves a renewed certificate to the next handshake.

mod common;

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::cluster::{self, McConfig};
use common::{
    connect_from, ffmpeg_source, http_get, http_get_as_node, http_request, parse_media_playlist,
    start_role, viewer_ip, wait_for, ChildGuard, NodeProcess,
};

/// Writes a self-signed certificate for `localhost` and 127.0.0.1 into `dir`.
fn self_signed(dir: &Path) -> (PathBuf, PathBuf) {
    std::fs::create_dir_all(dir).unwrap();
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

fn start_mc(dir: &Path, cert: &Path, key: &Path) -> NodeProcess {
    let config = McConfig {
        admin_token: None,
        lines: format!(
            "rtmps = \"127.0.0.1:0\"\nrtmps_cert = \"{}\"\nrtmps_key = \"{}\"\n\
             hostname = \"localhost\"\n\
             [mc.rtmp_limits]\npublish_deadline = 3\nmax_pending_per_address = 2\n",
            cert.display(),
            key.display(),
        ),
        ..McConfig::default()
    };
    cluster::start_mc(dir, "mc", &config)
}

/// A started meeting `id` on the MC: its stream key.
fn start_meeting(mc: SocketAddr, id: &str) -> String {
    let (status, created) = http_request(
        mc,
        "POST",
        "/api/meetings",
        &[],
        &serde_json::json!({ "id": id }).to_string(),
    );
    assert_eq!(status, 201, "{created}");
    let host = format!("Bearer {}", created["host_token"].as_str().unwrap());
    let (status, body) = http_request(
        mc,
        "POST",
        &format!("/api/meetings/{id}/start"),
        &[("Authorization", host.as_str())],
        "",
    );
    assert_eq!(status, 200, "{body}");
    created["stream_key"].as_str().unwrap().to_owned()
}

/// ffmpeg publishing the test pattern to `url` over TLS, verifying the server's
/// certificate against `ca`.
fn rtmps_publisher(seconds: u32, url: &str, ca: &Path) -> Command {
    let cmd = ffmpeg_source(seconds, "flv", url);
    // The TLS options go before the output URL: ffmpeg_source ends with `-f flv URL`.
    let mut args: Vec<std::ffi::OsString> = cmd.get_args().map(ToOwned::to_owned).collect();
    let url_arg = args.pop().expect("the url");
    let mut with_tls = Command::new(cmd.get_program());
    with_tls
        .args(args)
        .args(["-tls_verify", "1", "-ca_file"])
        .arg(ca)
        .arg(url_arg);
    with_tls
}

/// The value of the unlabelled sample `name` (or of the sample starting `name{`) in
/// `/metrics`, 0 when absent.
fn metric(addr: SocketAddr, name: &str) -> u64 {
    let (status, _, body) = http_get(addr, "/metrics");
    assert_eq!(status, 200);
    String::from_utf8_lossy(&body)
        .lines()
        .find_map(|line| {
            let (sample, value) = line.rsplit_once(' ')?;
            (sample == name).then(|| value.parse().ok())?
        })
        .unwrap_or(0)
}

fn limit(code: u32) -> String {
    let reason = match code {
        111_020 => "ingest_address_full",
        111_022 => "ingest_publish_deadline",
        _ => unreachable!(),
    };
    format!("brdyun_rtmps_limit_total{{code=\"{code}\",reason=\"{reason}\"}}")
}

/// The newest media sequence number of `m` on the MC (its relay's playlist).
fn newest_segment(mc: SocketAddr, meeting: &str) -> Option<u64> {
    let (status, _, body) = http_get_as_node(mc, &format!("/{meeting}/mono.m3u8"));
    if status != 200 {
        return None;
    }
    parse_media_playlist(&String::from_utf8_lossy(&body))
        .last()
        .map(|entry| entry.msn)
}

/// Whether the peer closed `socket` (end of stream or reset) within `limit`.
fn closed_within(socket: &mut TcpStream, limit: Duration) -> bool {
    socket.set_read_timeout(Some(limit)).unwrap();
    let mut byte = [0u8; 512];
    let until = Instant::now() + limit;
    while Instant::now() < until {
        match socket.read(&mut byte) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) => {
                return !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                )
            }
        }
    }
    false
}

/// Whether `addr` serves a certificate that verifies against `ca` (openssl s_client).
fn served_certificate_verifies(addr: SocketAddr, ca: &Path) -> bool {
    let mut cmd = Command::new("openssl");
    cmd.args([
        "s_client",
        "-connect",
        &addr.to_string(),
        "-verify_return_error",
    ])
    .args(["-servername", "localhost", "-CAfile"])
    .arg(ca)
    .stdin(std::process::Stdio::null());
    let (status, _) =
        ChildGuard::spawn("openssl s_client", &mut cmd).finish(Duration::from_secs(10));
    status.success()
}

/// An MC's RTMPS listener: a meeting published by ffmpeg over `rtmps://` (certificate
/// verified) plays; a wrong key is refused; a handshake that never completes is cut at
/// the publish deadline (111022) and counted; plain RTMP on the TLS port is a handshake
/// failure; the per-address cap holds (111020); the publisher is untouched throughout.
#[test]
fn an_mc_takes_a_meeting_over_rtmps_and_cuts_what_does_not_complete_tls() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed(&dir.path().join("tls"));
    let mc = start_mc(dir.path(), &cert, &key);
    let rtmps = mc
        .rtmps
        .expect("the MC's rtmps address in its listening line");
    assert!(mc.rtmp.is_some(), "plain RTMP beside RTMPS");
    let stream_key = start_meeting(mc.http, "m");

    // A wrong key is refused: ffmpeg gives up, the listener counts a rejection.
    let mut wrong = rtmps_publisher(
        5,
        &format!("rtmps://localhost:{}/live/m?key=nope", rtmps.port()),
        &cert,
    );
    let (status, stderr) =
        ChildGuard::spawn("wrong-key publisher", &mut wrong).finish(Duration::from_secs(20));
    assert!(!status.success(), "a wrong key published: {stderr}");
    assert_eq!(metric(mc.http, "brdyun_rtmps_rejections_total"), 1);
    let log = std::fs::read_to_string(&mc.log).unwrap_or_default();
    assert!(
        log.lines()
            .any(|l| l.contains("rtmp publish rejected") && l.contains("code=111028")),
        "the refusal is logged with its code: {log}"
    );

    // The real publisher, its certificate verified against the self-signed CA.
    let url = format!("rtmps://localhost:{}/live/m?key={stream_key}", rtmps.port());
    let mut publisher =
        ChildGuard::spawn("rtmps publisher", &mut rtmps_publisher(120, &url, &cert));
    let first = wait_for("segments of m", Duration::from_secs(30), || {
        newest_segment(mc.http, "m")
    });
    assert_eq!(metric(mc.http, "brdyun_rtmps_publishes_total"), 1);
    assert!(metric(mc.http, "brdyun_rtmps_tls_handshakes_total") >= 2);

    // A TCP connection that never starts TLS: cut at the publish deadline (3 s).
    let mut silent = connect_from(rtmps, viewer_ip("silent"));
    let opened = Instant::now();
    assert!(
        closed_within(&mut silent, Duration::from_secs(8)),
        "the silent connection stays open"
    );
    let took = opened.elapsed();
    assert!(
        took >= Duration::from_millis(2500) && took < Duration::from_secs(6),
        "cut after {took:?}, the deadline is 3 s"
    );
    wait_for("the cut counted", Duration::from_secs(5), || {
        (metric(mc.http, &limit(111_022)) == 1).then_some(())
    });

    // Plain RTMP (C0 = 3 and C1) to the TLS port: the handshake fails at once.
    let mut plain = connect_from(rtmps, viewer_ip("plain"));
    std::io::Write::write_all(&mut plain, &[3u8; 1537]).unwrap();
    assert!(
        closed_within(&mut plain, Duration::from_secs(2)),
        "plain RTMP not closed at once"
    );
    wait_for(
        "both handshake failures counted",
        Duration::from_secs(5),
        || (metric(mc.http, "brdyun_rtmps_tls_handshake_failures_total") == 2).then_some(()),
    );
    // The MC's status names the failures beside the listener (the Backups screen's
    // "Ingest listeners").
    let (status, node_doc) = common::http_get_json(mc.http, "/api/node");
    assert_eq!(status, 200, "{node_doc}");
    let listener = node_doc["ingest"]
        .as_array()
        .and_then(|list| list.iter().find(|l| l["protocol"] == "rtmps"))
        .unwrap_or_else(|| panic!("no rtmps listener: {node_doc}"));
    assert_eq!(listener["addr"], rtmps.to_string(), "{node_doc}");
    assert_eq!(listener["tls_handshake_failures"], 2, "{node_doc}");

    // Per address: two connections that have not published; the rest closed at accept.
    let hogs: Vec<TcpStream> = (0..5)
        .map(|_| connect_from(rtmps, viewer_ip("hog")))
        .collect();
    let closed_at_once = hogs
        .into_iter()
        .filter(|s| {
            let mut s = s.try_clone().unwrap();
            closed_within(&mut s, Duration::from_millis(400))
        })
        .count();
    assert_eq!(closed_at_once, 3, "two pending connections per address");
    assert_eq!(metric(mc.http, &limit(111_020)), 3);

    // The publisher published throughout.
    let later = wait_for(
        "segments after the attacks",
        Duration::from_secs(15),
        || newest_segment(mc.http, "m").filter(|n| *n >= first + 3),
    );
    assert!(later >= first + 3);
    assert!(
        publisher.wait_timeout(Duration::ZERO).is_none(),
        "the publisher ended"
    );
    assert_eq!(metric(mc.http, "brdyun_rtmps_publishes_total"), 1);
}

/// SIGHUP: a renewed RTMPS certificate is served from the next handshake on, by the
/// same process (observed with `openssl s_client`: the new CA verifies, the old does
/// not).
#[test]
fn sighup_serves_a_renewed_rtmps_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed(&dir.path().join("first"));
    let (new_cert, new_key) = self_signed(&dir.path().join("second"));
    let old_ca = dir.path().join("old-ca.pem");
    std::fs::copy(&cert, &old_ca).unwrap();
    let mc = start_mc(dir.path(), &cert, &key);
    let rtmps = mc.rtmps.expect("rtmps");
    assert!(served_certificate_verifies(rtmps, &old_ca));
    assert!(!served_certificate_verifies(rtmps, &new_cert));
    std::fs::copy(&new_cert, &cert).unwrap();
    std::fs::copy(&new_key, &key).unwrap();
    let pid = mc.child.id().to_string();
    let status = Command::new("kill")
        .args(["-HUP", &pid])
        .status()
        .expect("kill");
    assert!(status.success());
    wait_for("the renewed certificate", Duration::from_secs(10), || {
        served_certificate_verifies(rtmps, &new_cert).then_some(())
    });
    assert!(
        !served_certificate_verifies(rtmps, &old_ca),
        "the old certificate is gone"
    );
}

/// A node's RTMPS listener (its HTTPS pair by default): one ffmpeg encoding publishes
/// the same packets to stream `a` over RTMP and to stream `b` over RTMPS (the tee
/// muxer); both listeners hand over the same frames, and the node cuts both streams on
/// the same grid (the segments' durations are equal; their bytes differ only by the
/// wall-clock anchor each stream takes from its own first frame).
#[test]
fn a_node_takes_over_rtmps_what_it_takes_over_rtmp() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed(&dir.path().join("tls"));
    let config = format!(
        "[node]\nhttp = \"127.0.0.1:0\"\nhttps = \"127.0.0.1:0\"\nhostname = \"localhost\"\n\
         tls_cert = \"{}\"\ntls_key = \"{}\"\nrtmp = \"127.0.0.1:0\"\nrtmps = \"127.0.0.1:0\"\n\
         data_dir = \"{}\"\n[defaults]\nsegment_duration = 1\nwindow = 60\n\
         [[stream]]\nname = \"a\"\ninputs = [\"publish://?key=K1\"]\n\
         [[stream]]\nname = \"b\"\ninputs = [\"publish://?key=K1\"]\n",
        cert.display(),
        key.display(),
        dir.path().join("data").display()
    );
    let node = start_role(dir.path(), "node", "node", &config);
    let rtmp = node.rtmp.expect("the node's rtmp address");
    let rtmps = node.rtmps.expect("the node's rtmps address");
    // One encoding, two outputs: ffmpeg does not verify a certificate by default.
    let tee = format!(
        "[f=flv]rtmp://{rtmp}/live/a?key=K1|[f=flv]rtmps://localhost:{}/live/b?key=K1",
        rtmps.port()
    );
    let mut cmd = Command::new("ffmpeg");
    cmd.args(["-nostdin", "-hide_banner", "-loglevel", "error"])
        .args(["-re", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25"])
        .args(["-re", "-f", "lavfi", "-i", "sine=frequency=440"])
        .args([
            "-map", "0:v", "-map", "1:a", "-c:v", "libx264", "-preset", "veryfast",
        ])
        .args([
            "-g", "25", "-bf", "2", "-c:a", "aac", "-t", "8", "-f", "tee", &tee,
        ]);
    let (status, stderr) =
        ChildGuard::spawn("tee publisher", &mut cmd).finish(Duration::from_secs(30));
    assert!(status.success(), "the publisher failed: {stderr}");
    assert_eq!(metric(node.http, "brdyun_rtmp_publishes_total"), 1);
    assert_eq!(metric(node.http, "brdyun_rtmps_publishes_total"), 1);
    assert_eq!(
        metric(node.http, "brdyun_rtmps_tls_handshake_failures_total"),
        0
    );
    let frames = metric(node.http, "brdyun_rtmp_frames_total");
    assert!(frames >= 8 * 25, "{frames} frames over RTMP");
    assert_eq!(
        metric(node.http, "brdyun_rtmps_frames_total"),
        frames,
        "the same frames over RTMPS"
    );
    let durations = |stream: &str| {
        let (status, _, body) = http_get(node.http, &format!("/{stream}/mono.m3u8"));
        assert_eq!(status, 200, "{stream}");
        parse_media_playlist(&String::from_utf8_lossy(&body))
            .into_iter()
            .map(|entry| entry.extinf)
            .collect::<Vec<_>>()
    };
    let (a, b) = (durations("a"), durations("b"));
    assert!(a.len() >= 6, "{a:?}");
    assert_eq!(a, b, "the same segments over RTMP and RTMPS");
}

/// ffmpeg as an RTMP server (`-listen 1`): it serves the test pattern to the first
/// client that plays `rtmp://127.0.0.1:{port}/live/{name}`, then exits.
fn ffmpeg_rtmp_server(port: u16, name: &str) -> Command {
    let url = format!("rtmp://127.0.0.1:{port}/live/{name}");
    let source = ffmpeg_source(60, "flv", &url);
    let mut args: Vec<std::ffi::OsString> = source.get_args().map(ToOwned::to_owned).collect();
    let url_arg = args.pop().expect("the url");
    let mut cmd = Command::new(source.get_program());
    cmd.args(args).args(["-listen", "1"]).arg(url_arg);
    cmd
}

/// A TLS terminator for the test (ffmpeg's listen mode has no `rtmps://`): accepts TLS
/// on a loopback port with `cert`/`key` and forwards each connection's plain bytes to
/// `upstream`, for at most `life`. Returns the TLS port.
fn tls_terminator(cert: &Path, key: &Path, upstream: SocketAddr, life: Duration) -> u16 {
    let acceptor = server::http::tls::tls_acceptor(cert, key).expect("the test certificate");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let until = tokio::time::Instant::now() + life;
            while let Ok(Ok((socket, _))) = tokio::time::timeout_at(until, listener.accept()).await
            {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(socket).await else {
                        return;
                    };
                    let Ok(mut plain) = tokio::net::TcpStream::connect(upstream).await else {
                        return;
                    };
                    let _ = tokio::time::timeout(
                        life,
                        tokio::io::copy_bidirectional(&mut tls, &mut plain),
                    )
                    .await;
                });
            }
        });
    });
    port
}

/// The pull input: a node plays `rtmp://` from ffmpeg's RTMP server, and `rtmps://`
/// from another through a TLS terminator (its certificate checked against the
/// fragment's CA file), and cuts segments from both.
#[test]
fn a_node_pulls_rtmp_and_rtmps_from_servers_that_play() {
    let dir = tempfile::tempdir().unwrap();
    // rustls refuses a CA certificate (what `openssl req -x509` makes) as a server's
    // own: an end-entity certificate from rcgen, as a real server has.
    let made = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.key_pair.serialize_pem()).unwrap();
    let plain_port = common::free_tcp_port();
    let behind_tls = common::free_tcp_port();
    let _plain_server = ChildGuard::spawn(
        "ffmpeg rtmp server",
        &mut ffmpeg_rtmp_server(plain_port, "x"),
    );
    let _tls_server = ChildGuard::spawn(
        "ffmpeg rtmp server behind tls",
        &mut ffmpeg_rtmp_server(behind_tls, "y"),
    );
    let tls_port = tls_terminator(
        &cert,
        &key,
        SocketAddr::from(([127, 0, 0, 1], behind_tls)),
        Duration::from_secs(90),
    );
    let config = format!(
        "[node]\nhttp = \"127.0.0.1:0\"\ndata_dir = \"{}\"\n[defaults]\nsegment_duration = 1\n\
         [[stream]]\nname = \"plain\"\ninputs = [\"rtmp://127.0.0.1:{plain_port}/live/x\"]\n\
         [[stream]]\nname = \"tls\"\ninputs = [\"rtmps://localhost:{tls_port}/live/y#ca_file={}\"]\n",
        dir.path().join("data").display(),
        cert.display()
    );
    let node = start_role(dir.path(), "node", "node", &config);
    for stream in ["plain", "tls"] {
        wait_for(
            &format!("segments of {stream}"),
            Duration::from_secs(40),
            || {
                let (status, _, body) = http_get(node.http, &format!("/{stream}/mono.m3u8"));
                (status == 200 && parse_media_playlist(&String::from_utf8_lossy(&body)).len() >= 2)
                    .then_some(())
            },
        );
        let (_, status) = common::http_get_json(node.http, &format!("/api/streams/{stream}"));
        let input = &status["inputs"]["inputs"][0];
        assert_eq!(input["state"], "live", "{status}");
        assert!(input["frames"].as_u64().unwrap_or(0) > 0, "{status}");
    }
}
