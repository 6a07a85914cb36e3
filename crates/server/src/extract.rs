//! Path and query extractors whose rejections answer from the code table: axum's own
//! answer a plain-text 400 naming the parser's complaint (`Invalid URL: …`,
//! `Failed to deserialize query string: …`), which is internal text and has no code.
//! These answer `400` with [`ApiError::BadRequest`] (108003) and log the complaint.

use axum::extract::{FromRequestParts, Path, Query};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// [`Path`], rejected with [`ApiError::BadRequest`] (e.g. a segment that is not UTF-8
/// once percent-decoded).
#[derive(Debug)]
pub struct CodedPath<T>(pub T);

impl<S, T> FromRequestParts<S> for CodedPath<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Send,
{
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Response> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(CodedPath(value)),
            Err(rejection) => {
                tracing::debug!(%rejection, path = parts.uri.path(), "path refused");
                Err(ApiError::BadRequest.into_response())
            }
        }
    }
}

/// [`Query`], rejected with [`ApiError::BadRequest`] (e.g. `?history=many`).
#[derive(Debug)]
pub struct CodedQuery<T>(pub T);

impl<S, T> FromRequestParts<S> for CodedQuery<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Response> {
        match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(value)) => Ok(CodedQuery(value)),
            Err(rejection) => {
                tracing::debug!(%rejection, query = parts.uri.query(), "query refused");
                Err(ApiError::BadRequest.into_response())
            }
        }
    }
}
