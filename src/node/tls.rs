//! The node's HTTPS certificate at run time (OTT-ADDR-3): loaded at start, checked
//! against the names HTTPS viewers will use (the node's `hostname` and the hosts of its
//! announced `https://` addresses), and reloaded on SIGHUP so a renewed certificate is
//! served without a restart. A certificate that does not cover those names is logged
//! as an error and announced to the mesh, where it is the named problem
//! `certificate-not-for-hostname` and no HTTPS viewer is sent here.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use server::http::tls::CertificateStore;
use tokio::sync::watch;
use tokio::task::JoinSet;

/// The certificate in use and what the mesh is told about it.
#[derive(Debug, Clone)]
pub struct NodeTls {
    /// The certificate and key, swapped in place on reload.
    pub store: Arc<CertificateStore>,
    /// The certificate does not cover every name in `names`.
    pub mismatch: Arc<AtomicBool>,
    names: Vec<String>,
    /// What the certificate serves, for log lines: `https` or `rtmps`.
    purpose: &'static str,
}

impl NodeTls {
    /// Loads the pair and checks it against `names` (DNS names HTTPS viewers use).
    ///
    /// # Errors
    /// The files cannot be read or do not make a pair.
    pub fn load(cert: &Path, key: &Path, names: Vec<String>) -> anyhow::Result<Self> {
        Self::load_for("https", cert, key, names)
    }

    /// [`NodeTls::load`] for another TLS listener (`purpose`, e.g. `rtmps`, names it in
    /// the log lines): the same hostname check and SIGHUP reload.
    ///
    /// # Errors
    /// The files cannot be read or do not make a pair.
    pub fn load_for(
        purpose: &'static str,
        cert: &Path,
        key: &Path,
        names: Vec<String>,
    ) -> anyhow::Result<Self> {
        let tls = Self {
            store: CertificateStore::load(cert, key)?,
            mismatch: Arc::new(AtomicBool::new(false)),
            names,
            purpose,
        };
        tls.check();
        Ok(tls)
    }

    /// Checks the certificate in use against the names, logs each one it does not
    /// cover, and records the result for the mesh.
    fn check(&self) {
        let uncovered: Vec<&str> = self
            .names
            .iter()
            .map(String::as_str)
            .filter(|name| !self.store.covers(name))
            .collect();
        for name in uncovered.iter().filter(|_| self.purpose != "https") {
            tracing::error!(
                certificate = %self.store.cert_path().display(),
                name,
                purpose = self.purpose,
                "the {} certificate is not issued for {name}: publishers that verify it refuse \
                 it (SIGHUP reloads it)",
                self.purpose
            );
        }
        for name in uncovered.iter().filter(|_| self.purpose == "https") {
            tracing::error!(
                certificate = %self.store.cert_path().display(),
                name,
                "the https certificate is not issued for {name}: browsers refuse it there, and \
                 the mesh sends no https viewer to this node until a certificate for it is \
                 loaded (SIGHUP reloads it)"
            );
        }
        self.mismatch
            .store(!uncovered.is_empty(), Ordering::Relaxed);
    }

    /// Reloads the certificate on every SIGHUP until `shutdown`; a bad new pair is
    /// logged and the one in use stays.
    pub fn reload_on_sighup(&self, mut shutdown: watch::Receiver<bool>, tasks: &mut JoinSet<()>) {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let mut hangup = match signal(SignalKind::hangup()) {
                Ok(hangup) => hangup,
                Err(error) => {
                    tracing::warn!(%error, "no SIGHUP handler: certificates reload only on restart");
                    return;
                }
            };
            let tls = self.clone();
            tasks.spawn(async move {
                loop {
                    tokio::select! {
                        got = hangup.recv() => if got.is_none() { break },
                        _ = shutdown.wait_for(|s| *s) => break,
                    }
                    match tls.store.reload() {
                        Ok(()) => {
                            tracing::info!(
                                certificate = %tls.store.cert_path().display(),
                                purpose = tls.purpose,
                                "{} certificate reloaded",
                                tls.purpose
                            );
                            tls.check();
                        }
                        Err(error) => tracing::error!(
                            %error,
                            purpose = tls.purpose,
                            "{} certificate not reloaded: the one in use stays",
                            tls.purpose
                        ),
                    }
                }
            });
        }
        #[cfg(not(unix))]
        let _ = (&mut shutdown, tasks);
    }
}

/// The DNS names HTTPS viewers reach this node by: its `hostname` and the hosts of its
/// announced `https://` addresses (IP addresses are never HTTPS backups, OTT-ADDR-3).
pub fn viewer_names(hostname: Option<&str>, announce: &[String]) -> Vec<String> {
    let mut names: Vec<String> = hostname.map(str::to_owned).into_iter().collect();
    for url in announce {
        let Some(rest) = url.strip_prefix("https://") else {
            continue;
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        if authority.starts_with('[') {
            continue;
        }
        let host = authority.split(':').next().unwrap_or_default();
        if !host.is_empty()
            && host.parse::<std::net::IpAddr>().is_err()
            && !names.iter().any(|n| n.eq_ignore_ascii_case(host))
        {
            names.push(host.to_owned());
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::viewer_names;

    #[test]
    fn viewer_names_are_the_host_name_and_https_announce_hosts() {
        let announce = [
            "https://cdn-a.example.net:8443/".to_owned(),
            "http://plain.example.net:8080".to_owned(),
            "https://203.0.113.7:8443".to_owned(),
            "https://[2001:db8::1]:8443".to_owned(),
            "https://NODE-A.example.net".to_owned(),
        ];
        assert_eq!(
            viewer_names(Some("node-a.example.net"), &announce),
            ["node-a.example.net", "cdn-a.example.net"]
        );
        assert!(viewer_names(None, &[]).is_empty());
    }
}
