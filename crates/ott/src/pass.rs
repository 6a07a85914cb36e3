//! Passes (OTT-GRP-3, DESIGN invariant 3): a signed permission to watch a stream
//! from another node of the domain.
//!
//! A pass binds a stream, an expiry and optionally the viewer's address; it is signed
//! with HMAC-SHA256 under the domain's view key and travels in the URL as strict
//! base64url. Verification tolerates 240 s of clock difference between nodes and
//! accepts the current and the previous key, so passes in flight survive a rotation.
//!
//! Wire layout (before base64url): `1` (format) ‖ key id (u32 BE) ‖ expiry (i64 BE,
//! Unix ms) ‖ viewer tag (0 none, 4 + 4 bytes IPv4, 6 + 8 bytes IPv6 /64 prefix) ‖
//! stream length (u8) ‖ stream (UTF-8) ‖ HMAC-SHA256 tag (32 bytes) over a domain
//! separation label and everything before the tag.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

use ring::{digest, hmac};

use crate::base64url;
use crate::eligibility::MAX_CLOCK_SKEW_MS;

/// The query parameter that carries a pass in backup and redirect URLs.
pub const PASS_QUERY_PARAM: &str = "pass";
/// Clock tolerance when checking expiry (OTT-GRP-3): 240 s.
pub const PASS_CLOCK_TOLERANCE_MS: i64 = MAX_CLOCK_SKEW_MS;
/// A suggested lifetime for passes in master playlists: players fetch the master
/// playlist once and may switch hours later, so the pass must outlive a viewing session.
pub const MASTER_PASS_LIFETIME_MS: i64 = 4 * 60 * 60 * 1000;
/// A suggested lifetime for the pass of a redirect: the player follows it at once.
pub const REDIRECT_PASS_LIFETIME_MS: i64 = 5 * 60 * 1000;

const FORMAT: u8 = 1;
const TAG_LEN: usize = 32;
const MAX_TEXT_LEN: usize = 512;
const MAC_LABEL: &[u8] = b"brdyun ott pass v1\0";

/// One view key: an id (carried in passes) and an HMAC-SHA256 key.
pub struct ViewKey {
    id: u32,
    key: hmac::Key,
    fingerprint: u64,
}

impl ViewKey {
    /// A view key from the secret the nodes agreed on; `id` names it in passes.
    pub fn new(id: u32, secret: &[u8]) -> Self {
        let fp = digest::digest(&digest::SHA256, secret);
        let mut first = [0u8; 8];
        first.copy_from_slice(&fp.as_ref()[..8]);
        Self {
            id,
            key: hmac::Key::new(hmac::HMAC_SHA256, secret),
            fingerprint: u64::from_be_bytes(first),
        }
    }

    /// Its id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// A fingerprint that reveals nothing of the secret, for gossip and the Backups
    /// screen ("in use", OTT-OPS-1).
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }
}

impl fmt::Debug for ViewKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ViewKey")
            .field("id", &self.id)
            .field("fingerprint", &format_args!("{:016x}", self.fingerprint))
            .finish_non_exhaustive()
    }
}

/// The keys a node signs and verifies with: it signs with `current` and accepts
/// `current`, `previous` (the rotation overlap: passes signed just before a rotation)
/// or `next` (a node whose clock is slightly ahead has already rotated).
#[derive(Debug)]
pub struct KeyRing {
    /// Signs new passes.
    pub current: ViewKey,
    /// Still accepted until the next rotation.
    pub previous: Option<ViewKey>,
    /// Already accepted before this node rotates to it.
    pub next: Option<ViewKey>,
}

/// What a pass grants.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pass {
    /// The stream on the receiving node.
    pub stream: String,
    /// Unix ms after which (plus the clock tolerance) it is refused.
    pub expires_at_ms: i64,
    /// The viewer's address, when bound; IPv6 is bound by its /64 prefix (privacy
    /// addresses change inside it).
    pub viewer: Option<IpAddr>,
    /// The view key that signed it.
    pub key_id: u32,
}

