//! Primary and backup publish (OTT-OPS-4): a platform sends one meeting to two ingest
//! URLs of the MC, `live/<meeting>` and `live/<meeting>@backup`. When the primary feed
//! is cut mid-meeting, the backup takes over: with no discontinuity when both feeds are
//! one encoder's two outputs, with exactly one when they are two encoders.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use common::{
    ffmpeg_encoder, ffmpeg_source, http_request, parse_media_playlist, start_role, wait_for,
    ChildGuard, NodeProcess, PlaylistEntry,
};

const ADMIN: &str = "admin-secret-for-these-tests";

fn start_mc(dir: &Path) -> NodeProcess {
    let config = format!(
        "[mc]\nhttp = \"127.0.0.1:0\"\nrtmp = \"127.0.0.1:0\"\ndata_dir = \"{}\"\nadmin_token = \"{ADMIN}\"\nnode_token = \"node-secret-for-these-tests\"\n[defaults]\nsegment_duration = 1\n[[meeting]]\nid = \"m\"\nstart = true\nladder = false\n",
        dir.join("mc-data").display()
    );
    start_role(dir, "mc", "mc", &config)
}

fn stream_key(mc: &NodeProcess) -> String {
    let auth = format!("Bearer {ADMIN}");
    let (status, meeting) = http_request(
        mc.http,
        "GET",
        "/api/meetings/m",
        &[("Authorization", auth.as_str())],
        "",
    );
    assert_eq!(status, 200, "{meeting}");
    meeting["stream_key"]
        .as_str()
        .expect("stream_key")
        .to_owned()
}

/// The meeting's inputs on the MC (`/api/streams/m`, an operator's read): (active
/// index, states).
fn inputs(mc: &NodeProcess) -> Option<(Option<u64>, Vec<String>)> {
    let auth = format!("Bearer {ADMIN}");
    let (status, doc) = http_request(
        mc.http,
        "GET",
        "/api/streams/m",
        &[("Authorization", auth.as_str())],
        "",
    );
    if status != 200 {
        return None;
    }
    let states = doc["inputs"]["inputs"]
        .as_array()?
        .iter()
        .map(|i| i["state"].as_str().unwrap_or_default().to_owned())
        .collect();
    Some((doc["inputs"]["active"].as_u64(), states))
}

/// The meeting's media playlist on the MC, read as a node reads it.
fn mc_playlist(mc: &NodeProcess) -> Option<String> {
    let (status, _, body) = common::http_get_as_node(mc.http, "/m/mono.m3u8");
    (status == 200).then(|| String::from_utf8_lossy(&body).into_owned())
}

/// A TCP relay in front of the MC's RTMP port: the primary feed goes through it, so the
/// test can cut that feed alone (as a platform's primary path fails) while one ffmpeg
/// keeps sending both outputs.
struct CuttableRelay {
    addr: SocketAddr,
    cut: Arc<AtomicBool>,
}

impl CuttableRelay {
    fn start(target: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind relay");
        let addr = listener.local_addr().expect("addr");
        let cut = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&cut);
        thread::spawn(move || {
            // One publisher: the relay carries the first connection only.
            let Ok((client, _)) = listener.accept() else {
                return;
            };
            let Ok(server) = TcpStream::connect(target) else {
                return;
            };
            for (mut from, mut to) in [
                (client.try_clone().unwrap(), server.try_clone().unwrap()),
                (server, client),
            ] {
                let flag = Arc::clone(&flag);
                thread::spawn(move || {
                    from.set_read_timeout(Some(Duration::from_millis(50))).ok();
                    let mut buf = [0u8; 16 * 1024];
                    while !flag.load(Ordering::Relaxed) {
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
                                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                                ) => {}
                            Err(_) => break,
                        }
                    }
                    let _ = from.shutdown(Shutdown::Both);
                    let _ = to.shutdown(Shutdown::Both);
                });
            }
        });
        Self { addr, cut }
    }

    fn cut(&self) {
        self.cut.store(true, Ordering::Relaxed);
    }
}

impl Drop for CuttableRelay {
    fn drop(&mut self) {
        self.cut();
    }
}

/// One encoder, two outputs (ffmpeg's tee muxer; a failed output does not stop the
/// other): the same frames with the same timestamps on both.
fn dual_output(seconds: u32, primary: &str, backup: &str) -> Command {
    let mut cmd = ffmpeg_encoder(seconds, "testsrc2", 440);
    // The tee muxer does not ask the encoders for global headers: without this flag the
    // FLV sequence headers are empty and the video cannot be read.
    cmd.args(["-flags", "+global_header"])
        .args(["-map", "0:v", "-map", "1:a", "-f", "tee"])
        .arg(format!(
            "[f=flv:onfail=ignore]{primary}|[f=flv:onfail=ignore]{backup}"
        ));
    cmd
}

