//! A node's `[mc]` section: where its MC is, and the template its meeting streams are
//! made from.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use serde::Deserialize;

use super::{stream_from, LadderPlan, StreamConfig};

/// A node's `[mc]` section: where its MC is, and how meeting streams are set up.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McLinkConfig {
    /// The MC's base URL, `http(s)://host:port` (a lone MC, or the primary of an
    /// inert standby pair with `backup_urls`).
    #[serde(default)]
    pub url: String,
    /// Every MC of a group that shares its meetings (etcd): the node syncs with any
    /// live one and pulls each meeting from all of them, in this order. Instead of
    /// `url`.
    #[serde(default)]
    pub urls: Vec<String>,
    /// The MC's node token: its `node_token`, or the one it created in its
    /// `data_dir/node_token`. An MC that does not trust loopback refuses a sync without
    /// it (104110 on the node).
    pub token: Option<String>,
    /// PEM CA certificates to trust for an `https` MC.
    pub ca_file: Option<PathBuf>,
    /// Seconds between syncs with the MC (default 1).
    #[serde(default = "default_poll")]
    pub poll_interval: f64,
    /// Connect and answer timeout of one sync, seconds (default 3).
    #[serde(default = "default_timeout")]
    pub timeout: f64,
    /// Standby MCs (base URLs): their relay of the meeting becomes a backup input.
    #[serde(default)]
    pub backup_urls: Vec<String>,
    /// Pull the MC's live relay (`mpegts?live=1`: frames as the MC places them, so
    /// LL-HLS parts are cut here when the MC cuts them) for the source and every rung,
    /// instead of whole segments (each a segment late). Default false, failover first:
    /// with it, hls.js in low-latency mode failing over from a dead or hung node while
    /// its buffer ends at a segment's end stalls about 6 s (docs/timeline.md).
    #[serde(default)]
    pub live_relay: bool,
    /// Let a plain-HTTP link to an MC that is not on a loopback address literal carry
    /// the node token, private meetings and viewer keys (default false: the node then
    /// refuses to start with a token, and refuses private meetings and keys, 114005).
    #[serde(default)]
    pub allow_insecure: bool,
    /// The template of every meeting stream: any key of a `[[stream]]` except `name`
    /// and `inputs` (e.g. `window`, `segment_duration`, `dvr`).
    #[serde(default)]
    pub stream: toml::Table,
}

fn default_poll() -> f64 {
    1.0
}
fn default_timeout() -> f64 {
    3.0
}

impl McLinkConfig {
    /// The stream a node runs for meeting `id`: the MC's relay of it (then the standby
    /// MCs'), with the template's settings.
    ///
    /// # Errors
    /// The template has a key a stream does not accept, or sets `name`/`inputs`.
    pub fn meeting_stream(&self, id: &str) -> anyhow::Result<StreamConfig> {
        self.meeting_stream_with(id, &[])
    }

    /// [`McLinkConfig::meeting_stream`] of a meeting whose MC encodes the ladder
    /// `ladder` (rung names in master-playlist order; empty: no ladder): every rung but
    /// the source is pulled from the MC's relay of it, `/{id}/{rung}/mpegts` (the source
    /// from `/{id}/mpegts`; each with `?live=1`, the live relay, with `live_relay`).
    ///
    /// # Errors
    /// As [`McLinkConfig::meeting_stream`].
    pub fn meeting_stream_with(&self, id: &str, ladder: &[String]) -> anyhow::Result<StreamConfig> {
        if self.stream.contains_key("name") || self.stream.contains_key("inputs") {
            bail!("mc.stream must not set name or inputs: they come from the meeting");
        }
        let relays = |path: &str| self.relays(id, path);
        let mut stream = stream_from(id, relays("mpegts"), &self.stream).context("mc.stream")?;
        stream.relay_token.clone_from(&self.token);
        if !ladder.is_empty() {
            let inputs = ladder
                .iter()
                .filter(|rung| rung.as_str() != server::stream::ladder::SOURCE)
                .map(|rung| (rung.clone(), relays(&format!("{rung}/mpegts"))))
                .collect();
            stream.ladder = Some(LadderPlan::Pull {
                names: ladder.to_vec(),
                inputs,
            });
        }
        Ok(stream)
    }

    /// The MC's relays of `path` of meeting `id` (`mpegts`, `{rung}/mpegts`), the
    /// standby MCs' after; each with `?live=1`, the live relay, with `live_relay`: frames
    /// as the MC places them, so LL-HLS parts are cut here when the MC cuts them
    /// (server::stream::live_relay), and every rendition stays in step with the source.
    fn relays(&self, id: &str, path: &str) -> Vec<String> {
        let query = if self.live_relay { "?live=1" } else { "" };
        self.relay_bases()
            .into_iter()
            .map(|base| format!("{}/{id}/{path}{query}", base.trim_end_matches('/')))
            .collect()
    }

    /// Gives a meeting stream its `languages` (the floor first): each other one is
    /// pulled from the MC's relay of its rendition, `/{id}/audio-{code}/mpegts`.
    pub fn add_languages(&self, stream: &mut StreamConfig, languages: &[meeting::MeetingLanguage]) {
        stream.languages = languages.to_vec();
        stream.language_pulls = crate::config::audio_languages(languages)
            .iter()
            .skip(1)
            .map(|language| {
                let rendition = language.rendition_name();
                let urls = self.relays(&stream.name, &format!("{rendition}/mpegts"));
                (rendition, urls)
            })
            .collect();
    }

    /// The MCs whose relays a meeting is pulled from, in priority order.
    pub fn relay_bases(&self) -> Vec<&String> {
        if self.urls.is_empty() {
            std::iter::once(&self.url)
                .chain(&self.backup_urls)
                .collect()
        } else {
            self.urls.iter().collect()
        }
    }

    /// The MCs a node may sync with: every one of `urls`, or `url` alone (standbys
    /// listed in `backup_urls` keep meetings of their own and are never asked).
    pub fn sync_urls(&self) -> Vec<String> {
        if self.urls.is_empty() {
            vec![self.url.clone()]
        } else {
            self.urls.clone()
        }
    }

    /// The poll interval.
    pub fn poll(&self) -> Duration {
        Duration::from_secs_f64(self.poll_interval)
    }

    /// Checks the section.
    ///
    /// # Errors
    /// The first broken rule, naming its key.
    pub fn validate(&self) -> anyhow::Result<()> {
        match (self.url.is_empty(), self.urls.is_empty()) {
            (true, true) => bail!("mc needs url (one MC) or urls (an MC group)"),
            (false, false) => bail!("mc.url and mc.urls exclude each other"),
            (true, false) if !self.backup_urls.is_empty() => {
                bail!("mc.backup_urls goes with mc.url; list every MC of a group in mc.urls")
            }
            _ => {}
        }
        for url in self.relay_bases() {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                bail!("mc.url {url:?} must start with http:// or https://");
            }
            if self.token.is_some()
                && !self.allow_insecure
                && !ingest::mc_client::link_protected(url)
            {
                bail!("mc.token would travel in clear to {url:?}: use https (or set mc.allow_insecure = true on a network you trust)");
            }
        }
        if !(0.1..=60.0).contains(&self.poll_interval) {
            bail!(
                "mc.poll_interval {} must be between 0.1 and 60 seconds",
                self.poll_interval
            );
        }
        if !(0.1..=60.0).contains(&self.timeout) {
            bail!(
                "mc.timeout {} must be between 0.1 and 60 seconds",
                self.timeout
            );
        }
        self.meeting_stream("check").map(|_| ())
    }
}
