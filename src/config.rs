//! The node's TOML configuration (`brdyun node --config FILE`). Every key is documented
//! in docs/configuration.md with its default. Unknown keys are errors, so a typo is
//! caught at start.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde::Deserialize;

mod languages;
mod mc_link;
pub(crate) mod ott;
mod recordings;
mod rtmp_limits;
mod srt;

pub use languages::{audio_languages, sources as language_sources, LanguageConfig};
pub use mc_link::McLinkConfig;
pub use ott::OttConfig;
pub use recordings::RecordingsConfig;
pub use rtmp_limits::RtmpLimitsConfig;
pub use srt::SrtOptionsConfig;

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// This node.
    #[serde(default)]
    pub node: NodeConfig,
    /// Defaults for every `[[stream]]`.
    #[serde(default)]
    pub defaults: StreamDefaults,
    /// The streams this node delivers.
    #[serde(default, rename = "stream")]
    pub streams: Vec<StreamConfig>,
    /// Prioritized load shedding and fault injection (`[shedding]`).
    #[serde(default)]
    pub shedding: server::shed::ShedSettings,
    /// The node's MC (`[mc]`): meetings become streams, viewers get meeting codes.
    #[serde(default)]
    pub mc: Option<McLinkConfig>,
    /// The node's mesh domain and OTT redundancy (`[ott]`).
    #[serde(default)]
    pub ott: Option<OttConfig>,
    /// Continuous shedding experiments (`[[experiment]]`, EXP-1, EXP-2): the fields of
    /// `experiments::ExperimentDefinition`, unknown keys refused.
    #[serde(default, rename = "experiment")]
    pub experiments: Vec<experiments::ExperimentDefinition>,
    /// Logins and their connection limit on this node (`[[login]]`, OTT-GRP-6).
    #[serde(default, rename = "login")]
    pub logins: Vec<LoginConfig>,
    /// Log format and access log (`[log]`, docs/operations.md "Logs").
    #[serde(default)]
    pub log: crate::logging::LogConfig,
    /// The archive's copy on object storage (`[recordings]`, docs/configuration.md).
    #[serde(default)]
    pub recordings: Option<RecordingsConfig>,
}

/// `[[login]]`: a viewer login; its limit applies on each node separately (OTT-GRP-6).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoginConfig {
    /// The name viewers give as `?login=NAME` (letters, digits, `-`, `_`, `.`).
    pub name: String,
    /// The token they give as `&token=TOKEN` (same alphabet, at least 8 characters).
    pub token: String,
    /// Most distinct viewer sessions of this login at once on this node ("max
    /// connections, HTTP/HLS").
    pub max_connections: u32,
}

