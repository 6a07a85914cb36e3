//! A node's check of its MC's sync answer, before anything in it reaches a path, a
//! stream or a decision (docs/meetings.md, "What a node checks in its MC's answer").
//! The answer is a peer's claim: over a plain-HTTP link a man in the middle writes it.
//!
//! Each meeting is checked on its own and a bad one is left out (as if the MC had not
//! listed it) while the rest is kept: its id through the meeting-id grammar (the
//! stream name of every node URL), its ladder's rungs through the rung grammar (a rung
//! is a URL segment and an archive directory), and its lists bounded. Private meetings
//! and viewer keys are taken only over a protected link (`https`, a loopback literal,
//! or `[mc] allow_insecure`). Every refusal carries its 114xxx code; the watcher logs
//! them. Pure: no I/O.

use std::collections::HashSet;

use codes::McAnswerFault;
use ingest::mc_client::SyncAnswer;
use meeting::meeting::{MAX_MEETINGS, MAX_REMOVED_VIEWERS, MAX_VIEWER_ID_LEN};
use meeting::{MeetingId, MeetingView};

/// Most viewer-token keys a node takes from its MC: the platform's keys and the MC's
/// own, with room for rotations.
pub const MAX_VIEWER_KEYS: usize = 64;

/// Longest excerpt of a refused value a log line carries.
const EXCERPT: usize = 80;

/// One refused part of an answer: its code and what it was (an escaped excerpt).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The fault (its code is in the log line).
    pub fault: McAnswerFault,
    /// The meeting or key concerned, and why.
    pub what: String,
}

/// `value` as a log line may carry it: escaped and cut.
fn excerpt(value: &str) -> String {
    let mut text: String = value.chars().take(EXCERPT).collect();
    if text.len() < value.len() {
        text.push('…');
    }
    format!("{text:?}")
}

/// The answer with every bad entry left out, and the refusals. `protected`: the link
/// the answer came over may carry private meetings and viewer keys.
pub fn screen(answer: SyncAnswer, protected: bool) -> (SyncAnswer, Vec<Refusal>) {
    let mut refusals = Vec::new();
    let mut refuse = |fault, what: String| refusals.push(Refusal { fault, what });
    let listed = answer.meetings.len();
    if listed > MAX_MEETINGS {
        refuse(
            McAnswerFault::TooMany,
            format!("{listed} meetings, the first {MAX_MEETINGS} kept"),
        );
    }
    let mut seen = HashSet::new();
    let mut meetings = Vec::with_capacity(listed.min(MAX_MEETINGS));
    for view in answer.meetings.into_iter().take(MAX_MEETINGS) {
        match check_meeting(&view, protected, &mut seen) {
            Ok(()) => meetings.push(view),
            Err((fault, why)) => refuse(fault, format!("meeting {}: {why}", excerpt(&view.id))),
        }
    }
    let viewer_keys = if answer.viewer_keys.is_empty() {
        Vec::new()
    } else if !protected {
        refuse(
            McAnswerFault::Insecure,
            format!("{} viewer keys", answer.viewer_keys.len()),
        );
        Vec::new()
    } else {
        let keys = answer.viewer_keys.len();
        if keys > MAX_VIEWER_KEYS {
            refuse(
                McAnswerFault::TooMany,
                format!("{keys} viewer keys, the first {MAX_VIEWER_KEYS} kept"),
            );
        }
        answer
            .viewer_keys
            .into_iter()
            .take(MAX_VIEWER_KEYS)
            .filter(
                |(kid, public)| match ott::ViewerKey::from_base64url(kid, public) {
                    Ok(_) => true,
                    Err(_) => {
                        refuse(
                            McAnswerFault::BadKey,
                            format!("viewer key {}", excerpt(kid)),
                        );
                        false
                    }
                },
            )
            .collect()
    };
    // The session keys are secrets: taken only over a protected link, and whole.
    let session_keys = match answer.session_keys {
        None => None,
        Some(_) if !protected => {
            refuse(McAnswerFault::Insecure, "session keys".to_owned());
            None
        }
        Some(wire) if crate::access::session_keys::node_keys(&wire).is_none() => {
            refuse(
                McAnswerFault::BadKey,
                format!("a session key ring of {} keys", wire.keys.len()),
            );
            None
        }
        Some(wire) => Some(wire),
    };
    let screened = SyncAnswer {
        meetings,
        min_client_version: answer.min_client_version,
        viewer_keys,
        session_keys,
    };
    (screened, refusals)
}

