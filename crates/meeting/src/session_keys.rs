//! The session keys an MC hands its nodes with every sync answer: the keys private
//! meetings' viewer sessions are signed with, which only the MC makes and rotates. A
//! secret travels only in this answer, to a node that presented the node token.

use serde::{Deserialize, Serialize};

/// Most keys a sync answer may carry: a ring holds the current key, the next one and
/// the few retired keys whose sessions may still renew.
pub const MAX_SESSION_KEYS: usize = 16;

/// The session keys in a sync answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionKeysWire {
    /// The id of the key that signs new sessions.
    pub current: u32,
    /// Every key held, each with its secret.
    pub keys: Vec<SessionKeyWire>,
}

/// One session key in a sync answer.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionKeyWire {
    /// Its id, written in every session it signs.
    pub id: u32,
    /// Its 32 secret bytes, base64url.
    pub secret: String,
}

impl std::fmt::Debug for SessionKeyWire {
    /// The id only: a secret is never logged.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SessionKeyWire({})", self.id)
    }
}
