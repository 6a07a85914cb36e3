//! Readiness as a pure function: what the process knows of itself ([`Facts`]) in,
//! whether it is ready for viewers and why not ([`Readiness`]) out. No clock, no
//! state: the caller reads both ([`super::Health::readiness`]).

use codes::Health as Reason;
use serde_json::{json, Value};

/// What one stream of the process is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamFacts {
    /// The stream's name.
    pub name: String,
    /// When its newest segment was published, Unix ms; `None` before the first.
    pub pushed_at_ms: Option<i64>,
    /// The operator paused its input (the test failure of OTT-OPS-2).
    pub paused: bool,
    /// A meeting's stream: without media it waits for its publisher, which is the
    /// meeting's state, not the process's fault.
    pub meeting: bool,
}

/// What the process knows of itself at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Facts {
    /// SIGTERM arrived: the process drains out and stops.
    pub shutting_down: bool,
    /// The operator drains the node (`/api/drain`).
    pub draining: bool,
    /// `Some(joined)` for a node of a mesh domain: whether the mesh has reported.
    pub mesh_joined: Option<bool>,
    /// Every stream the process serves.
    pub streams: Vec<StreamFacts>,
    /// A stream whose newest segment is older than this does not work.
    pub stale_after_ms: i64,
    /// Now, Unix ms.
    pub now_ms: i64,
    /// `Some(reachable)` on an MC with a shared store (etcd).
    pub store_reachable: Option<bool>,
    /// Meetings an MC of a group cuts off the group's timeline (serving nobody).
    pub off_timeline: Vec<String>,
}

/// The verdict: ready when `reasons` is empty.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Readiness {
    /// Why the process is not ready, each with the stream or meeting concerned.
    pub reasons: Vec<(Reason, Option<String>)>,
    /// Meeting streams without media: waiting for their publisher, not a fault.
    pub idle: Vec<String>,
    /// The reasons' fields that name a meeting (not a configured stream): named only
    /// to a caller with a token, as the meeting list is.
    pub meeting_fields: Vec<String>,
}

impl Readiness {
    /// Whether the process is ready for viewers.
    pub fn ready(&self) -> bool {
        self.reasons.is_empty()
    }

    /// The answer's body: `{"ready":true,"idle":N}`, or the code 115001 with one
    /// `{"code","message","field"?}` per reason. Meetings are named (`idle_meetings`,
    /// a reason's `field`) only when `names` (the caller showed a token): their ids
    /// are the platform's, private ones included. A configured stream is always named.
    pub fn json(&self, names: bool) -> Value {
        let mut body = if self.ready() {
            json!({ "ready": true })
        } else {
            let reasons: Vec<Value> = self
                .reasons
                .iter()
                .map(|(reason, field)| {
                    let mut entry = json!({ "code": reason.code(), "message": reason.message() });
                    if let Some(field) = field {
                        if names || !self.meeting_fields.contains(field) {
                            entry["field"] = json!(field);
                        }
                    }
                    entry
                })
                .collect();
            json!({
                "code": Reason::NotReady.code(),
                "message": Reason::NotReady.message(),
                "reasons": reasons,
            })
        };
        body["idle"] = json!(self.idle.len());
        if names {
            body["idle_meetings"] = json!(self.idle);
        }
        body
    }
}

