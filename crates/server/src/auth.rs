//! Who may call an operator API: the bearer token, compared in constant time, checked
//! by one extractor ([`Admin`]) that every admin handler takes instead of calling a
//! check by hand. Before any of this, the edge has refused a browser page of another
//! origin and a non-JSON body ([`crate::admin_door`]): that is what guards a node run
//! without a token (`trust_loopback`), where [`Admin`] lets every caller through.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};

use crate::error::ApiError;
use crate::state::AppState;

/// The `Authorization: Bearer <token>` of a request, if it has one.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
}

/// Equal byte strings, in a time that does not depend on where they differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `given` is the `expected` token, or no token is expected.
pub fn token_matches(expected: Option<&str>, given: Option<&str>) -> bool {
    match expected {
        None => true,
        Some(expected) => {
            given.is_some_and(|g| constant_time_eq(g.as_bytes(), expected.as_bytes()))
        }
    }
}

/// Checks the node's admin token when one is configured.
///
/// # Errors
/// [`ApiError::Unauthorized`] when the token is missing or wrong.
pub fn authorize(state: &AppState, headers: &HeaderMap) -> Result<(), ApiError> {
    if token_matches(state.admin_token(), bearer(headers)) {
        Ok(())
    } else {
        Err(ApiError::Unauthorized)
    }
}

/// Proof that the request carries the node's admin token (or that none is configured):
/// an admin handler takes it as an argument, and a request without it is answered 401
/// before the handler runs.
#[derive(Debug, Clone, Copy)]
pub struct Admin;

impl FromRequestParts<AppState> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        authorize(state, &parts.headers).map(|()| Admin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_match_only_exactly() {
        assert!(token_matches(None, None));
        assert!(token_matches(None, Some("x")));
        assert!(token_matches(Some("tok"), Some("tok")));
        assert!(!token_matches(Some("tok"), Some("to")));
        assert!(!token_matches(Some("tok"), Some("tok2")));
        assert!(!token_matches(Some("tok"), None));
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, "Bearer tok".parse().expect("header"));
        assert_eq!(bearer(&headers), Some("tok"));
        headers.insert(header::AUTHORIZATION, "Basic tok".parse().expect("header"));
        assert_eq!(bearer(&headers), None);
    }
}
