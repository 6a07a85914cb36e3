//! The keys private meetings' sessions are signed with, issued and rotated by the MC and
//! handed to its nodes with every sync (one key, one job: never the mesh's gossip
//! secret, which any member of the domain holds).
//!
//! The ring has three kinds of key:
//! - the **current** key, which nodes sign new and renewed sessions with;
//! - the **next** key, published one rotation ahead: every node verifies it before any
//!   node signs with it, so a node that syncs with another MC of a pair, or a minute
//!   later, never refuses a session signed with a key it has not heard of;
//! - **older** keys, kept while a session they signed may still renew (its renewal time
//!   is at most [`ott::SESSION_RENEW_MAX_S`] after it was issued), then dropped: every
//!   session they signed has ended.
//!
//! A lone MC keeps the ring in `session_keys.json` beside its store (mode 0600); an MC
//! pair keeps it in etcd, written with a compare-and-swap so the MCs agree on one ring.

use serde::{Deserialize, Serialize};

/// How often the current key is replaced by the next one.
pub const ROTATE_EVERY_S: i64 = 12 * 3600;

/// One key as the MC keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssuedKey {
    /// Its id, written in every session it signs.
    pub id: u32,
    /// 32 random bytes, base64url.
    pub secret: String,
    /// When it became the current key (Unix s; the next key: when it was made).
    pub since_unix_s: i64,
}

impl IssuedKey {
    fn fresh(id: u32, now_unix_s: i64) -> Self {
        Self {
            id,
            secret: random_secret(),
            since_unix_s: now_unix_s,
        }
    }
}

/// A key no longer current, and when it stopped being.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetiredKey {
    /// The key.
    pub key: IssuedKey,
    /// When the next key replaced it (Unix s).
    pub retired_unix_s: i64,
}

/// The ring (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionKeyRing {
    /// Signs sessions now.
    pub current: IssuedKey,
    /// Signs from the next rotation on; verified already.
    pub next: IssuedKey,
    /// Retired keys whose sessions may still renew, newest first.
    #[serde(default)]
    pub older: Vec<RetiredKey>,
}

impl SessionKeyRing {
    /// A new ring at `now_unix_s`: keys 1 (current) and 2 (next).
    pub fn fresh(now_unix_s: i64) -> Self {
        Self {
            current: IssuedKey::fresh(1, now_unix_s),
            next: IssuedKey::fresh(2, now_unix_s),
            older: Vec::new(),
        }
    }

    /// The ring one rotation on, when the current key has signed for
    /// [`ROTATE_EVERY_S`]; `None` when no rotation is due.
    pub fn rotated(&self, now_unix_s: i64) -> Option<Self> {
        if now_unix_s - self.current.since_unix_s < ROTATE_EVERY_S {
            return None;
        }
        let mut current = self.next.clone();
        current.since_unix_s = now_unix_s;
        let next = IssuedKey::fresh(self.next.id.wrapping_add(1).max(1), now_unix_s);
        let mut older = Vec::with_capacity(self.older.len() + 1);
        older.push(RetiredKey {
            key: self.current.clone(),
            retired_unix_s: now_unix_s,
        });
        older.extend(self.older.iter().cloned());
        // A session signed just before its key retired renews until at most
        // SESSION_RENEW_MAX_S later; past that no session of the key is left.
        older.retain(|k| now_unix_s - k.retired_unix_s <= ott::SESSION_RENEW_MAX_S);
        Some(Self {
            current,
            next,
            older,
        })
    }

    /// The ring as nodes use it.
    pub fn keys(&self) -> ott::SessionKeys {
        let key = |k: &IssuedKey| {
            let secret = decode_secret(&k.secret);
            ott::SessionKey::new(k.id, &secret)
        };
        ott::SessionKeys::new(
            key(&self.current),
            std::iter::once(key(&self.next)).chain(self.older.iter().map(|k| key(&k.key))),
        )
    }

    /// What a node is told with each sync: the current key's id and every key.
    pub fn wire(&self) -> meeting::SessionKeysWire {
        let keys = std::iter::once(&self.current)
            .chain(std::iter::once(&self.next))
            .chain(self.older.iter().map(|k| &k.key))
            .map(|k| meeting::SessionKeyWire {
                id: k.id,
                secret: k.secret.clone(),
            })
            .collect();
        meeting::SessionKeysWire {
            current: self.current.id,
            keys,
        }
    }
}

