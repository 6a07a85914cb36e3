//! Backup sessions: viewers this node serves that arrived from another node with a
//! pass. Their number is announced to the mesh (OTT-ELIG-5) and checked against the
//! backup-session limit (OTT-OVL-1).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Most sessions tracked at once; a viewer beyond it is still served, not counted.
const MAX_TRACKED: usize = 500_000;

/// The set of backup sessions, each forgotten after an idle period.
pub struct BackupSessions {
    idle: Duration,
    seen: Mutex<HashMap<String, Instant>>,
}

impl BackupSessions {
    /// Sessions forgotten `idle_ms` after their last playlist request.
    pub fn new(idle_ms: i64) -> Self {
        Self {
            idle: Duration::from_millis(u64::try_from(idle_ms).unwrap_or(0)),
            seen: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `key` is a session seen within the idle period.
    pub fn is_known(&self, key: &str) -> bool {
        let seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        seen.get(key).is_some_and(|at| at.elapsed() < self.idle)
    }

    /// Marks `key` as active now.
    pub fn touch(&self, key: &str) {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(at) = seen.get_mut(key) {
            *at = Instant::now();
            return;
        }
        if seen.len() >= MAX_TRACKED {
            let idle = self.idle;
            seen.retain(|_, at| at.elapsed() < idle);
            if seen.len() >= MAX_TRACKED {
                return;
            }
        }
        seen.insert(key.to_owned(), Instant::now());
    }

    /// Active sessions now (idle ones are dropped).
    pub fn count(&self) -> u32 {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let idle = self.idle;
        seen.retain(|_, at| at.elapsed() < idle);
        u32::try_from(seen.len()).unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::BackupSessions;

    #[test]
    fn sessions_are_counted_once_and_forgotten_when_idle() {
        let sessions = BackupSessions::new(50);
        sessions.touch("a");
        sessions.touch("a");
        sessions.touch("b");
        assert_eq!(sessions.count(), 2);
        assert!(sessions.is_known("a"));
        std::thread::sleep(std::time::Duration::from_millis(80));
        assert!(!sessions.is_known("a"));
        assert_eq!(sessions.count(), 0);
    }
}
