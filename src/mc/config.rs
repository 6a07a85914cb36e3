//! Configuration of the MC role (`brdyun mc --config FILE`) and of a node's link to
//! its MC (the node config's `[mc]` section). Unknown keys are errors.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde::Deserialize;

use crate::config::StreamDefaults;
pub use crate::config::{stream_from, McLinkConfig};

/// The MC's own config file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McConfig {
    /// The MC itself.
    pub mc: McSection,
    /// Stream settings of every meeting on the MC.
    #[serde(default)]
    pub defaults: StreamDefaults,
    /// Meetings made at start if absent (e.g. a built-in source for the demo).
    #[serde(default, rename = "meeting")]
    pub meetings: Vec<PresetMeeting>,
    /// Log format and access log (`[log]`, as a node's).
    #[serde(default)]
    pub log: crate::logging::LogConfig,
    /// The recordings store the nodes upload to (`[recordings]`, as a node's): the MC
    /// lists each meeting's recordings from it.
    #[serde(default)]
    pub recordings: Option<crate::config::RecordingsConfig>,
}

/// `[mc]` of the MC's file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McSection {
    /// The name in logs.
    #[serde(default = "default_mc_name")]
    pub name: String,
    /// HTTP listen address: the API and the meeting relays.
    pub http: SocketAddr,
    /// RTMP publish listen address (`rtmp://mc/live/<meeting>?key=<stream_key>`).
    pub rtmp: Option<SocketAddr>,
    /// `[mc.rtmp_limits]`: the RTMP listener's caps and deadlines (and the RTMPS
    /// listener's, each counted on its own).
    #[serde(default)]
    pub rtmp_limits: crate::config::RtmpLimitsConfig,
    /// RTMPS publish listen address (`rtmps://mc/live/<meeting>?key=<stream_key>`);
    /// needs `rtmps_cert` and `rtmps_key`.
    pub rtmps: Option<SocketAddr>,
    /// PEM certificate chain for RTMPS, issued for `hostname`; reloaded on SIGHUP.
    pub rtmps_cert: Option<PathBuf>,
    /// PEM private key for RTMPS.
    pub rtmps_key: Option<PathBuf>,
    /// SRT publish listen address (UDP; `srt://mc:port?streamid=#!::r=<meeting>,m=publish,s=<stream_key>`).
    pub srt: Option<SocketAddr>,
    /// `[mc.srt_options]`: the SRT listener's latency and passphrases (its caps and
    /// deadlines are `rtmp_limits`', counted on their own).
    #[serde(default)]
    pub srt_options: crate::config::SrtOptionsConfig,
    /// The public DNS name publishers reach the MC by; the RTMPS certificate is
    /// checked against it.
    pub hostname: Option<String>,
    /// Where the store (`meetings.json`) and timeline state live.
    pub data_dir: PathBuf,
    /// Admin bearer token (at least 24 characters); without it one is created in
    /// `data_dir/admin_token`, unless `trust_loopback` leaves a loopback MC open.
    pub admin_token: Option<String>,
    /// Token nodes sync with and pull private relays with (at least 24 characters);
    /// without it one is created in `data_dir/node_token`, unless `trust_loopback`
    /// leaves a loopback MC open to this machine's callers.
    pub node_token: Option<String>,
    /// Leave the admin and node APIs open when every listener is on loopback and no
    /// token is set (the demo). Default false: trust is never inferred from a bind
    /// address, since a proxy in front of 127.0.0.1 puts the internet on loopback.
    #[serde(default)]
    pub trust_loopback: bool,
    /// Clients below this version get 102011 / 16.
    pub min_client_version: Option<String>,
    /// How long a node's viewer report counts, seconds (default 10).
    #[serde(default = "default_ttl")]
    pub viewer_report_ttl: f64,
    /// `[mc.ladder]`: the ABR ladder every meeting's stream is encoded into.
    pub ladder: Option<server::stream::ladder::LadderSettings>,
    /// `[[mc.viewer_keys]]`: the meeting platform's Ed25519 public keys its viewer
    /// tokens for private meetings are signed with (several during a rotation).
    #[serde(default)]
    pub viewer_keys: Vec<ViewerKeyConfig>,
    /// The etcd cluster of an MC pair (client URLs, `http://host:port`): meetings are
    /// kept there and shared by every MC. Empty: `meetings.json` is the store.
    #[serde(default)]
    pub etcd: Vec<String>,
    /// The other MCs of the group (base URLs): each meeting follows the timeline of the
    /// MC that owns it (see docs/mc-pair.md). Needs `etcd`.
    #[serde(default)]
    pub peers: Vec<String>,
    /// Pull the peers' relays over plain `http://` off loopback although the node token
    /// travels with them (default false: a peer URL must be `https://` or a loopback
    /// literal).
    #[serde(default)]
    pub allow_insecure_peers: bool,
    /// The prefix of this MC group's keys in etcd (default `/brdyun/`).
    #[serde(default = "default_etcd_prefix")]
    pub etcd_prefix: String,
    /// The most HTTP connections the MC holds open at once; one more is answered 503
    /// (108010) and closed. Unset: 80 % of the file descriptors the process may hold,
    /// at most 20,000.
    #[serde(default)]
    pub max_connections: Option<usize>,
    /// The most HTTP connections one client address may hold open; one more is
    /// answered 429 (108009). Unset: a tenth of `max_connections` as derived.
    #[serde(default)]
    pub max_connections_per_client: Option<usize>,
    /// How long a request's whole body may take to arrive, seconds (default 10).
    #[serde(default = "crate::config::default_body_timeout")]
    pub body_timeout: f64,
    /// Seconds `/readyz` answers 503 (115010) after SIGTERM before the listener
    /// closes (default 0: close at once).
    #[serde(default)]
    pub shutdown_delay: f64,
}

