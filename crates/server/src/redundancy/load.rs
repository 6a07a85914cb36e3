//! The network load a node announces (OTT-ELIG-5, OTT-OVL-1): bytes sent on its
//! interfaces (loopback excluded) per second, against the configured capacity.

use std::time::Instant;

/// Total bytes transmitted on every interface but `lo`, from `/proc/net/dev` text.
pub fn tx_bytes(proc_net_dev: &str) -> Option<u64> {
    let mut total = 0u64;
    let mut seen = false;
    for line in proc_net_dev.lines().skip(2) {
        let (name, counters) = line.split_once(':')?;
        if name.trim() == "lo" {
            continue;
        }
        // Receive: bytes packets errs drop fifo frame compressed multicast (8 fields),
        // then transmit bytes.
        let tx = counters.split_whitespace().nth(8)?.parse::<u64>().ok()?;
        total = total.saturating_add(tx);
        seen = true;
    }
    seen.then_some(total)
}

/// Samples the transmit rate between calls.
#[derive(Debug)]
pub struct NetLoad {
    capacity_bps: u64,
    last: Option<(Instant, u64)>,
}

impl NetLoad {
    /// A meter against `capacity_bps` bits per second (0 = unknown: always 0 %).
    pub fn new(capacity_bps: u64) -> Self {
        Self {
            capacity_bps,
            last: None,
        }
    }

    /// The load since the previous call, percent of capacity (0..=100), reading
    /// `/proc/net/dev`; 0 when it cannot be read.
    pub fn sample(&mut self) -> u8 {
        let bytes = std::fs::read_to_string("/proc/net/dev")
            .ok()
            .and_then(|text| tx_bytes(&text));
        self.sample_bytes(Instant::now(), bytes)
    }

    /// [`NetLoad::sample`] with the reading and its instant given.
    pub fn sample_bytes(&mut self, now: Instant, bytes: Option<u64>) -> u8 {
        let Some(bytes) = bytes else { return 0 };
        let previous = self.last.replace((now, bytes));
        let Some((then, before)) = previous else {
            return 0;
        };
        let secs = now.duration_since(then).as_secs_f64();
        if self.capacity_bps == 0 || secs <= 0.0 {
            return 0;
        }
        let bps = bytes.saturating_sub(before) as f64 * 8.0 / secs;
        (bps * 100.0 / self.capacity_bps as f64)
            .clamp(0.0, 100.0)
            .round() as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const DEV: &str = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 9000000    100    0    0    0     0          0         0  9000000     100    0    0    0     0       0          0
  eth0: 1000     10    0    0    0     0          0         0     5000      20    0    0    0     0       0          0
  eth1: 1000     10    0    0    0     0          0         0     7000      20    0    0    0     0       0          0
";

    #[test]
    fn loopback_is_excluded() {
        assert_eq!(tx_bytes(DEV), Some(12_000));
        assert_eq!(tx_bytes("garbage"), None);
    }

    #[test]
    fn load_is_the_rate_against_capacity() {
        let mut load = NetLoad::new(8_000_000);
        let t0 = Instant::now();
        assert_eq!(load.sample_bytes(t0, Some(0)), 0);
        // 500 kB in one second = 4 Mbit/s = 50 % of 8 Mbit/s.
        assert_eq!(
            load.sample_bytes(t0 + Duration::from_secs(1), Some(500_000)),
            50
        );
        assert_eq!(
            load.sample_bytes(t0 + Duration::from_secs(2), Some(5_000_000)),
            100
        );
    }
}