/// Waits until both publish inputs are live and the primary is the active one, and the
/// MC has cut a few segments from it; returns the newest segment.
fn wait_primary_cutting(mc: &NodeProcess) -> PlaylistEntry {
    wait_for(
        "primary active, backup live",
        Duration::from_secs(30),
        || {
            let (active, states) = inputs(mc)?;
            (active == Some(0) && states.get(1).is_some_and(|s| s == "live")).then_some(())
        },
    );
    wait_for("segments from the primary", Duration::from_secs(20), || {
        let entries = parse_media_playlist(&mc_playlist(mc)?);
        (entries.len() >= 3)
            .then(|| entries.last().cloned())
            .flatten()
    })
}

/// Waits until the backup (input 1) is active and `segments` segments newer than
/// `before` are listed; returns the playlist.
fn playlist_after_takeover(mc: &NodeProcess, before: &PlaylistEntry, segments: u64) -> String {
    wait_for("the backup active", Duration::from_secs(20), || {
        let (active, _) = inputs(mc)?;
        (active == Some(1)).then_some(())
    });
    wait_for(
        "segments cut from the backup",
        Duration::from_secs(30),
        || {
            let text = mc_playlist(mc)?;
            let last = parse_media_playlist(&text).last()?.msn;
            (last >= before.msn + segments).then_some(text)
        },
    )
}

/// The largest gap (ms) between a segment's end and the next one's date, between
/// segments of one discontinuity period.
fn largest_pdt_step(entries: &[PlaylistEntry]) -> i64 {
    entries
        .windows(2)
        .filter(|w| w[0].discontinuity_seq == w[1].discontinuity_seq)
        .map(|w| {
            let duration: f64 = w[0].extinf.trim_end_matches(',').parse().expect("extinf");
            let end =
                common::parse_pdt(&w[0].program_date_time) + (duration * 1000.0).round() as i64;
            (common::parse_pdt(&w[1].program_date_time) - end).abs()
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn one_encoders_two_outputs_fail_over_with_no_discontinuity() {
    let dir = tempfile::tempdir().unwrap();
    let mc = start_mc(dir.path());
    let key = stream_key(&mc);
    let rtmp = mc.rtmp.expect("rtmp");
    let relay = CuttableRelay::start(rtmp);
    let _publisher = ChildGuard::spawn(
        "dual-output publisher",
        &mut dual_output(
            90,
            &format!("rtmp://{}/live/m?key={key}", relay.addr),
            &format!("rtmp://{rtmp}/live/m@backup?key={key}"),
        ),
    );
    let before = wait_primary_cutting(&mc);
    relay.cut();
    let text = playlist_after_takeover(&mc, &before, 4);
    let entries = parse_media_playlist(&text);
    let last = entries.last().expect("segments");
    assert_eq!(
        last.discontinuity_seq, before.discontinuity_seq,
        "the same feed continues the timeline:\n{text}"
    );
    assert!(largest_pdt_step(&entries) <= 1, "a PDT step:\n{text}");
}

#[test]
fn two_encoders_fail_over_with_exactly_one_discontinuity() {
    let dir = tempfile::tempdir().unwrap();
    let mc = start_mc(dir.path());
    let key = stream_key(&mc);
    let rtmp = mc.rtmp.expect("rtmp");
    let primary = ChildGuard::spawn(
        "primary encoder",
        &mut ffmpeg_source(90, "flv", &format!("rtmp://{rtmp}/live/m?key={key}")),
    );
    // Another encoder with other pictures and another tone: its frames are not the
    // primary's.
    let mut backup = ffmpeg_encoder(90, "testsrc", 880);
    backup
        .args(["-f", "flv"])
        .arg(format!("rtmp://{rtmp}/live/m@backup?key={key}"));
    let _backup = ChildGuard::spawn("backup encoder", &mut backup);
    let before = wait_primary_cutting(&mc);
    let _ = primary.kill();
    let text = playlist_after_takeover(&mc, &before, 4);
    let last = parse_media_playlist(&text)
        .last()
        .cloned()
        .expect("segments");
    assert_eq!(
        last.discontinuity_seq,
        before.discontinuity_seq + 1,
        "another encoder's timestamps start one new period:\n{text}"
    );
}
