//! The access log: one line per answered request (target `brdyun::access`, level
//! INFO), in the process's log format, written when the answer's body has been sent (or
//! dropped, for a client gone early): client address, method, path (its query's
//! secrets redacted), status, bytes of body sent, duration, request id, route, and the
//! shedding layer's rank. Off by default; on, a share of requests is sampled
//! ([`AccessLogSettings::sample`]) and every 5xx (shed answers included) can be logged
//! whatever the sample ([`AccessLogSettings::errors`]).
//!
//! The settings are the process's (as its log format is), read with two relaxed atomic
//! loads per request; a request not logged costs nothing more. A logged one carries a
//! boxed [`Record`] beside its body ([`AccessBody`]).

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::http::{Method, Request, Uri};
use hyper::body::{Body, Frame, SizeHint};

use crate::http::request_id::{Rank, RequestId};
use crate::url::Target;

/// What the access log writes (`[log]` of a node's or an MC's config).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AccessLogSettings {
    /// Whether there is an access log at all.
    pub enabled: bool,
    /// The share of requests logged, 0.0 to 1.0.
    pub sample: f64,
    /// Whether every 5xx answer (a shed request's 503 included) is logged whatever the
    /// sample.
    pub errors: bool,
}

impl Default for AccessLogSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            sample: 1.0,
            errors: true,
        }
    }
}

/// One in this many requests is sampled at `sample = 1.0`.
const SAMPLE_SCALE: u32 = 1 << 24;

static ENABLED: AtomicBool = AtomicBool::new(false);
static ERRORS: AtomicBool = AtomicBool::new(true);
/// `sample` scaled to [`SAMPLE_SCALE`].
static SAMPLE: AtomicU32 = AtomicU32::new(SAMPLE_SCALE);

/// Sets the process's access log (at start; later calls apply to new requests).
pub fn configure(settings: &AccessLogSettings) {
    let sample = (settings.sample.clamp(0.0, 1.0) * f64::from(SAMPLE_SCALE)).round() as u32;
    SAMPLE.store(sample, Ordering::Relaxed);
    ERRORS.store(settings.errors, Ordering::Relaxed);
    ENABLED.store(settings.enabled, Ordering::Relaxed);
}

/// Whether this request is in the sample: a per-thread xorshift draw.
fn sampled() -> bool {
    let threshold = SAMPLE.load(Ordering::Relaxed);
    if threshold >= SAMPLE_SCALE {
        return true;
    }
    if threshold == 0 {
        return false;
    }
    thread_local! {
        static STATE: std::cell::Cell<u64> = std::cell::Cell::new(seed());
    }
    let draw = STATE.with(|state| {
        let mut x = state.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        state.set(x);
        x
    });
    ((draw >> 40) as u32) < threshold
}

fn seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u8(0);
    hasher.finish() | 1
}

/// What the access line of one request says, gathered as it is answered.
#[derive(Debug)]
pub struct Record {
    started: Instant,
    peer: Option<SocketAddr>,
    method: Method,
    uri: Uri,
    id: RequestId,
    /// In the sample (else logged only as an error).
    sampled: bool,
    status: u16,
    rank: Option<Rank>,
    bytes: u64,
}

impl Record {
    /// The record of `request` (from `peer`, with id `id`) when the access log may
    /// write its line: `None` when the log is off, or the request is not in the sample
    /// and errors are not logged.
    pub fn start<B>(
        request: &Request<B>,
        peer: Option<SocketAddr>,
        id: RequestId,
    ) -> Option<Box<Self>> {
        if !ENABLED.load(Ordering::Relaxed) {
            return None;
        }
        let sampled = sampled();
        if !sampled && !ERRORS.load(Ordering::Relaxed) {
            return None;
        }
        Some(Box::new(Self {
            started: Instant::now(),
            peer,
            method: request.method().clone(),
            uri: request.uri().clone(),
            id,
            sampled,
            status: 0,
            rank: None,
            bytes: 0,
        }))
    }

    /// The answer's status and the request's rank, known when its head is ready.
    pub fn answered(&mut self, status: u16, rank: Option<Rank>) {
        self.status = status;
        self.rank = rank;
    }

    /// Writes the line, if this request is to be logged.
    fn write(&self, duration: Duration) {
        let logged_as_error = self.status >= 500 && ERRORS.load(Ordering::Relaxed);
        if !(self.sampled || logged_as_error) {
            return;
        }
        let path = redacted(&self.uri);
        let route = Target::of_path(self.uri.path())
            .shed_kind(matches!(self.method, Method::GET | Method::HEAD))
            .as_str();
        let client = self.peer.map(|peer| peer.to_string());
        tracing::info!(
            target: "brdyun::access",
            client = client.as_deref().unwrap_or("-"),
            method = %self.method,
            path = %path,
            status = self.status,
            bytes = self.bytes,
            duration_ms = duration.as_micros() as f64 / 1000.0,
            request_id = %self.id,
            route,
            priority = self.rank.map(|rank| rank.priority),
            shed = self.rank.is_some_and(|rank| rank.shed),
            "request"
        );
    }
}

/// Query parameters whose values never reach a log: any whose name contains one of
/// these (case-insensitive): `token`, `access_token`, `session`, `pass`, `password`,
/// `key`, `stream_key`, `secret`, `auth`, `sig`, `signature` ...
const SECRET_NAMES: [&str; 7] = ["token", "session", "pass", "key", "secret", "auth", "sig"];

/// The longest path (with its query) a line carries; longer ones are cut with `...`.
const MAX_PATH: usize = 512;