/// Checks one meeting of the answer (`seen`: the ids kept so far).
fn check_meeting(
    view: &MeetingView,
    protected: bool,
    seen: &mut HashSet<String>,
) -> Result<(), (McAnswerFault, String)> {
    if MeetingId::parse(&view.id).is_err() {
        return Err((McAnswerFault::BadMeetingId, "not a meeting id".into()));
    }
    if view.private && !protected {
        return Err((McAnswerFault::Insecure, "private".into()));
    }
    if view.ladder.len() > crate::stream::ladder::MAX_RUNGS {
        return Err((
            McAnswerFault::TooMany,
            format!("{} rungs", view.ladder.len()),
        ));
    }
    let mut rungs = HashSet::new();
    for rung in &view.ladder {
        if crate::stream::ladder::check_name(rung).is_err() || !rungs.insert(rung.as_str()) {
            return Err((McAnswerFault::BadRung, format!("rung {}", excerpt(rung))));
        }
    }
    if let Err(problem) = meeting::languages::check(&view.languages) {
        return Err((McAnswerFault::BadLanguage, excerpt(&problem.to_string())));
    }
    if view.removed.len() > MAX_REMOVED_VIEWERS {
        return Err((
            McAnswerFault::TooMany,
            format!("{} removed viewers", view.removed.len()),
        ));
    }
    if let Some(id) = view
        .removed
        .iter()
        .find(|id| id.is_empty() || id.len() > MAX_VIEWER_ID_LEN)
    {
        return Err((
            McAnswerFault::BadKey,
            format!("removed viewer {}", excerpt(id)),
        ));
    }
    // Checked last: a meeting is kept only if everything else about it is good.
    if !seen.insert(view.id.clone()) {
        return Err((McAnswerFault::BadMeetingId, "listed twice".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use meeting::MeetingState;

    use super::*;

    /// A 32-byte Ed25519 public key in base64url (bytes 7 to 38; no one's key).
    const KEY: &str = "BwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyAhIiMkJSY";

    fn view(id: &str) -> MeetingView {
        MeetingView {
            id: id.into(),
            state: MeetingState::Live,
            locked: false,
            viewer_limit: None,
            viewers: 0,
            ladder: Vec::new(),
            private: false,
            removed: Vec::new(),
            waiting: false,
            recording_depth_days: None,
            languages: Vec::new(),
        }
    }

    fn answer(meetings: Vec<MeetingView>) -> SyncAnswer {
        SyncAnswer {
            meetings,
            min_client_version: None,
            viewer_keys: Vec::new(),
            session_keys: None,
        }
    }

    fn ids(answer: &SyncAnswer) -> Vec<&str> {
        answer.meetings.iter().map(|m| m.id.as_str()).collect()
    }

    fn faults(refusals: &[Refusal]) -> Vec<u32> {
        refusals.iter().map(|r| r.fault.code()).collect()
    }

    #[test]
    fn a_meeting_with_bad_languages_is_left_out() {
        let language = |code: &str| meeting::MeetingLanguage {
            code: code.into(),
            ..Default::default()
        };
        let mut good = view("good");
        good.languages = vec![language("eng"), language("spa")];
        let mut twice = view("twice");
        twice.languages = vec![language("eng"), language("spa"), language("spa")];
        let mut many = view("many");
        many.languages = [
            "eng", "spa", "fra", "deu", "ita", "por", "rus", "jpn", "kor",
        ]
        .map(language)
        .to_vec();
        let mut path = view("path");
        path.languages = vec![language("eng"), language("../")];
        let (kept, refusals) = screen(answer(vec![good, twice, many, path]), false);
        assert_eq!(ids(&kept), ["good"]);
        assert_eq!(faults(&refusals), [114_006, 114_006, 114_006]);
    }

    #[test]
    fn bad_ids_and_rungs_are_left_out_and_the_rest_kept() {
        let mut escape = view("escape");
        escape.ladder = vec!["source".into(), "../../tmp/x".into()];
        let mut hidden = view("hidden");
        hidden.ladder = vec![".hidden".into()];
        let mut twice = view("good");
        twice.locked = true;
        let mut ladder = view("ladder");
        ladder.ladder = vec!["source".into(), "240p".into()];
        let mut long = view("long");
        long.ladder = (0..9).map(|i| format!("r{i}")).collect();
        let meetings = vec![
            view("good"),
            view("../etc"),
            view("a/b"),
            view(""),
            view(&"x".repeat(65)),
            escape,
            hidden,
            twice,
            ladder,
            long,
        ];
        let (kept, refusals) = screen(answer(meetings), false);
        assert_eq!(ids(&kept), ["good", "ladder"]);
        assert!(
            !kept.meetings[0].locked,
            "the first listing is the one kept"
        );
        assert_eq!(
            faults(&refusals),
            [114_001, 114_001, 114_001, 114_001, 114_002, 114_002, 114_001, 114_003]
        );
        assert!(
            refusals[4].what.contains(r#""../../tmp/x""#),
            "{refusals:?}"
        );
    }

    #[test]
    fn private_meetings_and_keys_need_a_protected_link() {
        let mut private = view("private");
        private.private = true;
        let mut with_keys = answer(vec![view("public"), private]);
        with_keys.viewer_keys = vec![("k1".into(), KEY.into())];

        let (kept, refusals) = screen(with_keys.clone(), false);
        assert_eq!(ids(&kept), ["public"]);
        assert!(kept.viewer_keys.is_empty());
        assert_eq!(faults(&refusals), [114_005, 114_005]);

        let (kept, refusals) = screen(with_keys, true);
        assert_eq!(ids(&kept), ["public", "private"]);
        assert_eq!(kept.viewer_keys.len(), 1);
        assert!(refusals.is_empty(), "{refusals:?}");
    }

    #[test]
    fn lists_are_bounded_and_bad_keys_refused() {
        let meetings: Vec<MeetingView> = (0..MAX_MEETINGS + 5)
            .map(|i| view(&format!("m{i}")))
            .collect();
        let mut big = answer(meetings);
        big.viewer_keys = (0..MAX_VIEWER_KEYS + 1)
            .map(|i| (format!("k{i}"), KEY.into()))
            .collect();
        big.viewer_keys[0].1 = "not a key".into();
        let (kept, refusals) = screen(big, true);
        assert_eq!(kept.meetings.len(), MAX_MEETINGS);
        assert_eq!(kept.viewer_keys.len(), MAX_VIEWER_KEYS - 1);
        assert_eq!(faults(&refusals), [114_003, 114_003, 114_004]);

        let mut removed = view("removed");
        removed.removed = vec!["v".repeat(MAX_VIEWER_ID_LEN + 1)];
        let mut many = view("many");
        many.removed = vec!["v".into(); MAX_REMOVED_VIEWERS + 1];
        let (kept, refusals) = screen(answer(vec![removed, many]), true);
        assert!(kept.meetings.is_empty());
        assert_eq!(faults(&refusals), [114_004, 114_003]);
    }
}
