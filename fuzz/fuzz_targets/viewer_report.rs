//! Fuzzes a node's viewer report as the MC parses it (`/api/nodes/sync?node=…&viewers=…`):
//! any node name and list is refused or bounded without a panic, and whatever is kept
//! names a meeting the MC holds, once, with a count within its limit.

#![no_main]

use libfuzzer_sys::fuzz_target;
use meeting::{MeetingId, MeetingSecrets, Meetings, NewMeeting};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (node, viewers) = text.split_once('\n').unwrap_or(("node-a", &text));
    let mut meetings = Meetings::new();
    for (id, limit) in [("board", Some(20)), ("all-hands", None)] {
        let request = NewMeeting {
            id: id.to_owned(),
            viewer_limit: limit,
            ..NewMeeting::default()
        };
        let secrets = MeetingSecrets {
            stream_key: "k".into(),
            host_token: "h".into(),
        };
        meetings
            .create(MeetingId::parse(id).expect("an id"), &request, secrets, 0)
            .expect("a new meeting");
    }
    if let Ok(report) = mc::report::parse(node, viewers, &meetings) {
        assert!(mc::report::valid_node_name(&report.node));
        let mut seen = std::collections::HashSet::new();
        for (id, count) in &report.counts {
            assert!(seen.insert(id.clone()), "{id} twice");
            let meeting = meetings.get(id).expect("a meeting the MC holds");
            if let Some(limit) = meeting.viewer_limit {
                assert!(*count <= limit, "{id}: {count} over {limit}");
            }
        }
    }
});
