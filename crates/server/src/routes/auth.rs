//! Who may call an operator API: the bearer token, compared in constant time, checked
//! by one extractor ([`Admin`]) that every admin handler takes instead of calling a
//! check by hand. Before any of this, the edge has refused a browser page of another
//! origin and a non-JSON body ([`crate::http::admin_door`]): that is what guards a node run
//! without a token (`trust_loopback`), where [`Admin`] lets every caller through.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::HeaderMap;

use crate::error::ApiError;
use crate::state::AppState;

pub use crate::credentials::{bearer, constant_time_eq, token_matches};

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
