//! The ladder encoder's cost on this machine: ffmpeg run with exactly the arguments the
//! MC gives it ([`server::stream::ladder::ffmpeg_args`]), fed a generated source as fast as it
//! encodes, for the demo ladder (640x360 source → 240p, 144p) and for a 720p30 source →
//! 720p, 480p, 360p, whole and one rung at a time. Prints the realtime factor (media
//! seconds per wall second) and the CPU per media second, from ffmpeg's `-benchmark`.
//!
//! `cargo run --release -p server --example ladder_bench [-- SECONDS]` (default 30).

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::Instant;

use server::stream::ladder::{ffmpeg_args, LadderSettings};

/// A source of `seconds` at `size` and `fps`, H.264 with a keyframe every second, as
/// a meeting platform would publish it (video only: the ladder encodes video only).
fn source(dir: &std::path::Path, size: &str, fps: u32, seconds: u32) -> Vec<u8> {
    let path = dir.join(format!("source-{size}.ts"));
    let status = Command::new("ffmpeg")
        .args([
            "-hide_banner",
            "-loglevel",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
        ])
        .arg(format!("testsrc2=size={size}:rate={fps}"))
        .args([
            "-t",
            &seconds.to_string(),
            "-c:v",
            "libx264",
            "-preset",
            "veryfast",
        ])
        .args([
            "-g",
            &fps.to_string(),
            "-bf",
            "2",
            "-pix_fmt",
            "yuv420p",
            "-an",
        ])
        .args(["-f", "mpegts"])
        .arg(&path)
        .status()
        .expect("ffmpeg makes the source");
    assert!(status.success());
    std::fs::read(&path).expect("the source")
}

/// (realtime factor, CPU seconds per media second) of one encoder run.
fn run(ladder: &LadderSettings, source: &[u8], seconds: u32) -> (f64, f64) {
    let rungs = ladder.validate().expect("a valid ladder");
    let mut args = ffmpeg_args(ladder, &rungs);
    args.insert(0, "-benchmark".into());
    // `-benchmark` reports at the info level.
    if let Some(level) = args.iter().position(|a| a == "-loglevel") {
        args[level + 1] = "info".into();
    }
    // The output is discarded: the cost measured is the encoder's.
    let mut child = Command::new(&ladder.encoder)
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ffmpeg starts");
    let started = Instant::now();
    let mut stdin = child.stdin.take().expect("stdin");
    let data = source.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
    });
    let out = child.wait_with_output().expect("ffmpeg runs");
    let _ = writer.join();
    let wall = started.elapsed().as_secs_f64();
    let said = String::from_utf8_lossy(&out.stderr);
    let field = |name: &str| -> f64 {
        said.split_whitespace()
            .find_map(|w| w.strip_prefix(name))
            .and_then(|v| v.trim_end_matches('s').parse().ok())
            .unwrap_or(f64::NAN)
    };
    let cpu = field("utime=") + field("stime=");
    (f64::from(seconds) / wall, cpu / f64::from(seconds))
}

fn ladder(text: &str) -> LadderSettings {
    toml::from_str(text).expect("a ladder")
}

fn main() {
    let seconds: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = [
        (
            "640x360",
            25,
            "demo ladder (240p 250k, 144p 100k), veryfast, 1 thread",
            r#"preset = "veryfast"
threads = 1
rungs = [{ name = "source" }, { name = "240p", height = 240, video_kbps = 250 }, { name = "144p", height = 144, video_kbps = 100, profile = "baseline" }]"#,
        ),
        (
            "1280x720",
            30,
            "720p30 → 720p 2500k, 480p 1200k, 360p 700k, veryfast",
            r#"preset = "veryfast"
rungs = [{ name = "720p", height = 720, video_kbps = 2500 }, { name = "480p", height = 480, video_kbps = 1200 }, { name = "360p", height = 360, video_kbps = 700 }]"#,
        ),
        (
            "1280x720",
            30,
            "  720p 2500k alone",
            r#"preset = "veryfast"
rungs = [{ name = "720p", height = 720, video_kbps = 2500 }]"#,
        ),
        (
            "1280x720",
            30,
            "  480p 1200k alone",
            r#"preset = "veryfast"
rungs = [{ name = "480p", height = 480, video_kbps = 1200 }]"#,
        ),
        (
            "1280x720",
            30,
            "  360p 700k alone",
            r#"preset = "veryfast"
rungs = [{ name = "360p", height = 360, video_kbps = 700 }]"#,
        ),
    ];
    println!("ladder encoder, {seconds} s of source per run (realtime factor = media s / wall s)");
    let mut sources = std::collections::HashMap::new();
    for (size, fps, name, text) in cases {
        let source = sources
            .entry((size, fps))
            .or_insert_with(|| self::source(dir.path(), size, fps, seconds));
        let (speed, cpu) = run(&ladder(text), source, seconds);
        println!(
            "{name:<62} {speed:>6.2}x realtime  {:>5.1} % of a core per media second",
            cpu * 100.0
        );
    }
}
