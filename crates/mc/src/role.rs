//! The MC's rules for the files of its meetings, served by its node, and its part of
//! that node's readiness ([`server::role::Role`]).

use std::sync::Arc;

use axum::http::HeaderMap;
use server::error::ApiError;
use server::role::{Role, StreamRule};

use crate::api::may_read_stream;
use crate::timeline::PEER_QUERY;
use crate::McState;

/// The MC as its node's role.
pub(crate) struct McRole(pub(crate) McState);

impl Role for McRole {
    /// A meeting's files (the relays its nodes pull) need the node token (or the admin
    /// token); a relay off the group's timeline is served to nobody, and one that leaves
    /// it ends.
    fn stream_rule(
        &self,
        stream: &str,
        rung: Option<&str>,
        file: &str,
        headers: &HeaderMap,
        query: Option<&str>,
    ) -> StreamRule {
        if !may_read_stream(&self.0, headers) {
            return StreamRule::Refuse(ApiError::Access(codes::AccessRefusal::TokenMissing));
        }
        if rung.is_some() || file != "mpegts" {
            return StreamRule::Serve;
        }
        let peer = query.is_some_and(|q| q.split('&').any(|p| p == PEER_QUERY));
        if !self.0.relay_open(stream, peer) {
            return StreamRule::Refuse(ApiError::Meeting(meeting::ErrorCode::McUnavailable));
        }
        let mc = self.0.clone();
        let name = stream.to_owned();
        StreamRule::ServeWhile(Arc::new(move || mc.relay_open(&name, peer)))
    }

    fn off_timeline(&self, stream: &str) -> bool {
        !self.0.relay_open(stream, false)
    }

    fn store_reachable(&self) -> Option<bool> {
        self.0.store_reachable()
    }

    /// The MC's admin or node token, matched in constant time.
    fn may_see_meetings(&self, bearer: &str) -> bool {
        use server::credentials::is_configured_token;
        let settings = &self.0.inner.settings;
        is_configured_token(settings.admin_token.as_deref(), bearer)
            || is_configured_token(settings.node_token.as_deref(), bearer)
    }
}
