//! Prometheus metrics in the text exposition format, from plain atomics.
//!
//! Counting is one relaxed atomic add on the request path; the text is built only
//! when `/metrics` is scraped.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// The kinds of request the HTTP layer counts separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteKind {
    /// Master or media playlists.
    Playlist,
    /// Media segments.
    Segment,
    /// MPEG-TS relay streams.
    Relay,
    /// The player page and its scripts.
    Player,
    /// Admin and status API.
    Api,
    /// `/metrics` itself.
    Metrics,
    /// Anything else (404s, CORS preflight).
    Other,
}

impl RouteKind {
    const ALL: [RouteKind; 7] = [
        RouteKind::Playlist,
        RouteKind::Segment,
        RouteKind::Relay,
        RouteKind::Player,
        RouteKind::Api,
        RouteKind::Metrics,
        RouteKind::Other,
    ];

    fn label(self) -> &'static str {
        match self {
            RouteKind::Playlist => "playlist",
            RouteKind::Segment => "segment",
            RouteKind::Relay => "relay",
            RouteKind::Player => "player",
            RouteKind::Api => "api",
            RouteKind::Metrics => "metrics",
            RouteKind::Other => "other",
        }
    }
}

const STATUS_CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];

/// A source of extra metric lines (inputs, RTMP server, …), called at scrape time.
pub type Collector = Box<dyn Fn(&mut String) + Send + Sync>;

/// All counters of one node's HTTP layer plus registered collectors.
#[derive(Default)]
pub struct Metrics {
    requests: [[AtomicU64; 5]; 7],
    collectors: RwLock<Vec<Collector>>,
    families: RwLock<std::collections::BTreeMap<&'static str, (&'static str, &'static str)>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// A fresh, shareable registry.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Counts one answered request.
    pub fn count_request(&self, kind: RouteKind, status: u16) {
        let class = usize::from((status / 100).clamp(1, 5) - 1);
        let row = RouteKind::ALL.iter().position(|k| *k == kind).unwrap_or(6);
        self.requests[row][class].fetch_add(1, Ordering::Relaxed);
    }

    /// Requests counted so far for a kind and status class (`2` for 2xx …).
    pub fn requests(&self, kind: RouteKind, class: u16) -> u64 {
        let row = RouteKind::ALL.iter().position(|k| *k == kind).unwrap_or(6);
        let class = usize::from(class.clamp(1, 5) - 1);
        self.requests[row][class].load(Ordering::Relaxed)
    }

    /// Declares a metric family's type and help text, written once per scrape however
    /// many collectors (one per stream, say) write its samples.
    pub fn describe(&self, name: &'static str, kind: &'static str, help: &'static str) {
        match self.families.write() {
            Ok(mut map) => map.insert(name, (kind, help)),
            Err(poisoned) => poisoned.into_inner().insert(name, (kind, help)),
        };
    }

    /// Adds a collector that appends its own lines at every scrape.
    pub fn register(&self, collector: Collector) {
        match self.collectors.write() {
            Ok(mut list) => list.push(collector),
            Err(poisoned) => poisoned.into_inner().push(collector),
        }
    }

    /// Renders everything in the Prometheus text format.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(4096);
        out.push_str("# HELP brdyun_http_requests_total HTTP requests answered, by route kind and status class.\n");
        out.push_str("# TYPE brdyun_http_requests_total counter\n");
        for (row, kind) in RouteKind::ALL.iter().enumerate() {
            for (col, class) in STATUS_CLASSES.iter().enumerate() {
                let value = self.requests[row][col].load(Ordering::Relaxed);
                if value > 0 {
                    let _ = writeln!(
                        out,
                        "brdyun_http_requests_total{{kind=\"{}\",status=\"{class}\"}} {value}",
                        kind.label()
                    );
                }
            }
        }
        let families = match self.families.read() {
            Ok(map) => map.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        for (name, (kind, help)) in families {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        }
        let collectors = match self.collectors.read() {
            Ok(list) => list,
            Err(poisoned) => poisoned.into_inner(),
        };
        for collector in collectors.iter() {
            collector(&mut out);
        }
        out
    }
}

/// Escapes a label value for the text format.
pub fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_renders() {
        let metrics = Metrics::new();
        metrics.count_request(RouteKind::Segment, 200);
        metrics.count_request(RouteKind::Segment, 206);
        metrics.count_request(RouteKind::Playlist, 503);
        metrics.register(Box::new(|out: &mut String| out.push_str("brdyun_test 1\n")));
        let text = metrics.render();
        assert!(
            text.contains("brdyun_http_requests_total{kind=\"segment\",status=\"2xx\"} 2\n"),
            "{text}"
        );
        assert!(text.contains("brdyun_http_requests_total{kind=\"playlist\",status=\"5xx\"} 1\n"));
        assert!(text.ends_with("brdyun_test 1\n"));
        assert_eq!(metrics.requests(RouteKind::Segment, 2), 2);
        assert_eq!(label("a\"b"), "a\\\"b");
    }
}

/// Bucket upper bounds of [`Histogram`], seconds.
pub const LATENCY_BUCKETS: [f64; 12] = [
    0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1.0,
];

/// A latency histogram with fixed buckets, lock-free to observe.
#[derive(Debug, Default)]
pub struct Histogram {
    buckets: [AtomicU64; 12],
    count: AtomicU64,
    sum_nanos: AtomicU64,
}

impl Histogram {
    /// Records one observation.
    pub fn observe(&self, elapsed: std::time::Duration) {
        let secs = elapsed.as_secs_f64();
        if let Some(i) = LATENCY_BUCKETS.iter().position(|b| secs <= *b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_nanos.fetch_add(
            u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    /// Appends the histogram in the text format (cumulative buckets, `+Inf`, sum, count).
    pub fn render(&self, name: &str, labels: &str, out: &mut String) {
        let mut cumulative = 0;
        let sep = if labels.is_empty() { "" } else { "," };
        for (bound, bucket) in LATENCY_BUCKETS.iter().zip(&self.buckets) {
            cumulative += bucket.load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {cumulative}"
            );
        }
        let count = self.count.load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {count}");
        let sum = self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
        let _ = writeln!(out, "{name}_sum{{{labels}}} {sum}");
        let _ = writeln!(out, "{name}_count{{{labels}}} {count}");
    }

    /// How many observations were at or below `bound` seconds (a bucket bound).
    pub fn count_at_or_below(&self, bound: f64) -> u64 {
        LATENCY_BUCKETS
            .iter()
            .zip(&self.buckets)
            .take_while(|(b, _)| **b <= bound)
            .map(|(_, c)| c.load(Ordering::Relaxed))
            .sum()
    }

    /// All observations.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
}
