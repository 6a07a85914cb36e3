//! The experiments admin API and page (EXP-2), behind the admin token like every `/api`
//! route:
//!
//! - `GET /api/experiments?history=N` → the status: definitions with their next run and
//!   last status per device, runs in progress with interim verdicts, the newest `N`
//!   finished runs (default 20, at most 200) and the recent alerts;
//! - `POST /api/experiments` with a definition (JSON, the `[[experiment]]` fields) →
//!   `201 {"id"}` when added, `200 {"id"}` when it replaced one;
//! - `DELETE /api/experiments/{id}` → `200 {"id"}` (a run in progress is aborted);
//! - `POST /api/experiments/{id}/start` → `200 {"run","ends_at_ms"}`;
//! - `GET /api/experiments/report` → this node's KPIs of the runs in progress, which the
//!   other nodes of the domain pull;
//! - `GET /experiments` → the Experiments page (embedded HTML reading the API).
//!
//! Errors are `{"code":N,"message":"..."}` with the codes of [`ExperimentsApiError`].

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use bytes::Bytes;
use experiments::{CommandError, DefinitionError, ExperimentDefinition, ExperimentEvent};
use serde::Deserialize;
use serde_json::json;

use crate::auth::Admin;
use crate::clock::unix_ms_u64;
use crate::state::AppState;

static EXPERIMENTS_HTML: &str = include_str!("../../assets/experiments.html");

/// Largest definition body accepted, bytes.
pub const MAX_DEFINITION_BYTES: usize = 16 * 1024;

/// An answer of the experiments routes (and `/telemetry`) that is not a success.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExperimentsApiError {
    /// 106001 / 400: the beacon is not of the beacon format; the message names the field.
    #[error("{0}")]
    BadBeacon(String),
    /// 106002 / 413: the body is larger than the route accepts.
    #[error("body too large")]
    TooLarge,
    /// 106010 / 400: the definition cannot work; the message names the field.
    #[error("{0}")]
    BadDefinition(String),
    /// 106011 / 404: no experiment has this id.
    #[error("no such experiment")]
    UnknownExperiment,
    /// 106012 / 409: the experiment already runs, or is disabled.
    #[error("{0}")]
    Conflict(String),
}

impl ExperimentsApiError {
    /// The HTTP status and public code of each kind (one table).
    pub fn status_and_code(&self) -> (StatusCode, u32) {
        match self {
            Self::BadBeacon(_) => (StatusCode::BAD_REQUEST, 106_001),
            Self::TooLarge => (StatusCode::PAYLOAD_TOO_LARGE, 106_002),
            Self::BadDefinition(_) => (StatusCode::BAD_REQUEST, 106_010),
            Self::UnknownExperiment => (StatusCode::NOT_FOUND, 106_011),
            Self::Conflict(_) => (StatusCode::CONFLICT, 106_012),
        }
    }
}

impl IntoResponse for ExperimentsApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        crate::http_util::json_error(status, code, &self.to_string())
    }
}

impl From<DefinitionError> for ExperimentsApiError {
    fn from(e: DefinitionError) -> Self {
        Self::BadDefinition(e.to_string())
    }
}

impl From<CommandError> for ExperimentsApiError {
    fn from(e: CommandError) -> Self {
        match e {
            CommandError::UnknownExperiment(_) | CommandError::NotRunning(_) => {
                Self::UnknownExperiment
            }
            other => Self::Conflict(other.to_string()),
        }
    }
}

/// `GET /experiments`: the page.
pub async fn page() -> Response {
    crate::http_util::page(EXPERIMENTS_HTML)
}

/// Query of `GET /api/experiments`.
#[derive(Debug, Deserialize)]
pub struct StatusQuery {
    /// Finished runs to include (default 20, at most 200).
    history: Option<usize>,
}

/// `GET /api/experiments`: the status.
pub async fn status(
    State(state): State<AppState>,
    _admin: Admin,
    Query(query): Query<StatusQuery>,
) -> Response {
    let history = query.history.unwrap_or(20).min(200);
    let mut body = state
        .shedder()
        .experiments()
        .status_json(unix_ms_u64(), history);
    if let serde_json::Value::Object(map) = &mut body {
        map.insert("node".to_string(), json!(state.node().name));
    }
    no_cache(Json(body).into_response())
}

/// `POST /api/experiments`: add or replace a definition.
pub async fn upsert(State(state): State<AppState>, _admin: Admin, body: Bytes) -> Response {
    if body.len() > MAX_DEFINITION_BYTES {
        return ExperimentsApiError::TooLarge.into_response();
    }
    let Ok(text) = std::str::from_utf8(&body) else {
        return ExperimentsApiError::BadDefinition("body is not UTF-8".into()).into_response();
    };
    let def = match ExperimentDefinition::from_json(text) {
        Ok(def) => def,
        Err(e) => return ExperimentsApiError::from(e).into_response(),
    };
    let id = def.id.clone();
    match state.shedder().experiments().upsert(def, unix_ms_u64()) {
        Ok(replaced) => {
            tracing::info!(experiment = %id, replaced, "experiment definition set");
            let status = if replaced {
                StatusCode::OK
            } else {
                StatusCode::CREATED
            };
            (status, Json(json!({ "id": id, "replaced": replaced }))).into_response()
        }
        Err(e) => ExperimentsApiError::from(e).into_response(),
    }
}

/// `DELETE /api/experiments/{id}`: remove a definition.
pub async fn remove(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Response {
    match state.shedder().experiments().remove(&id, unix_ms_u64()) {
        Ok(()) => {
            tracing::info!(experiment = %id, "experiment definition removed");
            Json(json!({ "id": id })).into_response()
        }
        Err(e) => ExperimentsApiError::from(e).into_response(),
    }
}

/// `POST /api/experiments/{id}/start`: start a run now.
pub async fn start(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Response {
    match state.shedder().experiments().start_now(&id, unix_ms_u64()) {
        Ok(ExperimentEvent::Started { run, ends_at_ms }) => {
            Json(json!({ "run": run, "ends_at_ms": ends_at_ms })).into_response()
        }
        Ok(_) => Json(json!({ "id": id })).into_response(),
        Err(e) => ExperimentsApiError::from(e).into_response(),
    }
}

/// `GET /api/experiments/report`: this node's KPIs of the runs in progress.
pub async fn report(State(state): State<AppState>, _admin: Admin) -> Response {
    no_cache(Json(state.shedder().experiments().local_report()).into_response())
}

fn no_cache(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
