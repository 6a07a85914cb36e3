//! `[ott]`: the node's mesh domain and OTT redundancy settings. Every key is in the
//! config reference, docs/configuration.md.

use std::net::{IpAddr, SocketAddr};

use anyhow::{bail, Context};
use serde::Deserialize;

/// `[ott]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OttConfig {
    /// The domain secret every node of the domain shares: the root of the gossip
    /// encryption and of the view keys. At least 16 bytes.
    pub domain_secret: String,
    /// UDP address gossip listens on.
    #[serde(default = "default_gossip")]
    pub gossip: SocketAddr,
    /// The gossip address peers reach this node at, when `gossip` is a wildcard.
    pub gossip_advertise: Option<SocketAddr>,
    /// Other nodes' gossip addresses, `host:port`.
    #[serde(default)]
    pub seeds: Vec<String>,
    /// The addresses viewers may be sent to, `http(s)://host:port` (OTT-ADDR-1). Empty:
    /// `http(s)://{node.hostname}:{port}` when a host name is set, else the HTTP
    /// listen address (which then must not be a wildcard).
    #[serde(default)]
    pub announce: Vec<String>,
    /// Host names of `announce` that a CDN (or load balancer) serves for several nodes
    /// (OTT-ADDR-5): announced, never offered as a backup address. A name several
    /// members announce is found from the mesh as well.
    #[serde(default)]
    pub cdn_names: Vec<String>,
    /// CPU error threshold, percent: above it, viewers from other nodes are refused
    /// (OTT-OVL-1).
    #[serde(default = "default_threshold")]
    pub cpu_error_percent: u8,
    /// Network error threshold, percent of `net_capacity_mbps`.
    #[serde(default = "default_threshold")]
    pub net_error_percent: u8,
    /// The node's network capacity, Mbit/s (the base of the network load).
    #[serde(default = "default_capacity")]
    pub net_capacity_mbps: u64,
    /// The most viewers from other nodes served at once; none = unlimited.
    pub backup_session_limit: Option<u32>,
    /// Alertmanager-compatible webhook (`http://host:9093/api/v2/alerts`) for alerts
    /// 70, 78 and 79.
    pub alert_webhook: Option<String>,
    /// View key rotation period, hours (at least 5: longer than a pass lives).
    #[serde(default = "default_rotation_hours")]
    pub view_key_rotation_hours: f64,
    /// Members on nodes below this version accept no viewers (OTT-GRP-5).
    pub min_version: Option<String>,
}

fn default_gossip() -> SocketAddr {
    SocketAddr::from(([0, 0, 0, 0], 7946))
}
fn default_threshold() -> u8 {
    90
}
fn default_capacity() -> u64 {
    1000
}
fn default_rotation_hours() -> f64 {
    24.0
}

impl OttConfig {
    /// The rules serde cannot express.
    ///
    /// # Errors
    /// The first broken rule, naming its key.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.domain_secret.len() < mesh::MIN_SECRET_LEN {
            bail!(
                "ott.domain_secret must be at least {} bytes",
                mesh::MIN_SECRET_LEN
            );
        }
        for (key, value) in [
            ("cpu_error_percent", self.cpu_error_percent),
            ("net_error_percent", self.net_error_percent),
        ] {
            if value > 100 {
                bail!("ott.{key} {value} must be a percentage (0..=100)");
            }
        }
        if !(5.0..=24.0 * 365.0).contains(&self.view_key_rotation_hours) {
            bail!("ott.view_key_rotation_hours must be between 5 and 8760");
        }
        for (i, url) in self.announce.iter().enumerate() {
            parse_announce(url).with_context(|| format!("ott.announce[{i}]"))?;
        }
        for (i, name) in self.cdn_names.iter().enumerate() {
            if !self
                .announce
                .iter()
                .any(|url| announce_host(url).eq_ignore_ascii_case(name))
            {
                bail!("ott.cdn_names[{i}] {name:?} is the host of no ott.announce address");
            }
        }
        if let Some(v) = &self.min_version {
            v.parse::<ott::Version>()
                .map_err(|e| anyhow::anyhow!("ott.min_version: {e}"))?;
        }
        if let Some(url) = &self.alert_webhook {
            if !url.starts_with("http://") {
                bail!("ott.alert_webhook must be an http:// URL");
            }
        }
        Ok(())
    }
}

/// One announced address: `http(s)://host[:port]`, no path. An IP address is public
/// by its range (OTT-ADDR-2); a host name counts as public (it is configured for
/// viewers to use).
///
/// # Errors
/// Not such a URL.
pub fn parse_announce(url: &str) -> anyhow::Result<ott::Announced> {
    let (scheme, rest) = match url.split_once("://") {
        Some(("http", rest)) => (ott::Scheme::Http, rest),
        Some(("https", rest)) => (ott::Scheme::Https, rest),
        _ => bail!("{url:?}: use http://host:port or https://host:port"),
    };
    let authority = rest.trim_end_matches('/');
    if authority.is_empty() || authority.contains(['/', '?', '#', '@', ' ']) {
        bail!("{url:?}: scheme, host and port only");
    }
    let host = announce_host(url);
    let public = match host.parse::<IpAddr>() {
        Ok(ip) => ott::is_public_ip(ip),
        Err(_) => true,
    };
    Ok(ott::Announced {
        url_base: format!(
            "{}://{authority}",
            if scheme == ott::Scheme::Https {
                "https"
            } else {
                "http"
            }
        ),
        scheme,
        public,
        cdn_shared: false,
    })
}