/// `[node]`: identity, listeners, storage.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// The node's name in logs, status and metrics.
    #[serde(default = "default_name")]
    pub name: String,
    /// The public DNS name viewers reach this node by (OTT-ADDR-1).
    pub hostname: Option<String>,
    /// The HTTP listen address.
    #[serde(default = "default_http")]
    pub http: SocketAddr,
    /// The HTTPS listen address; needs `tls_cert` and `tls_key`.
    pub https: Option<SocketAddr>,
    /// PEM certificate chain for HTTPS, issued for `hostname` (OTT-ADDR-3).
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for HTTPS.
    pub tls_key: Option<PathBuf>,
    /// The RTMP publish listen address; without it, RTMP publish is off.
    pub rtmp: Option<SocketAddr>,
    /// `[node.rtmp_limits]`: the RTMP listener's caps and deadlines (and the RTMPS
    /// listener's, each counted on its own).
    #[serde(default)]
    pub rtmp_limits: RtmpLimitsConfig,
    /// The RTMPS (RTMP over TLS) publish listen address; without it, RTMPS is off.
    pub rtmps: Option<SocketAddr>,
    /// PEM certificate chain for RTMPS; default `tls_cert`. Checked against `hostname`.
    pub rtmps_cert: Option<PathBuf>,
    /// PEM private key for RTMPS; default `tls_key`.
    pub rtmps_key: Option<PathBuf>,
    /// The SRT publish listen address (UDP, one port for every stream); without it,
    /// SRT publish is off.
    pub srt: Option<SocketAddr>,
    /// `[node.srt_options]`: the SRT listener's latency and passphrases (its caps and
    /// deadlines are `rtmp_limits`', counted on their own).
    #[serde(default)]
    pub srt_options: SrtOptionsConfig,
    /// Where the node keeps its state (timeline counters per stream).
    #[serde(default = "default_data_dir")]
    pub data_dir: PathBuf,
    /// Bearer token for `/api` (at least 24 characters); without it one is created in
    /// `data_dir/admin_token`, unless `trust_loopback` leaves a loopback node open.
    pub admin_token: Option<String>,
    /// Leave `/api` open when every listener is on loopback and no `admin_token` is set
    /// (the demo). Default false: trust is a setting, never inferred from an address.
    #[serde(default)]
    pub trust_loopback: bool,
    /// The most HTTP(S) connections the node holds open at once; one more is answered
    /// 503 (108010) and closed. Unset: 80 % of the file descriptors the process may
    /// hold, at most 20,000.
    #[serde(default)]
    pub max_connections: Option<usize>,
    /// The most HTTP(S) connections one client address may hold open (a whole office
    /// behind one NAT address counts as one client); one more is answered 429 (108009).
    /// Unset: a tenth of `max_connections` as derived.
    #[serde(default)]
    pub max_connections_per_client: Option<usize>,
    /// How long a request's whole body may take to arrive, seconds (default 10); a
    /// body still arriving then is answered 408 (108011) and its connection closed.
    #[serde(default = "default_body_timeout")]
    pub body_timeout: f64,
    /// Seconds `/readyz` answers 503 (115010) after SIGTERM before the listeners
    /// close, so load balancers take the node out while it still answers (default 0:
    /// close at once).
    #[serde(default)]
    pub shutdown_delay: f64,
}

/// Checks `shutdown_delay` of `[node]` or `[mc]` (`section`).
///
/// # Errors
/// A delay outside 0–300 s.
pub fn check_shutdown_delay(section: &str, seconds: f64) -> anyhow::Result<()> {
    if !(0.0..=300.0).contains(&seconds) {
        bail!("{section}.shutdown_delay must be between 0 and 300 seconds");
    }
    Ok(())
}

/// The default of `body_timeout` (`[node]` and `[mc]`), seconds.
pub fn default_body_timeout() -> f64 {
    server::http::edge_limits::BODY_TIMEOUT.as_secs_f64()
}

/// Checks the connection settings of `[node]` or `[mc]` (`section`).
///
/// # Errors
/// A cap of 0, or a body timeout outside 1–600 s.
pub fn check_connections(
    section: &str,
    max_connections: Option<usize>,
    max_connections_per_client: Option<usize>,
    body_timeout: f64,
) -> anyhow::Result<()> {
    if max_connections == Some(0) {
        bail!("{section}.max_connections must be at least 1");
    }
    if max_connections_per_client == Some(0) {
        bail!("{section}.max_connections_per_client must be at least 1");
    }
    if !(1.0..=600.0).contains(&body_timeout) {
        bail!("{section}.body_timeout must be between 1 and 600 seconds");
    }
    Ok(())
}

impl NodeConfig {
    /// The certificate and key RTMPS serves: its own, else the HTTPS pair.
    pub fn rtmps_files(&self) -> Option<(PathBuf, PathBuf)> {
        match (
            &self.rtmps_cert,
            &self.rtmps_key,
            &self.tls_cert,
            &self.tls_key,
        ) {
            (Some(cert), Some(key), _, _) | (None, None, Some(cert), Some(key)) => {
                Some((cert.clone(), key.clone()))
            }
            _ => None,
        }
    }
}

