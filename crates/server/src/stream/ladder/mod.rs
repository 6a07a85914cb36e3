//! A meeting's ABR ladder, made once at the origin (the MC) so that every node pulls
//! identical renditions: the configured rungs ([`LadderSettings`]), the encoder's
//! command line ([`ffmpeg_args`]) and the supervised encoder that turns the stream's
//! source rendition into its rungs ([`encoder`]).
//!
//! The encoder is the `ffmpeg` program (libx264), run as a child process: a crash or a
//! hang of the encoder cannot take the MC down, and the GPL of libx264 stays out of the
//! MIT binary. It reads the source's video frames as they arrive (MPEG-TS, timestamps
//! kept with `-copyts`), and writes one MPEG-TS program per rung whose keyframes are
//! forced wherever the source has one (`-force_key_frames source`, no scene cuts, no
//! other keyframes). Each rung is then cut on the source's own segments
//! ([`media::segmenter::RungCutter`]): the same MSN, start PTS, duration and date, and
//! a check, segment by segment, that the rung starts on the keyframe there.
//!
//! A meeting platform that encodes its own ladder publishes each rung itself instead
//! (`from = "publisher"`, [`published`]): one RTMP publish per rung beside the source's,
//! cut on the source's segments by the same cutter, whose alignment check then reports
//! a publisher's rung that players could not switch into.
//!
//! Audio is shared: the encoder makes video only, and every rung segment carries the
//! source segment's own audio frames, untouched (no second encode, no generation loss,
//! no CPU, and no wait for audio the encoder would buffer): every rung is a complete
//! muxed stream any player plays alone, and all rungs carry byte-identical audio.

mod cut;
pub mod encoder;
pub mod published;
pub mod status;

use serde::Deserialize;

/// The name of the rung that is the source itself (the stream's muxed rendition).
pub const SOURCE: &str = "source";

/// The most rungs a ladder may have.
pub const MAX_RUNGS: usize = 8;

/// Where a ladder's rungs come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RungSource {
    /// The MC transcodes the source with the encoder (the default).
    #[default]
    Encoder,
    /// The meeting platform publishes every rung itself, at `live/{meeting}@{rung}`
    /// with the meeting's stream key, on the source's timestamps.
    Publisher,
}

/// `[mc.ladder]`: the ladder every meeting gets (a meeting preset may turn it off).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LadderSettings {
    /// Where the rungs come from: `"encoder"` (default) or `"publisher"`.
    #[serde(default)]
    pub from: RungSource,
    /// The encoder program (default `ffmpeg`, found on `PATH`).
    #[serde(default = "default_encoder")]
    pub encoder: String,
    /// The x264 preset (`ultrafast` … `veryslow`; default `veryfast`).
    #[serde(default = "default_preset")]
    pub preset: String,
    /// Encoder threads per process (0: the encoder decides).
    #[serde(default)]
    pub threads: u32,
    /// Seconds without output, while input is fed, after which the encoder is killed
    /// as hung (default 10).
    #[serde(default = "default_hang_timeout")]
    pub hang_timeout: f64,
    /// The rungs, best first, as the master playlist lists them.
    pub rungs: Vec<RungSettings>,
}

/// One rung: `{ name = "source" }` for the source as it is, or a transcoded one.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RungSettings {
    /// The rung's name, in its URLs (`/{stream}/{name}/mono.m3u8`).
    pub name: String,
    /// Picture height in pixels (the width follows the source's aspect ratio).
    pub height: Option<u32>,
    /// Video bit rate, kbit/s.
    pub video_kbps: Option<u32>,
    /// H.264 profile: `baseline`, `main` (default) or `high`.
    pub profile: Option<String>,
}

fn default_encoder() -> String {
    "ffmpeg".into()
}
fn default_preset() -> String {
    "veryfast".into()
}
fn default_hang_timeout() -> f64 {
    10.0
}

/// A transcoded rung, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedRung {
    /// Its name.
    pub name: String,
    /// Picture height.
    pub height: u32,
    /// Video bit rate, kbit/s.
    pub video_kbps: u32,
    /// H.264 profile.
    pub profile: &'static str,
}

const PRESETS: [&str; 9] = [
    "ultrafast",
    "superfast",
    "veryfast",
    "faster",
    "fast",
    "medium",
    "slow",
    "slower",
    "veryslow",
];
const PROFILES: [&str; 3] = ["baseline", "main", "high"];

