//! What a request carries besides its head, as one request extension: the connection
//! it came over ([`Connection`]) and the target the edge found for its path
//! ([`Target`]). One extension, so every request pays for one insertion into its
//! extension map and one drop, however many of these facts the layers read.

use axum::http::{Extensions, Request};

use crate::connection::Connection;
use crate::url::Target;

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
