//! A node's watch over its MC: every poll interval, report this node's viewers per
//! meeting and learn every meeting (from the MC that answered last, or the next one of
//! an MC group when it does not); start a stream for each live meeting, stop it when
//! the meeting closes (or leaves the MC's list). When the MC cannot be reached, the
//! node keeps every stream it has (viewers keep watching), the gate answers 102005 /
//! 1041xx for the rest, and the next successful poll brings everything back.
//!
//! Every answer is screened first ([`server::access::mc_answer`]): a meeting with a bad id, rung
//! or list is left out (logged with its 114xxx code when the refusals change), and
//! private meetings and viewer keys are taken only over a protected link.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use ingest::mc_client::{self, McClientConfig};
use meeting::MeetingState;
use server::access::gate::MeetingGate;
use tokio::sync::watch;

use super::meeting_streams::MeetingStreams;
use crate::config::McLinkConfig;
use crate::node::stream::StreamContext;

/// Runs until `shutdown`.
pub async fn run(
    context: StreamContext,
    link: McLinkConfig,
    node_name: String,
    gate: Arc<MeetingGate>,
    mut shutdown: watch::Receiver<bool>,
) {
    let clients: Vec<McClientConfig> = link
        .sync_urls()
        .into_iter()
        .map(|url| McClientConfig {
            url,
            token: link.token.clone(),
            node: node_name.clone(),
            ca_file: link.ca_file.clone(),
            timeout: std::time::Duration::from_secs_f64(link.timeout),
        })
        .collect();
    // Whether each MC's link may carry private meetings and viewer keys.
    let protected: Vec<bool> = clients
        .iter()
        .map(|c| link.allow_insecure || mc_client::link_protected(&c.url))
        .collect();
    let mut preferred = 0;
    let mut streams = MeetingStreams::new(context);
    let mut last_failure = None;
    // How long the MC has been unreachable and how many syncs failed: reminders while
    // it stays so, the total when it answers again.
    let mut unreachable = flap_log::FlapLog::default();
    let mut last_refusals = Vec::new();
    let mut waiting = HashSet::new();
    loop {
        let mut counts: Vec<(String, u64)> = gate.viewer_counts().into_iter().collect();
        counts.sort();
        let exchange = tokio::select! {
            result = sync_any(&clients, &mut preferred, &counts) => result,
            _ = shutdown.wait_for(|s| *s) => break,
        };
        let mc_url = &clients[preferred].url;
        match exchange {
            Ok(answer) => {
                last_failure = None;
                if let Some(recovery) = unreachable.recovered(std::time::Instant::now()) {
                    tracing::info!(
                        mc = %mc_url,
                        down_ms = recovery.down_for.as_millis() as u64,
                        failures = recovery.failures,
                        flaps = recovery.flaps,
                        "mc reachable again"
                    );
                }
                let (answer, refusals) = server::access::mc_answer::screen(
                    answer,
                    protected.get(preferred) == Some(&true),
                );
                if refusals != last_refusals {
                    for refusal in &refusals {
                        tracing::warn!(mc = %mc_url, code = refusal.fault.code(), refused = %refusal.what, "mc answer entry refused");
                    }
                    last_refusals = refusals;
                }
                reconcile(&link, &mut streams, &mut waiting, &gate, &answer.meetings);
                if let Some(keys) = answer
                    .session_keys
                    .as_ref()
                    .and_then(server::access::session_keys::node_keys)
                {
                    gate.set_session_keys(keys);
                }
                gate.connected(
                    answer.meetings,
                    answer.min_client_version,
                    counts.into_iter().collect(),
                    &answer.viewer_keys,
                );
            }
            Err(error) => {
                let cause = error.cause();
                // A reminder (with how long and how many failed since the last line)
                // while the MC stays unreachable.
                let line = unreachable.failed(std::time::Instant::now());
                let reminder = match line {
                    Some(flap_log::Failure::StillDown {
                        down_for, repeated, ..
                    }) => Some((down_for.as_secs(), repeated)),
                    _ => None,
                };
                // Down (not a flap soon after a recovery), a reminder, or another cause
                // while down: logged at the level of its code's row.
                let new_cause = last_failure.is_some_and(|last| last != cause);
                if line.is_some() || new_cause {
                    let code = cause.code();
                    let down_s = reminder.map(|(s, _)| s);
                    let repeated = reminder.map(|(_, r)| r);
                    match meeting::ErrorCode::McConnect(cause).level() {
                        meeting::LogLevel::Error => {
                            tracing::error!(mc = %mc_url, code, error = %error, down_s, repeated, "mc unreachable")
                        }
                        _ => {
                            tracing::warn!(mc = %mc_url, code, error = %error, down_s, repeated, "mc unreachable")
                        }
                    }
                }
                last_failure = Some(cause);
                gate.failed(cause);
            }
        }
        tokio::select! {
            () = tokio::time::sleep(link.poll()) => {}
            _ = shutdown.wait_for(|s| *s) => break,
        }
    }
    streams.stop_all();
}

