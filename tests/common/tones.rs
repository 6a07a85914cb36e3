//! Which tone a stream plays: the tests' sources give each audio (a language, an
//! encoder) a sine tone of its own, and ffmpeg decodes what a player would hear.

use std::process::Command;

/// The tones the tests' sources play, one per language (Hz).
pub const TONES: [f64; 4] = [440.0, 750.0, 880.0, 1320.0];

/// At most `seconds` of the audio ffmpeg decodes from `url` with `map`, as 48 kHz mono
/// 16-bit samples.
pub fn decoded(url: &str, map: &[&str], seconds: u32) -> Vec<i16> {
    let mut cmd = Command::new("ffmpeg");
    cmd.args(["-nostdin", "-hide_banner", "-v", "error", "-i", url])
        .args(map)
        .args(["-t", &seconds.to_string(), "-ac", "1", "-ar", "48000"])
        .args(["-f", "s16le", "-"]);
    let out = cmd.output().expect("ffmpeg runs");
    assert!(
        out.status.success(),
        "ffmpeg {url} {map:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
        .chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]))
        .collect()
}

/// Which of [`TONES`] is loudest in `seconds` of audio ffmpeg decodes from `url` with
/// `map` (48 kHz mono PCM; the power at each tone by the Goertzel algorithm).
pub fn tone_of(url: &str, map: &[&str], seconds: u32) -> f64 {
    let samples: Vec<f64> = decoded(url, map, seconds)
        .into_iter()
        .map(f64::from)
        .collect();
    assert!(samples.len() > 48_000, "{url}: {} samples", samples.len());
    let power = |hz: f64| {
        let k = 2.0 * (2.0 * std::f64::consts::PI * hz / 48_000.0).cos();
        let (mut s1, mut s2) = (0.0, 0.0);
        for x in &samples {
            let s0 = x + k * s1 - s2;
            s2 = s1;
            s1 = s0;
        }
        s1 * s1 + s2 * s2 - k * s1 * s2
    };
    TONES
        .into_iter()
        .map(|hz| (hz, power(hz)))
        .fold(
            (0.0, f64::MIN),
            |best, (hz, p)| if p > best.1 { (hz, p) } else { best },
        )
        .0
}

pub fn assert_tone(what: &str, heard: f64, expected: f64) {
    assert!(
        (heard - expected).abs() < 1.0,
        "{what}: the loudest of {TONES:?} Hz is {heard}, expected {expected}"
    );
}
