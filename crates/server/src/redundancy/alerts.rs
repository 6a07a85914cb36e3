//! Alerts 70/78/79 on a node (OTT-OPS-3): the pure state machine of `ott::AlertState`
//! fed every tick with the group reports and the overload-refusal counter, and the
//! changes delivered to the log, `/metrics`, the Backups screen and a webhook in the
//! Prometheus Alertmanager format (`POST /api/v2/alerts`, a JSON array of alerts;
//! a cleared alert carries `endsAt`).

use std::collections::VecDeque;
use std::fmt::Write as _;

use serde_json::{json, Value};

/// Changes kept for the Backups screen.
const RECENT: usize = 50;

/// The alerts of one node: the debounce state, what fires now, and recent changes.
#[derive(Default)]
pub struct AlertBook {
    state: ott::AlertState,
    recent: VecDeque<ott::AlertChange>,
}

/// The `alertname` of an alert code.
pub fn alert_name(code: ott::AlertCode) -> &'static str {
    code.name()
}

fn labels(key: &ott::AlertKey, node: &str) -> Value {
    let mut labels = json!({
        "alertname": alert_name(key.code),
        "code": key.code.number().to_string(),
        "severity": match key.code {
            ott::AlertCode::Unprotected | ott::AlertCode::Overload => "critical",
            ott::AlertCode::MemberProblem => "warning",
        },
        "instance": node,
        "service": "brdyun",
    });
    if let Some(group) = &key.group {
        labels["group"] = json!(group);
    }
    if let Some(subject) = &key.node {
        labels["node"] = json!(subject.as_str());
    }
    labels
}

/// RFC 3339 UTC text of a Unix-ms instant.
pub fn rfc3339(ms: i64) -> String {
    let mut text = String::with_capacity(24);
    let _ = media::hls::format_rfc3339_ms(&mut text, ms);
    text
}

/// The Alertmanager body for some changes reported by `node`.
pub fn alertmanager_body(changes: &[ott::AlertChange], node: &str) -> String {
    let alerts: Vec<Value> = changes
        .iter()
        .map(|change| {
            let mut alert = json!({
                "labels": labels(&change.key, node),
                "annotations": { "summary": change.summary },
                "startsAt": rfc3339(change.at_ms),
            });
            if change.kind == ott::AlertKind::Cleared {
                alert["endsAt"] = json!(rfc3339(change.at_ms));
            }
            alert
        })
        .collect();
    Value::Array(alerts).to_string()
}

/// Why a webhook delivery failed.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// The URL is not an `http://` URL this client can reach.
    #[error("webhook url is not a valid http:// url")]
    BadUrl,
    /// Connecting or sending failed.
    #[error("webhook request failed: {0}")]
    Request(String),
    /// The receiver answered with an error status.
    #[error("webhook answered {0}")]
    Status(u16),
    /// No answer in time.
    #[error("webhook timed out")]
    Timeout,
}

/// Posts an Alertmanager body to `url` (plain `http://`, as Alertmanager is usually
/// reached inside the operator's network), waiting at most `timeout`.
///
/// # Errors
/// [`WebhookError`] naming what failed; the caller logs it and drops the batch.
pub async fn post_webhook(
    url: &str,
    body: String,
    timeout: std::time::Duration,
) -> Result<(), WebhookError> {
    use http_body_util::Full;
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;
    let uri: axum::http::Uri = url.parse().map_err(|_| WebhookError::BadUrl)?;
    if uri.scheme_str() != Some("http") || uri.host().is_none() {
        return Err(WebhookError::BadUrl);
    }
    let request = axum::http::Request::post(uri)
        .header(axum::http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(bytes::Bytes::from(body)))
        .map_err(|_| WebhookError::BadUrl)?;
    let client = Client::builder(TokioExecutor::new()).build_http();
    let response = tokio::time::timeout(timeout, client.request(request))
        .await
        .map_err(|_| WebhookError::Timeout)?
        .map_err(|e| WebhookError::Request(e.to_string()))?;
    let status = response.status();
    if status.is_success() {
        Ok(())
    } else {
        Err(WebhookError::Status(status.as_u16()))
    }
}

