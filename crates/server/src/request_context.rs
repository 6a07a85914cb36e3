//! What a request carries besides its head, as one request extension: the connection
//! it came over ([`Connection`]) and the target the edge found for its path
//! ([`Target`]). One extension, so every request pays for one insertion into its
//! extension map and one drop, however many of these facts the layers read.

use axum::http::{Extensions, Request};

use std::net::SocketAddr;
use std::sync::Arc;

use crate::shed::ConnectionGate;
use crate::url::{StreamFile, Target};

/// What a request knows of its connection, carried in its [`RequestContext`] (one
/// extension, so a request pays for one insertion, not one per fact).
#[derive(Debug, Clone)]
pub struct Connection {
    /// The peer's address (`X-Forwarded-For` is never read, OTT-ADDR-4).
    pub peer: SocketAddr,
    /// Whether the request arrived over TLS, for the OTT address rules (an HTTPS
    /// viewer gets only HTTPS backups, OTT-ADDR-3).
    pub secure: bool,
    /// The connection's hold under the device contract (SHED-3), which the shedding
    /// layer arms when it refuses a request; `None` for a request made in-process.
    pub gate: Option<Arc<ConnectionGate>>,
}

impl Connection {
    /// The connection of `request`, if it came over one.
    pub fn of<B>(request: &Request<B>) -> Option<&Connection> {
        RequestContext::of(request.extensions()).and_then(|context| context.connection.as_ref())
    }
}

/// The request's connection and target, each when known.
#[derive(Debug, Clone, Default)]
pub struct RequestContext {
    /// The connection, for a request that came over one (not one made in-process).
    pub connection: Option<Connection>,
    /// The route and file the edge found (`None` before the edge, or without it).
    pub target: Option<Target>,
}

impl RequestContext {
    /// The context of a request's extensions, if it has one.
    pub fn of(extensions: &Extensions) -> Option<&Self> {
        extensions.get::<Self>()
    }

    /// The target the edge found for this request, if any.
    pub fn target(extensions: &Extensions) -> Option<&Target> {
        Self::of(extensions).and_then(|context| context.target.as_ref())
    }

    /// The stream file a handler serves: the one the edge found, else `file` parsed (a
    /// handler called without the edge, as in unit tests).
    pub fn stream_file(extensions: &Extensions, file: &str) -> Option<StreamFile> {
        Target::stream_file(Self::target(extensions), file)
    }

    /// The context of `request`, made empty if it had none, to be filled in.
    pub fn of_mut<B>(request: &mut Request<B>) -> &mut Self {
        request.extensions_mut().get_or_insert_default::<Self>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_extension_holds_the_connection_and_the_target() {
        let mut request = Request::new(());
        assert!(RequestContext::target(request.extensions()).is_none());
        let target = Target::of_path("/meeting/index.m3u8");
        RequestContext::of_mut(&mut request).target = Some(target);
        RequestContext::of_mut(&mut request).connection = Some(Connection {
            peer: std::net::SocketAddr::from(([127, 0, 0, 1], 9)),
            secure: true,
            gate: None,
        });
        assert_eq!(RequestContext::target(request.extensions()), Some(&target));
        assert!(Connection::of(&request).is_some_and(|c| c.secure));
        assert_eq!(request.extensions().len(), 1);
    }
}
