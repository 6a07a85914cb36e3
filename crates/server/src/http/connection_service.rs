//! The application as hyper's service on one connection. Each request gets the
//! connection's [`RequestContext`] beside it
//! ([`crate::http::request_context::ContextService`]) and goes to the connection's own copy
//! of the app, not to a fresh clone of it: hyper's service is called through a shared reference, and
//! the usual adapter (`hyper_util`'s `TowerToHyperService`) clones the whole application
//! for every request — a reference count taken and dropped on every shared part of it,
//! from both cores. The app is asked whether it is ready first; one that is not ready at
//! once (no app here, but the bound does not promise it) is served from a clone that
//! waits for its readiness, as that adapter does. Each request is also counted in flight
//! for the connection's head deadline ([`HeadDeadline`]) until hyper is done with its
//! answer (on HTTP/2 a connection with no request in flight is idle), and its body is bounded in time and bytes ([`crate::http::bounded_body`]).
//! Around it all, each request gets its id and access log line ([`crate::http::request_log`]).

use std::cell::RefCell;
use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use axum::body::Body;
use futures_util::future::Either;
use tower::util::Oneshot;
use tower::ServiceExt as _;

use crate::http::access_log::AccessBody;
use crate::http::bounded_body::{self, BodyChecked};
use crate::http::edge_limits::EdgeLimits;
use crate::http::head_deadline::{Answering, HeadDeadline, InFlight, WatchedBody};
use crate::http::http_app::HttpApp;
use crate::http::request_context::{Connection, RequestContext};
use crate::http::request_id;
use crate::http::request_log::{self, Logged};

/// One connection's service: its app and what each of its requests is told of it.
pub(crate) struct ConnectionService<A> {
    /// Borrowed only inside [`hyper::service::Service::call`], which hyper never
    /// enters twice at once.
    app: RefCell<A>,
    connection: Connection,
    /// The connection's head deadline, told of each request.
    deadline: Option<Arc<HeadDeadline>>,
    /// What each request's body may take.
    limits: EdgeLimits,
}

impl<A: HttpApp> ConnectionService<A> {
    /// Serves `app` on the connection `connection` describes, each request's body
    /// bounded by `limits`.
    pub(crate) fn new(app: A, connection: Connection, limits: EdgeLimits) -> Self {
        Self {
            app: RefCell::new(app),
            connection,
            deadline: None,
            limits,
        }
    }

    /// Counts each request in flight for `deadline` until its answer is done.
    pub(crate) fn watch_heads(&mut self, deadline: Arc<HeadDeadline>) {
        self.deadline = Some(deadline);
    }
}

impl<A: HttpApp> hyper::service::Service<hyper::Request<hyper::body::Incoming>>
    for ConnectionService<A>
{
    type Response = hyper::Response<AccessBody<WatchedBody<Body>>>;
    type Error = Infallible;
    type Future =
        Logged<Answering<BodyChecked<Either<A::Future, Oneshot<A, axum::extract::Request>>>>>;

    fn call(&self, request: hyper::Request<hyper::body::Incoming>) -> Self::Future {
        // The request's id is current while it is answered, here and in every poll.
        let (mut scope, record) = request_log::start(&request, Some(self.connection.peer));
        let answering = request_id::within(&mut scope, || {
            let in_flight = InFlight::start(self.deadline.as_ref());
            let version = request.version();
            let answer = match bounded_body::bound(request, &self.limits) {
                Ok((request, verdict)) => BodyChecked::new(self.answer(request), verdict, version),
                Err(cut) => BodyChecked::refused(cut, version),
            };
            Answering::new(answer, in_flight)
        });
        Logged::new(answering, scope, record)
    }
}

