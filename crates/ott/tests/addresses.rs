//! OTT-ADDR-1..5: which address of a backup each viewer gets.

mod common;

use std::net::IpAddr;

use common::*;
use ott::{backup_address, is_public_ip, Announced, Problem, Scheme, ViewerContext};

const PUBLIC_HTTPS: ViewerContext = ViewerContext {
    public: true,
    https: true,
};
const PUBLIC_HTTP: ViewerContext = ViewerContext {
    public: true,
    https: false,
};
const PRIVATE_HTTP: ViewerContext = ViewerContext {
    public: false,
    https: false,
};

fn addr(url: &str, public: bool, cdn_shared: bool) -> Announced {
    Announced {
        url_base: url.into(),
        scheme: if url.starts_with("https:") {
            Scheme::Https
        } else {
            Scheme::Http
        },
        public,
        cdn_shared,
    }
}

fn ip(s: &str) -> IpAddr {
    s.parse().expect("test address")
}

#[test]
fn addr_1_the_host_name_address_is_preferred() {
    let mut b = node("b");
    b.addresses = vec![
        addr("http://203.0.113.7:8080", true, false),
        addr("https://b.example.net/", true, false),
    ];
    assert_eq!(
        backup_address(&b, PUBLIC_HTTP).as_deref(),
        Ok("https://b.example.net")
    );
}

#[test]
fn addr_1_without_a_host_name_the_ip_only_over_http() {
    let mut b = node("b");
    b.hostname = None;
    b.addresses = vec![
        addr("https://203.0.113.7:8443", true, false),
        addr("http://203.0.113.7:8080", true, false),
    ];
    assert_eq!(
        backup_address(&b, PUBLIC_HTTP).as_deref(),
        Ok("http://203.0.113.7:8080")
    );
    assert_eq!(
        backup_address(&b, PUBLIC_HTTPS),
        Err(Problem::NoHttpsAddress { node: id("b") })
    );
    b.addresses = vec![addr("https://[2001:db8::7]:8443", true, false)];
    assert_eq!(
        backup_address(&b, PUBLIC_HTTP),
        Err(Problem::NoHttpsAddress { node: id("b") }),
        "https on a bare IP is never offered"
    );
    b.addresses.clear();
    assert_eq!(
        backup_address(&b, PRIVATE_HTTP),
        Err(Problem::NoAddress { node: id("b") })
    );
}

#[test]
fn addr_2_public_viewers_never_get_private_addresses() {
    let mut b = node("b");
    b.addresses = vec![addr("http://10.0.0.7:8080", false, false)];
    assert_eq!(
        backup_address(&b, PUBLIC_HTTP),
        Err(Problem::OnlyPrivateAddresses { node: id("b") })
    );
    assert_eq!(
        Problem::OnlyPrivateAddresses { node: id("b") }.to_string(),
        "a node has only private addresses for backup (b)"
    );
    assert_eq!(
        backup_address(&b, PRIVATE_HTTP).as_deref(),
        Ok("http://10.0.0.7:8080"),
        "a private viewer may use a private address"
    );
}

#[test]
fn addr_3_https_viewers_get_only_https_backups() {
    let mut b = node("b");
    b.addresses = vec![addr("http://b.example.net", true, false)];
    assert_eq!(
        backup_address(&b, PUBLIC_HTTPS),
        Err(Problem::NoHttpsAddress { node: id("b") })
    );
    assert_eq!(
        Problem::NoHttpsAddress { node: id("b") }.to_string(),
        "a node has no https address for backup (b)"
    );
    b.addresses.push(addr("https://b.example.net", true, false));
    assert_eq!(
        backup_address(&b, PUBLIC_HTTPS).as_deref(),
        Ok("https://b.example.net")
    );
}

#[test]
fn addr_3_a_certificate_not_for_the_host_name_sends_no_https_viewer() {
    let mut b = node("b");
    b.addresses = vec![
        addr("http://b.example.net:8080", true, false),
        addr("https://b.example.net:8443", true, false),
    ];
    b.certificate_mismatch = true;
    assert_eq!(
        backup_address(&b, PUBLIC_HTTPS),
        Err(Problem::CertificateNotForHostname {
            node: ott::NodeId::new("b")
        })
    );
    assert_eq!(
        Problem::CertificateNotForHostname {
            node: ott::NodeId::new("b")
        }
        .code(),
        "certificate-not-for-hostname"
    );
    // An HTTP viewer is not affected.
    assert_eq!(
        backup_address(&b, PUBLIC_HTTP).as_deref(),
        Ok("http://b.example.net:8080")
    );
}

#[test]
fn addr_3_x_forwarded_proto_https_makes_an_https_viewer() {
    let peer = ip("198.51.100.20");
    let v = ViewerContext::from_connection(peer, Scheme::Http, Some("https"));
    assert_eq!(v, PUBLIC_HTTPS);
    let v = ViewerContext::from_connection(peer, Scheme::Http, Some(" HTTPS , http"));
    assert!(v.https, "first hop of a list, any case");
    let v = ViewerContext::from_connection(peer, Scheme::Http, Some("http"));
    assert!(!v.https);
    let v = ViewerContext::from_connection(peer, Scheme::Https, None);
    assert!(v.https);
}

#[test]
fn addr_4_the_viewer_is_judged_by_the_connection_address() {
    // A proxy on a private address: the viewer looks private whatever it claims
    // elsewhere; from_connection has no X-Forwarded-For input at all.
    let v = ViewerContext::from_connection(ip("10.1.2.3"), Scheme::Http, None);
    assert_eq!(v, PRIVATE_HTTP);
}

