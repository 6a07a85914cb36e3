//! Damaged and hostile input at process level: a corpus of damaged MPEG-TS (bit flips,
//! continuity errors, flagged packets, loss, timestamp jumps both ways, a 33-bit wrap,
//! lying PES lengths, split PES headers, no PSI, garbage, partial packets, an endless
//! PES, video without PTS) fed in real time to one `brdyun node` over UDP and over HTTP pull at once, each
//! case its own stream, beside a clean stream on each transport; and an RTMP publisher
//! with chaotic timestamps. Every playlist keeps its bounds (EXTINF and target duration
//! at most 4 × segment_duration, dates at most 30 s ahead of the clock), discontinuities
//! follow the policy (only where the timestamps break), every fault is reported with its
//! code, and the clean streams are untouched.

mod common;
mod corpus;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{http_get, http_get_json, parse_media_playlist, ChildGuard, NodeProcess};
use corpus::Damage;
use serde_json::Value;

/// Seconds of source media; every case plays for this long, in real time.
const MEDIA_SECONDS: u32 = 20;

/// The bound on a segment's duration and the target duration: 4 × the 1-s segments.
const MAX_SEGMENT_SECONDS: f64 = 4.0;

/// How far ahead of the clock a date may run (the segmenter's `MAX_DATE_AHEAD_MS`).
const MAX_DATE_AHEAD_MS: i64 = 30_000;

/// What a case must show.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// No damage counted, no discontinuity, no fault.
    Clean,
    /// Damage of this kind counted, a 111001 fault, and no discontinuity: the timestamps
    /// still hold.
    Damaged(&'static str),
    /// The timestamps jump: the timeline breaks with a discontinuity.
    Jumps,
    /// Bytes without a frame: the input is rejected (111002), viewers hear 111010.
    Rejected,
    /// Audio without pictures from a program with video: 111005.
    NoVideo,
    /// Only the bounds: the damage can hit anything.
    Bounded,
}

struct Case {
    name: &'static str,
    damage: Option<Damage>,
    expect: Expect,
}

fn cases() -> Vec<Case> {
    use Damage::*;
    let case = |name, damage, expect| Case {
        name,
        damage,
        expect,
    };
    vec![
        case("clean", None, Expect::Clean),
        case(
            "flips10",
            Some(BitFlips { per_million: 10 }),
            Expect::Bounded,
        ),
        case(
            "flips1000",
            Some(BitFlips { per_million: 1000 }),
            Expect::Bounded,
        ),
        case(
            "cc",
            Some(CcErrors { every: 150 }),
            Expect::Damaged("cc_errors"),
        ),
        case(
            "tei",
            Some(TransportErrors { every: 150 }),
            Expect::Damaged("transport_errors"),
        ),
        case(
            "loss",
            Some(PacketLoss { every: 301 }),
            Expect::Damaged("cc_errors"),
        ),
        case(
            "ahead",
            Some(TimestampJump {
                at_s: 7,
                by_s: 3600,
            }),
            Expect::Jumps,
        ),
        case(
            "back",
            Some(TimestampJump { at_s: 7, by_s: -30 }),
            Expect::Jumps,
        ),
        case("wrap", Some(Wraparound { at_s: 6 }), Expect::Clean),
        case(
            "lies",
            Some(PesLengthLies { every: 4 }),
            Expect::Damaged("bad_pes"),
        ),
        case("split", Some(SplitPesHeaders), Expect::Clean),
        case("nopsi", Some(NoPsi), Expect::Rejected),
        case("garbage", Some(Garbage), Expect::Rejected),
        case(
            "partial",
            Some(PartialPackets { every: 400 }),
            Expect::Damaged("sync_losses"),
        ),
        case("endless", Some(EndlessPes { at_s: 5 }), Expect::NoVideo),
        case("nopts", Some(NoVideoPts), Expect::NoVideo),
    ]
}

/// Sends `data` as 1316-byte datagrams, paced so it lasts `MEDIA_SECONDS`.
fn send_udp(data: &[u8], port: u16, stop: &AtomicBool) {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
    paced(data, 1316, stop, |chunk| {
        // A refused datagram (port not bound yet) is a loss like any other.
        let _ = socket.send_to(chunk, ("127.0.0.1", port));
        true
    });
}