fn default_etcd_prefix() -> String {
    "/brdyun/".into()
}

/// One public key of the meeting platform (a JWK's `kid` and `x`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ViewerKeyConfig {
    /// The key id tokens name in their header.
    pub kid: String,
    /// The 32-byte Ed25519 public key, base64url.
    pub public: String,
}

fn default_mc_name() -> String {
    "mc".into()
}
fn default_ttl() -> f64 {
    10.0
}

/// `[[meeting]]`: a meeting the MC makes at start when it does not exist yet.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PresetMeeting {
    /// The id.
    pub id: String,
    /// A title.
    #[serde(default)]
    pub title: String,
    /// The viewer limit.
    pub viewer_limit: Option<u32>,
    /// Start it right away.
    #[serde(default)]
    pub start: bool,
    /// Inputs besides RTMP publish: `udp://…`, `http(s)://…` (MPEG-TS), `builtin://meeting`.
    #[serde(default)]
    pub inputs: Vec<String>,
    /// Whether the meeting gets `[mc.ladder]` (default true when there is one).
    #[serde(default = "default_true")]
    pub ladder: bool,
    /// The language of the CEA-608 captions in the meeting's video (default `en`).
    #[serde(default)]
    pub cc_language: Option<String>,
    /// Viewers need a viewer token (see docs/private-meetings.md).
    #[serde(default)]
    pub private: bool,
    /// How long the recordings store keeps its recording, days (default: the store's
    /// `depth`; see docs/recordings.md).
    #[serde(default)]
    pub recording_depth_days: Option<u32>,
    /// `[[meeting.language]]`: its audio languages, the floor first (see
    /// docs/languages.md).
    #[serde(default, rename = "language")]
    pub languages: Vec<meeting::MeetingLanguage>,
}

fn default_true() -> bool {
    true
}

/// Ed25519 public keys whose private keys are published as examples (base64url) and
/// where: a document's example copied into a config would let anyone sign tokens.
const PUBLISHED_KEYS: [(&str, &str); 5] = [
    (
        "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
        "RFC 8037 (appendix A) and RFC 8032 (test 1)",
    ),
    (
        "PUAXw-hDiVqStwqnTRt-vJyYLM8uxJaMwM1V8Sr0Zgw",
        "RFC 8032 (test 2)",
    ),
    (
        "_FHNjmIYoaONpH7QAjDwWAgW7RO6MwOsXeuRFUiQgCU",
        "RFC 8032 (test 3)",
    ),
    (
        "J4EX_BRMcjQPZ9DyMW6Dhs7_vyskKMnFH-98WX8dQm4",
        "RFC 8032 (test 1024)",
    ),
    (
        "7Bcrk61eVjv0kyxw4SRQNMNUZ-8u_U1k6_gZaDRn4r8",
        "RFC 8032 (test SHA(abc))",
    ),
];

