//! The decisions of the SRT listener at each handshake, taken in libsrt's listen
//! callback: admission within the caps, the streamid, the meeting's passphrase, the
//! [`PublishAuthorizer`]. A refusal goes back as an SRT reject reason and is counted
//! with its code, its log line written later by the accepting thread; an accepted caller's publish slot waits in the pending
//! table, keyed by libsrt's socket id, until the connection is accepted, fails, or
//! outlives the publish deadline.
//!
//! libsrt answers the first handshake (induction) itself, with a SYN cookie and no
//! state; this callback runs only for a caller that returned the cookie, on libsrt's
//! receiving thread, so it takes no lock for long and never waits.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use tracing::{info, warn};

use super::access::{Refused, SrtListenerConfig};
use super::ffi::{self, Handshake, ListenHook, SocketState};
use super::refusal_log::{self, RefusalLog};
use super::stats::SrtStats;
use super::streamid::{self, StreamId};
use crate::listener_limits::{Admission, Cut, Slot};
use crate::publish::{PublishAuthorizer, PublishRequest};
use crate::IngestSender;

/// `SRT_REJ_BADSECRET` and `SRT_REJ_UNSECURE`: libsrt refused the encryption.
const REJECT_ENCRYPTION: [i32; 2] = [10, 11];

/// How long a granted handshake's socket may stay unknown to libsrt before it is
/// taken for gone.
const UNKNOWN_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// An authorized caller whose connection libsrt is finishing.
pub(crate) struct Pending {
    pub(crate) slot: Slot,
    pub(crate) sender: IngestSender,
    pub(crate) id: StreamId,
    pub(crate) peer: SocketAddr,
    pub(crate) accepted_at: Instant,
    pub(crate) encrypted: bool,
}

/// What the listener's callback, its accepting thread and its publishers share.
pub(crate) struct Shared {
    pub(crate) authorizer: Arc<dyn PublishAuthorizer>,
    pub(crate) stats: Arc<SrtStats>,
    pub(crate) config: SrtListenerConfig,
    pub(crate) admission: Arc<Admission>,
    pending: Mutex<HashMap<i32, Pending>>,
    /// Refusal lines from the listen callback, written by the accepting thread.
    log: RefusalLog,
    /// A UDP socket on 127.0.0.1 connected to itself: a datagram wakes the accepting
    /// thread when a handshake is granted, so libsrt's verdict on it is seen at once.
    pub(crate) wake: std::net::UdpSocket,
}

impl Shared {
    /// The state of one listener.
    ///
    /// # Errors
    /// The system's, opening the wake-up socket.
    pub(crate) fn new(
        authorizer: Arc<dyn PublishAuthorizer>,
        stats: Arc<SrtStats>,
        config: SrtListenerConfig,
    ) -> std::io::Result<Self> {
        let admission = Admission::new(
            config.limits.max_connections,
            config.limits.max_pending_per_address,
        );
        let wake = std::net::UdpSocket::bind((std::net::Ipv4Addr::LOCALHOST, 0))?;
        wake.connect(wake.local_addr()?)?;
        wake.set_nonblocking(true)?;
        Ok(Self {
            authorizer,
            stats,
            config,
            admission,
            pending: Mutex::default(),
            log: RefusalLog::default(),
            wake,
        })
    }

    /// Whether a handshake granted less than `within` ago awaits libsrt's end of it
    /// (a caller finishes within a round trip; older ones wait for the deadline).
    pub(crate) fn has_fresh(&self, now: Instant, within: std::time::Duration) -> bool {
        self.lock()
            .values()
            .any(|p| now.saturating_duration_since(p.accepted_at) < within)
    }

