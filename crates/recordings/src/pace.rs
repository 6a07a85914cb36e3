//! A node-wide bandwidth cap for uploads: every byte sent to the bucket is let through at
//! most `bytes_per_second` on average, whichever upload it belongs to, so recordings
//! leaving the node never crowd out the viewers it serves.

use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;

/// A pacer shared by every upload of the node.
#[derive(Debug)]
pub struct Pacer {
    bytes_per_second: u64,
    /// When the bytes let through so far have all had their time.
    free_at: Mutex<Option<Instant>>,
}

/// Bytes a pacer lets through at once after an idle spell (one second's worth at most).
fn burst(bytes_per_second: u64) -> Duration {
    Duration::from_secs_f64((64.0 * 1024.0 / bytes_per_second as f64).min(1.0))
}

impl Pacer {
    /// A pacer for `bytes_per_second` (at least 1).
    pub fn new(bytes_per_second: u64) -> Pacer {
        Pacer {
            bytes_per_second: bytes_per_second.max(1),
            free_at: Mutex::new(None),
        }
    }

    /// The cap, bytes per second.
    pub fn bytes_per_second(&self) -> u64 {
        self.bytes_per_second
    }

    /// Waits until `bytes` more may go out.
    pub async fn take(&self, bytes: usize) {
        let cost = Duration::from_secs_f64(bytes as f64 / self.bytes_per_second as f64);
        let wait_until = {
            let mut free_at = self.free_at.lock().await;
            let now = Instant::now();
            // Idle time is not saved up beyond a small burst.
            let earliest = now.checked_sub(burst(self.bytes_per_second)).unwrap_or(now);
            let start = free_at.map_or(now, |at| at.max(earliest));
            *free_at = Some(start + cost);
            start
        };
        tokio::time::sleep_until(wait_until).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn bytes_go_out_at_the_cap() {
        let pacer = Pacer::new(1_000_000);
        let start = Instant::now();
        for _ in 0..40 {
            pacer.take(50_000).await;
        }
        // 2 MB at 1 MB/s: the last piece may start at 1.95 s.
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(1_900), "{took:?}");
        assert!(took <= Duration::from_millis(2_000), "{took:?}");
    }
}