/// `text` as it came on the wire: every byte that is not printable ASCII (a request
/// target may carry raw UTF-8: U+0085, U+2028, U+009B, U+202E and the like, which
/// break or reorder a log line in a terminal or a viewer) percent-encoded.
pub fn escaped(text: &str) -> std::borrow::Cow<'_, str> {
    let plain = |b: u8| (0x21..0x7f).contains(&b);
    if text.bytes().all(plain) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for byte in text.bytes() {
        if plain(byte) {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `uri`'s path and query, each secret parameter's value replaced by `REDACTED`, and
/// every byte outside printable ASCII percent-encoded ([`escaped`]).
pub fn redacted(uri: &Uri) -> String {
    let mut out = String::with_capacity(uri.path().len() + 16);
    out.push_str(&escaped(uri.path()));
    if let Some(query) = uri.query() {
        out.push('?');
        for (index, pair) in query.split('&').enumerate() {
            if index > 0 {
                out.push('&');
            }
            let name = pair.split_once('=').map_or(pair, |(name, _)| name);
            let lower = name.to_ascii_lowercase();
            if SECRET_NAMES.iter().any(|secret| lower.contains(secret)) {
                out.push_str(&escaped(name));
                out.push_str("=REDACTED");
            } else {
                out.push_str(&escaped(pair));
            }
        }
    }
    if out.len() > MAX_PATH {
        let mut cut = MAX_PATH;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push_str("...");
    }
    out
}

pin_project_lite::pin_project! {
    /// An answer's body, counting what it sends for the access log when the request is
    /// logged; the line is written when the body ends or is dropped. Without a record
    /// it only passes frames through.
    pub struct AccessBody<B> {
        #[pin]
        inner: B,
        record: Option<Pending>,
    }
}

/// A record whose line is written when it is dropped.
#[derive(Debug)]
struct Pending(Box<Record>);

impl Drop for Pending {
    fn drop(&mut self) {
        self.0.write(self.0.started.elapsed());
    }
}

impl<B: Body> AccessBody<B> {
    /// `inner`, logged through `record` when given.
    pub fn new(inner: B, record: Option<Box<Record>>) -> Self {
        Self {
            inner,
            record: record.map(Pending),
        }
    }
}

impl<B> Body for AccessBody<B>
where
    B: Body,
    B::Data: bytes::Buf,
{
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let polled = this.inner.poll_frame(cx);
        if let Some(pending) = this.record.as_mut() {
            match &polled {
                Poll::Ready(Some(Ok(frame))) => {
                    if let Some(data) = frame.data_ref() {
                        let sent = bytes::Buf::remaining(data) as u64;
                        pending.0.bytes = pending.0.bytes.saturating_add(sent);
                    }
                }
                // Ended (or failed): the line is written now, not when hyper drops it.
                Poll::Ready(_) => *this.record = None,
                Poll::Pending => {}
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(uri: &str) -> String {
        redacted(&uri.parse::<Uri>().expect("a uri"))
    }

    #[test]
    fn secrets_in_the_query_are_redacted_and_the_rest_kept() {
        assert_eq!(path("/m/index.m3u8"), "/m/index.m3u8");
        assert_eq!(
            path("/m/index.m3u8?login=ann&token=s3cr3t&_HLS_msn=4"),
            "/m/index.m3u8?login=ann&token=REDACTED&_HLS_msn=4"
        );
        assert_eq!(
            path("/live/x?key=k&Session=abc&password=p&access_token=t&stream_key=z&sig=q&flag"),
            "/live/x?key=REDACTED&Session=REDACTED&password=REDACTED&access_token=REDACTED\
             &stream_key=REDACTED&sig=REDACTED&flag"
        );
        // A secret's name without a value is marked all the same.
        assert_eq!(path("/a?token"), "/a?token=REDACTED");
        let long = format!("/{}", "a".repeat(2000));
        let cut = path(&long);
        assert_eq!(cut.len(), MAX_PATH + 3);
        assert!(cut.ends_with("..."));
    }

    /// A raw UTF-8 target (the bytes `http` accepts above 0x7f) is logged in its wire
    /// form: no line separator, C1 control or bidi override reaches the log.
    #[test]
    fn characters_that_break_or_reorder_a_line_are_percent_encoded() {
        let uri = Uri::from_maybe_shared(axum::body::Bytes::from_static(
            "/a\u{85}fake\u{2028}line\u{202e}txt.exe\u{9b}31m?q=\u{85}&pass=x".as_bytes(),
        ))
        .expect("http accepts raw UTF-8 in a target");
        let line = redacted(&uri);
        assert_eq!(
            line,
            "/a%C2%85fake%E2%80%A8line%E2%80%AEtxt.exe%C2%9B31m?q=%C2%85&pass=REDACTED"
        );
        assert!(line.bytes().all(|b| (0x21..0x7f).contains(&b)), "{line}");
        assert_eq!(path("/plain/index.m3u8"), "/plain/index.m3u8");
    }

    #[test]
    fn sampling_follows_the_share() {
        configure(&AccessLogSettings {
            enabled: true,
            sample: 0.25,
            errors: true,
        });
        let hits = (0..40_000).filter(|_| sampled()).count();
        assert!((9_000..11_000).contains(&hits), "{hits}");
        configure(&AccessLogSettings {
            sample: 0.0,
            ..AccessLogSettings::default()
        });
        assert!(!(0..1000).any(|_| sampled()));
        configure(&AccessLogSettings::default());
        assert!((0..1000).all(|_| sampled()));
    }
}
