//! The process's side of its service manager (`Type=notify`, `WatchdogSec=`), for
//! `brdyun node` and `brdyun mc`: `READY=1` once the listeners serve, the watchdog
//! while `/healthz` answers, and at SIGTERM `STOPPING=1`, readiness withdrawn for the
//! drain-out delay, then the stop. Without `$NOTIFY_SOCKET` only the drain-out runs.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use server::health::Health;
use server::notify::watchdog::Watchdog;
use server::notify::{watchdog_period_from_env, Notifier};

/// The notifications of one running process.
pub struct Service {
    notifier: Option<Arc<Notifier>>,
    watchdog: Option<Watchdog>,
}

impl Service {
    /// Says `READY=1` (the listeners serve: call after they are bound and served) and
    /// starts the watchdog on the plain-HTTP listener `http` when the manager asks for
    /// one.
    pub fn ready(http: SocketAddr) -> Self {
        let notifier = Notifier::from_env().map(Arc::new);
        let mut watchdog = None;
        if let Some(notifier) = &notifier {
            notifier.ready();
            if let Some(period) = watchdog_period_from_env() {
                match Watchdog::start(Arc::clone(notifier), period, http) {
                    Ok(started) => watchdog = Some(started),
                    Err(error) => tracing::error!(%error, "watchdog thread not started"),
                }
            }
        }
        Self { notifier, watchdog }
    }

    /// The first step of a stop: `STOPPING=1`, then readiness withdrawn (115010) for
    /// `delay` while the listeners still answer, so load balancers take the process
    /// out before it closes. The watchdog pings on meanwhile and stops after.
    pub async fn stopping(mut self, health: &Health, delay: Duration) {
        if let Some(notifier) = &self.notifier {
            notifier.stopping();
        }
        health.begin_shutdown();
        if !delay.is_zero() {
            tracing::info!(
                delay_ms = delay.as_millis() as u64,
                "not ready: draining out before the listeners close"
            );
            tokio::time::sleep(delay).await;
        }
        if let Some(watchdog) = self.watchdog.take() {
            // Joins the thread: at most one probe's timeout.
            let _ = tokio::task::spawn_blocking(move || watchdog.stop()).await;
        }
    }
}
