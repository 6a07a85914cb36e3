//! The personalised master playlists written under one mesh snapshot, by everything
//! they depend on ([`RenderKey`]): viewers that share a pair of backups share the
//! bytes, so a master request is a lookup, not a rewrite.
//!
//! A lookup builds nothing: the key is a handful of borrowed fields, reduced to 64 bits
//! with [`ott::stable_hash`] to find its slot and then compared field by field with the
//! key stored there, so two keys that share a digest are told apart, never confused.
//! The plain playlist a render was made from is compared by content, but found by its
//! length and ends only (hashing all of it per request cost more than the rest of the
//! key), and recognised at once when it is the very bytes the render was made from
//! (the cache holds them, so no other playlist can be at their address).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{PoisonError, RwLock};

use bytes::Bytes;

/// Most renders kept per snapshot (a snapshot lives about 250 ms).
const MAX_RENDERED: usize = 512;

/// What a personalised master playlist depends on under one snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderKey<'a> {
    /// The stream.
    pub stream: &'a str,
    /// The stream's plain master playlist (written again per segment at most).
    pub plain: &'a Bytes,
    /// HLS, LL-HLS or DASH.
    pub protocol: ott::Protocol,
    /// Which of the snapshot's candidate lists the backups were picked from (its
    /// address: the snapshot holds it, so no other list has it while this cache lives).
    pub list: usize,
    /// The backups' positions in that list, first backup first.
    pub picked: [Option<usize>; 2],
    /// A login's query, written on every variant URI.
    pub query: Option<&'a str>,
    /// The viewer's address as passes bind it ([`crate::access::viewer_id::address_prefix`]):
    /// each viewer's backups carry passes only it can use.
    pub viewer: [u8; 16],
}

impl RenderKey<'_> {
    fn digest(&self) -> u64 {
        let mut words = [0u64; 7];
        words[0] = ott::stable_hash(self.stream.as_bytes());
        words[1] = plain_sample(self.plain);
        words[2] = self.protocol as u64;
        words[3] = self.list as u64;
        words[4] = self.picked[0].map_or(u64::MAX, |i| i as u64) << 32
            ^ self.picked[1].map_or(u64::MAX >> 32, |i| i as u64);
        words[5] = self.query.map_or(0, |q| ott::stable_hash(q.as_bytes()));
        words[6] = ott::stable_hash(&self.viewer);
        let mut bytes = [0u8; 56];
        for (chunk, word) in bytes.chunks_exact_mut(8).zip(words) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        ott::stable_hash(&bytes)
    }

    fn stored(self) -> OwnedKey {
        OwnedKey {
            stream: self.stream.into(),
            plain: self.plain.clone(),
            protocol: self.protocol,
            list: self.list,
            picked: self.picked,
            query: self.query.map(Into::into),
            viewer: self.viewer,
        }
    }
}

/// A playlist's length and its first and last 32 bytes, hashed: enough to spread the
/// few plain playlists a snapshot sees over the slots.
fn plain_sample(plain: &[u8]) -> u64 {
    let head = &plain[..plain.len().min(32)];
    let tail = &plain[plain.len().saturating_sub(32)..];
    let mut hasher = ott::StableHasher::default();
    hasher.write(head);
    hasher.write(tail);
    hasher.finish()
}

/// A stored [`RenderKey`].
#[derive(Debug)]
struct OwnedKey {
    stream: Box<str>,
    plain: Bytes,
    protocol: ott::Protocol,
    list: usize,
    picked: [Option<usize>; 2],
    query: Option<Box<str>>,
    viewer: [u8; 16],
}

impl OwnedKey {
    fn is(&self, key: &RenderKey<'_>) -> bool {
        *self.stream == *key.stream
            && self.plain.len() == key.plain.len()
            && (self.plain.as_ptr() == key.plain.as_ptr() || self.plain == *key.plain)
            && self.protocol == key.protocol
            && self.list == key.list
            && self.picked == key.picked
            && self.query.as_deref() == key.query
            && self.viewer == key.viewer
    }
}

/// A `u64` digest is already spread: it is its own hash.
#[derive(Default)]
struct DigestHasher(u64);

