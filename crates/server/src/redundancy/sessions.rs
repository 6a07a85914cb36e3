//! Backup sessions: viewers this node serves that arrived from another node with a
//! pass. Their number is announced to the mesh (OTT-ELIG-5) and checked against the
//! backup-session limit (OTT-OVL-1). A session is who the node observed asking
//! ([`ViewerId`]: the address, an IPv6 one by its /64), so one client cannot fill the
//! limit by naming itself many times.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::access::viewer_id::ViewerId;

/// Most sessions tracked at once; a viewer beyond it is still served, not counted.
const MAX_TRACKED: usize = 500_000;

/// The set of backup sessions, each forgotten after an idle period.
pub struct BackupSessions {
    idle: Duration,
    /// How often idle sessions are swept: at most once per second (or per idle period
    /// when shorter), so a failover storm of new sessions costs O(1) each, not a scan.
    sweep_every: Duration,
    seen: Mutex<Seen>,
}

struct Seen {
    sessions: HashMap<ViewerId, Instant>,
    swept: Instant,
}

impl BackupSessions {
    /// Sessions forgotten `idle_ms` after their last playlist request.
    pub fn new(idle_ms: i64) -> Self {
        let idle = Duration::from_millis(u64::try_from(idle_ms).unwrap_or(0));
        Self {
            idle,
            sweep_every: idle.min(Duration::from_secs(1)),
            seen: Mutex::new(Seen {
                sessions: HashMap::new(),
                swept: Instant::now(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `key` is a session seen within the idle period.
    pub fn is_known(&self, key: ViewerId) -> bool {
        self.lock()
            .sessions
            .get(&key)
            .is_some_and(|at| at.elapsed() < self.idle)
    }

    /// Marks `key` as active now.
    pub fn touch(&self, key: ViewerId) {
        let mut seen = self.lock();
        if let Some(at) = seen.sessions.get_mut(&key) {
            *at = Instant::now();
            return;
        }
        if seen.sessions.len() >= MAX_TRACKED {
            self.sweep(&mut seen);
            if seen.sessions.len() >= MAX_TRACKED {
                return;
            }
        }
        seen.sessions.insert(key, Instant::now());
    }

    fn sweep(&self, seen: &mut Seen) {
        let idle = self.idle;
        seen.sessions.retain(|_, at| at.elapsed() < idle);
        seen.swept = Instant::now();
    }

    /// Active sessions now (idle ones are swept at most once per sweep period, so the
    /// figure may include sessions idle for up to that much longer than the period).
    pub fn count(&self) -> u32 {
        let mut seen = self.lock();
        if seen.swept.elapsed() >= self.sweep_every {
            self.sweep(&mut seen);
        }
        u32::try_from(seen.sessions.len()).unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::BackupSessions;
    use crate::access::viewer_id::ViewerId;

    #[test]
    fn sessions_are_counted_once_and_forgotten_when_idle() {
        let sessions = BackupSessions::new(50);
        let a = ViewerId::of_address([192, 0, 2, 1].into());
        let b = ViewerId::of_address([192, 0, 2, 2].into());
        sessions.touch(a);
        sessions.touch(a);
        sessions.touch(b);
        assert_eq!(sessions.count(), 2);
        assert!(sessions.is_known(a));
        std::thread::sleep(std::time::Duration::from_millis(80));
        assert!(!sessions.is_known(a));
        assert_eq!(sessions.count(), 0);
    }
}