/// A rung name: 1 to 16 of `a-z`, `0-9`, `_`, `-`, starting with a letter or digit,
/// not `main` (the muxed rendition's internal name) and not a file name of a stream.
/// Public because a node checks the rungs its MC names with the same rule (a rung
/// becomes a URL segment and an archive directory).
///
/// # Errors
/// The reason, naming the rung.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = (1..=16).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if !ok {
        return Err(format!(
            "rung name {name:?} must be 1-16 of a-z, 0-9, '_', '-', starting with a letter or digit"
        ));
    }
    if name == crate::stream::rendition::MAIN {
        return Err(format!("rung name {name:?} is reserved"));
    }
    if packaging::languages::is_language_rendition(name) {
        return Err(format!(
            "rung name {name:?}: names starting with {:?} are audio languages'",
            packaging::languages::RENDITION_PREFIX
        ));
    }
    Ok(())
}

/// Checks rung `i`'s name, and that no rung before it (`seen`) has it.
fn check_rung_name<'a>(
    i: usize,
    rung: &'a RungSettings,
    seen: &mut std::collections::HashSet<&'a str>,
) -> Result<(), String> {
    let at = |why: String| format!("rungs[{i}].name {why}");
    check_name(&rung.name).map_err(at)?;
    if !seen.insert(rung.name.as_str()) {
        return Err(at(format!("{:?} is used twice", rung.name)));
    }
    Ok(())
}

impl LadderSettings {
    /// The rung names in master-playlist order, [`SOURCE`] where the source is listed.
    pub fn names(&self) -> Vec<String> {
        self.rungs.iter().map(|r| r.name.clone()).collect()
    }

    /// Checks every rule and returns the transcoded rungs in order.
    ///
    /// # Errors
    /// The first broken rule, naming the rung and key (`rungs[1].height …`).
    pub fn validate(&self) -> Result<Vec<EncodedRung>, String> {
        if self.encoder.trim().is_empty() {
            return Err("encoder must name a program".into());
        }
        if !PRESETS.contains(&self.preset.as_str()) {
            return Err(format!(
                "preset {:?} must be one of {}",
                self.preset,
                PRESETS.join(", ")
            ));
        }
        if self.threads > 64 {
            return Err("threads must be at most 64".into());
        }
        if !(1.0..=120.0).contains(&self.hang_timeout) {
            return Err("hang_timeout must be between 1 and 120 seconds".into());
        }
        if self.rungs.len() > MAX_RUNGS {
            return Err(format!("a ladder has at most {MAX_RUNGS} rungs"));
        }
        if self.from == RungSource::Publisher {
            self.published_rungs()?;
            return Ok(Vec::new());
        }
        let mut encoded: Vec<EncodedRung> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (i, rung) in self.rungs.iter().enumerate() {
            let at = |key: &str, why: String| format!("rungs[{i}].{key} {why}");
            check_rung_name(i, rung, &mut seen)?;
            if rung.name == SOURCE {
                if rung.height.is_some() || rung.video_kbps.is_some() || rung.profile.is_some() {
                    return Err(at(
                        "name",
                        "\"source\" is the source as it is: it takes no height, video_kbps or profile".into(),
                    ));
                }
                if !encoded.is_empty() {
                    return Err(at(
                        "name",
                        "\"source\" must come before the transcoded rungs (best first)".into(),
                    ));
                }
                continue;
            }
            let height = rung
                .height
                .ok_or_else(|| at("height", "is required for a transcoded rung".into()))?;
            if !(72..=2160).contains(&height) || height % 2 != 0 {
                return Err(at("height", format!("{height} must be even, 72 to 2160")));
            }
            let video_kbps = rung
                .video_kbps
                .ok_or_else(|| at("video_kbps", "is required for a transcoded rung".into()))?;
            if !(32..=50_000).contains(&video_kbps) {
                return Err(at(
                    "video_kbps",
                    format!("{video_kbps} must be 32 to 50000"),
                ));
            }
            let profile = match rung.profile.as_deref() {
                None => "main",
                Some(p) => PROFILES.iter().copied().find(|&q| q == p).ok_or_else(|| {
                    at("profile", format!("{p:?} must be baseline, main or high"))
                })?,
            };
            if let Some(previous) = encoded.last() {
                if height >= previous.height || video_kbps >= previous.video_kbps {
                    return Err(at(
                        "height",
                        format!(
                            "rungs go best first: {height}p at {video_kbps} kbit/s must be below {}p at {} kbit/s",
                            previous.height, previous.video_kbps
                        ),
                    ));
                }
            }
            encoded.push(EncodedRung {
                name: rung.name.clone(),
                height,
                video_kbps,
                profile,
            });
        }
        if encoded.is_empty() {
            return Err("a ladder needs at least one transcoded rung".into());
        }
        Ok(encoded)
    }

