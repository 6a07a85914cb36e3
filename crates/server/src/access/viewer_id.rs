//! Who a request counts as: what the node observed (the connection's address) or issued
//! (a private meeting's session), never a header the client chose. Viewer limits,
//! backup sessions (OTT-OVL-1) and a login's connections (OTT-GRP-6) count
//! [`ViewerId`]s, so one client cannot pose as many viewers by inventing names.
//!
//! An IPv6 address counts by its /64 (a host's privacy addresses change inside it, and
//! a /64 is what one subscriber is given); an IPv4 client reaching an IPv6 listener is
//! the same client as over IPv4. Viewers behind one NAT count as one: a limit is then
//! lenient, never stricter than configured.

use std::net::{IpAddr, Ipv6Addr};

use crate::http::request_context::Connection;

/// Who a request counts as (see the module docs). `Copy`, 17 bytes: a table of viewers
/// keyed by it allocates nothing per lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ViewerId {
    /// The connection's address: IPv4 whole (as an IPv4-mapped IPv6 address), IPv6 by
    /// its /64 prefix.
    Address([u8; 16]),
    /// A private meeting's viewer, by the hash of the id its token named
    /// ([`ott::viewer_hash`]), wherever it connects from.
    Private([u8; 8]),
    /// A request without a connection (an in-process call): one viewer for all such.
    Unknown,
}

impl ViewerId {
    /// The viewer of a connection from `ip`.
    pub fn of_address(ip: IpAddr) -> Self {
        Self::Address(address_prefix(ip))
    }

    /// The viewer of a request that came over `connection` (none: [`ViewerId::Unknown`]).
    pub fn of_connection(connection: Option<&Connection>) -> Self {
        connection.map_or(Self::Unknown, |c| Self::of_address(c.peer.ip()))
    }
}

pub use ott::address_prefix;

impl std::fmt::Display for ViewerId {
    /// The form written in logs and used as a login's session key: `ip:` and the
    /// address (an IPv6 one as its /64), or `v:` and a private viewer's hash in hex.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Address(octets) => {
                let ip = Ipv6Addr::from(*octets);
                match ip.to_ipv4_mapped() {
                    Some(v4) => write!(f, "ip:{v4}"),
                    None => write!(f, "ip:{ip}/64"),
                }
            }
            Self::Private(hash) => {
                f.write_str("v:")?;
                hash.iter().try_for_each(|b| write!(f, "{b:02x}"))
            }
            Self::Unknown => f.write_str("anonymous"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> ViewerId {
        ViewerId::of_address(text.parse().unwrap())
    }

    #[test]
    fn ipv6_addresses_count_by_their_64_prefix() {
        assert_eq!(id("2001:db8:1:2:aaaa::1"), id("2001:db8:1:2:bbbb::9"));
        assert_ne!(id("2001:db8:1:2::1"), id("2001:db8:1:3::1"));
        assert_eq!(
            id("2001:db8:1:2:aaaa::1").to_string(),
            "ip:2001:db8:1:2::/64"
        );
    }

    #[test]
    fn ipv4_counts_whole_and_the_same_through_an_ipv6_listener() {
        assert_ne!(id("192.0.2.1"), id("192.0.2.2"));
        assert_eq!(id("192.0.2.1"), id("::ffff:192.0.2.1"));
        assert_eq!(id("192.0.2.1").to_string(), "ip:192.0.2.1");
    }

    #[test]
    fn private_viewers_and_unknown_ones_read_as_such() {
        assert_eq!(
            ViewerId::Private([0xab, 0, 0, 0, 0, 0, 0, 1]).to_string(),
            "v:ab00000000000001"
        );
        assert_eq!(ViewerId::of_connection(None), ViewerId::Unknown);
    }
}
