//! What one HTTP connection may take of a server before it is cut: a deadline for each
//! phase of a request (its head, its body, the writing of its answer) and a cap on a
//! request body's bytes. Plain values: [`crate::http::connection`] keeps the head and send
//! deadlines, [`crate::http::bounded_body`] the body's, on HTTP/1.1 and HTTP/2 alike.

use std::time::Duration;

/// How long a client may take to send a request's whole head, from the moment the
/// connection is ready for it (accepted, or the previous answer written); on HTTP/2,
/// how long a connection may stay with no request in flight.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long an answer's writing may stay blocked (the client reads nothing) before the
/// connection is closed, as nginx's `send_timeout`.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a request's whole body may take to arrive, from its head: a body that
/// stops arriving (or trickles) is answered 408 (108011) and its connection closed,
/// as nginx's `client_body_timeout`.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// The most bytes any request body may have on any route: the largest a route takes
/// ([`crate::http::extract::MAX_API_BODY`], a fault rule naming its most members). Each route
/// caps its own body below this; a body declared larger is refused before a route sees
/// it (413, 108005).
pub const MAX_BODY_BYTES: usize = crate::http::extract::MAX_API_BODY;

/// The deadlines and the body cap of a listener's connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeLimits {
    /// See [`HEADER_READ_TIMEOUT`].
    pub head_timeout: Duration,
    /// See [`SEND_TIMEOUT`]; never shorter than `head_timeout`.
    pub send_timeout: Duration,
    /// See [`BODY_TIMEOUT`].
    pub body_timeout: Duration,
    /// See [`MAX_BODY_BYTES`].
    pub max_body_bytes: usize,
}

impl Default for EdgeLimits {
    fn default() -> Self {
        Self {
            head_timeout: HEADER_READ_TIMEOUT,
            send_timeout: SEND_TIMEOUT,
            body_timeout: BODY_TIMEOUT,
            max_body_bytes: MAX_BODY_BYTES,
        }
    }
}

impl EdgeLimits {
    /// The defaults with a body deadline of `body_timeout` (`body_timeout` of `[node]`
    /// and `[mc]`).
    pub fn with_body_timeout(body_timeout: Duration) -> Self {
        Self {
            body_timeout,
            ..Self::default()
        }
    }

    /// The send deadline as the connection keeps it: at least the head deadline (its
    /// watchdog wakes once per head timeout at least).
    pub(crate) fn send_timeout(&self) -> Duration {
        self.send_timeout.max(self.head_timeout)
    }
}