impl Default for NodeConfig {
    fn default() -> Self {
        Self {
            name: default_name(),
            hostname: None,
            http: default_http(),
            https: None,
            tls_cert: None,
            tls_key: None,
            rtmp: None,
            rtmp_limits: RtmpLimitsConfig::default(),
            rtmps: None,
            rtmps_cert: None,
            rtmps_key: None,
            srt: None,
            srt_options: SrtOptionsConfig::default(),
            data_dir: default_data_dir(),
            admin_token: None,
            trust_loopback: false,
            max_connections: None,
            max_connections_per_client: None,
            body_timeout: default_body_timeout(),
            shutdown_delay: 0.0,
        }
    }
}

/// `[defaults]`: per-stream settings a `[[stream]]` may override.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamDefaults {
    /// Target segment duration, seconds.
    #[serde(default = "default_segment_duration")]
    pub segment_duration: f64,
    /// Length of the live window, seconds.
    #[serde(default = "default_window")]
    pub window: f64,
    /// LL-HLS part duration, seconds (0.2–5, at most the segment duration).
    #[serde(default = "default_part_duration")]
    pub part_duration: f64,
    /// LL-HLS PART-HOLD-BACK, seconds (default 3 × part_duration, at least 2 ×).
    pub part_hold_back: Option<f64>,
    /// How long the active input may deliver nothing before the next input takes over, seconds.
    #[serde(default = "default_source_timeout")]
    pub source_timeout: f64,
    /// The same for a publish input (RTMP, RTMPS, SRT) when shorter, seconds: a
    /// publisher sends steadily while it is there, and a lost SRT publisher just goes
    /// silent, so its backup slot takes over after this much silence.
    #[serde(default = "default_publish_timeout")]
    pub publish_timeout: f64,
    /// DVR archive defaults (`[defaults.dvr]`).
    #[serde(default)]
    pub dvr: DvrConfig,
}

/// `dvr`: whether and how long a stream is archived. In `[defaults.dvr]` and
/// per stream (`dvr = { enabled = true, depth = "1d" }`); a stream's keys override the
/// defaults one by one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DvrConfig {
    /// Record the stream (default false).
    pub enabled: Option<bool>,
    /// How long to keep: seconds, or `"90s"`, `"30m"`, `"12h"`, `"7d"` (default 7 days).
    pub depth: Option<Depth>,
    /// Disk limit for the stream's archive: bytes, or `"500M"`, `"20G"` (default none).
    pub max_bytes: Option<Size>,
    /// Time span of one archive data file (default `"10m"`, 1 s to 1 h): the unit
    /// retention removes and `[recordings]` uploads. A timeline property: the nodes of a
    /// group keep one copy in the bucket only when they agree on it.
    pub file_span: Option<Depth>,
    /// How long the recordings store keeps this stream's recording after each file's
    /// span ended (default: `[recordings] depth`).
    pub remote_depth: Option<Depth>,
}

/// An archive depth in milliseconds, written as seconds or with a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "NumberOrText")]
pub struct Depth(pub u64);

/// A size in bytes, written as a number or with a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "NumberOrText")]
pub struct Size(pub u64);

#[derive(Deserialize)]
#[serde(untagged)]
enum NumberOrText {
    Number(u64),
    Text(String),
}

impl TryFrom<NumberOrText> for Depth {
    type Error = String;
    fn try_from(value: NumberOrText) -> Result<Self, String> {
        let text = match value {
            NumberOrText::Number(n) => n.to_string(),
            NumberOrText::Text(t) => t,
        };
        dvr::retention::parse_depth(&text)
            .map(Depth)
            .ok_or_else(|| format!("depth {text:?}: expected seconds or a number with s, m, h or d (up to 10 years)"))
    }
}

impl TryFrom<NumberOrText> for Size {
    type Error = String;
    fn try_from(value: NumberOrText) -> Result<Self, String> {
        let text = match value {
            NumberOrText::Number(n) => n.to_string(),
            NumberOrText::Text(t) => t,
        };
        dvr::retention::parse_bytes(&text).map(Size).ok_or_else(|| {
            format!("max_bytes {text:?}: expected bytes or a number with K, M, G or T")
        })
    }
}