    /// The rungs of a ladder the publisher sends (`from = "publisher"`), checked: the
    /// names of the published rungs in order (not `source`, which is the meeting's own
    /// publish). A published rung takes only a name: its picture and bit rate are what
    /// the publisher sends.
    ///
    /// # Errors
    /// The first broken rule, naming the rung and key.
    pub fn published_rungs(&self) -> Result<Vec<String>, String> {
        if self.rungs.len() > MAX_RUNGS {
            return Err(format!("a ladder has at most {MAX_RUNGS} rungs"));
        }
        let mut published = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (i, rung) in self.rungs.iter().enumerate() {
            let at = |key: &str, why: String| format!("rungs[{i}].{key} {why}");
            check_rung_name(i, rung, &mut seen)?;
            if rung.height.is_some() || rung.video_kbps.is_some() || rung.profile.is_some() {
                return Err(at(
                    "name",
                    format!(
                        "{:?}: a published rung takes no height, video_kbps or profile (the publisher encodes it)",
                        rung.name
                    ),
                ));
            }
            if rung.name == SOURCE {
                if !published.is_empty() {
                    return Err(at(
                        "name",
                        "\"source\" must come before the published rungs (best first)".into(),
                    ));
                }
                continue;
            }
            published.push(rung.name.clone());
        }
        if published.is_empty() {
            return Err("a ladder needs at least one published rung".into());
        }
        Ok(published)
    }
}

/// The RTMP stream name a publisher sends rung `rung` of meeting `stream` to
/// (`rtmp://mc/live/{stream}@{rung}?key=…`).
pub fn published_stream_name(stream: &str, rung: &str) -> String {
    format!("{stream}@{rung}")
}

