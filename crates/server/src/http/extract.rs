//! Path, query and body extractors whose rejections answer from the code table: axum's
//! own answer in plain text naming the parser's complaint (`Invalid URL: …`,
//! `Failed to deserialize query string: …`, `Failed to buffer the request body: length
//! limit exceeded`), which is internal text and has no code. These answer `400` with
//! [`ApiError::BadRequest`] (108003), or `413` with [`ApiError::BodyTooLarge`] (108005),
//! and log the complaint.

use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
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
                let query = parts.uri.query().map(redact_query);
                tracing::debug!(%rejection, query, "query refused");
                Err(ApiError::BadRequest.into_response())
            }
        }
    }
}

/// The most bytes a JSON API body may have (a fault rule, an experiment): room for a
/// fault rule naming its most members (10,000), small enough that a flood of large
/// bodies costs little memory.
pub const MAX_API_BODY: usize = 1024 * 1024;

/// A request body of at most [`MAX_API_BODY`] bytes: a longer one is refused with
/// [`ApiError::BodyTooLarge`] (108005), one that cannot be read (the client went away,
/// a broken chunked encoding) with [`ApiError::BadRequest`].
#[derive(Debug)]
pub struct CodedBody(pub Bytes);

impl<S> FromRequest<S> for CodedBody
where
    S: Send + Sync,
{
    type Rejection = Response;

    async fn from_request(request: Request, _state: &S) -> Result<Self, Response> {
        let path = request.uri().path().to_owned();
        match axum::body::to_bytes(request.into_body(), MAX_API_BODY).await {
            Ok(bytes) => Ok(CodedBody(bytes)),
            Err(error) => {
                let too_large = std::error::Error::source(&error)
                    .is_some_and(|e| e.is::<http_body_util::LengthLimitError>());
                tracing::debug!(%error, path, "body refused");
                Err(if too_large {
                    ApiError::BodyTooLarge
                } else {
                    ApiError::BadRequest
                }
                .into_response())
            }
        }
    }
}

/// Query parameters whose values are credentials: never logged in clear.
const SECRET_PARAMS: [&str; 5] = ["access_token", "session", "token", "pass", "key"];

/// A query for a log line: the values of credentials (viewer tokens, sessions, login
/// tokens, passes, stream keys) replaced by `…`.
pub fn redact_query(query: &str) -> String {
    query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _)) if SECRET_PARAMS.contains(&name) => format!("{name}=…"),
            _ => pair.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod redact_tests {
    use super::redact_query;

    #[test]
    fn credentials_are_not_logged() {
        assert_eq!(
            redact_query("msn=4&access_token=a.b.c&session=S&login=x&token=t&pass=p"),
            "msn=4&access_token=…&session=…&login=x&token=…&pass=…"
        );
    }
}