/// The default depth of an enabled archive: a week.
const DEFAULT_DVR_DEPTH_MS: u64 = 7 * 86_400_000;

impl DvrConfig {
    /// This stream's retention when recording is enabled (the stream's keys over the
    /// defaults'), else `None`.
    pub fn resolve(&self, defaults: &DvrConfig) -> Option<dvr::Retention> {
        if !self.enabled.or(defaults.enabled).unwrap_or(false) {
            return None;
        }
        Some(dvr::Retention {
            depth_ms: Some(
                self.depth
                    .or(defaults.depth)
                    .map_or(DEFAULT_DVR_DEPTH_MS, |d| d.0),
            ),
            max_bytes: self.max_bytes.or(defaults.max_bytes).map(|s| s.0),
        })
    }
}

impl Default for StreamDefaults {
    fn default() -> Self {
        Self {
            segment_duration: default_segment_duration(),
            window: default_window(),
            part_duration: default_part_duration(),
            part_hold_back: None,
            source_timeout: default_source_timeout(),
            publish_timeout: default_publish_timeout(),
            dvr: DvrConfig::default(),
        }
    }
}

/// `[[stream]]`: one stream and its ordered inputs (the first is the primary).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamConfig {
    /// The stream name, used in every URL: letters, digits, `-` and `_`.
    pub name: String,
    /// Input URLs in order of preference: `http(s)://…`, `udp://…`, `publish://`.
    pub inputs: Vec<String>,
    /// Overrides `defaults.segment_duration`.
    pub segment_duration: Option<f64>,
    /// Overrides `defaults.window`.
    pub window: Option<f64>,
    /// Overrides `defaults.part_duration`.
    pub part_duration: Option<f64>,
    /// Overrides `defaults.part_hold_back`.
    pub part_hold_back: Option<f64>,
    /// Overrides `defaults.source_timeout`.
    pub source_timeout: Option<f64>,
    /// Overrides `defaults.publish_timeout`.
    pub publish_timeout: Option<f64>,
    /// Overrides `defaults.dvr`, key by key.
    #[serde(default)]
    pub dvr: DvrConfig,
    /// Offer this node's stream as a backup to the other members of its OTT group
    /// ("can substitute", OTT-GRP-1); needs `[ott]`.
    pub ott_backup: Option<bool>,
    /// The OTT group this stream belongs to (default: the stream's name); needs `[ott]`.
    pub backup_group: Option<String>,
    /// The language (BCP 47) of the CEA-608 captions in the source's video, for the
    /// decoded `cc1` subtitle track (default `en`).
    pub cc_language: Option<String>,
    /// `[[stream.language]]`: the stream's audio languages, the floor first (see
    /// [`LanguageConfig`]); fewer than two is one audio.
    #[serde(default, rename = "language")]
    pub languages: Vec<LanguageConfig>,
    /// The stream's ABR ladder, for a meeting stream (set by the MC or the node's MC
    /// link, never in a file).
    #[serde(skip)]
    pub ladder: Option<LadderPlan>,
    /// The relays a meeting stream pulls each language beside the floor from (its
    /// rendition name and the MC's relay URLs of it), set by the node's MC link, never
    /// in a file: the MC cuts the languages, the nodes follow its segments.
    #[serde(skip)]
    pub language_pulls: Vec<(String, Vec<String>)>,
    /// The credential its HTTP inputs send as `Authorization: Bearer` (`input_token`):
    /// for a stream that pulls a protected relay, such as an MC's meeting (its node
    /// token). A meeting stream of the node's `[mc]` link gets that link's token.
    #[serde(default, rename = "input_token")]
    pub relay_token: Option<String>,
}

