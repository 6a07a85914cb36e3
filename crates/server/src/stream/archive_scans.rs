//! The node's cap on archive scans: the requests that read many archived segments per
//! answer (a period's transcript, a catch-up master whose renditions are not probed
//! yet). Anyone may ask for them and each costs the node far more than it costs the
//! asker, so a node runs at most [`DEFAULT_ARCHIVE_SCANS`] at once; one more is
//! answered at once with the back-pressure 503 (`{"code":109002,"maxRetries":N,
//! "retryAfterSeconds":S}`, `Retry-After: S`, the shape of a shed request's answer,
//! docs/load-shedding.md) while live playlists and segments, which never scan, go on.
//!
//! A permit is held by the blocking job that reads, not by the request: a client that
//! goes away does not free the disk its job still uses.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Archive scans a node runs at once by default: two per core of the 2-core machines
/// the docs measure on, enough for a few catch-up viewers starting together while a
/// flood of transcripts cannot queue thousands of disk reads.
pub const DEFAULT_ARCHIVE_SCANS: usize = 4;

/// Seconds a refused scan is told to wait: about one scan's time.
const RETRY_AFTER_SECONDS: u32 = 2;
/// Retries a refused scan is granted (a catch-up player's master retries; a transcript
/// download is a person's click).
const MAX_RETRIES: u32 = 3;

/// The node's archive-scan permits, shared by every route that scans.
#[derive(Debug, Clone)]
pub struct ArchiveScans {
    permits: Arc<Semaphore>,
    cap: usize,
    refused: Arc<AtomicU64>,
}

/// A running scan's permit: the scan's slot is free again when it is dropped.
#[derive(Debug)]
pub struct ScanPermit {
    _permit: OwnedSemaphorePermit,
}

impl Default for ArchiveScans {
    fn default() -> Self {
        Self::new(DEFAULT_ARCHIVE_SCANS)
    }
}

impl ArchiveScans {
    /// At most `cap` scans at once (at least one).
    pub fn new(cap: usize) -> Self {
        let cap = cap.max(1);
        Self {
            permits: Arc::new(Semaphore::new(cap)),
            cap,
            refused: Arc::default(),
        }
    }

    /// A permit for one scan, or `None` when `cap` scans run already (counted).
    pub fn try_start(&self) -> Option<ScanPermit> {
        match Arc::clone(&self.permits).try_acquire_owned() {
            Ok(permit) => Some(ScanPermit { _permit: permit }),
            Err(_) => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Scans running now.
    pub fn running(&self) -> usize {
        self.cap - self.permits.available_permits()
    }

    /// Scans refused since start (`brdyun_archive_scans_refused_total`).
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Appends this node's scan metrics in Prometheus text.
    pub fn render_metrics(&self, out: &mut String) {
        use std::fmt::Write as _;
        let _ = writeln!(
            out,
            "# HELP brdyun_archive_scans Archive scans (transcripts, catch-up probes) running.\n\
             # TYPE brdyun_archive_scans gauge\nbrdyun_archive_scans {}\n\
             # HELP brdyun_archive_scans_refused_total Archive scans refused: the cap was reached.\n\
             # TYPE brdyun_archive_scans_refused_total counter\nbrdyun_archive_scans_refused_total {}",
            self.running(),
            self.refused()
        );
    }
}

/// The answer to a scan over the cap: 503, the back-pressure body with code 109002,
/// `Retry-After`, never cached.
pub fn busy_response() -> Response {
    let info = codes::Shed::ArchiveBusy.info();
    let body = format!(
        "{{\"code\":{},\"maxRetries\":{MAX_RETRIES},\"retryAfterSeconds\":{RETRY_AFTER_SECONDS}}}",
        info.code
    );
    let mut response = Response::new(Body::from(body));
    *response.status_mut() =
        StatusCode::from_u16(info.status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_refuses_the_next_scan_until_one_ends() {
        let scans = ArchiveScans::new(2);
        let first = scans.try_start().expect("first");
        let _second = scans.try_start().expect("second");
        assert_eq!(scans.running(), 2);
        assert!(scans.try_start().is_none());
        assert_eq!(scans.refused(), 1);
        drop(first);
        assert!(scans.try_start().is_some());
        let mut text = String::new();
        scans.render_metrics(&mut text);
        assert!(
            text.contains("brdyun_archive_scans_refused_total 1"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn the_refusal_is_the_back_pressure_answer_with_its_code() {
        let response = busy_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[header::RETRY_AFTER], "2");
        let body = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .expect("body");
        assert_eq!(
            &body[..],
            br#"{"code":109002,"maxRetries":3,"retryAfterSeconds":2}"#
        );
    }
}
