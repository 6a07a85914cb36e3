//! What the uploader has done: counters for metrics, and the state the status API and
//! the Backups screen show (failing since when, and why).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

use serde_json::{json, Value};

/// How a closed file ended up in the bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// This node put it there.
    Uploaded,
    /// Another node had (the same recording, or one covering it).
    Found,
}

/// The uploader's counters.
#[derive(Debug)]
pub struct Stats {
    store: String,
    queued_files: AtomicU64,
    queued_bytes: AtomicU64,
    uploaded_files: AtomicU64,
    uploaded_bytes: AtomicU64,
    found_files: AtomicU64,
    found_bytes: AtomicU64,
    failed: AtomicU64,
    removed_redundant: AtomicU64,
    removed_expired: AtomicU64,
    failing: AtomicBool,
    last_success_ms: AtomicI64,
    last_error: Mutex<Option<(i64, String)>>,
}

impl Stats {
    /// Counters for the store described as `store`.
    pub fn new(store: &str) -> Stats {
        Stats {
            store: store.to_owned(),
            queued_files: AtomicU64::new(0),
            queued_bytes: AtomicU64::new(0),
            uploaded_files: AtomicU64::new(0),
            uploaded_bytes: AtomicU64::new(0),
            found_files: AtomicU64::new(0),
            found_bytes: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            removed_redundant: AtomicU64::new(0),
            removed_expired: AtomicU64::new(0),
            failing: AtomicBool::new(false),
            last_success_ms: AtomicI64::new(0),
            last_error: Mutex::new(None),
        }
    }

    /// Closed files (and their bytes) waiting for the bucket.
    pub fn set_queue(&self, files: u64, bytes: u64) {
        self.queued_files.store(files, Ordering::Relaxed);
        self.queued_bytes.store(bytes, Ordering::Relaxed);
    }

    /// A file is in the bucket.
    pub fn succeeded(&self, outcome: Outcome, bytes: u64) {
        let (files, total) = match outcome {
            Outcome::Uploaded => (&self.uploaded_files, &self.uploaded_bytes),
            Outcome::Found => (&self.found_files, &self.found_bytes),
        };
        files.fetch_add(1, Ordering::Relaxed);
        total.fetch_add(bytes, Ordering::Relaxed);
        self.last_success_ms.store(now_ms(), Ordering::Relaxed);
        if self.failing.swap(false, Ordering::Relaxed) {
            tracing::info!(store = %self.store, "recordings bucket reachable again, uploads resumed");
        }
    }

    /// An upload failed; it is retried at the next look.
    pub fn failed(&self, error: &str) {
        let error = &brief(error);
        self.failed.fetch_add(1, Ordering::Relaxed);
        *self
            .last_error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some((now_ms(), error.to_owned()));
        if !self.failing.swap(true, Ordering::Relaxed) {
            tracing::warn!(store = %self.store, error, "recordings upload failed; recording goes on locally, the upload is retried");
        }
    }

    /// An object covered by a fuller one was removed.
    pub fn removed_redundant(&self) {
        self.removed_redundant.fetch_add(1, Ordering::Relaxed);
    }

