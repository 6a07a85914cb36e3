//! Every HTTP request's id, and the request a thread is working for right now.
//!
//! A request keeps the id its client sent in `X-Request-Id` when that is short and
//! plain (at most [`MAX_LEN`] characters from a small safe set: letters, digits and
//! `-_.:+/=@`), so an operator can follow one request through a proxy and the node;
//! anything else (too long, spaces, quotes, control or non-ASCII bytes) is replaced by
//! a fresh id, never copied into a log. A fresh id is a per-process random prefix and a
//! counter (`3f9a0c1e-2b`): one atomic add, no allocation, unique per process run.
//!
//! While a request is being answered its [`RequestScope`] is the thread's current
//! scope ([`within`]): the log lines written meanwhile carry its id ([`current`]), and
//! the shedding layer notes the request's rank there ([`note_rank`]) for the access
//! log. A scope is a few bytes copied into a thread-local cell: no span, no allocation.

use std::cell::Cell;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use axum::http::{HeaderMap, HeaderName, HeaderValue};

/// The header a request id comes in and goes back in.
pub const HEADER: HeaderName = HeaderName::from_static("x-request-id");

/// The longest id taken from a client (a UUID is 36 characters).
pub const MAX_LEN: usize = 64;

/// A request id: an inline, copyable string of at most [`MAX_LEN`] safe characters.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct RequestId {
    bytes: [u8; MAX_LEN],
    len: u8,
}

impl RequestId {
    /// The id of a request with these headers: its client's `X-Request-Id` when that is
    /// safe ([`RequestId::given`]), else a fresh one.
    pub fn of_request(headers: &HeaderMap) -> Self {
        headers
            .get(HEADER)
            .and_then(|value| Self::given(value.as_bytes()))
            .unwrap_or_else(Self::generate)
    }

    /// `value` as an id, if it is 1 to [`MAX_LEN`] characters of the safe set.
    pub fn given(value: &[u8]) -> Option<Self> {
        if value.is_empty() || value.len() > MAX_LEN || !value.iter().all(|b| is_safe(*b)) {
            return None;
        }
        let mut bytes = [0u8; MAX_LEN];
        bytes[..value.len()].copy_from_slice(value);
        Some(Self {
            bytes,
            len: value.len() as u8,
        })
    }

    /// A fresh id: this process's random prefix, `-`, a counter in hex.
    pub fn generate() -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(1);
        let count = COUNTER.fetch_add(1, Ordering::Relaxed);
        let mut bytes = [0u8; MAX_LEN];
        let mut len = write_hex(&mut bytes, 0, u64::from(prefix()), 8);
        bytes[len] = b'-';
        len = write_hex(&mut bytes, len + 1, count, 1);
        Self {
            bytes,
            len: len as u8,
        }
    }

    /// The id's text.
    pub fn as_str(&self) -> &str {
        // Only safe ASCII bytes are ever stored.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("")
    }

    /// The id as a response header's value: its bytes cut from a per-thread buffer
    /// shared by many answers' headers (a reference count, not an allocation per
    /// answer: a fresh 16 KiB buffer every few hundred ids).
    pub fn header_value(&self) -> HeaderValue {
        let text = &self.bytes[..usize::from(self.len)];
        HeaderValue::from_maybe_shared(shared_bytes(text))
            .unwrap_or_else(|_| HeaderValue::from_static("-"))
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RequestId({})", self.as_str())
    }
}

/// `text` copied into this thread's header buffer, as bytes sharing it.
fn shared_bytes(text: &[u8]) -> bytes::Bytes {
    const BUFFER: usize = 16 * 1024;
    thread_local! {
        static SPARE: std::cell::RefCell<bytes::BytesMut> =
            std::cell::RefCell::new(bytes::BytesMut::new());
    }
    SPARE.with(|spare| {
        let mut spare = spare.borrow_mut();
        if spare.capacity() < text.len() {
            *spare = bytes::BytesMut::with_capacity(BUFFER.max(text.len()));
        }
        spare.extend_from_slice(text);
        spare.split().freeze()
    })
}

/// Writes `value` in lowercase hex (at least `min_digits`) into `bytes` from `at`;
/// answers where it ended. 16 digits at most: the caller leaves room.
fn write_hex(bytes: &mut [u8; MAX_LEN], at: usize, value: u64, min_digits: usize) -> usize {
    let digits = (16 - value.leading_zeros() as usize / 4).max(min_digits);
    for (offset, shift) in (0..digits).rev().enumerate() {
        bytes[at + offset] = b"0123456789abcdef"[((value >> (shift * 4)) & 0xf) as usize];
    }
    at + digits
}

/// Whether `byte` may appear in an id taken from a client: nothing a log line, a
/// shell or a log shipper's parser would read as anything but part of one word.
fn is_safe(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"-_.:+/=@".contains(&byte)
}

/// This process's id prefix, random per run (std's hasher keys are random per process;
/// no random-number dependency needed).
fn prefix() -> u32 {
    static PREFIX: OnceLock<u32> = OnceLock::new();
    *PREFIX.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        hasher.finish() as u32
    })
}

/// How the shedding layer ranked a request, for the access log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rank {
    /// The priority score (0-99; the bucket follows from it).
    pub priority: u8,
    /// Whether it was shed (refused with the back-pressure answer).
    pub shed: bool,
}

