//! Where the MC keeps its session-key ring ([`server::access::session_keys`]) and when it
//! rotates it: a lone MC in `session_keys.json` beside its store (mode 0600), an MC
//! pair in etcd under `<prefix>session-keys`, replaced only with a compare-and-swap so
//! both MCs hand their nodes the same ring.

use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};

use super::etcd_store::EtcdStore;
use super::store::{write_secret_json, StoreError};
use server::access::session_keys::SessionKeyRing;

pub use super::etcd_store::SESSION_KEYS_KEY as ETCD_KEY;

/// Where the ring lives.
enum Place {
    File(PathBuf),
    Etcd(Arc<EtcdStore>),
}

/// The MC's ring, as it was last read or written.
pub struct SessionKeyStore {
    place: Place,
    ring: RwLock<SessionKeyRing>,
}

impl std::fmt::Debug for SessionKeyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionKeyStore(..)")
    }
}

impl SessionKeyStore {
    /// The ring kept at `path` (a fresh one, written there, when there is none).
    ///
    /// # Errors
    /// The file exists but is unreadable or not a ring, or a fresh ring cannot be
    /// written.
    pub fn open_file(path: PathBuf, now_unix_s: i64) -> Result<Self, StoreError> {
        let ring = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
                path: path.clone(),
                reason: e.to_string(),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let ring = SessionKeyRing::fresh(now_unix_s);
                write_secret_json(&path, &ring)?;
                ring
            }
            Err(source) => return Err(StoreError::Read { path, source }),
        };
        Ok(Self {
            place: Place::File(path),
            ring: RwLock::new(ring),
        })
    }

    /// The ring an MC pair shares in etcd (created there by the first MC to start;
    /// until etcd answers, a ring of this MC's own that is replaced by the shared one
    /// at the next [`SessionKeyStore::maintain`]).
    pub async fn open_etcd(store: Arc<EtcdStore>, now_unix_s: i64) -> Self {
        let this = Self {
            place: Place::Etcd(store),
            ring: RwLock::new(SessionKeyRing::fresh(now_unix_s)),
        };
        if let Err(error) = this.maintain(now_unix_s).await {
            tracing::warn!(%error, "session keys: etcd unavailable at start, a local ring until it answers");
        }
        this
    }

    /// The ring now.
    pub fn ring(&self) -> SessionKeyRing {
        self.ring
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn install(&self, ring: SessionKeyRing) {
        *self.ring.write().unwrap_or_else(PoisonError::into_inner) = ring;
    }

    /// Rotates the ring when due (and, in etcd, adopts the ring the pair shares).
    ///
    /// # Errors
    /// The new ring cannot be written (the old one stays in use), or etcd cannot be
    /// reached.
    pub async fn maintain(&self, now_unix_s: i64) -> Result<(), StoreError> {
        match &self.place {
            Place::File(path) => {
                if let Some(rotated) = self.ring().rotated(now_unix_s) {
                    write_secret_json(path, &rotated)?;
                    tracing::info!(current = rotated.current.id, "session keys rotated");
                    self.install(rotated);
                }
                Ok(())
            }
            Place::Etcd(store) => {
                // At most two rounds: read, then write (creating or rotating) unless
                // the other MC wrote first, in which case its ring is read and kept.
                for _ in 0..2 {
                    let shared = store.read_key(ETCD_KEY).await?;
                    let (ring, revision) = match shared {
                        Some((bytes, revision)) => {
                            match serde_json::from_slice::<SessionKeyRing>(&bytes) {
                                Ok(ring) => (Some(ring), revision),
                                Err(e) => {
                                    tracing::error!(error = %e, "session keys in etcd are not readable: replaced");
                                    (None, revision)
                                }
                            }
                        }
                        None => (None, 0),
                    };
                    let wanted = match &ring {
                        Some(ring) => ring.rotated(now_unix_s),
                        None => Some(SessionKeyRing::fresh(now_unix_s)),
                    };
                    let Some(wanted) = wanted else {
                        if let Some(ring) = ring {
                            self.install(ring);
                        }
                        return Ok(());
                    };
                    if store.write_key_if(ETCD_KEY, revision, &wanted).await? {
                        tracing::info!(current = wanted.current.id, "session keys written to etcd");
                        self.install(wanted);
                        return Ok(());
                    }
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_lone_mcs_ring_is_kept_owner_only_and_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session_keys.json");
        let t0 = 1_800_000_000;
        let first = SessionKeyStore::open_file(path.clone(), t0).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let again = SessionKeyStore::open_file(path.clone(), t0 + 5).unwrap();
        assert_eq!(again.ring(), first.ring(), "a restart keeps the ring");
        // Rotation when due, written before it is used.
        again.maintain(t0 + 60).await.unwrap();
        assert_eq!(again.ring(), first.ring());
        let due = t0 + server::access::session_keys::ROTATE_EVERY_S;
        again.maintain(due).await.unwrap();
        let (now_current, was_next) = (again.ring().current, first.ring().next);
        assert_eq!(
            (now_current.id, now_current.secret),
            (was_next.id, was_next.secret),
            "the published next key signs now"
        );
        let reopened = SessionKeyStore::open_file(path.clone(), due).unwrap();
        assert_eq!(reopened.ring(), again.ring());
        std::fs::write(&path, b"not a ring").unwrap();
        assert!(matches!(
            SessionKeyStore::open_file(path, due),
            Err(StoreError::Corrupt { .. })
        ));
    }
}
