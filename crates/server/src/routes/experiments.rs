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

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use experiments::{CommandError, DefinitionError, ExperimentDefinition, ExperimentEvent};
use serde::Deserialize;
use serde_json::json;

use crate::http::extract::{CodedBody, CodedPath, CodedQuery};
use crate::routes::auth::Admin;
use crate::state::AppState;

static EXPERIMENTS_HTML: &str = include_str!("../../assets/experiments.html");

/// Largest definition body accepted, bytes.
pub const MAX_DEFINITION_BYTES: usize = 16 * 1024;

/// A refusal of the experiments API or the KPI beacon sink: a code of the
/// [`codes::ExperimentsError`] family, and the name of the caller's input at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExperimentsApiError {
    /// 106001 / 400: the beacon is not of the beacon format; the field at fault, if one.
    BadBeacon(Option<&'static str>),
    /// 106002 / 413: the body is larger than the route accepts.
    TooLarge,
    /// 106010 / 400: the definition cannot work; the dotted path of the value at fault,
    /// if the definition parsed that far.
    BadDefinition(Option<String>),
    /// 106011 / 404: no experiment has this id.
    UnknownExperiment,
    /// 106012 / 409: the experiment already runs, or is disabled.
    Conflict,
}

impl ExperimentsApiError {
    /// The row of the code table.
    pub fn code(&self) -> codes::ExperimentsError {
        match self {
            Self::BadBeacon(_) => codes::ExperimentsError::BadBeacon,
            Self::TooLarge => codes::ExperimentsError::TooLarge,
            Self::BadDefinition(_) => codes::ExperimentsError::BadDefinition,
            Self::UnknownExperiment => codes::ExperimentsError::UnknownExperiment,
            Self::Conflict => codes::ExperimentsError::Conflict,
        }
    }

    fn field(&self) -> Option<&str> {
        match self {
            Self::BadBeacon(field) => *field,
            Self::BadDefinition(field) => field.as_deref(),
            _ => None,
        }
    }
}

impl IntoResponse for ExperimentsApiError {
    fn into_response(self) -> Response {
        crate::error::respond(codes::Code::Experiments(self.code()), self.field())
    }
}

impl From<DefinitionError> for ExperimentsApiError {
    fn from(e: DefinitionError) -> Self {
        // The reason (or the parser's message) is logged, not sent: the client gets the
        // code and the path of the value at fault.
        tracing::info!(error = %e, "experiment definition refused");
        match e {
            DefinitionError::Invalid { field, .. } => Self::BadDefinition(Some(field)),
            DefinitionError::Parse(_) => Self::BadDefinition(None),
        }
    }
}

impl From<CommandError> for ExperimentsApiError {
    fn from(e: CommandError) -> Self {
        match e {
            CommandError::UnknownExperiment(_) | CommandError::NotRunning(_) => {
                Self::UnknownExperiment
            }
            other => {
                tracing::info!(error = %other, "experiment command refused");
                Self::Conflict
            }
        }
    }
}

/// `GET /experiments`: the page.
pub async fn page() -> Response {
    crate::http::http_util::page(EXPERIMENTS_HTML)
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
    CodedQuery(query): CodedQuery<StatusQuery>,
) -> Response {
    let history = query.history.unwrap_or(20).min(200);
    let mut body = state
        .shedder()
        .experiments()
        .status_json(state.clock().unix_ms_u64(), history);
    if let serde_json::Value::Object(map) = &mut body {
        map.insert("node".to_string(), json!(state.node().name));
    }
    no_cache(Json(body).into_response())
}

/// `POST /api/experiments`: add or replace a definition.
pub async fn upsert(
    State(state): State<AppState>,
    _admin: Admin,
    CodedBody(body): CodedBody,
) -> Response {
    if body.len() > MAX_DEFINITION_BYTES {
        return ExperimentsApiError::TooLarge.into_response();
    }
    let Ok(text) = std::str::from_utf8(&body) else {
        return ExperimentsApiError::BadDefinition(None).into_response();
    };
    let def = match ExperimentDefinition::from_json(text) {
        Ok(def) => def,
        Err(e) => return ExperimentsApiError::from(e).into_response(),
    };
    let id = def.id.clone();
    match state
        .shedder()
        .experiments()
        .upsert(def, state.clock().unix_ms_u64())
    {
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
    CodedPath(id): CodedPath<String>,
) -> Response {
    match state
        .shedder()
        .experiments()
        .remove(&id, state.clock().unix_ms_u64())
    {
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
    CodedPath(id): CodedPath<String>,
) -> Response {
    match state
        .shedder()
        .experiments()
        .start_now(&id, state.clock().unix_ms_u64())
    {
        Ok(ExperimentEvent::Started { run, ends_at_ms }) => {
            Json(json!({ "run": run, "ends_at_ms": ends_at_ms })).into_response()
        }
        Ok(_) => Json(json!({ "id": id })).into_response(),
        Err(e) => ExperimentsApiError::from(e).into_response(),
    }
}

/// `GET /api/experiments/report`: this node's KPIs of the runs in progress, for a
/// peer of its domain (signed with the domain's peer key, see
/// [`crate::experiments::peer_auth`]) or an operator (the admin token).
pub async fn report(State(state): State<AppState>, headers: axum::http::HeaderMap) -> Response {
    let now_s = state.clock().unix_ms() / 1000;
    let peer = state
        .redundancy()
        .and_then(|r| r.peer_key.get())
        .is_some_and(|key| key.verify(&headers, crate::experiments::peers::REPORT_PATH, now_s));
    if !peer {
        if let Err(refused) = crate::routes::auth::authorize(&state, &headers) {
            return refused.into_response();
        }
    }
    no_cache(Json(state.shedder().experiments().local_report()).into_response())
}

fn no_cache(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