/// The encoder's arguments: MPEG-TS of the source on stdin, one MPEG-TS program per
/// rung on stdout (program `i + 1` is `rungs[i]`), video only (the rungs share the
/// source's audio, see the module docs).
pub fn ffmpeg_args(settings: &LadderSettings, rungs: &[EncodedRung]) -> Vec<String> {
    let mut args: Vec<String> = [
        "-hide_banner",
        "-nostats",
        "-loglevel",
        "warning",
        // Timestamps stay the source's: the rungs are cut on the source's timeline.
        "-copyts",
        // Start at once: the input is our own, its streams known from the first PMT.
        "-probesize",
        "65536",
        "-analyzeduration",
        "0",
        // One decoding thread: frame threads would hold frames back, so a segment's
        // last frames would wait for the next segment's input.
        "-threads",
        "1",
        "-f",
        "mpegts",
        "-i",
        "pipe:0",
    ]
    .map(String::from)
    .to_vec();
    let n = rungs.len();
    let split: String = (0..n).map(|i| format!("[s{i}]")).collect();
    let scales: Vec<String> = rungs
        .iter()
        .enumerate()
        .map(|(i, r)| format!("[s{i}]scale=-2:{}[v{i}]", r.height))
        .collect();
    args.push("-filter_complex".into());
    args.push(format!("[0:v:0]split={n}{split};{}", scales.join(";")));
    for i in 0..n {
        args.push("-map".into());
        args.push(format!("[v{i}]"));
    }
    args.push("-an".into());
    args.extend(
        [
            "-c:v",
            "libx264",
            "-preset",
            settings.preset.as_str(),
            "-tune",
            "zerolatency",
            "-pix_fmt",
            "yuv420p",
            // One output frame per input frame, and keyframes exactly where the source
            // has them: the condition for every rung to cut where the source cuts.
            "-fps_mode",
            "passthrough",
            // The source's 90 kHz clock: a frame-rate time base would round the PTS.
            "-enc_time_base",
            "1/90000",
            "-force_key_frames",
            "source",
            "-g",
            "100000",
            "-x264-params",
            "scenecut=0:open_gop=0",
        ]
        .map(String::from),
    );
    args.push("-threads".into());
    args.push(settings.threads.to_string());
    for (i, rung) in rungs.iter().enumerate() {
        let kbps = rung.video_kbps;
        args.extend([
            format!("-b:v:{i}"),
            format!("{kbps}k"),
            format!("-maxrate:v:{i}"),
            format!("{}k", kbps + kbps / 10),
            format!("-bufsize:v:{i}"),
            format!("{}k", kbps * 2),
            format!("-profile:v:{i}"),
            rung.profile.to_owned(),
        ]);
    }
    args.extend(
        [
            "-f",
            "mpegts",
            "-mpegts_copyts",
            "1",
            // A video PES with its length is handed over as soon as its last packet is
            // read: the segment's last frame does not wait for the next segment.
            "-omit_video_pes_length",
            "0",
            "-flush_packets",
            "1",
        ]
        .map(String::from),
    );
    for (i, rung) in rungs.iter().enumerate() {
        args.push("-program".into());
        args.push(format!("title={}:program_num={}:st={i}", rung.name, i + 1));
    }
    args.push("pipe:1".into());
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn published(rungs: &str) -> Result<Vec<String>, String> {
        let settings: LadderSettings =
            toml::from_str(&format!("from = \"publisher\"\nrungs = [{rungs}]"))
                .map_err(|e| e.to_string())?;
        settings.validate()?;
        settings.published_rungs()
    }

    #[test]
    fn a_published_ladder_names_its_rungs_only() {
        assert_eq!(
            published(r#"{ name = "source" }, { name = "720p" }, { name = "360p" }"#),
            Ok(vec!["720p".to_owned(), "360p".to_owned()])
        );
        assert_eq!(published_stream_name("board", "720p"), "board@720p");
        for (rungs, needle) in [
            (r#"{ name = "source" }"#, "at least one published rung"),
            (
                r#"{ name = "720p", height = 720 }"#,
                "rungs[0].name \"720p\": a published rung takes no height",
            ),
            (r#"{ name = "a" }, { name = "a" }"#, "used twice"),
            (
                r#"{ name = "a" }, { name = "source" }"#,
                "before the published",
            ),
            (r#"{ name = "main" }"#, "reserved"),
            (r#"{ name = "a@b" }"#, "rungs[0].name"),
        ] {
            let error = published(rungs).expect_err(rungs);
            assert!(error.contains(needle), "{rungs}: {error}");
        }
        let wrong: Result<LadderSettings, _> = toml::from_str("from = \"camera\"\nrungs = []");
        assert!(wrong.is_err());
    }

    fn ladder(rungs: &str) -> Result<Vec<EncodedRung>, String> {
        let settings: LadderSettings =
            toml::from_str(&format!("rungs = [{rungs}]")).map_err(|e| e.to_string())?;
        settings.validate()
    }

    #[test]
    fn a_ladder_is_checked_rung_by_rung() {
        let ok = ladder(
            r#"{ name = "source" }, { name = "240p", height = 240, video_kbps = 400 }, { name = "144p", height = 144, video_kbps = 150, profile = "baseline" }"#,
        )
        .expect("valid");
        assert_eq!(ok.len(), 2);
        assert_eq!(ok[0].profile, "main");
        assert_eq!(ok[1].profile, "baseline");
        for (rungs, needle) in [
            ("", "at least one transcoded rung"),
            (r#"{ name = "source" }"#, "at least one transcoded rung"),
            (r#"{ name = "240p", video_kbps = 400 }"#, "rungs[0].height"),
            (r#"{ name = "240p", height = 240 }"#, "rungs[0].video_kbps"),
            (
                r#"{ name = "240p", height = 241, video_kbps = 4 }"#,
                "must be even",
            ),
            (
                r#"{ name = "Big", height = 240, video_kbps = 400 }"#,
                "rungs[0].name",
            ),
            (
                r#"{ name = "main", height = 240, video_kbps = 400 }"#,
                "reserved",
            ),
            (
                r#"{ name = "a", height = 240, video_kbps = 400 }, { name = "a", height = 144, video_kbps = 100 }"#,
                "used twice",
            ),
            (
                r#"{ name = "a", height = 144, video_kbps = 100 }, { name = "b", height = 240, video_kbps = 400 }"#,
                "best first",
            ),
            (
                r#"{ name = "a", height = 240, video_kbps = 400, profile = "high10" }"#,
                "rungs[0].profile",
            ),
            (
                r#"{ name = "a", height = 240, video_kbps = 400 }, { name = "source" }"#,
                "before the transcoded",
            ),
            (r#"{ name = "source", height = 720 }"#, "takes no height"),
            (
                r#"{ name = "a", height = 240, video_kbps = 400, fps = 3 }"#,
                "unknown field",
            ),
        ] {
            let error = ladder(rungs).expect_err(rungs);
            assert!(error.contains(needle), "{rungs}: {error}");
        }
        let settings: LadderSettings = toml::from_str(
            "preset = \"warp\"\nrungs = [{ name = \"a\", height = 240, video_kbps = 400 }]",
        )
        .expect("toml");
        assert!(settings.validate().expect_err("preset").contains("preset"));
    }

    #[test]
    fn the_encoder_keeps_the_timestamps_and_forces_the_sources_keyframes() {
        let settings: LadderSettings = toml::from_str(
            r#"rungs = [{ name = "source" }, { name = "240p", height = 240, video_kbps = 400 }, { name = "144p", height = 144, video_kbps = 150 }]"#,
        )
        .expect("toml");
        let rungs = settings.validate().expect("valid");
        let args = ffmpeg_args(&settings, &rungs).join(" ");
        for needle in [
            "-copyts",
            "-force_key_frames source",
            "-fps_mode passthrough",
            "-mpegts_copyts 1",
            "scenecut=0",
            "[0:v:0]split=2[s0][s1];[s0]scale=-2:240[v0];[s1]scale=-2:144[v1]",
            "-an",
            "-omit_video_pes_length 0",
            "-b:v:1 150k",
            "-program title=240p:program_num=1:st=0 ",
            "-program title=144p:program_num=2:st=1 ",
        ] {
            assert!(args.contains(needle), "{needle} in {args}");
        }
    }
}