/// Whether the process described by `facts` is ready for viewers:
/// - not shutting down, not drained by its operator;
/// - in a mesh domain, the mesh has reported;
/// - every configured stream works (a segment within `stale_after_ms`, not paused):
///   one with no segment yet is starting (115013), one whose segments stopped is
///   stalled (115014); a meeting's stream without media is idle, not a reason;
/// - on an MC: its shared store answers, and it cuts no meeting off its group's timeline.
pub fn assess(facts: &Facts) -> Readiness {
    let mut readiness = Readiness::default();
    let mut meeting_fields = Vec::new();
    let mut reason = |r: Reason, field: Option<&str>| {
        readiness.reasons.push((r, field.map(str::to_owned)));
    };
    if facts.shutting_down {
        reason(Reason::ShuttingDown, None);
    }
    if facts.draining {
        reason(Reason::Draining, None);
    }
    if facts.mesh_joined == Some(false) {
        reason(Reason::MeshNotJoined, None);
    }
    if facts.store_reachable == Some(false) {
        reason(Reason::StoreUnreachable, None);
    }
    for meeting in &facts.off_timeline {
        reason(Reason::OffTimeline, Some(meeting));
        meeting_fields.push(meeting.clone());
    }
    let mut idle = Vec::new();
    for stream in &facts.streams {
        let fresh = stream
            .pushed_at_ms
            .is_some_and(|at| facts.now_ms.saturating_sub(at) < facts.stale_after_ms);
        if fresh && !stream.paused {
            continue;
        }
        if stream.meeting && !stream.paused {
            idle.push(stream.name.clone());
            continue;
        }
        if stream.meeting {
            meeting_fields.push(stream.name.clone());
        }
        if stream.pushed_at_ms.is_none() {
            reason(Reason::StreamStarting, Some(&stream.name));
        } else {
            reason(Reason::StreamStalled, Some(&stream.name));
        }
    }
    readiness.idle = idle;
    readiness.meeting_fields = meeting_fields;
    readiness
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(name: &str, pushed_at_ms: Option<i64>, meeting: bool) -> StreamFacts {
        StreamFacts {
            name: name.to_owned(),
            pushed_at_ms,
            paused: false,
            meeting,
        }
    }

    fn facts(streams: Vec<StreamFacts>) -> Facts {
        Facts {
            streams,
            stale_after_ms: 8_000,
            now_ms: 100_000,
            ..Facts::default()
        }
    }

    #[test]
    fn live_streams_are_ready_and_a_waiting_meeting_is_idle() {
        let r = assess(&facts(vec![
            stream("a", Some(99_000), false),
            stream("m", None, true),
            stream("old-meeting", Some(1_000), true),
        ]));
        assert!(r.ready(), "{r:?}");
        assert_eq!(r.idle, ["m", "old-meeting"]);
        assert_eq!(
            r.json(true),
            json!({"ready": true, "idle": 2, "idle_meetings": ["m", "old-meeting"]})
        );
        assert_eq!(
            r.json(false),
            json!({"ready": true, "idle": 2}),
            "meetings are named only with a token"
        );
        // A process with no stream at all serves what it has: ready.
        assert!(assess(&facts(Vec::new())).ready());
    }

    #[test]
    fn a_configured_stream_starting_or_stalled_is_a_reason() {
        let r = assess(&facts(vec![
            stream("new", None, false),
            stream("lost", Some(92_000), false),
            stream("fine", Some(92_001), false),
        ]));
        assert_eq!(
            r.reasons,
            [
                (Reason::StreamStarting, Some("new".to_owned())),
                (Reason::StreamStalled, Some("lost".to_owned())),
            ]
        );
        let body = r.json(false);
        assert_eq!(body["code"], 115_001);
        assert_eq!(body["reasons"][0]["code"], 115_013);
        assert_eq!(body["reasons"][0]["field"], "new");
        assert_eq!(body["reasons"][1]["code"], 115_014);
    }

    #[test]
    fn a_paused_stream_is_stalled_even_as_a_meeting() {
        let mut paused = stream("m", Some(99_999), true);
        paused.paused = true;
        let r = assess(&facts(vec![paused]));
        assert_eq!(r.reasons, [(Reason::StreamStalled, Some("m".to_owned()))]);
        assert_eq!(r.json(true)["reasons"][0]["field"], "m");
        assert!(
            r.json(false)["reasons"][0].get("field").is_none(),
            "a meeting is not named without a token"
        );
    }

    #[test]
    fn process_states_come_first_each_with_its_code() {
        let r = assess(&Facts {
            shutting_down: true,
            draining: true,
            mesh_joined: Some(false),
            store_reachable: Some(false),
            off_timeline: vec!["m1".to_owned()],
            ..facts(Vec::new())
        });
        let codes: Vec<u32> = r.reasons.iter().map(|(c, _)| c.code()).collect();
        assert_eq!(codes, [115_010, 115_011, 115_012, 115_015, 115_016]);
        assert_eq!(r.json(true)["reasons"][4]["field"], "m1");
        assert!(r.json(false)["reasons"][4].get("field").is_none());
        assert!(r.json(false).to_string().find("m1").is_none());
        let joined = assess(&Facts {
            mesh_joined: Some(true),
            store_reachable: Some(true),
            ..facts(Vec::new())
        });
        assert!(joined.ready());
    }
}
