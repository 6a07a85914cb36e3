//! What a process's role adds to the node it serves through. A node alone has no role;
//! the MC (the `mc` crate) sets one, so the node's state, routes and readiness know of
//! the MC only through this trait and the node can be read, built and tested without it.

use std::sync::Arc;

use axum::http::HeaderMap;

use crate::error::ApiError;

/// A role's rule for one file of one of its streams, run before the node's own checks.
pub enum StreamRule {
    /// The node's checks decide (the OTT door, logins, private meetings).
    Serve,
    /// Refused with this error, whatever the node's checks would say.
    Refuse(ApiError),
    /// Served without the node's checks (the role vouched for the reader), and the
    /// response ends before the first chunk sent after the condition turns false.
    ServeWhile(Arc<dyn Fn() -> bool + Send + Sync>),
}

/// The hooks of a role (see the module docs).
pub trait Role: Send + Sync {
    /// The rule for `file` of `stream` (of `rung`, on a ladder rung) asked with
    /// `headers` and the URL's `query`.
    fn stream_rule(
        &self,
        stream: &str,
        rung: Option<&str>,
        file: &str,
        headers: &HeaderMap,
        query: Option<&str>,
    ) -> StreamRule;

    /// Whether `stream`, live here, is served to nobody (an MC off its group's
    /// timeline): the process is not ready while it is.
    fn off_timeline(&self, stream: &str) -> bool;

    /// Whether the role's store answers (`None` when it has no remote store).
    fn store_reachable(&self) -> Option<bool>;

    /// Whether `bearer` is a token of the role that may see meeting names in the
    /// process's readiness answer.
    fn may_see_meetings(&self, bearer: &str) -> bool;
}