impl<A: HttpApp> ConnectionService<A> {
    fn answer(
        &self,
        request: axum::extract::Request,
    ) -> Either<A::Future, Oneshot<A, axum::extract::Request>> {
        let context = RequestContext {
            connection: Some(self.connection.clone()),
            target: None,
            admitted: None,
        };
        if let Ok(mut app) = self.app.try_borrow_mut() {
            let mut cx = Context::from_waker(Waker::noop());
            if let Poll::Ready(ready) = app.poll_ready(&mut cx) {
                return match ready {
                    Ok(()) => Either::Left(app.call_with(request, context)),
                    Err(never) => match never {},
                };
            }
        }
        let request = context.into_extensions(request);
        Either::Right(self.app.borrow().clone().oneshot(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use axum::extract::Request;
    use axum::response::Response;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    /// An app that counts its clones and its calls, ready at once or only after
    /// `pending` polls, and answers each request with the peer it was told of.
    struct Probe {
        clones: Arc<AtomicUsize>,
        calls: Arc<AtomicUsize>,
        pending: Arc<AtomicUsize>,
    }

    impl Clone for Probe {
        fn clone(&self) -> Self {
            self.clones.fetch_add(1, Ordering::SeqCst);
            Self {
                clones: Arc::clone(&self.clones),
                calls: Arc::clone(&self.calls),
                pending: Arc::clone(&self.pending),
            }
        }
    }

    /// The probe and its clone and call counters.
    fn probe(pending: usize) -> (Probe, Arc<AtomicUsize>, Arc<AtomicUsize>) {
        let (clones, calls) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let probe = Probe {
            clones: Arc::clone(&clones),
            calls: Arc::clone(&calls),
            pending: Arc::new(AtomicUsize::new(pending)),
        };
        (probe, clones, calls)
    }

    impl crate::http::request_context::ContextService for Probe {
        fn call_with(&mut self, request: Request, context: RequestContext) -> Self::Future {
            tower::Service::call(self, context.into_extensions(request))
        }
    }

    impl tower::Service<Request> for Probe {
        type Response = Response;
        type Error = Infallible;
        type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

        fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            if self.pending.load(Ordering::SeqCst) == 0 {
                return Poll::Ready(Ok(()));
            }
            self.pending.fetch_sub(1, Ordering::SeqCst);
            cx.waker().wake_by_ref();
            Poll::Pending
        }

        fn call(&mut self, request: Request) -> Self::Future {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let peer = Connection::of(&request).map(|c| c.peer.to_string());
            Box::pin(async move { Ok(Response::new(Body::from(peer.unwrap_or_default()))) })
        }
    }

    fn connection() -> Connection {
        Connection {
            peer: std::net::SocketAddr::from(([192, 0, 2, 1], 5000)),
            secure: false,
            gate: None,
        }
    }

    /// Serves `requests` one after another over one real HTTP/1.1 connection on
    /// loopback and returns the answers' bodies.
    async fn exchange<A: HttpApp>(app: A, requests: &[&str]) -> Vec<String> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address");
        let server = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.expect("accept");
            let service = ConnectionService::new(app, connection(), EdgeLimits::default());
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
        let mut client = tokio::net::TcpStream::connect(address)
            .await
            .expect("connect");
        let mut bodies = Vec::new();
        for request in requests {
            client.write_all(request.as_bytes()).await.expect("write");
            let mut buffer = vec![0u8; 1024];
            let n = client.read(&mut buffer).await.expect("read");
            let text = String::from_utf8_lossy(&buffer[..n]).into_owned();
            bodies.push(text.rsplit("\r\n\r\n").next().unwrap_or("").to_owned());
        }
        drop(client);
        let _ = server.await;
        bodies
    }

    /// Three GETs over one connection.
    async fn three_requests(app: Probe) -> Vec<String> {
        exchange(app, &["GET / HTTP/1.1\r\nHost: x\r\n\r\n"; 3]).await
    }

    #[tokio::test]
    async fn a_request_body_reaches_the_app_whole_and_a_get_brings_none() {
        // The app answers the body's size hint and bytes.
        async fn echo(request: Request) -> String {
            let hint = hyper::body::Body::size_hint(request.body()).exact();
            let bytes = axum::body::to_bytes(request.into_body(), 1024)
                .await
                .unwrap_or_default();
            format!("{hint:?} {}", String::from_utf8_lossy(&bytes))
        }
        let app = axum::Router::new().route("/", axum::routing::any(echo));
        let bodies = exchange(
            app,
            &[
                "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
                "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
                "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
                "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            ],
        )
        .await;
        assert_eq!(bodies[0], "Some(0) ", "a GET's body is the empty one");
        assert_eq!(bodies[1], "Some(5) hello");
        assert_eq!(bodies[2], "Some(0) ");
        assert_eq!(
            bodies[3], "None abc",
            "a chunked body is streamed to the app"
        );
    }

    #[tokio::test]
    async fn a_ready_app_is_called_itself_with_the_connection_context() {
        let (app, clones, calls) = probe(0);
        let bodies = three_requests(app).await;
        assert_eq!(bodies, vec!["192.0.2.1:5000"; 3]);
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert_eq!(clones.load(Ordering::SeqCst), 0, "no clone per request");
    }

    #[tokio::test]
    async fn an_app_not_ready_at_once_is_served_from_a_clone_that_waits() {
        let (app, clones, calls) = probe(2);
        let bodies = three_requests(app).await;
        assert_eq!(bodies, vec!["192.0.2.1:5000"; 3]);
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert!(
            clones.load(Ordering::SeqCst) >= 1,
            "the request that waited had a clone"
        );
    }
}
