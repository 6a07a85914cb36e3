//! Which streams accept RTMP publish, with which key, and where a publisher's frames go.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::mpsc;

use crate::publish::{PublishAuthorizer, PublishRejection, PublishRequest};
use crate::{IngestEvent, IngestSender};

/// How many events a publishing session may have in flight to the supervisor.
const SESSION_CAPACITY: usize = 256;

/// A publishing session's receiving half, handed to the supervisor's RTMP input.
pub(crate) type Session = mpsc::Receiver<IngestEvent>;

struct Entry {
    id: u64,
    key: Option<String>,
    sessions: mpsc::Sender<Session>,
    current: Option<mpsc::WeakSender<IngestEvent>>,
}

/// The streams that accept RTMP publish: supervisors register their `Rtmp` input
/// here, and the RTMP server asks it (as a [`PublishAuthorizer`]) who may publish.
///
/// Streams are matched by stream name; the RTMP application name is not checked.
#[derive(Clone, Default)]
pub struct PublishRegistry {
    entries: Arc<Mutex<HashMap<String, Entry>>>,
    next_id: Arc<AtomicU64>,
}

impl std::fmt::Debug for PublishRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let streams: Vec<String> = self.lock().keys().cloned().collect();
        f.debug_struct("PublishRegistry")
            .field("streams", &streams)
            .finish()
    }
}

/// A stream's place in the registry; dropping it unregisters the stream.
pub(crate) struct Registration {
    registry: PublishRegistry,
    stream: String,
    id: u64,
    pub(crate) sessions: Option<mpsc::Receiver<Session>>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut entries = self.registry.lock();
        if entries.get(&self.stream).is_some_and(|e| e.id == self.id) {
            entries.remove(&self.stream);
        }
    }
}

impl Registration {
    /// The publish name this registration holds.
    pub(crate) fn stream(&self) -> &str {
        &self.stream
    }
}

impl PublishRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// True when `stream` accepts RTMP publish.
    pub fn contains(&self, stream: &str) -> bool {
        self.lock().contains_key(stream)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        // The map stays consistent even if a holder panicked: every update is one call.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers `stream`; `None` when it is already registered.
    pub(crate) fn register(&self, stream: &str, key: Option<String>) -> Option<Registration> {
        let mut entries = self.lock();
        if entries.contains_key(stream) {
            return None;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (sessions, receiver) = mpsc::channel(1);
        entries.insert(
            stream.to_string(),
            Entry {
                id,
                key,
                sessions,
                current: None,
            },
        );
        Some(Registration {
            registry: self.clone(),
            stream: stream.to_string(),
            id,
            sessions: Some(receiver),
        })
    }
}

impl PublishAuthorizer for PublishRegistry {
    fn authorize(&self, request: &PublishRequest) -> Result<IngestSender, PublishRejection> {
        let mut entries = self.lock();
        let entry = entries
            .get_mut(&request.stream)
            .ok_or(PublishRejection::UnknownStream)?;
        if let Some(expected) = &entry.key {
            let given = request.key.as_deref().unwrap_or_default();
            if !constant_time_eq(given.as_bytes(), expected.as_bytes()) {
                return Err(PublishRejection::WrongKey);
            }
        }
        let live = entry
            .current
            .as_ref()
            .is_some_and(|current| current.strong_count() > 0);
        if live {
            return Err(PublishRejection::Busy);
        }
        let (sender, receiver) = mpsc::channel(SESSION_CAPACITY);
        match entry.sessions.try_send(receiver) {
            Ok(()) => {}
            // The previous session has not been picked up yet.
            Err(mpsc::error::TrySendError::Full(_)) => return Err(PublishRejection::Busy),
            Err(mpsc::error::TrySendError::Closed(_)) => {
                return Err(PublishRejection::UnknownStream)
            }
        }
        entry.current = Some(sender.downgrade());
        tracing::info!(stream = %request.stream, peer = %request.peer, "publisher accepted");
        Ok(sender)
    }
}

/// Compares two byte strings in time that depends only on their lengths.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}
