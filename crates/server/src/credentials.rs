//! Comparing credentials: the bearer token of a request, and secrets compared in
//! constant time. A leaf every check of a token uses (the operator API's [`crate::routes::auth`],
//! the meeting gate's node token, logins), so none of them depends on another.

use axum::http::{header, HeaderMap};

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

/// Whether `given` is the configured token `expected`, in constant time; an unset
/// token matches nothing.
pub fn is_configured_token(expected: Option<&str>, given: &str) -> bool {
    expected.is_some_and(|t| constant_time_eq(t.as_bytes(), given.as_bytes()))
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
