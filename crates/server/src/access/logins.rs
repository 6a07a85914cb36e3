//! Logins and their connection limit (OTT-GRP-6): a login's "max connections,
//! HTTP/HLS" applies on each node separately.
//!
//! A viewer presents a login with `?login=NAME&token=TOKEN` on the master or media
//! playlist. The node counts the login's distinct viewer sessions (a session stays
//! counted until 20 s after its last playlist request) and refuses a new one beyond the
//! login's limit. Every node counts only its own sessions: the limit is per node, and
//! a viewer moving to a backup is counted there (its backup URLs and redirects carry
//! the login along).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::access::viewer_id::ViewerId;
use crate::credentials::constant_time_eq;
use crate::error::OttRefusal;

/// How long a session stays counted after its last playlist request.
pub const SESSION_IDLE: Duration = Duration::from_secs(20);

/// One login as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Login {
    /// The login's name, as in `?login=NAME`.
    pub name: String,
    /// Its token, as in `&token=TOKEN`.
    pub token: String,
    /// Most distinct viewer sessions at once on this node.
    pub max_connections: u32,
}

/// The logins of a node and their sessions here.
#[derive(Debug, Default)]
pub struct Logins {
    logins: HashMap<String, Login>,
    sessions: Mutex<HashMap<String, HashMap<ViewerId, Instant>>>,
}

/// The `login` and `token` parameters of a query.
pub fn credentials(query: Option<&str>) -> Option<(&str, &str)> {
    let query = query?;
    let mut login = None;
    let mut token = "";
    for pair in query.split('&') {
        if let Some(v) = pair.strip_prefix("login=") {
            login = Some(v);
        } else if let Some(v) = pair.strip_prefix("token=") {
            token = v;
        }
    }
    login.map(|l| (l, token))
}

impl Logins {
    /// The node's logins.
    pub fn new(logins: impl IntoIterator<Item = Login>) -> Self {
        Self {
            logins: logins.into_iter().map(|l| (l.name.clone(), l)).collect(),
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// Admits a playlist request of `session` (who the node observed asking, see
    /// [`ViewerId`]) under `login`/`token`.
    ///
    /// # Errors
    /// [`OttRefusal::LoginRefused`] for an unknown login or a wrong token;
    /// [`OttRefusal::LoginLimit`] for a new session beyond the login's limit here.
    pub fn admit(&self, login: &str, token: &str, session: ViewerId) -> Result<(), OttRefusal> {
        let Some(known) = self.logins.get(login) else {
            return Err(OttRefusal::LoginRefused);
        };
        if !constant_time_eq(token.as_bytes(), known.token.as_bytes()) {
            return Err(OttRefusal::LoginRefused);
        }
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        let mine = sessions.entry(known.name.clone()).or_default();
        mine.retain(|_, seen| now.duration_since(*seen) < SESSION_IDLE);
        if let Some(seen) = mine.get_mut(&session) {
            *seen = now;
            return Ok(());
        }
        if mine.len() >= known.max_connections as usize {
            return Err(OttRefusal::LoginLimit);
        }
        mine.insert(session, now);
        Ok(())
    }

    /// Sessions of a login on this node now.
    pub fn sessions(&self, login: &str) -> usize {
        let sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.get(login).map_or(0, |s| {
            s.values()
                .filter(|seen| seen.elapsed() < SESSION_IDLE)
                .count()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(n: u8) -> ViewerId {
        ViewerId::of_address([192, 0, 2, n].into())
    }

    fn logins() -> Logins {
        Logins::new([Login {
            name: "alice".into(),
            token: "t0k".into(),
            max_connections: 2,
        }])
    }

    #[test]
    fn credentials_come_from_the_query() {
        assert_eq!(
            credentials(Some("a=1&login=alice&token=x")),
            Some(("alice", "x"))
        );
        assert_eq!(credentials(Some("login=alice")), Some(("alice", "")));
        assert_eq!(credentials(Some("token=x")), None);
        assert_eq!(credentials(None), None);
    }

    #[test]
    fn the_limit_counts_distinct_sessions() {
        let logins = logins();
        assert_eq!(logins.admit("alice", "t0k", session(1)), Ok(()));
        assert_eq!(logins.admit("alice", "t0k", session(1)), Ok(()));
        assert_eq!(logins.admit("alice", "t0k", session(2)), Ok(()));
        assert_eq!(
            logins.admit("alice", "t0k", session(3)),
            Err(OttRefusal::LoginLimit)
        );
        assert_eq!(logins.sessions("alice"), 2);
        // A known session keeps being admitted at the limit.
        assert_eq!(logins.admit("alice", "t0k", session(2)), Ok(()));
    }

    #[test]
    fn unknown_logins_and_wrong_tokens_are_refused() {
        let logins = logins();
        assert_eq!(
            logins.admit("bob", "t0k", session(1)),
            Err(OttRefusal::LoginRefused)
        );
        assert_eq!(
            logins.admit("alice", "nope", session(1)),
            Err(OttRefusal::LoginRefused)
        );
        assert_eq!(logins.sessions("alice"), 0);
    }
}