impl Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used (the map's keys are `u64`); anything else is folded in.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// The renders of one snapshot (`V`: a rendered playlist).
#[derive(Debug, Default)]
pub struct RenderCache<V = Bytes> {
    slots: RwLock<HashMap<u64, (OwnedKey, V), BuildHasherDefault<DigestHasher>>>,
}

impl<V: Clone> RenderCache<V> {
    /// The playlist written before for `key`, if any.
    pub fn get(&self, key: &RenderKey<'_>) -> Option<V> {
        let slots = self.slots.read().unwrap_or_else(PoisonError::into_inner);
        let (stored, body) = slots.get(&key.digest())?;
        stored.is(key).then(|| body.clone())
    }

    /// Keeps `body` for the next viewer with the same key (replacing a different key
    /// that shares its digest).
    pub fn put(&self, key: &RenderKey<'_>, body: V) {
        let mut slots = self.slots.write().unwrap_or_else(PoisonError::into_inner);
        if slots.len() >= MAX_RENDERED {
            slots.clear();
        }
        slots.insert(key.digest(), (key.stored(), body));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static PLAIN: Bytes = Bytes::from_static(b"#EXTM3U\n");
    static OTHER_PLAIN: Bytes = Bytes::from_static(b"#EXTM3U\n\n");

    fn key(stream: &str) -> RenderKey<'_> {
        RenderKey {
            stream,
            plain: &PLAIN,
            protocol: ott::Protocol::Hls,
            list: 0x1000,
            picked: [Some(0), Some(2)],
            query: None,
            viewer: [7; 16],
        }
    }

    #[test]
    fn a_render_is_found_by_an_equal_key_only() {
        let cache = RenderCache::default();
        cache.put(&key("meeting"), Bytes::from_static(b"A"));
        assert_eq!(cache.get(&key("meeting")), Some(Bytes::from_static(b"A")));
        let others = [
            key("meetinh"),
            RenderKey {
                plain: &OTHER_PLAIN,
                ..key("meeting")
            },
            RenderKey {
                protocol: ott::Protocol::LlHls,
                ..key("meeting")
            },
            RenderKey {
                list: 0x1008,
                ..key("meeting")
            },
            RenderKey {
                picked: [Some(2), Some(0)],
                ..key("meeting")
            },
            RenderKey {
                picked: [Some(0), None],
                ..key("meeting")
            },
            RenderKey {
                viewer: [8; 16],
                ..key("meeting")
            },
            RenderKey {
                query: Some("login=a&token=b"),
                ..key("meeting")
            },
        ];
        for other in others {
            assert_eq!(cache.get(&other), None, "{other:?}");
        }
        // The plain playlist by content: a clone of it (the same bytes, shared) hits, and
        // so does a copy of its bytes elsewhere (a playlist written anew per request).
        let clone = PLAIN.clone();
        let hit = RenderKey {
            plain: &clone,
            ..key("meeting")
        };
        assert_eq!(cache.get(&hit), Some(Bytes::from_static(b"A")));
        let copy = Bytes::copy_from_slice(&PLAIN);
        let also = RenderKey {
            plain: &copy,
            ..key("meeting")
        };
        assert_eq!(cache.get(&also), Some(Bytes::from_static(b"A")));
        // A playlist that differs only in its middle shares the slot, not the render.
        let long = |middle: u8| {
            let mut text = vec![b'#'; 100];
            text[50] = middle;
            Bytes::from(text)
        };
        let (first, second) = (long(b'1'), long(b'2'));
        cache.put(
            &RenderKey {
                plain: &first,
                ..key("meeting")
            },
            Bytes::from_static(b"B"),
        );
        let differs = RenderKey {
            plain: &second,
            ..key("meeting")
        };
        assert_eq!(cache.get(&differs), None);
    }

    #[test]
    fn a_key_sharing_a_digest_is_not_answered_with_anothers_render() {
        let cache = RenderCache::default();
        let (a, b) = (key("a"), key("b"));
        // Force both into one slot: the stored key decides.
        cache
            .slots
            .write()
            .unwrap()
            .insert(b.digest(), (a.stored(), Bytes::from_static(b"A")));
        assert_eq!(cache.get(&b), None);
    }

    #[test]
    fn the_cache_stays_bounded() {
        let cache = RenderCache::default();
        let names: Vec<String> = (0..MAX_RENDERED + 10).map(|i| format!("s{i}")).collect();
        for name in &names {
            cache.put(&key(name), Bytes::from_static(b"x"));
        }
        assert!(cache.slots.read().unwrap().len() <= MAX_RENDERED);
        assert!(cache.get(&key(&names[MAX_RENDERED + 9])).is_some());
    }
}
