//! `rtmp_limits` of `[node]` and `[mc]`: what one stranger may hold on the RTMP publish
//! listener (docs/configuration.md#rtmp-limits). Every key has a default, so the
//! table is only written to change one.

use std::time::Duration;

use anyhow::bail;
use ingest::listener_limits::ListenerLimits;
use ingest::rtmp::RtmpLimits;
use serde::Deserialize;

/// The RTMP listener's caps and deadlines as written in the file (seconds as numbers).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RtmpLimitsConfig {
    /// Connections held at once, publishing or not (default 256).
    pub max_connections: usize,
    /// Connections from one address (IPv6: one /64) that have not published yet
    /// (default 4); a publishing connection no longer counts.
    pub max_pending_per_address: usize,
    /// Seconds from the TCP accept to an accepted `publish` (default 10).
    pub publish_deadline: f64,
    /// Bytes a publisher must deliver in every `byte_window` (default 1024).
    pub min_bytes_per_window: u64,
    /// Seconds of one byte window (default 10).
    pub byte_window: f64,
    /// Seconds one write to a peer may wait (default 10).
    pub send_timeout: f64,
}

impl Default for RtmpLimitsConfig {
    fn default() -> Self {
        let d = ListenerLimits::default();
        Self {
            max_connections: d.max_connections,
            max_pending_per_address: d.max_pending_per_address,
            publish_deadline: d.publish_deadline.as_secs_f64(),
            min_bytes_per_window: d.min_bytes_per_window,
            byte_window: d.byte_window.as_secs_f64(),
            send_timeout: d.send_timeout.as_secs_f64(),
        }
    }
}

impl RtmpLimitsConfig {
    /// The limits the listener runs with; `section` (`node.rtmp_limits`) names the key
    /// at fault.
    ///
    /// # Errors
    /// A cap of 0, a pending cap above the total, a time outside 1–300 s, or a byte
    /// floor of 0.
    pub fn limits(&self, section: &str) -> anyhow::Result<RtmpLimits> {
        if self.max_connections == 0 {
            bail!("{section}.max_connections must be at least 1");
        }
        if !(1..=self.max_connections).contains(&self.max_pending_per_address) {
            bail!("{section}.max_pending_per_address must be between 1 and max_connections");
        }
        if self.min_bytes_per_window == 0 {
            bail!("{section}.min_bytes_per_window must be at least 1 (a publisher that sends nothing is not live)");
        }
        let seconds = |key: &str, value: f64| -> anyhow::Result<Duration> {
            if !(1.0..=300.0).contains(&value) {
                bail!("{section}.{key} must be between 1 and 300 seconds");
            }
            Ok(Duration::from_secs_f64(value))
        };
        Ok(RtmpLimits::with_listener(ListenerLimits {
            max_connections: self.max_connections,
            max_pending_per_address: self.max_pending_per_address,
            publish_deadline: seconds("publish_deadline", self.publish_deadline)?,
            min_bytes_per_window: self.min_bytes_per_window,
            byte_window: seconds("byte_window", self.byte_window)?,
            send_timeout: seconds("send_timeout", self.send_timeout)?,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> anyhow::Result<RtmpLimits> {
        toml::from_str::<RtmpLimitsConfig>(text)?.limits("node.rtmp_limits")
    }

    #[test]
    fn defaults_are_the_listener_defaults_and_keys_override_one_by_one() {
        assert_eq!(parse("").expect("defaults"), RtmpLimits::default());
        let limits = parse("max_pending_per_address = 2\npublish_deadline = 5\nbyte_window = 2.5")
            .expect("valid");
        assert_eq!(limits.listener.max_pending_per_address, 2);
        assert_eq!(limits.listener.publish_deadline, Duration::from_secs(5));
        assert_eq!(limits.listener.byte_window, Duration::from_millis(2500));
        assert_eq!(limits.listener.max_connections, 256);
    }

    #[test]
    fn node_and_mc_files_take_the_table_and_name_their_section() {
        let node = crate::config::Config::parse(
            "[node]\nrtmp = \"127.0.0.1:0\"\n[node.rtmp_limits]\nmax_pending_per_address = 2\n",
        )
        .expect("node config");
        assert_eq!(node.node.rtmp_limits.max_pending_per_address, 2);
        let err = crate::config::Config::parse("[node.rtmp_limits]\npublish_deadline = 0\n")
            .expect_err("a zero deadline");
        assert!(format!("{err:#}").contains("node.rtmp_limits.publish_deadline"));

        let mc = |limits: &str| {
            crate::mc::config::McConfig::parse(&format!(
                "[mc]\nhttp = \"127.0.0.1:0\"\nrtmp = \"127.0.0.1:0\"\ndata_dir = \"/tmp/mc\"\n[mc.rtmp_limits]\n{limits}"
            ))
        };
        let config = mc("byte_window = 20\n").expect("mc config");
        assert_eq!(config.mc.rtmp_limits.byte_window, 20.0);
        let err = mc("max_connections = 0\n").expect_err("a zero cap");
        assert!(format!("{err:#}").contains("mc.rtmp_limits.max_connections"));
    }

    #[test]
    fn a_bad_value_names_its_key() {
        let err = |text: &str| format!("{:#}", parse(text).unwrap_err());
        assert!(err("max_connections = 0").contains("node.rtmp_limits.max_connections"));
        assert!(err("max_connections = 3\nmax_pending_per_address = 4")
            .contains("node.rtmp_limits.max_pending_per_address"));
        assert!(err("publish_deadline = 0.5").contains("node.rtmp_limits.publish_deadline"));
        assert!(err("byte_window = 301").contains("node.rtmp_limits.byte_window"));
        assert!(err("send_timeout = 0").contains("node.rtmp_limits.send_timeout"));
        assert!(err("min_bytes_per_window = 0").contains("min_bytes_per_window"));
        assert!(
            err("idle_timeout = 20").contains("idle_timeout"),
            "unknown keys are refused"
        );
    }
}
