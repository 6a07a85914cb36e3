//! The meeting streams a process runs (on the MC: one per live meeting, fed by its
//! publisher; on a node: one per live meeting, pulled from the MC), started and stopped
//! as meetings change.

use std::collections::HashMap;

use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::config::StreamConfig;
use crate::node::stream::{start_stream, StreamContext};

struct Running {
    stop: watch::Sender<bool>,
    tasks: JoinSet<()>,
}

/// Running meeting streams by meeting id.
pub struct MeetingStreams {
    context: StreamContext,
    running: HashMap<String, Running>,
}

impl MeetingStreams {
    /// No streams yet; new ones use `context`.
    pub fn new(context: StreamContext) -> Self {
        Self {
            context,
            running: HashMap::new(),
        }
    }

    /// True when `id` runs.
    pub fn contains(&self, id: &str) -> bool {
        self.running.contains_key(id)
    }

    /// The ids that run.
    pub fn ids(&self) -> Vec<String> {
        self.running.keys().cloned().collect()
    }

    /// Starts `stream` unless it runs. Returns true when it was started.
    ///
    /// # Errors
    /// [`start_stream`]'s error (bad input URL, inputs that cannot run together).
    pub fn ensure(&mut self, stream: &StreamConfig) -> anyhow::Result<bool> {
        if self.running.contains_key(&stream.name) {
            return Ok(false);
        }
        let (stop, stop_rx) = watch::channel(false);
        let mut tasks = JoinSet::new();
        start_stream(&self.context, stream, stop_rx, &mut tasks)?;
        tracing::info!(meeting = %stream.name, "meeting stream started");
        self.running
            .insert(stream.name.clone(), Running { stop, tasks });
        Ok(true)
    }

    /// Stops `id` and removes it from the routes. Returns true when it ran.
    pub fn stop(&mut self, id: &str) -> bool {
        let Some(mut running) = self.running.remove(id) else {
            return false;
        };
        let _ = running.stop.send(true);
        self.context.state.remove_stream(id);
        if let Some(uploader) = &self.context.uploader {
            uploader.retire(id, self.context.state.clock().unix_ms());
        }
        if let Some(redundancy) = self.context.state.redundancy() {
            redundancy.set_membership(id, None);
        }
        // The tasks saw the stop flag; whatever has not finished is cut short.
        running.tasks.abort_all();
        tracing::info!(meeting = %id, "meeting stream stopped");
        true
    }

    /// Stops everything.
    pub fn stop_all(&mut self) {
        for id in self.ids() {
            self.stop(&id);
        }
    }
}