/// The host of an announce URL (`scheme://host[:port][/]`), without IPv6 brackets.
fn announce_host(url: &str) -> &str {
    let authority = url
        .split_once("://")
        .map_or(url, |(_, rest)| rest)
        .trim_end_matches('/');
    if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        authority.rsplit_once(':').map_or(authority, |(h, _)| h)
    }
}

/// `host` is one of `[ott] cdn_names`.
fn is_cdn_name(config: &OttConfig, host: &str) -> bool {
    config
        .cdn_names
        .iter()
        .any(|name| name.eq_ignore_ascii_case(host))
}

/// The addresses a node announces: `[ott].announce`, else from its host name and
/// listeners (OTT-ADDR-1: the host name when set, else the IP over HTTP only).
///
/// # Errors
/// No address can be derived (wildcard listener without a host name).
pub fn announced(
    config: &OttConfig,
    hostname: Option<&str>,
    http: SocketAddr,
    https: Option<SocketAddr>,
) -> anyhow::Result<Vec<ott::Announced>> {
    if !config.announce.is_empty() {
        return config
            .announce
            .iter()
            .map(|u| {
                let mut address = parse_announce(u)?;
                address.cdn_shared = is_cdn_name(config, announce_host(u));
                Ok(address)
            })
            .collect();
    }
    if let Some(host) = hostname {
        let mut out = vec![parse_announce(&format!("http://{host}:{}", http.port()))?];
        if let Some(https) = https {
            out.push(parse_announce(&format!("https://{host}:{}", https.port()))?);
        }
        return Ok(out);
    }
    if http.ip().is_unspecified() {
        bail!("ott.announce is needed: node.http listens on every address and node.hostname is not set");
    }
    Ok(vec![parse_announce(&format!("http://{http}"))?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn announced_addresses_follow_the_address_rules() {
        let a = parse_announce("http://203.0.113.7:8080").unwrap();
        assert!(a.public);
        assert_eq!(a.url_base, "http://203.0.113.7:8080");
        assert!(!parse_announce("http://10.1.2.3:80").unwrap().public);
        assert!(!parse_announce("http://[fd00::1]:80").unwrap().public);
        let named = parse_announce("https://node-b.example.net").unwrap();
        assert!(named.public);
        assert_eq!(named.scheme, ott::Scheme::Https);
        assert!(parse_announce("ftp://x").is_err());
        assert!(parse_announce("http://x/path").is_err());
    }

    #[test]
    fn defaults_come_from_the_host_name_or_the_listener() {
        let config: OttConfig = toml::from_str("domain_secret = \"0123456789abcdef0123\"").unwrap();
        config.validate().unwrap();
        let http: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let https: SocketAddr = "127.0.0.1:8443".parse().unwrap();
        let with_name = announced(&config, Some("a.example.net"), http, Some(https)).unwrap();
        assert_eq!(with_name[0].url_base, "http://a.example.net:8080");
        assert_eq!(with_name[1].url_base, "https://a.example.net:8443");
        // Without a host name: the IP over HTTP only.
        let plain = announced(&config, None, http, Some(https)).unwrap();
        assert_eq!(plain.len(), 1);
        assert!(!plain[0].public);
        let wildcard: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        assert!(announced(&config, None, wildcard, None).is_err());
    }

    #[test]
    fn cdn_names_are_announced_but_marked_shared() {
        let config: OttConfig = toml::from_str(
            "domain_secret = \"0123456789abcdef0123\"\n\
             announce = [\"https://a.example.net:8443\", \"https://CDN.example.net\"]\n\
             cdn_names = [\"cdn.example.net\"]",
        )
        .unwrap();
        config.validate().unwrap();
        let http: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let out = announced(&config, Some("a.example.net"), http, None).unwrap();
        assert_eq!(
            out.iter().map(|a| a.cdn_shared).collect::<Vec<_>>(),
            [false, true]
        );
        let typo: OttConfig = toml::from_str(
            "domain_secret = \"0123456789abcdef0123\"\n\
             announce = [\"https://a.example.net\"]\ncdn_names = [\"cdn.example.net\"]",
        )
        .unwrap();
        assert!(format!("{:#}", typo.validate().unwrap_err()).contains("cdn_names[0]"));
    }

    #[test]
    fn bad_settings_name_the_key() {
        let parse = |text: &str| {
            let config: OttConfig = toml::from_str(text)?;
            config.validate()
        };
        let secret = "domain_secret = \"0123456789abcdef0123\"\n";
        assert!(
            format!("{:#}", parse("domain_secret = \"short\"").unwrap_err())
                .contains("domain_secret")
        );
        assert!(format!(
            "{:#}",
            parse(&format!("{secret}cpu_error_percent = 120")).unwrap_err()
        )
        .contains("cpu_error_percent"));
        assert!(format!(
            "{:#}",
            parse(&format!("{secret}view_key_rotation_hours = 1")).unwrap_err()
        )
        .contains("view_key_rotation_hours"));
        assert!(format!(
            "{:#}",
            parse(&format!("{secret}announce = [\"x\"]")).unwrap_err()
        )
        .contains("announce[0]"));
    }
}
