//! What real tools say of a media file or URL: ffmpeg decodes it (how many seconds,
//! which errors), ffprobe reads its streams and duration, and the order of an MP4's
//! top-level boxes (a progressive file has its `moov` before its `mdat`).

use std::path::Path;
use std::process::Command;

/// Decodes `url` (a file or URL) with ffmpeg to nothing, within 60 s: whether it
/// succeeded, what it printed as errors, how many seconds it decoded.
pub fn ffmpeg_decoded_seconds(url: &str) -> (bool, String, f64) {
    let output = Command::new("timeout")
        .args([
            "60",
            "ffmpeg",
            "-nostdin",
            "-hide_banner",
            "-v",
            "error",
            "-i",
            url,
        ])
        .args(["-f", "null", "-", "-progress", "pipe:1", "-nostats"])
        .output()
        .expect("run ffmpeg");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let seconds = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("out_time_us="))
        .filter_map(|v| v.trim().parse::<f64>().ok())
        .next_back()
        .unwrap_or(0.0)
        / 1e6;
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        seconds,
    )
}

/// ffprobe's view of `file`: its streams' kinds (`video`, `audio`) and its duration,
/// seconds. Panics with ffprobe's answer when it has no duration.
pub fn probe(file: &Path) -> (Vec<String>, f64) {
    let output = Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-show_entries",
            "format=duration:stream=codec_type",
            "-of",
            "json",
        ])
        .arg(file)
        .output()
        .expect("run ffprobe");
    let probed: serde_json::Value = serde_json::from_slice(&output.stdout).expect("ffprobe json");
    let kinds = probed["streams"]
        .as_array()
        .map(|s| {
            s.iter()
                .filter_map(|s| s["codec_type"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let duration = probed["format"]["duration"]
        .as_str()
        .and_then(|d| d.parse().ok())
        .unwrap_or_else(|| panic!("no duration: {probed}"));
    (kinds, duration)
}

/// The types of an MP4's top-level boxes, in file order.
pub fn top_level_boxes(file: &[u8]) -> Vec<String> {
    let mut boxes = Vec::new();
    let mut at = 0usize;
    while at + 8 <= file.len() {
        let size32 = u32::from_be_bytes([file[at], file[at + 1], file[at + 2], file[at + 3]]);
        let kind = String::from_utf8_lossy(&file[at + 4..at + 8]).into_owned();
        let size = match size32 {
            0 => file.len() - at,
            1 if at + 16 <= file.len() => {
                let mut large = [0u8; 8];
                large.copy_from_slice(&file[at + 8..at + 16]);
                usize::try_from(u64::from_be_bytes(large)).unwrap_or(usize::MAX)
            }
            n => n as usize,
        };
        boxes.push(kind);
        if size < 8 {
            break;
        }
        at = at.saturating_add(size);
    }
    boxes
}