/// Why a pass is refused: each maps to its own 403 code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PassError {
    /// Not a pass at all (bad encoding, truncated, wrong format).
    #[error("the pass is malformed")]
    Malformed,
    /// Signed with a key this node does not hold (too old, or another domain).
    #[error("the pass is signed with an unknown view key {key_id}")]
    UnknownKey {
        /// The key id it names.
        key_id: u32,
    },
    /// The signature does not match.
    #[error("the pass signature is not valid")]
    Forged,
    /// Valid, but for another stream.
    #[error("the pass is for another stream")]
    WrongStream,
    /// Valid, but expired (beyond the clock tolerance).
    #[error("the pass has expired")]
    Expired,
    /// Valid, but bound to another viewer address.
    #[error("the pass is bound to another viewer")]
    WrongViewer,
    /// Cannot sign: the stream name is longer than 255 bytes.
    #[error("the stream name is too long for a pass")]
    StreamTooLong,
}

impl PassError {
    /// A stable code for the 403 answer and the metric label.
    pub fn code(&self) -> &'static str {
        match self {
            PassError::Malformed => "pass-malformed",
            PassError::UnknownKey { .. } => "pass-unknown-key",
            PassError::Forged => "pass-forged",
            PassError::WrongStream => "pass-wrong-stream",
            PassError::Expired => "pass-expired",
            PassError::WrongViewer => "pass-wrong-viewer",
            PassError::StreamTooLong => "pass-stream-too-long",
        }
    }
}

/// IPv4-mapped IPv6 is IPv4; IPv6 keeps its /64 prefix only.
fn normalize(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
        v4 => v4,
    }
}

impl Pass {
    /// Whether a pass for `stream` can be signed (its name fits the format's one-byte
    /// length).
    pub fn can_sign(stream: &str) -> bool {
        stream.len() <= usize::from(u8::MAX)
    }

    /// The signed, URL-safe text of this pass under `key` (its `key_id` is replaced
    /// by the key's id).
    ///
    /// # Errors
    /// [`PassError::StreamTooLong`] for a stream name over 255 bytes.
    pub fn sign(&self, key: &ViewKey) -> Result<String, PassError> {
        let stream_len = u8::try_from(self.stream.len()).map_err(|_| PassError::StreamTooLong)?;
        let mut body = Vec::with_capacity(64 + self.stream.len());
        body.push(FORMAT);
        body.extend_from_slice(&key.id.to_be_bytes());
        body.extend_from_slice(&self.expires_at_ms.to_be_bytes());
        match self.viewer.map(normalize) {
            None => body.push(0),
            Some(IpAddr::V4(v4)) => {
                body.push(4);
                body.extend_from_slice(&v4.octets());
            }
            Some(IpAddr::V6(v6)) => {
                body.push(6);
                body.extend_from_slice(&v6.octets()[..8]);
            }
        }
        body.push(stream_len);
        body.extend_from_slice(self.stream.as_bytes());
        let tag = mac(&key.key, &body);
        body.extend_from_slice(tag.as_ref());
        Ok(base64url::encode(&body))
    }

    /// Parses a pass without checking its signature (for logs and tests).
    ///
    /// # Errors
    /// [`PassError::Malformed`] when the text is not a well-formed pass.
    pub fn parse_unverified(text: &str) -> Result<Pass, PassError> {
        parse(text).map(|(pass, _, _)| pass)
    }
}