/// How a meeting stream gets its ladder rungs.
#[derive(Debug, Clone, PartialEq)]
pub enum LadderPlan {
    /// The MC encodes them from the source ([`server::stream::ladder::encoder`]).
    Encode(server::stream::ladder::LadderSettings),
    /// A node pulls each rung from the MC's relays of it, in step with the source.
    Pull {
        /// The rung names in master-playlist order (`source` for the source).
        names: Vec<String>,
        /// The relay URLs of each pulled rung (every rung but `source`), in preference order.
        inputs: Vec<(String, Vec<String>)>,
    },
}

impl LadderPlan {
    /// The rung names in master-playlist order.
    pub fn names(&self) -> Vec<String> {
        match self {
            LadderPlan::Encode(settings) => settings.names(),
            LadderPlan::Pull { names, .. } => names.clone(),
        }
    }
}

fn default_name() -> String {
    "brdyun".into()
}
fn default_http() -> SocketAddr {
    SocketAddr::from(([0, 0, 0, 0], 8080))
}
fn default_data_dir() -> PathBuf {
    PathBuf::from("/var/lib/brdyun")
}
fn default_segment_duration() -> f64 {
    2.0
}
fn default_window() -> f64 {
    60.0
}
fn default_part_duration() -> f64 {
    1.0
}
fn default_source_timeout() -> f64 {
    5.0
}
fn default_publish_timeout() -> f64 {
    1.0
}

/// A stream's settings with defaults applied.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StreamSettings {
    /// Target segment duration, milliseconds.
    pub segment_duration_ms: u64,
    /// Segments kept in the live window.
    pub window_segments: usize,
    /// LL-HLS part duration, milliseconds.
    pub part_duration_ms: u64,
    /// LL-HLS PART-HOLD-BACK, milliseconds (`None`: 3 × the part duration).
    pub part_hold_back_ms: Option<u64>,
    /// Input stall timeout, milliseconds.
    pub source_timeout_ms: u64,
    /// A publish input's stall timeout, milliseconds.
    pub publish_timeout_ms: u64,
    /// The archive's retention when the stream is recorded.
    pub dvr: Option<dvr::Retention>,
    /// The archive's data file span, milliseconds.
    pub dvr_file_span_ms: i64,
    /// How long the recordings store keeps the stream's files, milliseconds (`None`: the
    /// store's depth).
    pub dvr_remote_depth_ms: Option<i64>,
}

impl StreamConfig {
    /// Applies the defaults.
    pub fn settings(&self, defaults: &StreamDefaults) -> StreamSettings {
        let segment = self.segment_duration.unwrap_or(defaults.segment_duration);
        let window = self.window.unwrap_or(defaults.window);
        StreamSettings {
            segment_duration_ms: (segment * 1000.0).round() as u64,
            window_segments: ((window / segment).ceil() as usize).max(3),
            part_duration_ms: (self.part_duration.unwrap_or(defaults.part_duration) * 1000.0)
                .round() as u64,
            part_hold_back_ms: self
                .part_hold_back
                .or(defaults.part_hold_back)
                .map(|s| (s * 1000.0).round() as u64),
            source_timeout_ms: (self.source_timeout.unwrap_or(defaults.source_timeout) * 1000.0)
                .round() as u64,
            publish_timeout_ms: (self.publish_timeout.unwrap_or(defaults.publish_timeout) * 1000.0)
                .round() as u64,
            dvr: self.dvr.resolve(&defaults.dvr),
            dvr_file_span_ms: self.dvr.file_span.or(defaults.dvr.file_span).map_or(
                dvr::store::DEFAULT_SPAN_MS,
                |d| {
                    i64::try_from(d.0)
                        .unwrap_or(i64::MAX)
                        .clamp(1_000, 3_600_000)
                },
            ),
            dvr_remote_depth_ms: self
                .dvr
                .remote_depth
                .or(defaults.dvr.remote_depth)
                .map(|d| i64::try_from(d.0).unwrap_or(i64::MAX)),
        }
    }
}