/// Calls `send` with `chunk`-byte pieces of `data`, spread evenly over
/// `MEDIA_SECONDS`; stops early when `send` fails or `stop` is set.
fn paced(data: &[u8], chunk: usize, stop: &AtomicBool, mut send: impl FnMut(&[u8]) -> bool) {
    let start = Instant::now();
    let per_byte = f64::from(MEDIA_SECONDS) / data.len().max(1) as f64;
    for (i, piece) in data.chunks(chunk).enumerate() {
        let due = start + Duration::from_secs_f64((i * chunk) as f64 * per_byte);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        if stop.load(Ordering::Relaxed) || !send(piece) {
            return;
        }
    }
}

/// Serves `GET /<name>.ts` for every case: the damaged bytes in real time, then an
/// open, idle connection until `stop`.
fn serve_http(listener: TcpListener, bodies: Vec<(String, Arc<Vec<u8>>)>, stop: Arc<AtomicBool>) {
    listener.set_nonblocking(true).expect("nonblocking");
    while !stop.load(Ordering::Relaxed) {
        let Ok((mut conn, _)) = listener.accept() else {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        };
        let bodies = bodies.clone();
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            conn.set_nonblocking(false).expect("blocking");
            let mut request = [0u8; 2048];
            let n = conn.read(&mut request).unwrap_or(0);
            let line = String::from_utf8_lossy(&request[..n]);
            let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
            let Some((_, body)) = bodies
                .iter()
                .find(|(name, _)| path == format!("/{name}.ts"))
            else {
                let _ = conn.write_all(b"HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n");
                return;
            };
            let head = "HTTP/1.1 200 OK\r\nContent-Type: video/mp2t\r\nConnection: close\r\n\r\n";
            if conn.write_all(head.as_bytes()).is_err() {
                return;
            }
            paced(body, 1316, &stop, |chunk| conn.write_all(chunk).is_ok());
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
            }
        });
    }
}

fn node_config(data: &Path, streams: &[(String, String)]) -> String {
    let mut config = format!(
        "[node]\nname = \"damage\"\nhttp = \"127.0.0.1:0\"\ndata_dir = \"{}\"\n\n\
         [defaults]\nsegment_duration = 1\nsource_timeout = 2\n",
        data.display()
    );
    for (name, input) in streams {
        config.push_str(&format!(
            "\n[[stream]]\nname = \"{name}\"\ninputs = [\"{input}\"]\n"
        ));
    }
    config
}

/// Unix milliseconds now.
fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Checks one playlist of `stream` against the bounds; returns its discontinuity tags.
fn check_bounds(node: SocketAddr, stream: &str) -> Option<usize> {
    let (status, _, body) = http_get(node, &format!("/{stream}/mono.m3u8"));
    if status != 200 {
        return None;
    }
    let text = String::from_utf8_lossy(&body);
    let target: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("#EXT-X-TARGETDURATION:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{stream}: no target duration in\n{text}"));
    assert!(
        target <= MAX_SEGMENT_SECONDS,
        "{stream}: target {target}\n{text}"
    );
    let mut latest = String::new();
    media::hls::format_rfc3339_ms(&mut latest, now_ms() + MAX_DATE_AHEAD_MS).expect("date");
    for entry in parse_media_playlist(&text) {
        let extinf: f64 = entry
            .extinf
            .trim_end_matches(',')
            .parse()
            .unwrap_or_else(|_| panic!("{stream}: EXTINF {:?}", entry.extinf));
        assert!(
            extinf <= MAX_SEGMENT_SECONDS,
            "{stream}: a segment of {extinf} s\n{text}"
        );
        assert!(
            entry.program_date_time.len() == latest.len() && entry.program_date_time <= latest,
            "{stream}: a date ahead of the clock, {} (bound {latest})\n{text}",
            entry.program_date_time
        );
    }
    Some(
        text.lines()
            .filter(|l| *l == "#EXT-X-DISCONTINUITY")
            .count(),
    )
}

/// The damage counters of a stream's only input, summed but for `unknown_streams`.
fn damage_total(input: &Value) -> u64 {
    input["damage"]
        .as_object()
        .map(|kinds| {
            kinds
                .iter()
                .filter(|(kind, _)| *kind != "unknown_streams")
                .filter_map(|(_, n)| n.as_u64())
                .sum()
        })
        .unwrap_or(0)
}