/// The pass, its decoded bytes and the length of the signed body.
fn parse(text: &str) -> Result<(Pass, Vec<u8>, usize), PassError> {
    if text.len() > MAX_TEXT_LEN {
        return Err(PassError::Malformed);
    }
    let bytes = base64url::decode(text).ok_or(PassError::Malformed)?;
    let mut r = Reader(&bytes);
    if r.take(1)? != [FORMAT] {
        return Err(PassError::Malformed);
    }
    let key_id = u32::from_be_bytes(r.array()?);
    let expires_at_ms = i64::from_be_bytes(r.array()?);
    let viewer = match r.take(1)? {
        [0] => None,
        [4] => Some(IpAddr::from(r.array::<4>()?)),
        [6] => {
            let prefix: [u8; 8] = r.array()?;
            let mut full = [0u8; 16];
            full[..8].copy_from_slice(&prefix);
            Some(IpAddr::from(full))
        }
        _ => return Err(PassError::Malformed),
    };
    let len = usize::from(r.take(1)?[0]);
    let stream = std::str::from_utf8(r.take(len)?)
        .map_err(|_| PassError::Malformed)?
        .to_owned();
    let body_len = bytes.len() - r.0.len();
    if r.0.len() != TAG_LEN {
        return Err(PassError::Malformed);
    }
    let pass = Pass {
        stream,
        expires_at_ms,
        viewer,
        key_id,
    };
    Ok((pass, bytes, body_len))
}

fn mac(key: &hmac::Key, body: &[u8]) -> hmac::Tag {
    let mut ctx = hmac::Context::with_key(key);
    ctx.update(MAC_LABEL);
    ctx.update(body);
    ctx.sign()
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], PassError> {
        if self.0.len() < n {
            return Err(PassError::Malformed);
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], PassError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }
}

impl KeyRing {
    /// A ring with one key.
    pub fn new(current: ViewKey) -> Self {
        Self {
            current,
            previous: None,
            next: None,
        }
    }

    /// Makes `next` the signing key and keeps the current one as `previous`; the key
    /// before that is dropped (its passes become [`PassError::UnknownKey`]).
    pub fn rotate(&mut self, next: ViewKey) {
        let old = std::mem::replace(&mut self.current, next);
        self.previous = Some(old);
        self.next = None;
    }

    /// Signs a pass with the current key.
    ///
    /// # Errors
    /// As [`Pass::sign`].
    pub fn sign(&self, pass: &Pass) -> Result<String, PassError> {
        pass.sign(&self.current)
    }

    /// Verifies a pass for `stream`, presented by a viewer at `viewer_ip` (the
    /// connection's peer address) at `now_ms` on this node's clock.
    ///
    /// # Errors
    /// In the order checked: [`PassError::Malformed`], [`PassError::UnknownKey`],
    /// [`PassError::Forged`], [`PassError::WrongStream`], [`PassError::Expired`] (more
    /// than 240 s past its expiry), [`PassError::WrongViewer`].
    pub fn verify(
        &self,
        text: &str,
        stream: &str,
        viewer_ip: Option<IpAddr>,
        now_ms: i64,
    ) -> Result<Pass, PassError> {
        let (pass, bytes, body_len) = parse(text)?;
        let key = [
            Some(&self.current),
            self.previous.as_ref(),
            self.next.as_ref(),
        ]
        .into_iter()
        .flatten()
        .find(|k| k.id == pass.key_id)
        .ok_or(PassError::UnknownKey {
            key_id: pass.key_id,
        })?;
        let (body, tag) = bytes.split_at(body_len);
        let mut ctx_body = Vec::with_capacity(MAC_LABEL.len() + body.len());
        ctx_body.extend_from_slice(MAC_LABEL);
        ctx_body.extend_from_slice(body);
        hmac::verify(&key.key, &ctx_body, tag).map_err(|_| PassError::Forged)?;
        if pass.stream != stream {
            return Err(PassError::WrongStream);
        }
        if now_ms > pass.expires_at_ms.saturating_add(PASS_CLOCK_TOLERANCE_MS) {
            return Err(PassError::Expired);
        }
        if let Some(bound) = pass.viewer {
            if viewer_ip.map(normalize) != Some(bound) {
                return Err(PassError::WrongViewer);
            }
        }
        Ok(pass)
    }
}
