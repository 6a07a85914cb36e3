//! The priority lane's settings (`[shedding] priority_lane`, `lane_threads`,
//! `lane_pinned`) and the count of connections it served: read by
//! [`crate::http::lane::PriorityLane`] when it starts and per handed-over connection.

use std::sync::atomic::{AtomicU64, Ordering};

use super::settings::LanePriority;

/// Where connections opening with a CRITICAL request are served.
#[derive(Debug)]
pub struct LaneSettings {
    priority: LanePriority,
    threads: usize,
    pinned: bool,
    laned: AtomicU64,
}

impl LaneSettings {
    /// The lane as configured; `threads` 0 means one per core this process may use.
    pub fn new(priority: LanePriority, threads: usize, pinned: bool) -> LaneSettings {
        LaneSettings {
            priority,
            threads,
            pinned,
            laned: AtomicU64::new(0),
        }
    }

    /// Where connections opening with a CRITICAL request are served
    /// (`[shedding] priority_lane`).
    pub fn priority_lane(&self) -> LanePriority {
        self.priority
    }

    /// How many lane threads serve the priority lane (`[shedding] lane_threads`; 0
    /// there means one per core this process may use).
    pub fn lane_threads(&self) -> usize {
        match self.threads {
            0 => std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
            n => n,
        }
    }

    /// Whether lane threads, one per CPU, are pinned to their CPUs
    /// (`[shedding] lane_pinned`).
    pub fn lane_pinned(&self) -> bool {
        self.pinned
    }

    /// Counts a connection handed to the priority lane.
    pub fn count_laned(&self) {
        self.laned.fetch_add(1, Ordering::Relaxed);
    }

    /// Connections handed to the priority lane so far.
    pub fn laned_connections(&self) -> u64 {
        self.laned.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_threads_means_one_per_usable_core() {
        let auto = LaneSettings::new(LanePriority::Nice, 0, true);
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        assert_eq!(auto.lane_threads(), cores);
        let fixed = LaneSettings::new(LanePriority::Realtime, 3, false);
        assert_eq!(fixed.lane_threads(), 3);
        assert_eq!(fixed.priority_lane(), LanePriority::Realtime);
        assert!(!fixed.lane_pinned());
    }

    #[test]
    fn laned_connections_are_counted() {
        let lane = LaneSettings::new(LanePriority::Nice, 1, true);
        assert_eq!(lane.laned_connections(), 0);
        lane.count_laned();
        lane.count_laned();
        assert_eq!(lane.laned_connections(), 2);
    }
}
