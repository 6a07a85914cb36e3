//! The object store's HTTP transport: the project's hyper client (HTTP/1.1, rustls with
//! the ring provider) in place of reqwest, with a node-wide upload bandwidth cap.
//!
//! One connection per request: archive objects are large and few, and a bucket on
//! another host costs one handshake per object or segment read.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderValue, HOST};
use http::uri::{PathAndQuery, Scheme};
use http::Uri;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper_util::rt::TokioIo;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpRequestBody,
    HttpResponse, HttpResponseBody, HttpService,
};
use object_store::ClientOptions;
use rustls::ClientConfig;
use rustls_pki_types::ServerName;
use tokio::net::TcpStream;

use crate::pace::Pacer;

/// Hands the object store a [`Transport`].
#[derive(Debug, Clone)]
pub struct Connector {
    transport: Transport,
}

impl Connector {
    /// A connector for `tls` (used for `https` endpoints; `None` refuses them) whose
    /// request bodies are paced by `pacer`.
    pub fn new(tls: Option<Arc<ClientConfig>>, pacer: Option<Arc<Pacer>>) -> Connector {
        Connector {
            transport: Transport {
                tls,
                pacer,
                connect_timeout: Duration::from_secs(5),
            },
        }
    }
}

impl HttpConnector for Connector {
    fn connect(&self, _options: &ClientOptions) -> object_store::Result<HttpClient> {
        Ok(HttpClient::new(self.transport.clone()))
    }
}

/// Sends one request on a connection of its own.
#[derive(Debug, Clone)]
pub struct Transport {
    tls: Option<Arc<ClientConfig>>,
    pacer: Option<Arc<Pacer>>,
    connect_timeout: Duration,
}

fn error(kind: HttpErrorKind, message: impl Into<String>) -> HttpError {
    HttpError::new_boxed(kind, message.into().into())
}

/// A request body in pieces of at most this many bytes, each paced.
const PACED_PIECE: usize = 64 * 1024;