/// One sync with the MC that answered last, then with each other MC of the group in
/// turn; the first answer wins and that MC is asked first next time. When none
/// answers, the error is the first one's (the MC the node was using).
async fn sync_any(
    clients: &[McClientConfig],
    preferred: &mut usize,
    counts: &[(String, u64)],
) -> Result<mc_client::SyncAnswer, mc_client::McClientError> {
    let first = *preferred;
    let mut first_error = None;
    for step in 0..clients.len() {
        let index = (first + step) % clients.len();
        match mc_client::sync(&clients[index], None, counts).await {
            Ok(answer) => {
                if index != first {
                    tracing::info!(mc = %clients[index].url, "syncing with another mc of the group");
                }
                *preferred = index;
                return Ok(answer);
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error
        .unwrap_or_else(|| mc_client::McClientError::BadAnswer("the mc link lists no url".into())))
}

/// Starts a stream for each live meeting the MC has media for (with the rungs it has),
/// and stops those no longer live. A live meeting that waits for its publisher is
/// logged once (`waiting`: those logged) and not pulled; a running stream is kept when
/// its meeting waits again (a publisher that reconnects).
fn reconcile(
    link: &McLinkConfig,
    streams: &mut MeetingStreams,
    waiting: &mut HashSet<String>,
    gate: &MeetingGate,
    meetings: &[meeting::MeetingView],
) {
    let live: HashSet<&str> = meetings
        .iter()
        .filter(|m| m.state == MeetingState::Live)
        .map(|m| m.id.as_str())
        .collect();
    let listed: HashMap<&str, MeetingState> =
        meetings.iter().map(|m| (m.id.as_str(), m.state)).collect();
    for id in streams.ids() {
        if !live.contains(id.as_str()) {
            tracing::info!(meeting = %id, state = ?listed.get(id.as_str()), "meeting no longer live");
            streams.stop(&id);
            gate.set_managed(&id, false);
        }
    }
    waiting.retain(|id| live.contains(id.as_str()));
    for view in meetings.iter().filter(|m| m.state == MeetingState::Live) {
        let id = view.id.as_str();
        if streams.contains(id) || meeting::MeetingId::parse(id).is_err() {
            continue;
        }
        if view.waiting {
            if waiting.insert(id.to_owned()) {
                tracing::info!(meeting = %id, "meeting waiting for its publisher");
            }
            continue;
        }
        waiting.remove(id);
        let started = link
            .meeting_stream_with(id, &view.ladder)
            .map(|mut stream| {
                // The meeting's own retention in the recordings store, when it has one.
                if let Some(days) = view.recording_depth_days {
                    let ms = meeting::recording_depth_ms(days);
                    stream.dvr.remote_depth = Some(crate::config::Depth(ms));
                }
                link.add_languages(&mut stream, &view.languages);
                stream
            })
            .and_then(|stream| streams.ensure(&stream));
        match started {
            Ok(_) => gate.set_managed(id, true),
            Err(error) => {
                tracing::error!(meeting = %id, error = %format!("{error:#}"), "cannot start meeting stream")
            }
        }
    }
}
