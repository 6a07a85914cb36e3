//! The node's streams by name: what every part that looks a stream up (routes, the OTT
//! door, the mesh announcement, the drain, the alerts) reads, without the rest of the
//! node's state.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use crate::stream::package::Package;

/// Produces a stream's input status as JSON for the admin API.
pub type StatusSource = Arc<dyn Fn() -> serde_json::Value + Send + Sync>;

/// A channel with the status source of its inputs.
#[derive(Clone)]
pub struct StreamEntry {
    /// The live window.
    pub channel: Arc<Package>,
    /// The stream's input status, if it has inputs.
    pub inputs: Option<StatusSource>,
}

/// The table of streams (see the module docs); a poisoned lock is read through, as a
/// panicking writer leaves the map whole.
#[derive(Default)]
pub struct Streams {
    map: RwLock<BTreeMap<String, StreamEntry>>,
}

impl Streams {
    /// Adds (or replaces) a stream.
    pub fn add(&self, channel: Arc<Package>, inputs: Option<StatusSource>) {
        let name = channel.name().to_owned();
        let entry = StreamEntry { channel, inputs };
        match self.map.write() {
            Ok(mut map) => map.insert(name, entry),
            Err(poisoned) => poisoned.into_inner().insert(name, entry),
        };
    }

    /// Removes a stream (a meeting closed); its viewers get the meeting's code from then on.
    pub fn remove(&self, name: &str) -> Option<StreamEntry> {
        match self.map.write() {
            Ok(mut map) => map.remove(name),
            Err(poisoned) => poisoned.into_inner().remove(name),
        }
    }

    /// The stream of that name.
    pub fn get(&self, name: &str) -> Option<StreamEntry> {
        match self.map.read() {
            Ok(map) => map.get(name).cloned(),
            Err(poisoned) => poisoned.into_inner().get(name).cloned(),
        }
    }

    /// The live channel of that name: the hot path's lookup, which (unlike
    /// [`Streams::get`]) does not clone the status source.
    pub fn channel(&self, name: &str) -> Option<Arc<Package>> {
        match self.map.read() {
            Ok(map) => map.get(name).map(|entry| Arc::clone(&entry.channel)),
            Err(poisoned) => poisoned
                .into_inner()
                .get(name)
                .map(|entry| Arc::clone(&entry.channel)),
        }
    }

    /// All streams, by name.
    pub fn all(&self) -> Vec<StreamEntry> {
        match self.map.read() {
            Ok(map) => map.values().cloned().collect(),
            Err(poisoned) => poisoned.into_inner().values().cloned().collect(),
        }
    }
}