#[async_trait::async_trait]
impl HttpService for Transport {
    async fn call(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let (mut parts, body) = request.into_parts();
        let uri = parts.uri.clone();
        let https = match uri.scheme() {
            Some(s) if *s == Scheme::HTTPS => true,
            Some(s) if *s == Scheme::HTTP => false,
            _ => {
                return Err(error(
                    HttpErrorKind::Request,
                    "object store URL is not http(s)",
                ))
            }
        };
        let host = uri
            .host()
            .ok_or_else(|| error(HttpErrorKind::Request, "object store URL has no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        if !parts.headers.contains_key(HOST) {
            let authority = uri.authority().map(|a| a.as_str()).unwrap_or(&host);
            let value = HeaderValue::from_str(authority)
                .map_err(|_| error(HttpErrorKind::Request, "bad host"))?;
            parts.headers.insert(HOST, value);
        }
        // HTTP/1.1 to an origin server takes the path, not the absolute URL.
        parts.uri = Uri::from(
            uri.path_and_query()
                .cloned()
                .unwrap_or_else(|| PathAndQuery::from_static("/")),
        );
        let head_limit = self.head_limit(body.content_length());
        let body = paced(body, self.pacer.clone());
        let request = http::Request::from_parts(parts, body);

        let tcp = tokio::time::timeout(self.connect_timeout, TcpStream::connect((&*host, port)))
            .await
            .map_err(|_| error(HttpErrorKind::Connect, "connect timed out"))?
            .map_err(|e| HttpError::new(HttpErrorKind::Connect, e))?;
        let _ = tcp.set_nodelay(true);
        if https {
            let tls = self.tls.clone().ok_or_else(|| {
                error(
                    HttpErrorKind::Connect,
                    "https endpoint without a TLS configuration",
                )
            })?;
            let name = ServerName::try_from(host)
                .map_err(|e| HttpError::new(HttpErrorKind::Connect, e))?;
            let stream = tokio::time::timeout(
                self.connect_timeout,
                tokio_rustls::TlsConnector::from(tls).connect(name, tcp),
            )
            .await
            .map_err(|_| error(HttpErrorKind::Connect, "TLS handshake timed out"))?
            .map_err(|e| HttpError::new(HttpErrorKind::Connect, e))?;
            send(TokioIo::new(stream), request, head_limit).await
        } else {
            send(TokioIo::new(tcp), request, head_limit).await
        }
    }
}

/// How long a response body may deliver nothing before the read fails.
const BODY_IDLE: Duration = Duration::from_secs(30);
/// The slowest upload a request's deadline allows for, bytes per second.
const SLOWEST_UPLOAD: f64 = 256.0 * 1024.0;

impl Transport {
    /// How long sending a request of `len` body bytes and getting the response head may
    /// take: 30 s, plus the body at the slowest expected pace (an eighth of the cap when
    /// one is set, uploads sharing it).
    fn head_limit(&self, len: usize) -> Duration {
        let rate = self
            .pacer
            .as_ref()
            .map_or(SLOWEST_UPLOAD, |p| {
                (p.bytes_per_second() as f64 / 8.0).min(SLOWEST_UPLOAD)
            })
            .max(1.0);
        Duration::from_secs(30) + Duration::from_secs_f64(len as f64 / rate)
    }
}

type PacedBody = http_body_util::combinators::BoxBody<Bytes, HttpError>;

async fn send<IO>(
    io: IO,
    request: http::Request<PacedBody>,
    head_limit: Duration,
) -> Result<HttpResponse, HttpError>
where
    IO: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| HttpError::new(HttpErrorKind::Connect, e))?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(error = %e, "object store connection ended");
        }
    });
    let response = tokio::time::timeout(head_limit, sender.send_request(request))
        .await
        .map_err(|_| {
            error(
                HttpErrorKind::Timeout,
                "no response from the object store in time",
            )
        })?
        .map_err(|e| {
            let kind = if e.is_timeout() {
                HttpErrorKind::Timeout
            } else {
                HttpErrorKind::Request
            };
            HttpError::new(kind, e)
        })?;
    let (parts, body) = response.into_parts();
    // A body that stops delivering fails after BODY_IDLE instead of holding its reader.
    let frames = futures_util::stream::unfold(body, |mut body| async move {
        match tokio::time::timeout(BODY_IDLE, body.frame()).await {
            Err(_) => Some((
                Err(error(HttpErrorKind::Timeout, "object store body stalled")),
                body,
            )),
            Ok(None) => None,
            Ok(Some(frame)) => Some((
                frame.map_err(|e| HttpError::new(HttpErrorKind::Interrupted, e)),
                body,
            )),
        }
    });
    Ok(HttpResponse::from_parts(
        parts,
        HttpResponseBody::new(StreamBody::new(frames)),
    ))
}

/// The request body as it goes out: unchanged without a pacer, else in pieces of at
/// most [`PACED_PIECE`] bytes, each let through by the pacer.
fn paced(body: HttpRequestBody, pacer: Option<Arc<Pacer>>) -> PacedBody {
    let Some(pacer) = pacer.filter(|_| body.content_length() > 0) else {
        return body.boxed();
    };
    let pieces = futures_util::stream::unfold(
        (body, Bytes::new(), pacer),
        |(mut body, mut rest, pacer)| async move {
            loop {
                if !rest.is_empty() {
                    let piece = rest.split_to(rest.len().min(PACED_PIECE));
                    pacer.take(piece.len()).await;
                    return Some((Ok(Frame::data(piece)), (body, rest, pacer)));
                }
                match body.frame().await? {
                    Ok(frame) => match frame.into_data() {
                        Ok(data) => rest = data,
                        Err(frame) => return Some((Ok(frame), (body, rest, pacer))),
                    },
                    Err(e) => return Some((Err(e), (body, rest, pacer))),
                }
            }
        },
    );
    StreamBody::new(pieces).boxed()
}
