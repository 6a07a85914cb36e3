//! The fault-injection admin API (FIT-1), behind the same bearer token as the rest of
//! `/api`:
//!
//! - `POST /api/fault-rules` with
//!   `{"min_priority":0,"max_priority":29,"devices":["smart_tv"],"members":["alice"],"share":0.5,"duration_seconds":300}`
//!   (only `duration_seconds` is required; priorities default to the whole 0..=99
//!   scale, absent `devices`/`members` mean any, `share` defaults to 1) → `201 {"id":N}`;
//! - `GET /api/fault-rules` → `{"rules":[{"id","min_priority","max_priority","devices",
//!   "members","share","remaining_seconds","injected"}]}` (`members` is the count: only
//!   hashes are kept);
//! - `DELETE /api/fault-rules/{id}` → `{"id":N,"injected":K}`.
//!
//! Errors are `{"code":N,"message":"..."}`: 400 naming the bad field, 404 for an
//! unknown id, 409 when the cap of active rules is reached.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};
use shed::fault::MAX_MEMBERS_PER_RULE;
use shed::{DeviceSet, DeviceType, FaultError, FaultRuleSpec, Priority, RuleId};

use crate::http::extract::{CodedBody, CodedPath};
use crate::routes::auth::Admin;
use crate::state::AppState;
use shed::member_id;

/// The fields `POST /api/fault-rules` accepts.
const FIELDS: [&str; 6] = [
    "min_priority",
    "max_priority",
    "devices",
    "members",
    "share",
    "duration_seconds",
];

/// An answer of this API that is not a success: a code of the
/// [`codes::FaultRuleError`] family, and the field at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FaultApiError {
    /// The body or a field is unusable: the field (`body` for the body itself) and why.
    #[error("{field}: {reason}")]
    BadRequest {
        /// The field at fault (an unknown key is named as the caller sent it, cut to 40
        /// characters).
        field: Cow<'static, str>,
        /// Why (logged, not sent).
        reason: String,
    },
    /// No active rule has this id.
    #[error("no such fault rule")]
    NotFound,
    /// The cap of active rules is reached.
    #[error("fault rules full: {0} active rules, remove one first")]
    Full(usize),
}

impl IntoResponse for FaultApiError {
    fn into_response(self) -> Response {
        let (code, field) = match &self {
            FaultApiError::BadRequest { field, reason } => {
                tracing::info!(field = %field, reason = %reason, "fault rule refused");
                (codes::FaultRuleError::Invalid, Some(field.as_ref()))
            }
            FaultApiError::NotFound => (codes::FaultRuleError::UnknownRule, None),
            FaultApiError::Full(_) => (codes::FaultRuleError::Full, None),
        };
        crate::error::respond(codes::Code::FaultRule(code), field)
    }
}

impl From<FaultError> for FaultApiError {
    fn from(e: FaultError) -> Self {
        match e {
            FaultError::Full { cap } => FaultApiError::Full(cap),
            FaultError::UnknownRule(_) => FaultApiError::NotFound,
            FaultError::Invalid { key, reason } => {
                let field = match key {
                    "priorities" => "min_priority",
                    "expires_at" => "duration_seconds",
                    other => other,
                };
                bad(field, reason)
            }
        }
    }
}

fn bad(field: &'static str, reason: &str) -> FaultApiError {
    FaultApiError::BadRequest {
        field: Cow::Borrowed(field),
        reason: reason.to_owned(),
    }
}

fn priority(
    map: &Map<String, Value>,
    field: &'static str,
    default: Priority,
) -> Result<Priority, FaultApiError> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v
            .as_u64()
            .and_then(|n| u8::try_from(n).ok())
            .and_then(Priority::new)
            .ok_or_else(|| bad(field, "must be an integer between 0 and 99")),
    }
}

/// The strings of an optional array field; `None` when absent or null.
fn strings<'a>(
    map: &'a Map<String, Value>,
    field: &'static str,
) -> Result<Option<Vec<&'a str>>, FaultApiError> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .ok_or_else(|| bad(field, "must be a list of strings"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(bad(field, "must be a list of strings")),
    }
}