impl Config {
    /// Reads and checks a config file.
    ///
    /// # Errors
    /// The file cannot be read, is not valid TOML for this schema (the message names the
    /// key and line), or breaks a rule checked by [`Config::validate`].
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading config {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("config {}", path.display()))
    }

    /// Parses and checks config text.
    ///
    /// # Errors
    /// As [`Config::load`].
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let config: Config = toml::from_str(text)?;
        config.validate()?;
        Ok(config)
    }

    /// The rules serde cannot express.
    ///
    /// # Errors
    /// The first broken rule, naming its key.
    pub fn validate(&self) -> anyhow::Result<()> {
        self.log.validate()?;
        let node = &self.node;
        if let Some(token) = &node.admin_token {
            crate::admin_token::check_configured("node.admin_token", token)?;
        }
        if !::mc::report::valid_node_name(&node.name) {
            bail!(
                "node.name {:?}: 1 to 64 letters, digits, '-', '_', '.' or ':' (it names the \
                 node in its MC's viewer reports)",
                node.name
            );
        }
        if node.https.is_some() && (node.tls_cert.is_none() || node.tls_key.is_none()) {
            bail!("node.https needs node.tls_cert and node.tls_key");
        }
        node.rtmp_limits.limits("node.rtmp_limits")?;
        if node.rtmps_cert.is_some() != node.rtmps_key.is_some() {
            bail!("node.rtmps_cert and node.rtmps_key go together");
        }
        if node.rtmps.is_some() && node.rtmps_files().is_none() {
            bail!("node.rtmps needs node.rtmps_cert and node.rtmps_key (or node.tls_cert and node.tls_key)");
        }
        check_connections(
            "node",
            node.max_connections,
            node.max_connections_per_client,
            node.body_timeout,
        )?;
        check_shutdown_delay("node", node.shutdown_delay)?;
        if let Some(host) = &node.hostname {
            if host.is_empty()
                || host.len() > 253
                || !host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
            {
                bail!("node.hostname {host:?} is not a valid DNS name");
            }
        }
        check_durations(
            "defaults",
            &self.defaults.segment_duration.into(),
            &self.defaults.window.into(),
            &self.defaults.source_timeout.into(),
        )?;
        check_publish_timeout("defaults", Some(self.defaults.publish_timeout))?;
        check_part(
            "defaults",
            self.defaults.part_duration,
            self.defaults.part_hold_back,
            self.defaults.segment_duration,
        )?;
        if let Some(mc) = &self.mc {
            mc.validate()?;
        }
        if let Some(ott) = &self.ott {
            ott.validate()?;
        }
        // Errors name the table: `experiment[1].guardrails.max_start_failure_rate: ...`.
        experiments::validate_all(&self.experiments).map_err(|e| anyhow::anyhow!("{e}"))?;
        let url_safe = |v: &str| {
            !v.is_empty()
                && v.len() <= 128
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        };
        let mut login_names = std::collections::BTreeSet::new();
        for (i, login) in self.logins.iter().enumerate() {
            if !url_safe(&login.name) || !login_names.insert(login.name.as_str()) {
                bail!(
                    "login[{i}].name {:?}: use unique letters, digits, '-', '_', '.'",
                    login.name
                );
            }
            if !url_safe(&login.token) || login.token.len() < 8 {
                bail!("login[{i}].token: at least 8 letters, digits, '-', '_' or '.'");
            }
        }
        let mut names = std::collections::BTreeSet::new();
        for (i, stream) in self.streams.iter().enumerate() {
            let at = format!("stream[{i}]");
            if !valid_stream_name(&stream.name) {
                bail!(
                    "{at}.name {:?}: use 1 to 64 letters, digits, '-' or '_'",
                    stream.name
                );
            }
            if !names.insert(stream.name.as_str()) {
                bail!("{at}.name {:?} is used twice", stream.name);
            }
            if stream.inputs.is_empty() {
                bail!("{at}.inputs is empty: a stream needs at least one input");
            }
            for (j, input) in stream.inputs.iter().enumerate() {
                ingest::input_url::InputUrl::parse(input)
                    .with_context(|| format!("{at}.inputs[{j}]"))?;
            }
            if let Some(group) = &stream.backup_group {
                if !valid_stream_name(group) {
                    bail!("{at}.backup_group {group:?}: use 1 to 64 letters, digits, '-' or '_'");
                }
            }
            if let Some(language) = &stream.cc_language {
                if !media::captions::text::is_language_tag(language) {
                    bail!("{at}.cc_language {language:?} is not a BCP 47 language tag (e.g. \"pt-BR\")");
                }
            }
            languages::check(&at, &stream.languages)?;
            languages::check_interpreters(&at, &stream.languages, &stream.inputs)?;
            if (stream.ott_backup.is_some() || stream.backup_group.is_some()) && self.ott.is_none()
            {
                bail!("{at}.ott_backup and backup_group need an [ott] section");
            }
            check_durations(
                &at,
                &stream.segment_duration,
                &stream.window,
                &stream.source_timeout,
            )?;
            check_publish_timeout(&at, stream.publish_timeout)?;
            check_part(
                &at,
                stream.part_duration.unwrap_or(self.defaults.part_duration),
                stream.part_hold_back.or(self.defaults.part_hold_back),
                stream
                    .segment_duration
                    .unwrap_or(self.defaults.segment_duration),
            )?;
        }
        Ok(())
    }
}