    /// Empties the wake-up socket.
    pub(crate) fn drain_wake(&self) {
        let mut buf = [0u8; 16];
        while self.wake.recv(&mut buf).is_ok() {}
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<i32, Pending>> {
        // Each update is one insert or remove: the table is consistent after a panic.
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The authorized caller of the accepted socket `id`, taken out of the table.
    pub(crate) fn take(&self, id: i32) -> Option<Pending> {
        self.lock().remove(&id)
    }

    /// Ends the pending entries libsrt gave up on (the encryption did not match, the
    /// handshake was malformed) and those past the publish deadline, counting each.
    pub(crate) fn sweep(&self, now: Instant) {
        let deadline = self.config.limits.publish_deadline;
        // libsrt is asked outside the table's lock: its callback, which takes the lock,
        // may run while libsrt holds its own.
        let ages: Vec<(i32, Instant)> = self
            .lock()
            .iter()
            .map(|(id, pending)| (*id, pending.accepted_at))
            .collect();
        let ending: Vec<(i32, bool)> = ages
            .into_iter()
            .filter_map(|(id, accepted_at)| {
                let age = now.saturating_duration_since(accepted_at);
                let state = ffi::state(id);
                // The callback runs before libsrt enters the socket in its table: an
                // unknown one is gone only once it had time to appear.
                let gone = match state {
                    SocketState::Live => false,
                    SocketState::Ended => true,
                    SocketState::Unknown => age >= UNKNOWN_GRACE,
                };
                if gone {
                    Some((id, false))
                } else if age >= deadline {
                    Some((id, true))
                } else {
                    None
                }
            })
            .collect();
        if ending.is_empty() {
            return;
        }
        let ended: Vec<(i32, Pending, bool)> = {
            let mut pending = self.lock();
            ending
                .into_iter()
                .filter_map(|(id, late)| pending.remove(&id).map(|p| (id, p, late)))
                .collect()
        };
        for (id, pending, late) in ended {
            let (peer, stream) = (pending.peer, &pending.id.stream);
            if late {
                ffi::close_raw(id);
                let cut = Cut::PublishDeadline(deadline);
                let count = self.stats.limits.cut(cut);
                let code = cut.code();
                warn!(%peer, %stream, code = code.code(), reason = code.label(), error = %cut, count, "srt handshake not finished; cut");
                continue;
            }
            // libsrt keeps no reason for a socket it rolled back (0): what it checks
            // after the grant is the encryption (no passphrase where one is set, one
            // where none is, a wrong one); a libsrt caller's handshake is well formed.
            let reason = ffi::reject_reason(id);
            if encryption_mismatch(pending.encrypted, reason) {
                self.count(Refused::Passphrase, peer, stream);
            } else {
                info!(%peer, %stream, reason, "srt handshake failed after access was granted");
            }
        }
    }

    /// Counts and logs a refusal off libsrt's thread: the first of its code and then
    /// every power of two (a flood is not a flood of log lines).
    pub(crate) fn count(&self, refused: Refused, peer: SocketAddr, stream: &str) {
        let count = self.stats.refused(refused.code());
        if refusal_log::logged(count) {
            refusal_log::write(refused, peer, stream, count);
        }
    }

    /// Writes the lines the listen callback queued (on the accepting thread).
    pub(crate) fn flush_log(&self) {
        self.log.flush();
    }

    /// Counts a refusal in the listen callback, its line queued for the accepting
    /// thread: libsrt's receiving thread never writes a log line.
    fn refuse(&self, refused: Refused, peer: SocketAddr, stream: &str) -> i32 {
        let count = self.stats.refused(refused.code());
        self.log.queue(refused, peer, stream, count);
        refused.reason()
    }
}

/// Whether a granted handshake libsrt ended before its accept failed on the
/// encryption: always when the meeting encrypts, else unless libsrt named another
/// reason (it names none for a rolled-back socket, `0`).
fn encryption_mismatch(encrypted: bool, reason: i32) -> bool {
    encrypted || reason == 0 || REJECT_ENCRYPTION.contains(&reason)
}

impl ListenHook for Shared {
    fn handshake(&self, handshake: &Handshake<'_>) -> Result<(), i32> {
        let accepted_at = Instant::now();
        let peer = handshake.peer;
        let slot = self
            .admission
            .admit(peer.ip())
            .map_err(|refusal| self.refuse(Refused::Limit(refusal), peer, "-"))?;
        let raw = handshake.stream_id.map(String::from_utf8_lossy);
        let Some(id) = raw.as_deref().and_then(|raw| streamid::parse(raw).ok()) else {
            let shown = streamid::redacted(raw.as_deref().unwrap_or_default());
            return Err(self.refuse(Refused::StreamId, peer, &shown));
        };
        let passphrase = self.config.passphrase_for(&id.stream);
        if let Some(passphrase) = passphrase {
            handshake
                .set_passphrase(passphrase.as_bytes())
                .map_err(|e| {
                    if e.is_exiting() {
                        ffi::REJECT_INTERNAL
                    } else {
                        self.refuse(Refused::Passphrase, peer, &id.stream)
                    }
                })?;
        }
        let publish = PublishRequest {
            app: id.app.clone().unwrap_or_default(),
            stream: id.stream.clone(),
            key: id.key.clone(),
            peer,
        };
        let sender = self
            .authorizer
            .authorize(&publish)
            .map_err(|rejection| self.refuse(Refused::from(&rejection), peer, &id.stream))?;
        let pending = Pending {
            slot,
            sender,
            id,
            peer,
            accepted_at,
            encrypted: passphrase.is_some(),
        };
        self.lock().insert(handshake.socket, pending);
        // Non-blocking; a full buffer already holds a wake-up.
        let _ = self.wake.send(&[1]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::encryption_mismatch;

    #[test]
    fn a_failure_after_the_grant_is_an_encryption_mismatch_unless_libsrt_names_another() {
        assert!(encryption_mismatch(true, 0));
        assert!(encryption_mismatch(true, 13));
        assert!(encryption_mismatch(false, 0));
        assert!(encryption_mismatch(false, 10));
        assert!(encryption_mismatch(false, 11));
        assert!(!encryption_mismatch(false, 13));
    }
}