/// Checks what `/api/streams/<stream>` and a viewer see, after the media has played.
fn check_report(node: SocketAddr, stream: &str, expect: Expect, discontinuity_tags: usize) {
    let (status, doc) = http_get_json(node, &format!("/api/streams/{stream}"));
    assert_eq!(status, 200, "{stream}: {doc}");
    let input = &doc["inputs"]["inputs"][0];
    let discontinuities = doc["counters"]["discontinuities"].as_u64().unwrap_or(0);
    let fault = input["fault"]["code"].as_u64();
    // Every kind of fault the input had (its latest episode each), ongoing or ended.
    let faults: Vec<u64> = input["faults"]
        .as_array()
        .map(|all| all.iter().filter_map(|f| f["code"].as_u64()).collect())
        .unwrap_or_default();
    let what = format!("{stream} ({expect:?}): {doc}");
    match expect {
        Expect::Clean => {
            assert_eq!(doc["live"], true, "{what}");
            assert_eq!(damage_total(input), 0, "{what}");
            assert_eq!((discontinuities, discontinuity_tags), (0, 0), "{what}");
            assert!(faults.is_empty(), "{what}");
        }
        Expect::Damaged(kind) => {
            assert_eq!(doc["live"], true, "{what}");
            assert!(input["damage"][kind].as_u64() > Some(0), "{what}");
            assert!(
                input["damage"]["damaged_frames"].as_u64() > Some(0),
                "{what}"
            );
            assert!(faults.contains(&111_001), "{what}");
            assert_eq!((discontinuities, discontinuity_tags), (0, 0), "{what}");
        }
        Expect::Jumps => {
            assert_eq!(doc["live"], true, "{what}");
            assert!(
                doc["counters"]["timestamp_jumps"].as_u64() > Some(0),
                "{what}"
            );
            assert!(discontinuities > 0, "{what}");
        }
        Expect::Rejected => {
            assert_eq!(input["state"], "rejected", "{what}");
            assert_eq!(fault, Some(111_002), "{what}");
            let (status, answer) = http_get_json(node, &format!("/{stream}/mono.m3u8"));
            assert_eq!(
                (status, answer["code"].as_u64()),
                (503, Some(111_010)),
                "{what}"
            );
            let (_, _, metrics) = http_get(node, "/metrics");
            let series = format!(
                "brdyun_input_fault_active{{stream=\"{stream}\",input=\"0\",reason=\"input_no_frames\"}} 1"
            );
            assert!(
                String::from_utf8_lossy(&metrics).contains(&series),
                "{series}"
            );
        }
        Expect::NoVideo => {
            assert_eq!(doc["live"], true, "{what}");
            assert!(faults.contains(&111_005), "{what}");
        }
        Expect::Bounded => {}
    }
}

#[test]
fn a_corpus_of_damaged_ts_over_udp_and_http_keeps_its_bounds_and_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let source = corpus::clean_source(dir.path(), MEDIA_SECONDS);
    let cases = cases();
    let bodies: Vec<(String, Arc<Vec<u8>>)> = cases
        .iter()
        .map(|c| {
            let data = c
                .damage
                .map_or_else(|| source.clone(), |d| corpus::damaged(&source, d));
            (c.name.to_owned(), Arc::new(data))
        })
        .collect();
    let listener = TcpListener::bind("127.0.0.1:0").expect("http source");
    let http_source = listener.local_addr().expect("addr");
    let ports: Vec<u16> = cases.iter().map(|_| common::free_udp_port()).collect();
    let mut streams = Vec::new();
    for (case, port) in cases.iter().zip(&ports) {
        streams.push((
            format!("udp-{}", case.name),
            format!("udp://127.0.0.1:{port}"),
        ));
        streams.push((
            format!("http-{}", case.name),
            format!("http://{http_source}/{}.ts", case.name),
        ));
    }
    let node = NodeProcess::start(
        dir.path(),
        "damage",
        &node_config(&dir.path().join("data"), &streams),
    );
    let pid = node.child.id();

    let stop = Arc::new(AtomicBool::new(false));
    let server = {
        let (bodies, stop) = (bodies.clone(), Arc::clone(&stop));
        std::thread::spawn(move || serve_http(listener, bodies, stop))
    };
    let senders: Vec<_> = bodies
        .iter()
        .zip(&ports)
        .map(|((_, data), &port)| {
            let (data, stop) = (Arc::clone(data), Arc::clone(&stop));
            std::thread::spawn(move || send_udp(&data, port, &stop))
        })
        .collect();

    // The bounds hold at every look while the media plays; the reports are read once
    // most of it has played.
    let started = Instant::now();
    let mut tags = vec![0; streams.len()];
    while started.elapsed() < Duration::from_secs(u64::from(MEDIA_SECONDS) - 3) {
        std::thread::sleep(Duration::from_secs(2));
        for ((name, _), tags) in streams.iter().zip(&mut tags) {
            if let Some(n) = check_bounds(node.http, name) {
                *tags = n;
            }
        }
    }
    for ((name, _), tags) in streams.iter().zip(&tags) {
        let case = cases
            .iter()
            .find(|c| name.ends_with(&format!("-{}", c.name)))
            .expect("a case");
        check_report(node.http, name, case.expect, *tags);
    }
    let mut node = node;
    assert!(
        node.child.try_wait().expect("try_wait").is_none(),
        "the node exited"
    );
    assert_eq!(node.child.id(), pid);
    stop.store(true, Ordering::Relaxed);
    for sender in senders {
        sender.join().expect("sender");
    }
    server.join().expect("http source");
}

