//! Who is asking, as the OTT rules see it: the connection's address and scheme, and
//! the session backups are balanced by (OTT-CAP-1).

use std::net::{IpAddr, Ipv4Addr};

use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderName};

use crate::http::connection::Connection;
use crate::http::header_walk::first_values;
use crate::http::request_context::Arrival;

/// Who is asking, as the OTT rules see it.
#[derive(Debug, Clone)]
pub struct Viewer {
    /// The connection's peer address (`X-Forwarded-For` is never read, OTT-ADDR-4).
    pub ip: IpAddr,
    /// Public/HTTPS, for the address rules.
    pub context: ott::ViewerContext,
    /// The bytes backups are balanced by (OTT-CAP-1): the member header when the
    /// player sends one, else the address and User-Agent. A claim, fit to pick a
    /// viewer's backups and never to count viewers (see [`crate::access::viewer_id`]).
    pub key: String,
}

/// The headers a viewer is read from, as names ready for lookup (a name given as text
/// is parsed and checked at every lookup).
const FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");
const MEMBER: HeaderName = HeaderName::from_static(crate::access::gate::VIEWER_HEADER);

/// What a viewer's key is made of, read from a request.
struct Parts<'a> {
    ip: IpAddr,
    context: ott::ViewerContext,
    member: Option<&'a str>,
    user_agent: &'a str,
}

impl<'a> Parts<'a> {
    fn of(arrival: &'a Arrival) -> Self {
        Self::read(arrival.request.headers(), arrival.connection())
    }

    fn read(headers: &'a HeaderMap, connection: Option<&Connection>) -> Self {
        let ip = connection.map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |c| c.peer.ip());
        let scheme = if connection.is_some_and(|c| c.secure) {
            ott::Scheme::Https
        } else {
            ott::Scheme::Http
        };
        let [forwarded_proto, member, user_agent] =
            first_values(headers, [&FORWARDED_PROTO, &MEMBER, &header::USER_AGENT]);
        let forwarded_proto = forwarded_proto.and_then(|v| v.to_str().ok());
        let member = member
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty() && v.len() <= 128);
        let user_agent = user_agent.and_then(|v| v.to_str().ok()).unwrap_or("");
        Self {
            ip,
            context: ott::ViewerContext::from_connection(ip, scheme, forwarded_proto),
            member,
            user_agent,
        }
    }

    /// The viewer's address kind and its session reduced for balancing.
    fn context_and_session(&self) -> (ott::ViewerContext, ott::SessionDigest) {
        let mut hasher = ott::StableHasher::default();
        self.write_key(|piece| hasher.write(piece));
        (self.context, ott::SessionDigest::from_hasher(hasher))
    }

    /// Hands the key's bytes to `write`, piece by piece: `m:` and the member header, or
    /// `ip:`, the address, a newline and the User-Agent.
    fn write_key(&self, mut write: impl FnMut(&[u8])) {
        match self.member {
            Some(member) => {
                write(b"m:");
                write(member.as_bytes());
            }
            None => {
                write(b"ip:");
                let ip = IpText::of(self.ip);
                write(ip.as_bytes());
                write(b"\n");
                write(self.user_agent.as_bytes());
            }
        }
    }
}

impl Viewer {
    /// The viewer of a request that reached a stream file's entry.
    pub fn of(arrival: &Arrival) -> Self {
        Self::of_parts(&Parts::of(arrival))
    }

    /// The viewer of a request a router's handler got (its connection in its
    /// extensions).
    pub fn of_request(request: &Request) -> Self {
        Self::of_parts(&Parts::read(request.headers(), Connection::of(request)))
    }

    fn of_parts(parts: &Parts<'_>) -> Self {
        let mut key =
            Vec::with_capacity(48 + parts.member.map_or(parts.user_agent.len(), str::len));
        parts.write_key(|piece| key.extend_from_slice(piece));
        Self {
            ip: parts.ip,
            context: parts.context,
            // Every piece is UTF-8: header values read as `str`, the address's text.
            key: String::from_utf8(key).unwrap_or_default(),
        }
    }

    /// The viewer's address kind and its session reduced for balancing, without
    /// writing the key out: what a master playlist needs of a [`Viewer`], on the path
    /// of every one.
    pub fn context_and_session(arrival: &Arrival) -> (ott::ViewerContext, ott::SessionDigest) {
        Parts::of(arrival).context_and_session()
    }

