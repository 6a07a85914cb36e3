//! Viewer tokens for private meetings: a JWT (JWS compact serialization, RFC 7519 /
//! RFC 7515) signed with Ed25519 (`"alg":"EdDSA"`, RFC 8037) that a meeting platform
//! mints for one viewer of one meeting with any standard JOSE library, and that every
//! node verifies locally with the platform's public keys.
//!
//! Why EdDSA and not HS256: nodes and the MC hold only public keys, so a node that is
//! broken into cannot mint tokens; signatures are small and verification is fast
//! (ring's Ed25519). Why no JOSE crate: the format is three base64url segments and two
//! JSON objects; the cryptography is ring's, already in the tree for TLS, and a JOSE
//! crate would bring its own ASN.1, PEM and time crates for features never used here.
//!
//! Claims: `sub` (the viewer id), `meeting` (the meeting id), `exp` (required), `nbf`
//! (optional), `aud` (must be or contain `brdyun`), `max_sessions` (optional: how many
//! sessions of this viewer may run at once). The header names its key with `kid`;
//! several keys may be current at once (rotation with overlap). Expiry and not-before
//! are checked with [`CLOCK_LEEWAY_S`] of tolerance.

use ring::signature::{self, Ed25519KeyPair, KeyPair as _, UnparsedPublicKey};
use serde::Deserialize;

use crate::base64url;

/// The audience every viewer token must name.
pub const AUDIENCE: &str = "brdyun";
/// Clock tolerance for `exp` and `nbf`, seconds (a platform's and a node's clocks).
pub const CLOCK_LEEWAY_S: i64 = 60;
/// The longest token accepted, bytes.
pub const MAX_TOKEN_LEN: usize = 4096;
/// The longest viewer id and meeting id, bytes.
const MAX_ID_LEN: usize = 128;

/// Why a viewer token was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Not three base64url segments of JSON, too long, or a claim of the wrong type.
    #[error("the viewer token is malformed")]
    Malformed,
    /// The header's `alg` is not `EdDSA`.
    #[error("the viewer token is not signed with EdDSA")]
    UnsupportedAlgorithm,
    /// No current key has the header's `kid`.
    #[error("the viewer token's key is not known (or was retired)")]
    UnknownKey,
    /// The signature does not verify.
    #[error("the viewer token's signature is wrong")]
    BadSignature,
    /// Past `exp` (beyond the leeway).
    #[error("the viewer token has expired")]
    Expired,
    /// Before `nbf` (beyond the leeway).
    #[error("the viewer token is not valid yet")]
    NotYetValid,
    /// `aud` does not name `brdyun`.
    #[error("the viewer token is for another audience")]
    WrongAudience,
    /// `sub`, `meeting` or `exp` is missing or empty.
    #[error("the viewer token lacks a required claim")]
    MissingClaim,
}

/// What a verified token grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewerClaims {
    /// The meeting the viewer may watch.
    pub meeting: String,
    /// The viewer, as the platform names it.
    pub viewer: String,
    /// When the grant ends, Unix seconds.
    pub expires_unix_s: i64,
    /// How many sessions of this viewer may run at once, if limited.
    pub max_sessions: Option<u32>,
}

/// One public key of the platform, with its key id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewerKey {
    /// The `kid` tokens signed with it carry.
    pub kid: String,
    public: [u8; 32],
}

impl ViewerKey {
    /// A key from its id and its 32-byte Ed25519 public key in base64url (a JWK's `x`).
    ///
    /// # Errors
    /// The id is empty or too long, or the key is not 32 bytes of base64url.
    pub fn from_base64url(kid: &str, public: &str) -> Result<Self, String> {
        if kid.is_empty() || kid.len() > MAX_ID_LEN {
            return Err(format!("key id {kid:?} must be 1 to {MAX_ID_LEN} bytes"));
        }
        let bytes =
            base64url::decode(public.trim()).ok_or_else(|| format!("key {kid}: not base64url"))?;
        let public: [u8; 32] = bytes
            .try_into()
            .map_err(|_| format!("key {kid}: an Ed25519 public key is 32 bytes"))?;
        Ok(Self {
            kid: kid.to_owned(),
            public,
        })
    }

    /// The public half of `pair`, under `kid`.
    pub fn of_pair(kid: &str, pair: &Ed25519KeyPair) -> Self {
        let mut public = [0u8; 32];
        public.copy_from_slice(pair.public_key().as_ref());
        Self {
            kid: kid.to_owned(),
            public,
        }
    }

    /// The public key as base64url (a JWK's `x`).
    pub fn public_base64url(&self) -> String {
        base64url::encode(&self.public)
    }
}

