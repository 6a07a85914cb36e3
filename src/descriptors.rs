//! The file descriptors the process may hold, and the HTTP connection caps that follow
//! from them.
//!
//! At start the soft `RLIMIT_NOFILE` is raised to the hard limit (a login shell's soft
//! limit is often 1,024 under a hard limit of 524,288; systemd's `LimitNOFILE` sets
//! both). The connection caps of a node and of an MC, unless configured, are then
//! derived below what the process holds ([`server::http::conn_limits::DerivedCaps`]), so a
//! client opening connections without end meets the caps' coded refusals, not `EMFILE`
//! for everyone (syncs, relays, etcd, RTMP, archive files).

use std::sync::Arc;
use std::time::Duration;

use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
use server::http::conn_limits::{ConnectionLimits, DerivedCaps};
use server::http::edge_limits::EdgeLimits;

/// The soft and hard descriptor limits before and after [`raise_soft_limit`]
/// (`None`: unlimited).
#[derive(Debug, Clone, Copy)]
pub struct Raised {
    /// The soft limit the process started with.
    pub before: Option<u64>,
    /// The soft limit it holds now.
    pub now: Option<u64>,
    /// The hard limit.
    pub hard: Option<u64>,
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit.
///
/// # Errors
/// The kernel refused the new limit (the soft limit is then unchanged).
pub fn raise_soft_limit() -> std::io::Result<Raised> {
    let limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        setrlimit(
            Resource::Nofile,
            Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            },
        )
        .map_err(std::io::Error::from)?;
    }
    Ok(Raised {
        before: limit.current,
        now: getrlimit(Resource::Nofile).current,
        hard: limit.maximum,
    })
}

/// Raises the soft limit at start and says what the process holds (at info), or why
/// it could not (at warn: the caps are then derived from the lower limit).
pub fn raise_and_log() {
    match raise_soft_limit() {
        Ok(raised) => tracing::info!(
            before = ?raised.before,
            soft = ?raised.now,
            hard = ?raised.hard,
            "file descriptor limit (RLIMIT_NOFILE)"
        ),
        Err(error) => tracing::warn!(%error, "the soft file descriptor limit could not be raised"),
    }
}

/// The connection caps and edge limits of a listener of `role` (`node`, `mc`): the
/// configured caps, the others derived from the soft descriptor limit the process holds
/// now; bodies cut after `body_timeout`. Logged at info.
pub fn http_limits(
    role: &'static str,
    max_connections: Option<usize>,
    max_connections_per_client: Option<usize>,
    body_timeout: Duration,
) -> Arc<ConnectionLimits> {
    // Unlimited descriptors: the derived caps stop at their ceiling.
    let soft = getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX);
    let caps = DerivedCaps::for_descriptors(soft)
        .or_configured(max_connections, max_connections_per_client);
    tracing::info!(
        role,
        descriptors = soft,
        max_connections = caps.max_total,
        max_connections_per_client = caps.max_per_client,
        configured = max_connections.is_some() || max_connections_per_client.is_some(),
        body_timeout_s = body_timeout.as_secs_f64(),
        "http connection caps"
    );
    Arc::new(
        ConnectionLimits::new(caps.max_total, caps.max_per_client)
            .with_edge(EdgeLimits::with_body_timeout(body_timeout)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_ends_at_the_hard_limit_and_the_caps_below_it() {
        let raised = raise_soft_limit().expect("raising to the hard limit is allowed");
        assert_eq!(raised.now, raised.hard);
        let limits = http_limits("node", None, Some(7), Duration::from_secs(3));
        let soft = raised.now.unwrap_or(u64::MAX);
        assert!(u64::try_from(limits.max_total()).expect("fits") < soft);
        assert_eq!(limits.max_per_client(), 7, "a configured cap is kept");
        assert_eq!(limits.edge().body_timeout, Duration::from_secs(3));
    }
}
