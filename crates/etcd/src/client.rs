//! The HTTP side: one POST of a JSON body to one of the cluster's endpoints, and the
//! failover between endpoints.
//!
//! Each call opens its own connection: an MC calls etcd a few times per meeting change
//! and once per viewer report, so a pool would save little and add state to get wrong.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

use crate::EtcdError;

/// Largest answer read from one call (a range over every meeting stays far below).
pub const MAX_ANSWER: usize = 64 * 1024 * 1024;

/// One `http://host:port` endpoint, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    pub(crate) authority: String,
}

impl Endpoint {
    fn parse(url: &str) -> Result<Self, EtcdError> {
        let authority = url
            .strip_prefix("http://")
            .map(|rest| rest.trim_end_matches('/'))
            .filter(|a| !a.is_empty() && !a.contains('/'))
            .ok_or_else(|| EtcdError::InvalidEndpoint(url.to_owned()))?;
        Ok(Self {
            authority: authority.to_owned(),
        })
    }
}

/// A client of one etcd cluster: its endpoints, tried in turn from the last one that
/// answered, and the time one call may take.
#[derive(Debug, Clone)]
pub struct Client {
    endpoints: Arc<[Endpoint]>,
    preferred: Arc<AtomicUsize>,
    timeout: Duration,
}

/// A response body that aborts its connection's driver when dropped.
pub(crate) struct Answer {
    pub(crate) body: Incoming,
    _driver: AbortOnDrop,
}

struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Client {
    /// A client of the cluster at `endpoints` (`http://host:port` each); every call
    /// gives up on an endpoint after `timeout`.
    ///
    /// # Errors
    /// [`EtcdError::InvalidEndpoint`] for a URL that is not `http://host:port`, or an
    /// empty list.
    pub fn new(endpoints: &[String], timeout: Duration) -> Result<Self, EtcdError> {
        if endpoints.is_empty() {
            return Err(EtcdError::InvalidEndpoint("(none)".into()));
        }
        let endpoints = endpoints
            .iter()
            .map(|url| Endpoint::parse(url))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            endpoints: endpoints.into(),
            preferred: Arc::new(AtomicUsize::new(0)),
            timeout,
        })
    }

    /// The time one call may take on one endpoint.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// POSTs `body` to `path` and parses the JSON answer, trying every endpoint from
    /// the preferred one until one answers.
    pub(crate) async fn call(&self, path: &str, body: &Value) -> Result<Value, EtcdError> {
        let bytes = Bytes::from(serde_json::to_vec(body).map_err(EtcdError::bad_answer)?);
        let mut last = EtcdError::Unavailable("no endpoint tried".into());
        let start = self.preferred.load(Ordering::Relaxed);
        for step in 0..self.endpoints.len() {
            let index = (start + step) % self.endpoints.len();
            let attempt = async {
                let answer = self.open(index, path, bytes.clone()).await?;
                let collected = http_body_util::Limited::new(answer.body, MAX_ANSWER)
                    .collect()
                    .await
                    .map_err(|e| EtcdError::Unavailable(e.to_string()))?;
                serde_json::from_slice::<Value>(&collected.to_bytes())
                    .map_err(EtcdError::bad_answer)
            };
            match tokio::time::timeout(self.timeout, attempt).await {
                Ok(Ok(value)) => {
                    self.preferred.store(index, Ordering::Relaxed);
                    return Ok(value);
                }
                // etcd itself refused: another endpoint would say the same.
                Ok(Err(e @ EtcdError::Refused { .. })) => return Err(e),
                Ok(Err(e)) => last = e,
                Err(_) => last = EtcdError::Unavailable("timed out".into()),
            }
            tracing::debug!(endpoint = %self.endpoints[index].authority, error = %last, "etcd endpoint failed");
        }
        Err(last)
    }

    /// Opens a POST on endpoint `index` and checks the status; the body is the caller's
    /// to read (a watch reads it for as long as it lives).
    pub(crate) async fn open(
        &self,
        index: usize,
        path: &str,
        body: Bytes,
    ) -> Result<Answer, EtcdError> {
        let endpoint = &self.endpoints[index % self.endpoints.len()];
        let tcp = TcpStream::connect(&endpoint.authority)
            .await
            .map_err(|e| EtcdError::Unavailable(format!("{}: {e}", endpoint.authority)))?;
        let _ = tcp.set_nodelay(true);
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| EtcdError::Unavailable(e.to_string()))?;
        let driver = AbortOnDrop(tokio::spawn(async move {
            let _ = conn.await;
        }));
        let request = Request::post(path)
            .header(hyper::header::HOST, endpoint.authority.as_str())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(body))
            .map_err(|e| EtcdError::InvalidEndpoint(e.to_string()))?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| EtcdError::Unavailable(e.to_string()))?;
        let status = response.status();
        if status.is_success() {
            return Ok(Answer {
                body: response.into_body(),
                _driver: driver,
            });
        }
        let text = http_body_util::Limited::new(response.into_body(), 64 * 1024)
            .collect()
            .await
            .map(|c| String::from_utf8_lossy(&c.to_bytes()).into_owned())
            .unwrap_or_default();
        let message = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v.get("message").or(v.get("error")).cloned())
            .and_then(|m| m.as_str().map(str::to_owned))
            .unwrap_or(text);
        if status.is_server_error() {
            // No leader, shutting down, overloaded: another member may do.
            Err(EtcdError::Unavailable(format!("{status}: {message}")))
        } else {
            Err(EtcdError::Refused {
                status: status.as_u16(),
                message,
            })
        }
    }

    /// How many endpoints the client knows.
    pub(crate) fn endpoint_count(&self) -> usize {
        self.endpoints.len()
    }

    /// The endpoint tried first.
    pub(crate) fn preferred(&self) -> usize {
        self.preferred.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_http_host_port() {
        assert!(Client::new(&["http://127.0.0.1:2379".into()], Duration::from_secs(1)).is_ok());
        for bad in ["127.0.0.1:2379", "https://x:1", "http://", "http://a:1/v3"] {
            assert!(
                Client::new(&[bad.into()], Duration::from_secs(1)).is_err(),
                "{bad}"
            );
        }
        assert!(Client::new(&[], Duration::from_secs(1)).is_err());
    }
}
