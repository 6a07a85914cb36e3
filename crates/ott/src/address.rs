//! Which address of a backup node a given viewer may be sent to (OTT-ADDR-1..5).
//!
//! The viewer is judged from its connection (peer address, TLS or not) plus
//! `X-Forwarded-Proto`; `X-Forwarded-For` is never read (OTT-ADDR-4).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::problem::Problem;
use crate::view::{NodeId, NodeView, Scheme, Snapshot};

/// What matters about a viewer for choosing a backup address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ViewerContext {
    /// The viewer connects from a public address: never offer it private ones
    /// (OTT-ADDR-2).
    pub public: bool,
    /// The viewer uses HTTPS (directly or through a proxy): offer only HTTPS
    /// (OTT-ADDR-3).
    pub https: bool,
}

impl ViewerContext {
    /// The context from the TCP peer address, the connection's scheme and the
    /// `X-Forwarded-Proto` header, if any. `X-Forwarded-For` is deliberately not an
    /// input (OTT-ADDR-4): behind a private proxy every viewer looks private.
    pub fn from_connection(peer_ip: IpAddr, scheme: Scheme, forwarded_proto: Option<&str>) -> Self {
        let forwarded_https = forwarded_proto
            .and_then(|v| v.split(',').next())
            .is_some_and(|first| first.trim().eq_ignore_ascii_case("https"));
        Self {
            public: is_public_ip(peer_ip),
            https: scheme == Scheme::Https || forwarded_https,
        }
    }
}

/// Whether an address is reachable from the internet. Not public: private (RFC 1918),
/// loopback, link-local, CGNAT (100.64/10), unspecified, multicast, broadcast,
/// reserved (240/4, 0/8, 192.0.0/24, 198.18/15), IPv6 ULA (fc00::/7), link-local
/// (fe80::/10) and site-local (fec0::/10); IPv4-mapped and NAT64 IPv6 addresses are
/// judged by their IPv4 address. Documentation ranges count as public: they stand for
/// public addresses in examples and tests.
pub fn is_public_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let reserved = a == 0
        || a == 10
        || a == 127
        || (a == 100 && (64..128).contains(&b))
        || (a == 169 && b == 254)
        || (a == 172 && (16..32).contains(&b))
        || (a == 192 && b == 168)
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (b == 18 || b == 19))
        || a >= 224;
    !reserved
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let seg = ip.segments();
    if seg[0] == 0x64 && seg[1] == 0xff9b && seg[2..6] == [0, 0, 0, 0] {
        let [a, b] = seg[6].to_be_bytes();
        let [c, d] = seg[7].to_be_bytes();
        return is_public_v4(Ipv4Addr::new(a, b, c, d));
    }
    let private = ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (seg[0] & 0xfe00) == 0xfc00
        || (seg[0] & 0xffc0) == 0xfe80
        || (seg[0] & 0xffc0) == 0xfec0;
    !private
}