/// Turns the request body into a rule spec and its duration, naming the first bad
/// field.
fn parse_rule(
    body: &[u8],
    max_duration: Duration,
) -> Result<(FaultRuleSpec, Duration), FaultApiError> {
    let value: Value =
        serde_json::from_slice(body).map_err(|_| bad("body", "is not valid JSON"))?;
    let Value::Object(map) = value else {
        return Err(bad("body", "must be a JSON object"));
    };
    if let Some(unknown) = map.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(FaultApiError::BadRequest {
            field: Cow::Owned(unknown.chars().take(40).collect()),
            reason: "unknown field".to_owned(),
        });
    }
    let min_priority = priority(&map, "min_priority", Priority::BOTTOM)?;
    let max_priority = priority(&map, "max_priority", Priority::TOP)?;
    let devices = match strings(&map, "devices")? {
        None => None,
        Some(names) => {
            let mut set = DeviceSet::default();
            for name in names {
                let device = DeviceType::from_name(name)
                    .ok_or_else(|| bad("devices", "unknown device type"))?;
                set = set.with(device);
            }
            Some(set)
        }
    };
    let members = match strings(&map, "members")? {
        None => None,
        Some(names) => {
            if names.len() > MAX_MEMBERS_PER_RULE {
                return Err(bad("members", "lists too many members"));
            }
            let mut set = BTreeSet::new();
            for name in names {
                set.insert(
                    member_id(name.as_bytes())
                        .ok_or_else(|| bad("members", "empty member name"))?,
                );
            }
            Some(set)
        }
    };
    let share = match map.get("share") {
        None | Some(Value::Null) => 1.0,
        Some(v) => v
            .as_f64()
            .filter(|s| (0.0..=1.0).contains(s))
            .ok_or_else(|| bad("share", "must be a number between 0 and 1"))?,
    };
    let seconds = map
        .get("duration_seconds")
        .ok_or_else(|| bad("duration_seconds", "is required"))?
        .as_u64()
        .filter(|s| *s >= 1)
        .ok_or_else(|| bad("duration_seconds", "must be a positive integer"))?;
    let duration = Duration::from_secs(seconds);
    if duration > max_duration {
        return Err(bad(
            "duration_seconds",
            "exceeds shedding.max_fault_rule_seconds",
        ));
    }
    let spec = FaultRuleSpec {
        min_priority,
        max_priority,
        devices,
        members,
        share,
        expires_at: Duration::ZERO,
    };
    Ok((spec, duration))
}

/// `POST /api/fault-rules`: add a rule.
pub async fn add(
    State(state): State<AppState>,
    _admin: Admin,
    CodedBody(body): CodedBody,
) -> Response {
    let shedder = state.shedder();
    let rules = shedder.faults();
    let added = parse_rule(&body, rules.max_rule_duration())
        .and_then(|(spec, duration)| Ok(rules.add(spec, duration, shedder.now())?));
    match added {
        Ok(id) => {
            tracing::info!(rule = id.0, "fault rule added");
            (StatusCode::CREATED, Json(json!({ "id": id.0 }))).into_response()
        }
        Err(e) => e.into_response(),
    }
}

/// `GET /api/fault-rules`: the active rules with their counters and time left.
pub async fn list(State(state): State<AppState>, _admin: Admin) -> Response {
    let shedder = state.shedder();
    let rules: Vec<serde_json::Value> = shedder
        .faults()
        .list(shedder.now())
        .into_iter()
        .map(|r| {
            let devices = r.spec.devices.map(|set| {
                DeviceType::ALL
                    .into_iter()
                    .filter(|d| set.contains(*d))
                    .map(DeviceType::as_str)
                    .collect::<Vec<_>>()
            });
            json!({
                "id": r.id.0,
                "min_priority": r.spec.min_priority.get(),
                "max_priority": r.spec.max_priority.get(),
                "devices": devices,
                "members": r.spec.members.as_ref().map(BTreeSet::len),
                "share": r.spec.share,
                "remaining_seconds": r.remaining.as_secs_f64(),
                "injected": r.injected,
            })
        })
        .collect();
    Json(json!({ "rules": rules })).into_response()
}

/// `DELETE /api/fault-rules/{id}`: remove a rule, answering its final counter.
pub async fn remove(
    State(state): State<AppState>,
    _admin: Admin,
    CodedPath(id): CodedPath<String>,
) -> Response {
    let Ok(id) = id.parse::<u64>() else {
        return bad("id", "must be a number").into_response();
    };
    let shedder = state.shedder();
    match shedder.faults().remove(RuleId(id), shedder.now()) {
        Ok(injected) => {
            tracing::info!(rule = id, injected, "fault rule removed");
            Json(json!({ "id": id, "injected": injected })).into_response()
        }
        Err(e) => FaultApiError::from(e).into_response(),
    }
}
