//! MTG-1: created → live → closed, lock/unlock, the viewer limit, and the collection.

use meeting::{
    Action, ErrorCode, Meeting, MeetingError, MeetingId, MeetingSecrets, MeetingState, Meetings,
    NewMeeting,
};
use proptest::prelude::*;

fn secrets() -> MeetingSecrets {
    MeetingSecrets {
        stream_key: "key".into(),
        host_token: "host".into(),
    }
}

fn id(s: &str) -> MeetingId {
    MeetingId::parse(s).unwrap()
}

fn one(limit: Option<u32>) -> (Meetings, MeetingId) {
    let mut meetings = Meetings::new();
    let request = NewMeeting {
        id: "m1".into(),
        title: "standup".into(),
        viewer_limit: limit,
        private: false,
        recording_depth_days: None,
        languages: Vec::new(),
    };
    meetings
        .create(id("m1"), &request, secrets(), 1000)
        .unwrap();
    (meetings, id("m1"))
}

#[test]
fn a_meeting_goes_created_live_closed() {
    let (mut meetings, m) = one(None);
    assert_eq!(meetings.get(&m).unwrap().state, MeetingState::Created);
    assert_eq!(
        meetings.get(&m).unwrap().admit(0),
        Err(MeetingError::NotStarted)
    );
    let live = meetings.apply(&m, Action::Start, 2000).unwrap();
    assert_eq!(
        (live.state, live.started_ms),
        (MeetingState::Live, Some(2000))
    );
    // Starting twice keeps the first start time.
    assert_eq!(
        meetings.apply(&m, Action::Start, 3000).unwrap().started_ms,
        Some(2000)
    );
    assert_eq!(meetings.get(&m).unwrap().admit(100), Ok(()));
    let closed = meetings.apply(&m, Action::Close, 4000).unwrap();
    assert_eq!(
        (closed.state, closed.closed_ms),
        (MeetingState::Closed, Some(4000))
    );
    assert_eq!(
        meetings.apply(&m, Action::Close, 5000).unwrap().closed_ms,
        Some(4000)
    );
    for action in [
        Action::Start,
        Action::Lock,
        Action::Unlock,
        Action::SetViewerLimit(Some(3)),
    ] {
        assert_eq!(
            meetings.apply(&m, action, 6000).unwrap_err(),
            MeetingError::Closed
        );
    }
    assert_eq!(
        meetings.get(&m).unwrap().admit(0).unwrap_err().code(),
        ErrorCode::Closed
    );
}

#[test]
fn a_closed_meeting_can_be_closed_before_it_starts() {
    let (mut meetings, m) = one(None);
    assert_eq!(
        meetings.apply(&m, Action::Close, 10).unwrap().started_ms,
        None
    );
}

#[test]
fn lock_and_limit_refuse_new_viewers() {
    let (mut meetings, m) = one(Some(2));
    meetings.apply(&m, Action::Start, 1).unwrap();
    let meeting = meetings.get(&m).unwrap();
    assert_eq!(meeting.admit(1), Ok(()));
    assert_eq!(meeting.admit(2), Err(MeetingError::Full));
    assert_eq!(MeetingError::Full.code().code(), 103_006);
    meetings.apply(&m, Action::Lock, 2).unwrap();
    assert_eq!(
        meetings.get(&m).unwrap().admit(0),
        Err(MeetingError::Locked)
    );
    assert_eq!(MeetingError::Locked.code().code(), 103_011);
    meetings.apply(&m, Action::Unlock, 3).unwrap();
    meetings.apply(&m, Action::SetViewerLimit(None), 4).unwrap();
    assert_eq!(meetings.get(&m).unwrap().admit(1_000_000), Ok(()));
}

#[test]
fn duplicate_and_unknown_ids_have_their_codes() {
    let (mut meetings, m) = one(None);
    let again = meetings.create(m.clone(), &NewMeeting::default(), secrets(), 5);
    assert_eq!(again.unwrap_err().code().code(), 102_004);
    meetings.apply(&m, Action::Close, 6).unwrap();
    // A closed meeting keeps its id: an old link never shows a new meeting.
    let again = meetings.create(m, &NewMeeting::default(), secrets(), 7);
    assert_eq!(again.unwrap_err(), MeetingError::Exists);
    assert_eq!(
        meetings.get(&id("nope")).unwrap_err().code().code(),
        104_005
    );
    assert_eq!(
        meetings.apply(&id("nope"), Action::Start, 1).unwrap_err(),
        MeetingError::NotFound
    );
}

