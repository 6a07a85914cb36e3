//! A built-in captioner: posts a cue every few seconds to a meeting's caption API, as a
//! live transcription service would (the demo's meeting has captions from its first
//! second, through the same API and the same path as any captioner's).

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// What the built-in captioner says in English, in turn (a meeting's opening).
pub const SCRIPT_EN: [&str; 8] = [
    "Good morning, everyone, and welcome.",
    "This meeting is delivered by brdyun.",
    "Every node writes the same subtitles.",
    "The captions come through the MC's caption API.",
    "They follow the media to the millisecond.",
    "Pick another language in the player's menu.",
    "Catch-up keeps the captions with the video.",
    "Thank you for watching.",
];

/// The same in Portuguese: a translation feed beside the English one.
pub const SCRIPT_PT: [&str; 8] = [
    "Bom dia a todos, e sejam bem-vindos.",
    "Esta reunião é transmitida pelo brdyun.",
    "Todos os nós escrevem as mesmas legendas.",
    "As legendas chegam pela API de legendas do MC.",
    "Elas acompanham a mídia ao milissegundo.",
    "Escolha outro idioma no menu do player.",
    "O catch-up guarda as legendas com o vídeo.",
    "Obrigado por assistir.",
];

/// How often a cue is posted; each shows a little less than this.
pub const INTERVAL: Duration = Duration::from_secs(4);

/// Posts `script` as track `language` named `name`, one cue per [`INTERVAL`], to the
/// caption API at `url` (`http://mc/api/meetings/{id}/captions`) with `token`, for
/// ever (abort the task to stop it). A refused or failed post is logged at debug level
/// (the meeting may not be live yet) and the feed goes on.
pub async fn run(
    url: String,
    token: Option<String>,
    language: &'static str,
    name: &'static str,
    script: &'static [&'static str],
) {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut tick = tokio::time::interval(INTERVAL);
    for line in script.iter().cycle() {
        tick.tick().await;
        let body = serde_json::json!({
            "language": language,
            "name": name,
            "cues": [{"text": line, "duration_ms": INTERVAL.as_millis() - 300}],
        })
        .to_string();
        let mut request = axum::http::Request::post(&url)
            .header(axum::http::header::CONTENT_TYPE, "application/json");
        if let Some(token) = &token {
            request = request.header(axum::http::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let Ok(request) = request.body(Full::new(Bytes::from(body))) else {
            tracing::warn!(url, "the built-in captioner's url is not valid");
            return;
        };
        match tokio::time::timeout(Duration::from_secs(3), client.request(request)).await {
            Ok(Ok(response)) if response.status().is_success() => {}
            Ok(Ok(response)) => {
                let status = response.status();
                let body = response.into_body().collect().await.map(|b| b.to_bytes());
                tracing::debug!(%status, body = ?body.ok(), "built-in caption refused");
            }
            Ok(Err(error)) => tracing::debug!(%error, "built-in caption not delivered"),
            Err(_) => tracing::debug!("built-in caption timed out"),
        }
    }
}
