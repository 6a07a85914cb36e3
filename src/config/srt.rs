//! `srt_options` of `[node]` and `[mc]`: the SRT listener's latency and encryption
//! (docs/configuration.md#srt). Every key has a default, so the table is only written
//! to change one; the caps and deadlines are `rtmp_limits`', counted on their own.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::bail;
use ingest::srt::SrtListenerConfig;
use serde::Deserialize;

use super::RtmpLimitsConfig;

/// The SRT listener's settings as written in the file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SrtOptionsConfig {
    /// The receive latency in milliseconds: how long a lost packet may take to be
    /// retransmitted (default 120; the publisher's is taken if larger).
    pub latency_ms: u64,
    /// The passphrase (10–79 bytes) of every meeting without its own; unset: no
    /// encryption.
    pub passphrase: Option<String>,
    /// The AES key length a publisher must use: 16, 24 or 32 bytes; unset: the
    /// publisher's (`pbkeylen`).
    pub key_length: Option<u16>,
    /// `[…srt_options.passphrases]`: passphrases by publish name (`<meeting>` or
    /// `<meeting>@<slot>`); a meeting's covers its slots that have none of their own.
    pub passphrases: HashMap<String, String>,
}

impl Default for SrtOptionsConfig {
    fn default() -> Self {
        Self {
            latency_ms: 120,
            passphrase: None,
            key_length: None,
            passphrases: HashMap::new(),
        }
    }
}

impl SrtOptionsConfig {
    /// The listener's settings on `bind`, with the caps and deadlines of `limits`;
    /// `section` (`mc.srt_options`) names the key at fault.
    ///
    /// # Errors
    /// A latency outside 20–10 000 ms, a passphrase of the wrong length, a key length
    /// other than 16, 24 or 32, or a limit out of range.
    pub fn listener(
        &self,
        bind: SocketAddr,
        limits: &RtmpLimitsConfig,
        section: &str,
        limits_section: &str,
    ) -> anyhow::Result<SrtListenerConfig> {
        if !(20..=10_000).contains(&self.latency_ms) {
            bail!("{section}.latency_ms must be between 20 and 10000");
        }
        let config = SrtListenerConfig {
            bind,
            latency: Duration::from_millis(self.latency_ms),
            passphrase: self.passphrase.clone(),
            passphrases: self.passphrases.clone(),
            key_length: self.key_length,
            limits: limits.limits(limits_section)?.listener,
        };
        if let Err(e) = config.validate() {
            bail!("{section}: {e}");
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_make_a_plain_listener_and_bad_values_are_named() {
        let bind: SocketAddr = "127.0.0.1:9000".parse().unwrap();
        let limits = RtmpLimitsConfig::default();
        let config = SrtOptionsConfig::default()
            .listener(bind, &limits, "mc.srt_options", "mc.rtmp_limits")
            .unwrap();
        assert_eq!(config.latency, Duration::from_millis(120));
        assert!(config.passphrase.is_none());
        let short = SrtOptionsConfig {
            passphrase: Some("short".into()),
            ..SrtOptionsConfig::default()
        };
        let e = short
            .listener(bind, &limits, "mc.srt_options", "mc.rtmp_limits")
            .unwrap_err();
        assert!(e.to_string().contains("mc.srt_options"), "{e}");
        let slow = SrtOptionsConfig {
            latency_ms: 5,
            ..SrtOptionsConfig::default()
        };
        assert!(slow
            .listener(bind, &limits, "mc.srt_options", "mc.rtmp_limits")
            .is_err());
    }
}