#[test]
fn the_collection_round_trips_through_json() {
    let (mut meetings, m) = one(Some(7));
    meetings.apply(&m, Action::Start, 9).unwrap();
    meetings.apply(&m, Action::Lock, 10).unwrap();
    let text = serde_json::to_string(&meetings).unwrap();
    let back: Meetings = serde_json::from_str(&text).unwrap();
    assert_eq!(back, meetings);
    // A store with an invalid id is refused, not loaded half-way.
    let bad = text.replace("\"m1\"", "\"m/1\"");
    assert!(serde_json::from_str::<Meetings>(&bad).is_err());
}

#[test]
fn ids_are_url_safe() {
    assert!(MeetingId::parse("Team-42_a").is_ok());
    for bad in ["", "a/b", "../x", "a b", "é", &"x".repeat(65)] {
        assert!(MeetingId::parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn long_titles_are_cut_on_a_char_boundary() {
    let mut meetings = Meetings::new();
    let request = NewMeeting {
        id: "t".into(),
        title: "會".repeat(200),
        viewer_limit: None,
        private: false,
        recording_depth_days: None,
        languages: Vec::new(),
    };
    let meeting = meetings.create(id("t"), &request, secrets(), 0).unwrap();
    assert!(meeting.title.len() <= meeting::meeting::MAX_TITLE_LEN);
    assert!(meeting.title.chars().all(|c| c == '會'));
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        Just(Action::Start),
        Just(Action::Lock),
        Just(Action::Unlock),
        Just(Action::Close),
        proptest::option::of(0u32..5).prop_map(Action::SetViewerLimit),
    ]
}

proptest! {
    /// Invariants over any sequence of actions: once closed, always closed; started_ms is
    /// set iff it went live; a limit is never exceeded by `admit`.
    #[test]
    fn lifecycle_invariants(actions in proptest::collection::vec(action(), 0..40), viewers in 0u64..10) {
        let (mut meetings, m) = one(None);
        let mut was_closed = false;
        for (t, a) in actions.into_iter().enumerate() {
            let _ = meetings.apply(&m, a, t as i64);
            let meeting: &Meeting = meetings.get(&m).unwrap();
            if was_closed {
                prop_assert_eq!(meeting.state, MeetingState::Closed);
            }
            was_closed = meeting.state == MeetingState::Closed;
            match meeting.state {
                MeetingState::Created => prop_assert!(meeting.started_ms.is_none() && meeting.closed_ms.is_none()),
                MeetingState::Live => prop_assert!(meeting.started_ms.is_some() && meeting.closed_ms.is_none()),
                MeetingState::Closed => prop_assert!(meeting.closed_ms.is_some()),
            }
            if meeting.admit(viewers).is_ok() {
                prop_assert_eq!(meeting.state, MeetingState::Live);
                prop_assert!(!meeting.locked);
                prop_assert!(meeting.viewer_limit.is_none_or(|l| viewers < u64::from(l)));
            }
        }
    }
}

proptest! {
    /// An id parses exactly when it is 1 to 64 URL-safe characters, and never panics.
    #[test]
    fn id_parsing_matches_its_rule(s in "\\PC{0,80}") {
        let ok = !s.is_empty()
            && s.len() <= 64
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        prop_assert_eq!(MeetingId::parse(&s).is_ok(), ok);
    }
}

#[test]
fn a_host_removes_viewers_of_an_open_meeting_once_each() {
    let mut meetings = Meetings::new();
    let id = MeetingId::parse("board").unwrap();
    let request = NewMeeting {
        id: "board".into(),
        title: String::new(),
        viewer_limit: None,
        private: true,
        recording_depth_days: None,
        languages: Vec::new(),
    };
    let secrets = MeetingSecrets {
        stream_key: "k".into(),
        host_token: "h".into(),
    };
    assert!(
        meetings
            .create(id.clone(), &request, secrets, 0)
            .unwrap()
            .private
    );
    meetings.remove_viewer(&id, "alice").unwrap();
    let meeting = meetings.remove_viewer(&id, "alice").unwrap();
    assert_eq!(meeting.removed_viewers, ["alice"], "idempotent");
    let other = MeetingId::parse("other").unwrap();
    assert_eq!(
        meetings.remove_viewer(&other, "alice").unwrap_err(),
        MeetingError::NotFound
    );
    meetings.apply(&id, Action::Close, 1).unwrap();
    assert_eq!(
        meetings.remove_viewer(&id, "bob").unwrap_err(),
        MeetingError::Closed
    );
    // A store written before private meetings reads as public, nobody removed.
    let json = serde_json::to_value(meetings.get(&id).unwrap()).unwrap();
    let mut old = json.clone();
    old.as_object_mut().unwrap().remove("private");
    old.as_object_mut().unwrap().remove("removed_viewers");
    let read: meeting::Meeting = serde_json::from_value(old).unwrap();
    assert!(!read.private && read.removed_viewers.is_empty());
}