/// Where `public` (base64url, unpadded) is published with its private key, if it is.
fn published_key(public: &str) -> Option<&'static str> {
    PUBLISHED_KEYS
        .iter()
        .find(|(key, _)| *key == public)
        .map(|(_, source)| *source)
}

impl McConfig {
    /// Reads and checks the MC's config file.
    ///
    /// # Errors
    /// Unreadable file, bad TOML for this schema, or a broken rule.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading config {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("config {}", path.display()))
    }

    /// Parses and checks config text.
    ///
    /// # Errors
    /// As [`McConfig::load`].
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let config: McConfig = toml::from_str(text)?;
        config.log.validate()?;
        if let Some(v) = &config.mc.min_client_version {
            v.parse::<meeting::ClientVersion>()
                .with_context(|| format!("mc.min_client_version {v:?}"))?;
        }
        if !(1.0..=600.0).contains(&config.mc.viewer_report_ttl) {
            bail!("mc.viewer_report_ttl must be between 1 and 600 seconds");
        }
        config.mc.rtmp_limits.limits("mc.rtmp_limits")?;
        if config.mc.rtmps.is_some()
            && (config.mc.rtmps_cert.is_none() || config.mc.rtmps_key.is_none())
        {
            bail!("mc.rtmps needs mc.rtmps_cert and mc.rtmps_key");
        }
        crate::config::check_connections(
            "mc",
            config.mc.max_connections,
            config.mc.max_connections_per_client,
            config.mc.body_timeout,
        )?;
        crate::config::check_shutdown_delay("mc", config.mc.shutdown_delay)?;
        if let Some(ladder) = &config.mc.ladder {
            ladder
                .validate()
                .map_err(|e| anyhow::anyhow!("mc.ladder.{e}"))?;
        }
        for url in &config.mc.etcd {
            let authority = url.strip_prefix("http://").unwrap_or("");
            if authority.is_empty() || authority.contains('/') {
                bail!("mc.etcd {url:?} must be http://host:port");
            }
        }
        if !config.mc.peers.is_empty() && config.mc.etcd.is_empty() {
            bail!("mc.peers needs mc.etcd: the group's timeline owner is kept there");
        }
        for url in &config.mc.peers {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                bail!("mc.peers {url:?} must start with http:// or https://");
            }
            // The node token travels with every pull of a peer's relay.
            if !ingest::mc_client::link_protected(url) && !config.mc.allow_insecure_peers {
                bail!(
                    "mc.peers {url:?}: the node token would cross the network in clear; \
                     use https:// (or a loopback address), or set mc.allow_insecure_peers = true"
                );
            }
        }
        let prefix = &config.mc.etcd_prefix;
        if !(prefix.starts_with('/') && prefix.ends_with('/') && prefix.len() <= 128) {
            bail!("mc.etcd_prefix {prefix:?} must start and end with '/'");
        }
        for (key, token) in [
            ("mc.admin_token", &config.mc.admin_token),
            ("mc.node_token", &config.mc.node_token),
        ] {
            if let Some(token) = token {
                crate::admin_token::check_configured(key, token)?;
            }
        }
        let trusted = config.mc.trust_loopback && config.mc.http.ip().is_loopback();
        if !config.mc.etcd.is_empty() && config.mc.node_token.is_none() && !trusted {
            bail!(
                "mc.etcd needs mc.node_token: the MCs of a group share one node token (nodes \
                 sync with any of them and they pull each other's relays), so a token each \
                 MC created for itself would not match"
            );
        }
        if config.mc.admin_token.is_some() && config.mc.admin_token == config.mc.node_token {
            bail!("mc.node_token must differ from mc.admin_token: one key per job");
        }
        for (i, key) in config.mc.viewer_keys.iter().enumerate() {
            let parsed = ott::ViewerKey::from_base64url(&key.kid, &key.public)
                .map_err(|e| anyhow::anyhow!("mc.viewer_keys[{i}]: {e}"))?;
            if let Some(source) = published_key(&parsed.public_base64url()) {
                bail!(
                    "mc.viewer_keys[{i}] is the example key of {source}: its private key is \
                     published, so anyone could sign viewer tokens for every private meeting; \
                     use the public key of your meeting platform's own key pair"
                );
            }
        }
        for (i, preset) in config.meetings.iter().enumerate() {
            meeting::MeetingId::parse(&preset.id).with_context(|| format!("meeting[{i}].id"))?;
            for (j, input) in preset.inputs.iter().enumerate() {
                ingest::input_url::InputUrl::parse(input)
                    .with_context(|| format!("meeting[{i}].inputs[{j}]"))?;
            }
            if let Some(language) = &preset.cc_language {
                if !media::captions::text::is_language_tag(language) {
                    bail!("meeting[{i}].cc_language {language:?} is not a BCP 47 language tag (e.g. \"pt-BR\")");
                }
            }
            meeting::languages::check(&preset.languages)
                .map_err(|problem| anyhow::anyhow!("meeting[{i}].{problem}"))?;
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LadderPlan;

    #[test]
    fn a_meeting_stream_comes_from_the_template() {
        let link: McLinkConfig = toml::from_str(
            "url = \"http://mc:9000/\"\nbackup_urls = [\"http://standby:9000\"]\n[stream]\nwindow = 30\n",
        )
        .unwrap();
        link.validate().unwrap();
        let stream = link.meeting_stream("m1").unwrap();
        assert_eq!(stream.name, "m1");
        assert_eq!(
            stream.inputs,
            ["http://mc:9000/m1/mpegts", "http://standby:9000/m1/mpegts"]
        );
        assert_eq!(stream.window, Some(30.0));
        let bad: McLinkConfig =
            toml::from_str("url = \"http://mc\"\n[stream]\nwindwo = 3\n").unwrap();
        assert!(format!("{:#}", bad.validate().unwrap_err()).contains("windwo"));
        let bad: McLinkConfig = toml::from_str("url = \"ftp://mc\"").unwrap();
        assert!(bad.validate().is_err());
    }

    #[test]
    fn an_mc_group_is_listed_in_urls_and_synced_with_in_turn() {
        let link: McLinkConfig =
            toml::from_str("urls = [\"http://mc1:9000\", \"http://mc2:9000/\"]\n").unwrap();
        link.validate().unwrap();
        assert_eq!(link.sync_urls(), ["http://mc1:9000", "http://mc2:9000/"]);
        assert_eq!(
            link.meeting_stream("m").unwrap().inputs,
            ["http://mc1:9000/m/mpegts", "http://mc2:9000/m/mpegts"]
        );
        // By default the whole-segment relays, the source and every rung.
        let ladder = [
            "720p".to_string(),
            server::stream::ladder::SOURCE.to_string(),
        ];
        let Some(LadderPlan::Pull { inputs, .. }) =
            link.meeting_stream_with("m", &ladder).unwrap().ladder
        else {
            panic!("a pulled ladder")
        };
        assert_eq!(inputs[0].1[0], "http://mc1:9000/m/720p/mpegts");
        // live_relay = true: the live relay (frames as the MC places them), rungs alike.
        let live: McLinkConfig =
            toml::from_str("urls = [\"http://mc1:9000\"]\nlive_relay = true\n").unwrap();
        let stream = live.meeting_stream_with("m", &ladder).unwrap();
        assert_eq!(stream.inputs, ["http://mc1:9000/m/mpegts?live=1"]);
        let Some(LadderPlan::Pull { inputs, .. }) = &stream.ladder else {
            panic!("a pulled ladder: {:?}", stream.ladder)
        };
        assert_eq!(
            inputs,
            &[(
                "720p".to_string(),
                vec!["http://mc1:9000/m/720p/mpegts?live=1".to_string()]
            )]
        );
        // A lone MC with inert standbys syncs with the primary only.
        let old: McLinkConfig =
            toml::from_str("url = \"http://a\"\nbackup_urls = [\"http://b\"]").unwrap();
        assert_eq!(old.sync_urls(), ["http://a"]);
        for bad in [
            "",
            "url = \"http://a\"\nurls = [\"http://b\"]",
            "urls = [\"http://a\"]\nbackup_urls = [\"http://b\"]",
            "urls = [\"mc:9000\"]",
        ] {
            let link: McLinkConfig = toml::from_str(bad).unwrap();
            assert!(link.validate().is_err(), "{bad}");
        }
    }

    #[test]
    fn short_tokens_and_published_example_keys_are_refused_at_load() {
        let base = "[mc]\nhttp = \"0.0.0.0:9000\"\ndata_dir = \"x\"\n";
        let err = |t: String| format!("{:#}", McConfig::parse(&t).unwrap_err());
        let short = err(format!("{base}admin_token = \"admin-secret\"\n"));
        assert!(
            short.contains("mc.admin_token") && short.contains("at least 24"),
            "{short}"
        );
        assert!(err(format!("{base}node_token = \"x\"\n")).contains("mc.node_token"));
        let good = "0123456789abcdef01234567";
        let ok = McConfig::parse(&format!(
            "{base}admin_token = \"{good}\"\nnode_token = \"{good}-n\"\n"
        ))
        .expect("24 characters are enough");
        assert!(!ok.mc.trust_loopback, "trust is off unless set");
        let key = |public: &str| {
            format!("{base}[[mc.viewer_keys]]\nkid = \"k\"\npublic = \"{public}\"\n")
        };
        for (public, source) in PUBLISHED_KEYS {
            let refused = err(key(public));
            assert!(
                refused.contains("mc.viewer_keys[0]") && refused.contains(source),
                "{refused}"
            );
            assert!(
                refused.contains("published"),
                "the error says why: {refused}"
            );
        }
        // With blanks around it, it is still the RFC's key.
        assert!(err(key(" 11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo ")).contains("RFC 8037"));
        let own = ott::ViewerKey::of_pair(
            "own",
            &ring::signature::Ed25519KeyPair::from_seed_unchecked(&[7u8; 32]).expect("pair"),
        );
        McConfig::parse(&key(&own.public_base64url())).expect("a key of one's own");
    }

    #[test]
    fn the_http_caps_and_body_deadline_are_set_in_mc_or_derived() {
        let base = "[mc]\nhttp = \"127.0.0.1:0\"\ndata_dir = \"x\"\n";
        let mc = McConfig::parse(base).unwrap().mc;
        assert_eq!(
            (mc.max_connections, mc.max_connections_per_client),
            (None, None)
        );
        assert!((mc.body_timeout - 10.0).abs() < f64::EPSILON);
        let mc = McConfig::parse(&format!(
            "{base}max_connections = 500\nmax_connections_per_client = 5\nbody_timeout = 3\n"
        ))
        .unwrap()
        .mc;
        assert_eq!(mc.max_connections, Some(500));
        assert_eq!(mc.max_connections_per_client, Some(5));
        assert!((mc.body_timeout - 3.0).abs() < f64::EPSILON);
        let err = |t: String| format!("{:#}", McConfig::parse(&t).unwrap_err());
        assert!(err(format!("{base}max_connections_per_client = 0"))
            .contains("mc.max_connections_per_client"));
        assert!(err(format!("{base}body_timeout = 601")).contains("mc.body_timeout"));
    }

    #[test]
    fn an_mc_group_needs_its_shared_node_token() {
        let group = "[mc]\nhttp = \"0.0.0.0:9000\"\ndata_dir = \"x\"\netcd = [\"http://e:2379\"]\n";
        let error = format!("{:#}", McConfig::parse(group).unwrap_err());
        assert!(error.contains("mc.node_token"), "{error}");
        McConfig::parse(&format!(
            "{group}node_token = \"0123456789abcdef01234567\"\n"
        ))
        .expect("with the shared token");
        let demo = "[mc]\nhttp = \"127.0.0.1:9000\"\ndata_dir = \"x\"\netcd = [\"http://e:2379\"]\ntrust_loopback = true\n";
        McConfig::parse(demo).expect("a trusted loopback group needs none");
    }

    #[test]
    fn etcd_endpoints_and_prefix_are_checked() {
        let base = "[mc]\nhttp = \"127.0.0.1:0\"\ndata_dir = \"x\"\nnode_token = \"0123456789abcdef01234567\"\n";
        let ok = McConfig::parse(&format!(
            "{base}etcd = [\"http://10.0.0.1:2379\", \"http://10.0.0.2:2379\"]\netcd_prefix = \"/meet/\"\n"
        ))
        .unwrap();
        assert_eq!(ok.mc.etcd.len(), 2);
        assert_eq!(McConfig::parse(base).unwrap().mc.etcd_prefix, "/brdyun/");
        let err = |t: String| format!("{:#}", McConfig::parse(&t).unwrap_err());
        assert!(err(format!("{base}etcd = [\"10.0.0.1:2379\"]")).contains("mc.etcd"));
        assert!(err(format!("{base}etcd = [\"https://e:2379\"]")).contains("mc.etcd"));
        assert!(err(format!("{base}etcd_prefix = \"brdyun\"")).contains("etcd_prefix"));
        // Peers carry the node token: https or loopback, unless explicitly allowed.
        let etcd = format!("{base}etcd = [\"http://10.0.0.1:2379\"]\n");
        McConfig::parse(&format!("{etcd}peers = [\"http://127.0.0.1:9001\"]\n")).unwrap();
        McConfig::parse(&format!("{etcd}peers = [\"https://mc2:9443\"]\n")).unwrap();
        assert!(err(format!("{etcd}peers = [\"http://mc2:9000\"]\n")).contains("in clear"));
        McConfig::parse(&format!(
            "{etcd}peers = [\"http://mc2:9000\"]\nallow_insecure_peers = true\n"
        ))
        .unwrap();
    }

    #[test]
    fn the_mc_file_is_checked() {
        let ok = McConfig::parse(
            "[mc]\nhttp = \"127.0.0.1:0\"\ndata_dir = \"/tmp/x\"\nmin_client_version = \"2.1\"\n[[meeting]]\nid = \"m\"\nstart = true\ninputs = [\"builtin://meeting\"]\n",
        )
        .unwrap();
        assert_eq!(ok.meetings.len(), 1);
        let err = |t: &str| format!("{:#}", McConfig::parse(t).unwrap_err());
        assert!(
            err("[mc]\nhttp = \"127.0.0.1:0\"\ndata_dir = \"x\"\nmin_client_version = \"x\"")
                .contains("min_client_version")
        );
        assert!(
            err("[mc]\nhttp = \"127.0.0.1:0\"\ndata_dir = \"x\"\n[[meeting]]\nid = \"a/b\"")
                .contains("meeting[0].id")
        );
        assert!(err("[mc]\nhttp = \"127.0.0.1:0\"\ndata_dir = \"x\"\nport = 3").contains("port"));
        let ladder = "[mc]\nhttp = \"127.0.0.1:0\"\ndata_dir = \"x\"\n[mc.ladder]\n";
        assert!(err(&format!(
            "{ladder}rungs = [{{ name = \"a\", height = 241, video_kbps = 9 }}]"
        ))
        .contains("mc.ladder.rungs[0].height"));
        assert!(err(&format!("{ladder}rungs = []")).contains("mc.ladder"));
        let ok = McConfig::parse(&format!(
            "{ladder}rungs = [{{ name = \"source\" }}, {{ name = \"240p\", height = 240, video_kbps = 400 }}]\n[[meeting]]\nid = \"m\"\nladder = false\n"
        ))
        .expect("a ladder and a meeting without it");
        assert_eq!(
            ok.mc.ladder.map(|l| l.names()),
            Some(vec!["source".into(), "240p".into()])
        );
        assert!(!ok.meetings[0].ladder);
    }
}