impl AlertBook {
    /// Advances the alert machine; returns the changes of this tick (also logged and
    /// kept for the screen).
    pub fn tick(
        &mut self,
        now_ms: i64,
        refusals_total: u64,
        groups: &[ott::GroupReport],
    ) -> Vec<ott::AlertChange> {
        let changes = self.state.update(
            now_ms,
            ott::Observations {
                refusals_total,
                groups,
            },
        );
        for change in &changes {
            let code = change.key.code.number();
            let group = change.key.group.as_deref().unwrap_or("-");
            let node = change.key.node.as_ref().map_or("-", |n| n.as_str());
            match change.kind {
                ott::AlertKind::Raised => tracing::warn!(
                    code,
                    alert = alert_name(change.key.code),
                    group,
                    node,
                    summary = %change.summary,
                    "alert raised"
                ),
                ott::AlertKind::Cleared => tracing::info!(
                    code,
                    alert = alert_name(change.key.code),
                    group,
                    node,
                    "alert cleared"
                ),
            }
            if self.recent.len() == RECENT {
                self.recent.pop_front();
            }
            self.recent.push_back(change.clone());
        }
        changes
    }

    /// The alerts firing now with their summaries.
    pub fn active(&self) -> Vec<(ott::AlertKey, String)> {
        self.state.active()
    }

    /// `brdyun_ott_alert_active{code,alertname,group,node} 1` per firing alert.
    pub fn render_metrics(&self, out: &mut String) {
        for (key, _) in self.active() {
            let _ = writeln!(
                out,
                "brdyun_ott_alert_active{{code=\"{}\",alertname=\"{}\",group=\"{}\",node=\"{}\"}} 1",
                key.code.number(),
                alert_name(key.code),
                crate::metrics::label(key.group.as_deref().unwrap_or("")),
                crate::metrics::label(key.node.as_ref().map_or("", |n| n.as_str())),
            );
        }
    }

    /// The alerts for the Backups screen: firing now, and recent changes, newest first.
    pub fn to_json(&self) -> Value {
        let key_json = |key: &ott::AlertKey| {
            json!({
                "code": key.code.number(),
                "name": alert_name(key.code),
                "group": key.group,
                "node": key.node.as_ref().map(|n| n.as_str().to_owned()),
            })
        };
        let active: Vec<Value> = self
            .active()
            .iter()
            .map(|(key, summary)| {
                let mut v = key_json(key);
                v["summary"] = json!(summary);
                v
            })
            .collect();
        let recent: Vec<Value> = self
            .recent
            .iter()
            .rev()
            .map(|c| {
                let mut v = key_json(&c.key);
                v["kind"] = json!(match c.kind {
                    ott::AlertKind::Raised => "raised",
                    ott::AlertKind::Cleared => "cleared",
                });
                v["at_ms"] = json!(c.at_ms);
                v["summary"] = json!(c.summary);
                v
            })
            .collect();
        json!({ "active": active, "recent": recent })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alertmanager_body_has_labels_and_ends_for_cleared() {
        let key = ott::AlertKey {
            code: ott::AlertCode::Overload,
            group: None,
            node: Some(ott::NodeId::new("b")),
        };
        let raised = ott::AlertChange {
            key: key.clone(),
            kind: ott::AlertKind::Raised,
            at_ms: 1_700_000_000_000,
            summary: "refusing".into(),
        };
        let cleared = ott::AlertChange {
            kind: ott::AlertKind::Cleared,
            at_ms: 1_700_000_060_000,
            ..raised.clone()
        };
        let body: Value =
            serde_json::from_str(&alertmanager_body(&[raised, cleared], "node-a")).unwrap();
        assert_eq!(body[0]["labels"]["alertname"], "reserve-ott-overload");
        assert_eq!(body[0]["labels"]["code"], "79");
        assert_eq!(body[0]["labels"]["instance"], "node-a");
        assert_eq!(body[0]["startsAt"], "2023-11-14T22:13:20.000Z");
        assert!(body[0].get("endsAt").is_none());
        assert_eq!(body[1]["endsAt"], "2023-11-14T22:14:20.000Z");
    }
}