/// An LL-HLS part must fit in a segment: 0.2–5 s and at most the segment duration;
/// the hold-back is at least two parts (the draft's minimum) and at most 60 s.
fn check_part(at: &str, part: f64, hold_back: Option<f64>, segment: f64) -> anyhow::Result<()> {
    if !(0.2..=5.0).contains(&part) || part > segment {
        bail!("{at}.part_duration {part} must be between 0.2 and 5 seconds and at most the segment duration {segment}");
    }
    if let Some(h) = hold_back {
        if !(h >= 2.0 * part && h <= 60.0) {
            bail!("{at}.part_hold_back {h} must be at least twice part_duration ({part}) and at most 60 seconds");
        }
    }
    Ok(())
}

fn check_durations(
    at: &str,
    segment: &Option<f64>,
    window: &Option<f64>,
    timeout: &Option<f64>,
) -> anyhow::Result<()> {
    if let Some(s) = segment {
        if !(0.5..=20.0).contains(s) {
            bail!("{at}.segment_duration {s} must be between 0.5 and 20 seconds");
        }
    }
    if let Some(w) = window {
        if !(4.0..=3600.0).contains(w) {
            bail!("{at}.window {w} must be between 4 and 3600 seconds");
        }
    }
    if let Some(t) = timeout {
        if !(0.5..=600.0).contains(t) {
            bail!("{at}.source_timeout {t} must be between 0.5 and 600 seconds");
        }
    }
    Ok(())
}

/// `publish_timeout` is 0.2 to 600 seconds.
fn check_publish_timeout(at: &str, timeout: Option<f64>) -> anyhow::Result<()> {
    match timeout {
        Some(t) if !(0.2..=600.0).contains(&t) => {
            bail!("{at}.publish_timeout {t} must be between 0.2 and 600 seconds")
        }
        _ => Ok(()),
    }
}

/// Stream names appear in URLs and file names: keep them to a safe alphabet.
pub fn valid_stream_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A stream config from a name, inputs and a template of the other `[[stream]]` keys
/// (built through serde so that every key a stream accepts works in the template).
///
/// # Errors
/// The template has a key a stream does not accept.
pub fn stream_from(
    name: &str,
    inputs: Vec<String>,
    template: &toml::Table,
) -> anyhow::Result<StreamConfig> {
    let mut table = template.clone();
    table.insert("name".into(), toml::Value::String(name.to_owned()));
    table.insert(
        "inputs".into(),
        toml::Value::Array(inputs.into_iter().map(toml::Value::String).collect()),
    );
    Ok(StreamConfig::deserialize(table)?)
}

#[cfg(test)]
mod tests;
