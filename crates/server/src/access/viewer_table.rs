//! The viewers of each meeting seen lately on this node, counted without a scan: a
//! known viewer's request is a shared lookup and an atomic store, a new viewer an
//! insert into its own meeting's table, and the idle ones are swept at most once a
//! second per meeting, so a flood of new viewers costs O(1) each and never holds one
//! lock over every meeting.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use crate::access::viewer_id::ViewerId;

/// How often a meeting's idle viewers are swept (the count may include viewers idle
/// for up to this much longer than the idle period).
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// One meeting's viewers: when each was last seen, in ms since the table's epoch.
#[derive(Debug, Default)]
struct MeetingViewers {
    seen: RwLock<HashMap<ViewerId, AtomicU64>>,
    /// When the last sweep ran, ms since the table's epoch.
    swept_ms: AtomicU64,
}

/// Every meeting's viewers, each forgotten `idle` after its last request.
#[derive(Debug)]
pub(crate) struct ViewerTable {
    epoch: Instant,
    idle_ms: u64,
    meetings: RwLock<HashMap<String, Arc<MeetingViewers>>>,
}

impl ViewerTable {
    /// A table whose viewers are forgotten `idle` after their last request.
    pub(crate) fn new(idle: Duration) -> Self {
        Self {
            epoch: Instant::now(),
            idle_ms: u64::try_from(idle.as_millis()).unwrap_or(u64::MAX),
            meetings: RwLock::new(HashMap::new()),
        }
    }

    fn ms(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.epoch).as_millis()).unwrap_or(u64::MAX)
    }

    fn meeting(&self, meeting: &str) -> Option<Arc<MeetingViewers>> {
        let meetings = self.meetings.read().unwrap_or_else(PoisonError::into_inner);
        meetings.get(meeting).cloned()
    }

    /// Whether `viewer` of `meeting` was seen within the idle period; if so it is seen
    /// again now. No allocation, no exclusive lock.
    pub(crate) fn touch_known(&self, meeting: &str, viewer: ViewerId, now: Instant) -> bool {
        let Some(viewers) = self.meeting(meeting) else {
            return false;
        };
        let now_ms = self.ms(now);
        let seen = viewers.seen.read().unwrap_or_else(PoisonError::into_inner);
        match seen.get(&viewer) {
            Some(at) if now_ms.saturating_sub(at.load(Ordering::Relaxed)) < self.idle_ms => {
                at.store(now_ms, Ordering::Relaxed);
                true
            }
            _ => false,
        }
    }

    /// Viewers of `meeting` seen within the idle period (swept at most once a second).
    pub(crate) fn count(&self, meeting: &str, now: Instant) -> usize {
        self.meeting(meeting)
            .map_or(0, |viewers| self.swept(&viewers, self.ms(now), false))
    }

    /// Sweeps `viewers` when due (or `always`) and answers how many are left.
    fn swept(&self, viewers: &MeetingViewers, now_ms: u64, always: bool) -> usize {
        let due = now_ms.saturating_sub(viewers.swept_ms.load(Ordering::Relaxed))
            >= SWEEP_EVERY.as_millis() as u64;
        if !due && !always {
            return viewers
                .seen
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .len();
        }
        let mut seen = viewers.seen.write().unwrap_or_else(PoisonError::into_inner);
        seen.retain(|_, at| now_ms.saturating_sub(at.load(Ordering::Relaxed)) < self.idle_ms);
        viewers.swept_ms.store(now_ms, Ordering::Relaxed);
        seen.len()
    }

    /// Counts `viewer` of `meeting` from `now` on.
    pub(crate) fn insert(&self, meeting: &str, viewer: ViewerId, now: Instant) {
        let now_ms = self.ms(now);
        let viewers = match self.meeting(meeting) {
            Some(viewers) => viewers,
            None => {
                let mut meetings = self
                    .meetings
                    .write()
                    .unwrap_or_else(PoisonError::into_inner);
                Arc::clone(meetings.entry(meeting.to_owned()).or_default())
            }
        };
        let mut seen = viewers.seen.write().unwrap_or_else(PoisonError::into_inner);
        seen.entry(viewer)
            .or_insert_with(|| AtomicU64::new(now_ms))
            .store(now_ms, Ordering::Relaxed);
    }

    /// Forgets every viewer of `meeting`.
    pub(crate) fn forget(&self, meeting: &str) {
        let mut meetings = self
            .meetings
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        meetings.remove(meeting);
    }

    /// Viewers per meeting now, idle ones swept; meetings left without viewers are
    /// dropped from the table.
    pub(crate) fn counts(&self, now: Instant) -> HashMap<String, u64> {
        let now_ms = self.ms(now);
        let mut meetings = self
            .meetings
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let mut counts = HashMap::with_capacity(meetings.len());
        meetings.retain(|meeting, viewers| {
            let left = self.swept(viewers, now_ms, true);
            if left > 0 {
                counts.insert(meeting.clone(), left as u64);
            }
            left > 0
        });
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn viewer(n: u8) -> ViewerId {
        ViewerId::of_address(std::net::IpAddr::from([192, 0, 2, n]))
    }

    #[test]
    fn viewers_are_counted_once_per_meeting_and_forgotten_when_idle() {
        let table = ViewerTable::new(Duration::from_secs(20));
        let t0 = Instant::now();
        assert!(!table.touch_known("m", viewer(1), t0));
        table.insert("m", viewer(1), t0);
        table.insert("m", viewer(1), t0);
        table.insert("m", viewer(2), t0);
        table.insert("other", viewer(1), t0);
        assert!(table.touch_known("m", viewer(1), t0 + Duration::from_secs(5)));
        assert_eq!(table.count("m", t0), 2);
        // 21 s later viewer 2 is idle; viewer 1 was seen at 5 s.
        let later = t0 + Duration::from_secs(21);
        assert!(!table.touch_known("m", viewer(2), later));
        assert_eq!(table.count("m", later), 1);
        assert_eq!(
            table.counts(later),
            HashMap::from([("m".to_owned(), 1)]),
            "the other meeting's only viewer is idle: the meeting is dropped"
        );
        table.forget("m");
        assert_eq!(table.count("m", later), 0);
    }

    #[test]
    fn a_count_sweeps_at_most_once_a_second() {
        let table = ViewerTable::new(Duration::from_millis(100));
        let t0 = Instant::now();
        table.insert("m", viewer(1), t0);
        assert_eq!(table.count("m", t0 + Duration::from_millis(1_100)), 0);
        table.insert("m", viewer(2), t0 + Duration::from_millis(1_100));
        // Idle at 1.3 s, but the last sweep was 0.2 s before: still counted.
        assert_eq!(table.count("m", t0 + Duration::from_millis(1_300)), 1);
        assert_eq!(table.count("m", t0 + Duration::from_millis(2_200)), 0);
    }
}