/// The host part of a `scheme://host[:port][/...]` base, without brackets.
fn host_of(url_base: &str) -> &str {
    let rest = url_base.split_once("://").map_or(url_base, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if let Some(inner) = authority.strip_prefix('[') {
        return inner.split(']').next().unwrap_or_default();
    }
    authority.split(':').next().unwrap_or_default()
}

/// The address of `candidate` to give this viewer (OTT-ADDR-1..5): an announced
/// address that is not a shared CDN name, public for a public viewer, HTTPS for an
/// HTTPS viewer; an address on a bare IP only over HTTP (no certificate is issued for
/// an IP). Addresses on the node's host name come first, then in announced order.
/// Returns the URL base without a trailing slash.
///
/// # Errors
/// The named problem of the first rule that leaves no address: only CDN-shared names,
/// only private addresses, no HTTPS address, or no address at all.
pub fn backup_address(candidate: &NodeView, viewer: ViewerContext) -> Result<String, Problem> {
    let node = || candidate.id.clone();
    let usable: Vec<_> = candidate
        .addresses
        .iter()
        .filter(|a| {
            let host = host_of(&a.url_base);
            !host.is_empty() && (a.scheme == Scheme::Http || host.parse::<IpAddr>().is_err())
        })
        .collect();
    if usable.is_empty() {
        // Only HTTPS on bare IPs (or nothing): no HTTPS address a certificate covers.
        return Err(if candidate.addresses.is_empty() {
            Problem::NoAddress { node: node() }
        } else {
            Problem::NoHttpsAddress { node: node() }
        });
    }
    let own: Vec<_> = usable.into_iter().filter(|a| !a.cdn_shared).collect();
    if own.is_empty() {
        return Err(Problem::OnlyCdnSharedAddresses { node: node() });
    }
    let reachable: Vec<_> = own
        .into_iter()
        .filter(|a| a.public || !viewer.public)
        .collect();
    if reachable.is_empty() {
        return Err(Problem::OnlyPrivateAddresses { node: node() });
    }
    let secure: Vec<_> = reachable
        .into_iter()
        .filter(|a| !viewer.https || (a.scheme == Scheme::Https && !candidate.certificate_mismatch))
        .collect();
    let on_hostname = |a: &&&crate::view::Announced| {
        candidate
            .hostname
            .as_deref()
            .is_some_and(|h| host_of(&a.url_base).eq_ignore_ascii_case(h))
    };
    secure
        .iter()
        .find(on_hostname)
        .or_else(|| secure.first())
        .map(|a| a.url_base.trim_end_matches('/').to_owned())
        .ok_or(if candidate.certificate_mismatch {
            Problem::CertificateNotForHostname { node: node() }
        } else {
            Problem::NoHttpsAddress { node: node() }
        })
}

/// Where an address leads: scheme, host name (lower case) and port (the scheme's default
/// when none is written).
fn endpoint(url_base: &str, scheme: Scheme) -> Option<(Scheme, String, u16)> {
    let host = host_of(url_base);
    if host.is_empty() || host.parse::<IpAddr>().is_ok() {
        return None;
    }
    let rest = url_base.split_once("://").map_or(url_base, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let port = authority
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse::<u16>().ok())
        .unwrap_or(match scheme {
            Scheme::Https => 443,
            Scheme::Http => 80,
        });
    Some((scheme, host.to_ascii_lowercase(), port))
}

/// Marks as CDN-shared (OTT-ADDR-5) every address whose endpoint (scheme, host name and
/// port) more than one node of the snapshot announces: a name several nodes answer to
/// is a CDN (or a load balancer) in front of them, and a viewer sent there as to a
/// backup could land on the very node that failed. Nodes that share a host name on
/// ports of their own are not one endpoint; IP addresses are each node's own.
pub fn mark_shared_names(snapshot: &mut Snapshot) {
    let mut owners: std::collections::HashMap<(Scheme, String, u16), &NodeId> =
        std::collections::HashMap::new();
    let mut shared: Vec<(Scheme, String, u16)> = Vec::new();
    for node in std::iter::once(&snapshot.this).chain(&snapshot.nodes) {
        for address in &node.addresses {
            let Some(key) = endpoint(&address.url_base, address.scheme) else {
                continue;
            };
            match owners.get(&key) {
                Some(owner) if **owner != node.id => {
                    if !shared.contains(&key) {
                        shared.push(key);
                    }
                }
                Some(_) => {}
                None => {
                    owners.insert(key, &node.id);
                }
            }
        }
    }
    if shared.is_empty() {
        return;
    }
    for node in std::iter::once(&mut snapshot.this).chain(snapshot.nodes.iter_mut()) {
        for address in &mut node.addresses {
            if endpoint(&address.url_base, address.scheme).is_some_and(|k| shared.contains(&k)) {
                address.cdn_shared = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::host_of;

    #[test]
    fn host_of_handles_ports_brackets_and_userinfo() {
        assert_eq!(
            host_of("https://node-b.example.net:8443"),
            "node-b.example.net"
        );
        assert_eq!(host_of("http://[2001:db8::1]:8080/x"), "2001:db8::1");
        assert_eq!(host_of("http://u:p@10.0.0.1"), "10.0.0.1");
        assert_eq!(host_of("http://"), "");
    }
}