/// The keys tokens are accepted under: during a rotation, the old and the new.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ViewerKeySet {
    keys: Vec<ViewerKey>,
}

#[derive(Deserialize)]
struct Header<'a> {
    alg: &'a str,
    #[serde(default)]
    kid: Option<&'a str>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
struct Payload {
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    meeting: Option<String>,
    #[serde(default)]
    exp: Option<i64>,
    #[serde(default)]
    nbf: Option<i64>,
    #[serde(default)]
    aud: Option<Audience>,
    #[serde(default)]
    max_sessions: Option<u32>,
}

impl ViewerKeySet {
    /// A set of keys (ids should be distinct; the first with a token's id is used).
    pub fn new(keys: Vec<ViewerKey>) -> Self {
        Self { keys }
    }

    /// No key: no token verifies.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The keys, for status pages and for handing on to nodes.
    pub fn keys(&self) -> &[ViewerKey] {
        &self.keys
    }

    /// Verifies `token` at `now_unix_s` and returns what it grants.
    ///
    /// # Errors
    /// The first [`TokenError`] found, the signature checked before any claim is read.
    pub fn verify(&self, token: &str, now_unix_s: i64) -> Result<ViewerClaims, TokenError> {
        if token.len() > MAX_TOKEN_LEN {
            return Err(TokenError::Malformed);
        }
        let mut parts = token.split('.');
        let (Some(header_text), Some(payload_text), Some(signature_text), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TokenError::Malformed);
        };
        let header_json = base64url::decode(header_text).ok_or(TokenError::Malformed)?;
        let header: Header<'_> =
            serde_json::from_slice(&header_json).map_err(|_| TokenError::Malformed)?;
        if header.alg != "EdDSA" {
            return Err(TokenError::UnsupportedAlgorithm);
        }
        let kid = header.kid.ok_or(TokenError::UnknownKey)?;
        let key = self
            .keys
            .iter()
            .find(|k| k.kid == kid)
            .ok_or(TokenError::UnknownKey)?;
        let signature_bytes = base64url::decode(signature_text).ok_or(TokenError::Malformed)?;
        let signed = &token[..header_text.len() + 1 + payload_text.len()];
        UnparsedPublicKey::new(&signature::ED25519, &key.public)
            .verify(signed.as_bytes(), &signature_bytes)
            .map_err(|_| TokenError::BadSignature)?;
        let payload_json = base64url::decode(payload_text).ok_or(TokenError::Malformed)?;
        let payload: Payload =
            serde_json::from_slice(&payload_json).map_err(|_| TokenError::Malformed)?;
        let audience_ok = match &payload.aud {
            Some(Audience::One(a)) => a == AUDIENCE,
            Some(Audience::Many(list)) => list.iter().any(|a| a == AUDIENCE),
            None => false,
        };
        if !audience_ok {
            return Err(TokenError::WrongAudience);
        }
        let id = |v: Option<String>| v.filter(|s| !s.is_empty() && s.len() <= MAX_ID_LEN);
        let (Some(viewer), Some(meeting), Some(exp)) =
            (id(payload.sub), id(payload.meeting), payload.exp)
        else {
            return Err(TokenError::MissingClaim);
        };
        if now_unix_s > exp.saturating_add(CLOCK_LEEWAY_S) {
            return Err(TokenError::Expired);
        }
        if payload
            .nbf
            .is_some_and(|nbf| now_unix_s.saturating_add(CLOCK_LEEWAY_S) < nbf)
        {
            return Err(TokenError::NotYetValid);
        }
        Ok(ViewerClaims {
            meeting,
            viewer,
            expires_unix_s: exp,
            max_sessions: payload.max_sessions,
        })
    }
}

/// Mints a token for `claims` signed by `pair` under `kid` (the MC's minting API, and
/// tests; a platform mints its own with any JOSE library).
pub fn mint(claims: &ViewerClaims, kid: &str, pair: &Ed25519KeyPair) -> String {
    let header = serde_json::json!({"alg": "EdDSA", "typ": "JWT", "kid": kid});
    let mut payload = serde_json::json!({
        "aud": AUDIENCE,
        "sub": claims.viewer,
        "meeting": claims.meeting,
        "exp": claims.expires_unix_s,
    });
    if let Some(max) = claims.max_sessions {
        payload["max_sessions"] = serde_json::json!(max);
    }
    let mut token = base64url::encode(header.to_string().as_bytes());
    token.push('.');
    token.push_str(&base64url::encode(payload.to_string().as_bytes()));
    let signature = pair.sign(token.as_bytes());
    token.push('.');
    token.push_str(&base64url::encode(signature.as_ref()));
    token
}