    /// [`Viewer::context_and_session`] of a viewer whose player switches to backup
    /// variants (by its User-Agent, OTT-PLAY-1); `None` for one that does not. The
    /// request's headers are read once for both.
    pub fn switching_context_and_session(
        arrival: &Arrival,
    ) -> Option<(ott::ViewerContext, ott::SessionDigest)> {
        let parts = Parts::of(arrival);
        ott::PlayerKind::from_user_agent(parts.user_agent)
            .offers_backups()
            .then(|| parts.context_and_session())
    }

    /// The bytes backups are balanced by (OTT-CAP-1): those of [`Viewer::key`].
    pub fn session(&self) -> &[u8] {
        self.key.as_bytes()
    }
}

/// An address as its `Display` writes it, on the stack; an IPv4 address without the
/// formatter (this runs for every master playlist, and the formatter costs more than
/// the rest of the key).
struct IpText {
    bytes: [u8; 48],
    len: usize,
}

impl IpText {
    fn of(ip: IpAddr) -> Self {
        let mut text = Self {
            bytes: [0; 48],
            len: 0,
        };
        match ip {
            IpAddr::V4(v4) => {
                for (i, octet) in v4.octets().into_iter().enumerate() {
                    if i > 0 {
                        text.push(b'.');
                    }
                    if octet >= 100 {
                        text.push(b'0' + octet / 100);
                    }
                    if octet >= 10 {
                        text.push(b'0' + octet / 10 % 10);
                    }
                    text.push(b'0' + octet % 10);
                }
            }
            IpAddr::V6(_) => {
                use std::io::Write as _;
                let mut cursor = std::io::Cursor::new(&mut text.bytes[..]);
                // The longest IPv6 text is 45 bytes: it fits.
                let _ = write!(cursor, "{ip}");
                text.len = usize::try_from(cursor.position()).unwrap_or(0);
            }
        }
        text
    }

    fn push(&mut self, byte: u8) {
        self.bytes[self.len] = byte;
        self.len += 1;
    }

    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key is what `format!` wrote before (balancing must not move a viewer):
    /// every IPv4 address's octets, IPv6 addresses, and the member header first; the
    /// digest is the key's.
    #[test]
    fn viewer_keys_are_the_formatted_ones() {
        for ip in [
            "0.0.0.0",
            "127.0.0.1",
            "10.9.99.100",
            "255.255.255.255",
            "192.168.1.10",
            "::1",
            "2001:db8::8a2e:370:7334",
            "::ffff:10.0.0.1",
            "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255",
        ] {
            let ip: IpAddr = ip.parse().expect("an address");
            assert_eq!(IpText::of(ip).as_bytes(), ip.to_string().as_bytes());
        }
        for octet in 0..=255u8 {
            let ip = IpAddr::V4(Ipv4Addr::new(octet, 0, octet, 9));
            assert_eq!(IpText::of(ip).as_bytes(), ip.to_string().as_bytes());
        }
        let request = |member: Option<&str>| {
            let mut builder = axum::http::Request::builder()
                .uri("/meeting/index.m3u8")
                .header(header::USER_AGENT, "hls.js test");
            if let Some(member) = member {
                builder = builder.header(crate::access::gate::VIEWER_HEADER, member);
            }
            let mut request = builder.body(axum::body::Body::empty()).expect("a request");
            crate::http::request_context::RequestContext::of_mut(&mut request).connection =
                Some(Connection {
                    peer: std::net::SocketAddr::from(([203, 0, 113, 7], 4000)),
                    secure: false,
                    gate: None,
                });
            request
        };
        for member in [None, Some("alice")] {
            let arrival = Arrival::from_request(request(member));
            let viewer = Viewer::of(&arrival);
            assert_eq!(viewer.key, Viewer::of_request(&request(member)).key);
            let (context, session) = Viewer::context_and_session(&arrival);
            assert_eq!(context, viewer.context);
            assert_eq!(session, ott::SessionDigest::of(viewer.session()));
        }
        let anonymous = Viewer::of(&Arrival::from_request(request(None)));
        assert_eq!(anonymous.key, "ip:203.0.113.7\nhls.js test");
        assert_eq!(anonymous.session(), anonymous.key.as_bytes());
        assert_eq!(
            Viewer::of(&Arrival::from_request(request(Some("alice")))).key,
            "m:alice"
        );
    }
}