    /// An object past the bucket's depth was removed.
    pub fn removed_expired(&self) {
        self.removed_expired.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether the last upload failed.
    pub fn is_failing(&self) -> bool {
        self.failing.load(Ordering::Relaxed)
    }

    /// The status object.
    pub fn status(&self) -> Value {
        let last_error = self
            .last_error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        json!({
            "store": self.store,
            "state": if self.is_failing() { "failing" } else { "ok" },
            "queued": { "files": get(&self.queued_files), "bytes": get(&self.queued_bytes) },
            "uploaded": { "files": get(&self.uploaded_files), "bytes": get(&self.uploaded_bytes) },
            "deduplicated": { "files": get(&self.found_files), "bytes": get(&self.found_bytes) },
            "failed_uploads": get(&self.failed),
            "removed": {
                "redundant": get(&self.removed_redundant),
                "expired": get(&self.removed_expired),
            },
            "last_success_ms": match self.last_success_ms.load(Ordering::Relaxed) {
                0 => Value::Null,
                ms => json!(ms),
            },
            "last_error": last_error.map(|(at_ms, message)| json!({ "at_ms": at_ms, "message": message })),
        })
    }

    /// Appends the `brdyun_recordings_*` samples (their types and help are
    /// [`METRIC_FAMILIES`]).
    pub fn render(&self, out: &mut String) {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let values = [
            get(&self.queued_files),
            get(&self.queued_bytes),
            get(&self.uploaded_files),
            get(&self.uploaded_bytes),
            get(&self.found_files),
            get(&self.found_bytes),
            get(&self.failed),
            get(&self.removed_redundant),
            get(&self.removed_expired),
            u64::from(self.is_failing()),
        ];
        for ((name, _, _), value) in METRIC_FAMILIES.iter().zip(values) {
            let _ = writeln!(out, "{name} {value}");
        }
    }
}

/// The uploader's metric families: name, type, help.
pub const METRIC_FAMILIES: [(&str, &str, &str); 10] = [
    (
        "brdyun_recordings_queued_files",
        "gauge",
        "Closed archive files waiting for the bucket.",
    ),
    (
        "brdyun_recordings_queued_bytes",
        "gauge",
        "Bytes of the closed archive files waiting for the bucket.",
    ),
    (
        "brdyun_recordings_uploaded_files_total",
        "counter",
        "Archive files this node put in the bucket.",
    ),
    (
        "brdyun_recordings_uploaded_bytes_total",
        "counter",
        "Segment bytes this node put in the bucket.",
    ),
    (
        "brdyun_recordings_deduplicated_files_total",
        "counter",
        "Archive files found in the bucket already (another node uploaded them).",
    ),
    (
        "brdyun_recordings_deduplicated_bytes_total",
        "counter",
        "Segment bytes found in the bucket already, not uploaded again.",
    ),
    (
        "brdyun_recordings_failed_uploads_total",
        "counter",
        "Uploads that failed and wait to be retried.",
    ),
    (
        "brdyun_recordings_removed_redundant_total",
        "counter",
        "Partial recordings removed because a fuller copy was uploaded.",
    ),
    (
        "brdyun_recordings_removed_expired_total",
        "counter",
        "Recordings removed from the bucket past its depth.",
    ),
    (
        "brdyun_recordings_failing",
        "gauge",
        "1 while the last upload failed (the bucket is unreachable or refuses).",
    ),
];

/// What an error says, fit to show: a store's answer body (which can echo the signed
/// request and the access key id) is cut down to its error code, and the whole to 200
/// characters.
pub fn brief(error: &str) -> String {
    let code = error
        .split_once("<Code>")
        .and_then(|(_, rest)| rest.split_once("</Code>"))
        .map(|(code, _)| code);
    let head = error.split(['<', '\n']).next().unwrap_or("").trim();
    let mut text = match code {
        Some(code) => format!("{head} (S3 error {code})"),
        None => head.to_owned(),
    };
    if text.len() > 200 {
        let cut = (0..=200)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        text.truncate(cut);
        text.push('…');
    }
    text
}

/// The wall clock, Unix ms (the uploader's looks and the status's times).
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::brief;

    #[test]
    fn a_store_answer_is_cut_to_its_code() {
        let raw = "Generic S3 error: Error performing PUT http://s3/b/k: Client error with status 403 Forbidden: <?xml version=\"1.0\"?><Error><Code>SignatureDoesNotMatch</Code><AWSAccessKeyId>AKIASECRETKEYID</AWSAccessKeyId><CanonicalRequest>PUT /b/k x-amz-security-token:TOKEN</CanonicalRequest></Error>";
        let shown = brief(raw);
        assert!(shown.contains("SignatureDoesNotMatch"), "{shown}");
        assert!(
            !shown.contains("AKIASECRETKEYID") && !shown.contains("TOKEN"),
            "{shown}"
        );
        assert!(brief(&"x".repeat(500)).chars().count() <= 201);
    }
}