/// An RTMP publisher whose timestamps jump hours ahead mid-stream and whose video
/// composition times are garbage (every 7th picture minutes late): the playlist keeps its
/// bounds, the faults are counted, and a clean publisher on the same node is untouched.
#[test]
fn an_rtmp_publisher_with_chaotic_timestamps_keeps_the_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let source = corpus::clean_source(dir.path(), MEDIA_SECONDS);
    let file = dir.path().join("source.ts");
    std::fs::write(&file, &source).expect("write source");
    let config = format!(
        "[node]\nname = \"chaos\"\nhttp = \"127.0.0.1:0\"\nrtmp = \"127.0.0.1:0\"\n\
         data_dir = \"{}\"\n\n[defaults]\nsegment_duration = 1\nsource_timeout = 2\n\n\
         [[stream]]\nname = \"chaos\"\ninputs = [\"publish://\"]\n\n\
         [[stream]]\nname = \"calm\"\ninputs = [\"publish://\"]\n",
        dir.path().join("data").display()
    );
    let node = NodeProcess::start(dir.path(), "chaos", &config);
    let rtmp = node.rtmp.expect("rtmp address");
    let publish = |stream: &str, chaos: bool| {
        let mut cmd = std::process::Command::new("ffmpeg");
        cmd.args([
            "-nostdin",
            "-hide_banner",
            "-loglevel",
            "error",
            "-re",
            "-i",
        ])
        .arg(&file)
        .args(["-c", "copy"]);
        if chaos {
            // Both tracks jump hours ahead 7 s in (the 175th picture, the 328th AAC
            // frame); every 7th picture's PTS is minutes late. Commas are escaped: they
            // separate filters in a -bsf list.
            let jump = |frames: u32| format!(r"if(gte(N\,{frames})\,3600/TB\,0)");
            cmd.args([
                "-bsf:v",
                &format!(
                    r"setts=dts=DTS+{j}:pts=PTS+{j}+if(eq(mod(N\,7)\,3)\,10/TB\,0)",
                    j = jump(175)
                ),
                "-bsf:a",
                &format!("setts=ts=TS+{}", jump(328)),
            ]);
        }
        cmd.args(["-f", "flv", &format!("rtmp://{rtmp}/live/{stream}")]);
        ChildGuard::spawn(&format!("ffmpeg rtmp publisher {stream}"), &mut cmd)
    };
    let chaos = publish("chaos", true);
    let _calm = publish("calm", false);
    let started = Instant::now();
    let mut tags = (0, 0);
    while started.elapsed() < Duration::from_secs(u64::from(MEDIA_SECONDS) - 3) {
        std::thread::sleep(Duration::from_secs(2));
        tags.0 = check_bounds(node.http, "chaos").unwrap_or(tags.0);
        tags.1 = check_bounds(node.http, "calm").unwrap_or(tags.1);
    }
    let (_, doc) = http_get_json(node.http, "/api/streams/chaos");
    let counters = &doc["counters"];
    assert!(
        counters["timestamp_jumps"].as_u64() > Some(0)
            && counters["bad_pts_frames"].as_u64() > Some(0),
        "the chaos is counted: {doc}"
    );
    assert!(tags.0 > 0, "the jump is a discontinuity: {doc}");
    check_report(node.http, "calm", Expect::Clean, tags.1);
    drop(chaos);
}