/// What a thread knows of the request it is working for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestScope {
    /// The request's id.
    pub id: Option<RequestId>,
    /// Its rank, once the shedding layer has decided.
    pub rank: Option<Rank>,
}

impl RequestScope {
    /// No request.
    pub const NONE: Self = Self {
        id: None,
        rank: None,
    };

    /// The scope of the request with id `id`.
    pub fn of(id: RequestId) -> Self {
        Self {
            id: Some(id),
            rank: None,
        }
    }
}

thread_local! {
    static CURRENT: Cell<RequestScope> = const { Cell::new(RequestScope::NONE) };
}

/// Runs `f` with `scope` as the thread's current request, then takes back what `f`
/// noted in it (the rank). Nests: the scope before is restored after, also when `f`
/// panics.
pub fn within<T>(scope: &mut RequestScope, f: impl FnOnce() -> T) -> T {
    struct Restore<'a> {
        scope: &'a mut RequestScope,
        previous: RequestScope,
    }
    impl Drop for Restore<'_> {
        fn drop(&mut self) {
            *self.scope = CURRENT.with(|current| current.replace(self.previous));
        }
    }
    let previous = CURRENT.with(|current| current.replace(*scope));
    let _restore = Restore { scope, previous };
    f()
}

/// The id of the request this thread is working for, if any: what log lines carry.
pub fn current() -> Option<RequestId> {
    CURRENT.with(|current| current.get().id)
}

/// Notes the shedding layer's rank of the current request (nothing outside a request).
pub fn note_rank(rank: Rank) {
    CURRENT.with(|current| {
        let mut scope = current.get();
        if scope.id.is_some() {
            scope.rank = Some(rank);
            current.set(scope);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_safe_client_id_is_kept_and_anything_else_replaced() {
        let mut headers = HeaderMap::new();
        headers.insert(
            HEADER,
            HeaderValue::from_static("0f8e-4c1a:proxy.example/7+x=@_"),
        );
        assert_eq!(
            RequestId::of_request(&headers).as_str(),
            "0f8e-4c1a:proxy.example/7+x=@_"
        );
        let long = "a".repeat(MAX_LEN);
        assert_eq!(RequestId::given(long.as_bytes()).map(|id| id.len), Some(64));
        for unsafe_id in [
            "a".repeat(MAX_LEN + 1),
            String::new(),
            "two words".into(),
            "quote\"d".into(),
            "new\nline".into(),
            "brace{".into(),
            "caf\u{e9}".into(),
            "semi;colon".into(),
        ] {
            assert!(
                RequestId::given(unsafe_id.as_bytes()).is_none(),
                "{unsafe_id:?}"
            );
        }
        headers.insert(HEADER, HeaderValue::from_static("evil value=\"x\""));
        let replaced = RequestId::of_request(&headers);
        assert_ne!(replaced.as_str(), "evil value=\"x\"");
        assert_eq!(replaced.as_str().as_bytes()[8], b'-', "a fresh id");
    }

    #[test]
    fn fresh_ids_share_the_process_prefix_and_differ() {
        let a = RequestId::generate();
        let b = RequestId::generate();
        assert_ne!(a, b);
        let (prefix_a, count_a) = a.as_str().split_once('-').expect("prefix-count");
        let (prefix_b, count_b) = b.as_str().split_once('-').expect("prefix-count");
        assert_eq!(prefix_a, prefix_b);
        assert_eq!(prefix_a.len(), 8);
        assert!(prefix_a.bytes().all(|b| b.is_ascii_hexdigit()));
        let (ca, cb) = (
            u64::from_str_radix(count_a, 16).expect("hex"),
            u64::from_str_radix(count_b, 16).expect("hex"),
        );
        assert!(cb > ca);
        // Every fresh id is itself a safe id.
        assert_eq!(RequestId::given(a.as_str().as_bytes()), Some(a));
        assert_eq!(a.header_value(), a.as_str());
    }

    #[test]
    fn header_values_stay_whole_across_buffer_refills() {
        let ids: Vec<RequestId> = (0..5000).map(|_| RequestId::generate()).collect();
        let values: Vec<HeaderValue> = ids.iter().map(RequestId::header_value).collect();
        for (id, value) in ids.iter().zip(&values) {
            assert_eq!(value.as_bytes(), id.as_str().as_bytes());
        }
        let long = RequestId::given(&[b'z'; MAX_LEN]).expect("64 safe bytes");
        assert_eq!(long.header_value().as_bytes(), &[b'z'; MAX_LEN][..]);
    }

    #[test]
    fn a_scope_is_current_inside_within_and_keeps_its_rank() {
        assert_eq!(current(), None);
        note_rank(Rank {
            priority: 1,
            shed: false,
        });
        let id = RequestId::generate();
        let mut scope = RequestScope::of(id);
        let seen = within(&mut scope, || {
            note_rank(Rank {
                priority: 80,
                shed: true,
            });
            let inner_id = RequestId::generate();
            let mut inner = RequestScope::of(inner_id);
            within(&mut inner, || assert_eq!(current(), Some(inner_id)));
            current()
        });
        assert_eq!(seen, Some(id));
        assert_eq!(
            scope.rank,
            Some(Rank {
                priority: 80,
                shed: true
            })
        );
        assert_eq!(current(), None, "restored after");
        let caught = std::panic::catch_unwind(move || {
            within(&mut RequestScope::of(id), || panic!("in a request"));
        });
        assert!(caught.is_err());
        assert_eq!(current(), None, "restored after a panic");
    }
}