/// A ring in a sync answer as a node uses it; `None` when it is not a usable ring (no
/// key with the current id, more than [`meeting::MAX_SESSION_KEYS`] keys, a secret that
/// is not 32 bytes of base64url).
pub fn node_keys(wire: &meeting::SessionKeysWire) -> Option<ott::SessionKeys> {
    if wire.keys.len() > meeting::MAX_SESSION_KEYS {
        return None;
    }
    let mut current = None;
    let mut others = Vec::with_capacity(wire.keys.len());
    for k in &wire.keys {
        let secret = decode_secret(&k.secret);
        if secret.len() != SECRET_LEN {
            return None;
        }
        let key = ott::SessionKey::new(k.id, &secret);
        if k.id == wire.current && current.is_none() {
            current = Some(key);
        } else {
            others.push(key);
        }
    }
    Some(ott::SessionKeys::new(current?, others))
}

const SECRET_LEN: usize = 32;

/// A key's secret bytes from its base64url text (empty when it is not base64url).
fn decode_secret(text: &str) -> Vec<u8> {
    let mut out = [0u8; 64];
    match ott::base64url::decode_into(text, &mut out) {
        Some(n) => out[..n].to_vec(),
        None => Vec::new(),
    }
}

/// 32 bytes from the OS's random source, base64url.
fn random_secret() -> String {
    use ring::rand::SecureRandom as _;
    let mut bytes = [0u8; SECRET_LEN];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .expect("the OS random source");
    ott::base64url::encode(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_800_000_000;

    fn session(keys: &ott::SessionKeys, now: i64) -> String {
        let claims = ott::SessionClaims {
            viewer: [1; 8],
            nonce: [2; 4],
            expires_unix_s: (now + 600) as u32,
            renew_until_unix_s: (now + ott::SESSION_RENEW_MAX_S) as u32,
        };
        keys.issue("m", claims, None).expect("a signing key")
    }

    #[test]
    fn the_ring_rotates_on_schedule_and_keeps_keys_while_their_sessions_renew() {
        let ring = SessionKeyRing::fresh(T0);
        assert_eq!(ring.rotated(T0 + ROTATE_EVERY_S - 1), None);
        let signed_before = session(&ring.keys(), T0 + 100);
        let once = ring.rotated(T0 + ROTATE_EVERY_S).expect("due");
        assert_eq!(once.current.id, 2, "the published next key signs now");
        assert_eq!(once.current.secret, ring.next.secret);
        assert_eq!(once.next.id, 3);
        assert_eq!(once.older[0].key, ring.current);
        // A node that heard the old ring already verifies what the new one signs.
        let signed_after = session(&once.keys(), T0 + ROTATE_EVERY_S);
        assert!(ring
            .keys()
            .verify(&signed_after, "m", None, T0 + ROTATE_EVERY_S)
            .is_ok());
        // The old key's sessions keep renewing until their renewal time.
        let at = T0 + ROTATE_EVERY_S + 60;
        assert!(once.keys().verify(&signed_before, "m", None, at).is_ok());
        // Two rotations on, past SESSION_RENEW_MAX_S after its retirement, it is gone.
        let twice = once.rotated(T0 + 2 * ROTATE_EVERY_S).unwrap();
        let thrice = twice.rotated(T0 + 3 * ROTATE_EVERY_S).unwrap();
        assert!(thrice.older.iter().all(|k| k.key.id != 1));
        assert!(thrice.older.len() <= 2, "{:?}", thrice.older);
    }

    #[test]
    fn the_wire_form_gives_nodes_the_same_ring_and_refuses_a_bad_one() {
        let ring = SessionKeyRing::fresh(T0)
            .rotated(T0 + ROTATE_EVERY_S)
            .unwrap();
        let wire = ring.wire();
        let json = serde_json::to_string(&wire).unwrap();
        let back: meeting::SessionKeysWire = serde_json::from_str(&json).unwrap();
        let node = node_keys(&back).expect("usable");
        assert_eq!(
            node.ids().collect::<Vec<_>>(),
            ring.keys().ids().collect::<Vec<_>>()
        );
        let text = session(&ring.keys(), T0);
        assert!(node.verify(&text, "m", None, T0).is_ok());
        let mut no_current = wire.clone();
        no_current.current = 99;
        assert!(node_keys(&no_current).is_none());
        let mut short = wire.clone();
        short.keys[0].secret = "c2hvcnQ".into();
        assert!(node_keys(&short).is_none());
        let mut many = wire;
        many.keys = (0..=meeting::MAX_SESSION_KEYS as u32)
            .map(|id| meeting::SessionKeyWire {
                id,
                secret: random_secret(),
            })
            .collect();
        assert!(node_keys(&many).is_none());
    }
}
