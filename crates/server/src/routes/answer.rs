//! A stream file's answer as the entry point makes it: most answers are made at once
//! from memory (master and media playlists, segments, MPDs), and only the few that
//! wait — a blocking playlist reload, an archive read, a private meeting's rewrite — are
//! a future. A request answered at once then pays for no future: no allocation and no
//! copy of a state machine sized for the requests that wait.

use std::future::Future;
use std::pin::Pin;

use axum::response::Response;

/// An answer that waits, boxed: its size is that of its own state only.
pub type Waiting = Pin<Box<dyn Future<Output = Response> + Send>>;

/// A stream file's answer: made, or to be awaited.
pub enum Answer {
    /// Made at once.
    Now(Response),
    /// Made when the future completes.
    Later(Waiting),
}

impl Answer {
    /// An answer that waits for `future`.
    pub fn later(future: impl Future<Output = Response> + Send + 'static) -> Self {
        Self::Later(Box::pin(future))
    }

    /// The answer, awaited if it waits.
    pub async fn resolve(self) -> Response {
        match self {
            Self::Now(response) => response,
            Self::Later(future) => future.await,
        }
    }

    /// The answer passed through `finish` once it is made.
    pub fn map(self, finish: impl FnOnce(Response) -> Response + Send + 'static) -> Self {
        match self {
            Self::Now(response) => Self::Now(finish(response)),
            Self::Later(future) => Self::later(async move { finish(future.await) }),
        }
    }

    /// The answer passed through `finish`, which waits, once it is made.
    pub fn then<F>(self, finish: impl FnOnce(Response) -> F + Send + 'static) -> Self
    where
        F: Future<Output = Response> + Send + 'static,
    {
        Self::later(async move { finish(self.resolve().await).await })
    }
}

impl From<Response> for Answer {
    fn from(response: Response) -> Self {
        Self::Now(response)
    }
}