#[test]
fn addr_5_cdn_names_shared_by_nodes_are_never_backups() {
    let mut b = node("b");
    b.addresses = vec![addr("https://cdn.example.net", true, true)];
    assert_eq!(
        backup_address(&b, PUBLIC_HTTPS),
        Err(Problem::OnlyCdnSharedAddresses { node: id("b") })
    );
    b.addresses.push(addr("https://b.example.net", true, false));
    assert_eq!(
        backup_address(&b, PUBLIC_HTTPS).as_deref(),
        Ok("https://b.example.net")
    );
}

#[test]
fn addr_5_a_name_several_nodes_announce_is_found_from_the_mesh() {
    let mut s = snapshot("a", &["b", "c"]);
    s.this.addresses = vec![
        addr("https://a.example.net", true, false),
        addr("https://live.example.net", true, false),
    ];
    node_mut(&mut s, "b").addresses = vec![
        addr("https://b.example.net", true, false),
        addr("https://LIVE.example.net:443", true, false),
    ];
    node_mut(&mut s, "c").addresses = vec![
        addr("https://live.example.net", true, false),
        addr("http://203.0.113.9:8080", true, false),
    ];
    // Two nodes on one machine: one host name, ports of their own, not a CDN.
    s.this
        .addresses
        .push(addr("http://host.example.net:8080", true, false));
    node_mut(&mut s, "b")
        .addresses
        .push(addr("http://host.example.net:8081", true, false));
    ott::mark_shared_names(&mut s);
    assert!(!s.this.addresses[2].cdn_shared && !s.nodes[0].addresses[2].cdn_shared);
    s.this.addresses.pop();
    node_mut(&mut s, "b").addresses.pop();
    let shared =
        |n: &ott::NodeView| -> Vec<bool> { n.addresses.iter().map(|a| a.cdn_shared).collect() };
    assert_eq!(shared(&s.this), [false, true]);
    assert_eq!(
        shared(&s.nodes[0]),
        [false, true],
        "any case, the default port written or not"
    );
    assert_eq!(
        shared(&s.nodes[1]),
        [true, false],
        "IPs are never shared names"
    );
    // c's shared name is never offered: an HTTPS viewer finds no address of its own.
    assert_eq!(
        backup_address(&s.nodes[1], PUBLIC_HTTPS),
        Err(Problem::NoHttpsAddress { node: id("c") })
    );
    node_mut(&mut s, "c").addresses.pop();
    assert_eq!(
        backup_address(&s.nodes[1], PUBLIC_HTTPS),
        Err(Problem::OnlyCdnSharedAddresses { node: id("c") })
    );
    assert_eq!(
        backup_address(&s.nodes[0], PUBLIC_HTTPS).as_deref(),
        Ok("https://b.example.net")
    );
}

#[test]
fn address_classification() {
    for private in [
        "10.0.0.1",
        "172.16.0.1",
        "172.31.255.255",
        "192.168.1.1",
        "127.0.0.1",
        "169.254.1.1",
        "100.64.0.1",
        "100.127.255.255",
        "0.0.0.0",
        "255.255.255.255",
        "224.0.0.1",
        "::1",
        "::",
        "fd00::1",
        "fc00::1",
        "fe80::1",
        "::ffff:10.0.0.1",
        "64:ff9b::a00:1",
    ] {
        assert!(!is_public_ip(ip(private)), "{private}");
    }
    for public in [
        "8.8.8.8",
        "172.32.0.1",
        "100.128.0.1",
        "203.0.113.7",
        "2001:4860::8888",
        "::ffff:8.8.8.8",
        "2a00:1450::1",
    ] {
        assert!(is_public_ip(ip(public)), "{public}");
    }
}

proptest::proptest! {
    /// IPv4-mapped IPv6 is judged like the IPv4 address itself.
    #[test]
    fn mapped_addresses_classify_like_ipv4(bits: u32) {
        let v4 = std::net::Ipv4Addr::from(bits);
        proptest::prop_assert_eq!(
            is_public_ip(IpAddr::V4(v4)),
            is_public_ip(IpAddr::V6(v4.to_ipv6_mapped()))
        );
    }

    /// Whatever is announced, the answer obeys the viewer's constraints.
    #[test]
    fn the_chosen_address_obeys_every_rule(
        announced in proptest::collection::vec(
            (proptest::sample::select(vec![
                "https://b.example.net", "http://b.example.net:8080", "http://203.0.113.9",
                "https://203.0.113.9", "http://10.0.0.9", "https://cdn.example.net", "", "http://",
            ]), proptest::bool::ANY, proptest::bool::ANY),
            0..6,
        ),
        public: bool,
        https: bool,
    ) {
        let mut b = node("b");
        b.addresses = announced.iter().map(|(u, p, c)| addr(u, *p, *c)).collect();
        if let Ok(url) = backup_address(&b, ViewerContext { public, https }) {
            // Some announced entry with that URL satisfies every rule.
            let ok = b.addresses.iter().any(|a| {
                a.url_base.trim_end_matches('/') == url
                    && !a.cdn_shared
                    && (a.public || !public)
                    && (a.scheme == Scheme::Https || !https)
            });
            proptest::prop_assert!(ok, "{} breaks a rule", url);
            proptest::prop_assert!(!url.starts_with("https://203."));
        }
    }
}
