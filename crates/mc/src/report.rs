//! A node's viewer report, as `/api/nodes/sync?node=N&viewers=id:count,…` carries it,
//! parsed and bounded before it touches the viewer counts (or, on an MC pair, etcd).
//!
//! Only a caller with the node token gets this far; the rules keep even a broken or
//! compromised node from doing more than misreport its own viewers:
//! - the node name follows one grammar (it becomes an etcd key and a map key);
//! - the list is at most [`MAX_MEETINGS_PER_REPORT`] entries and
//!   [`MAX_VIEWERS_PARAM`] bytes, each meeting named once;
//! - a count above [`MAX_NODE_VIEWERS`] refuses the report (no node serves that many:
//!   it is a forgery or a bug, and counting it would make every limited meeting full);
//! - a meeting the MC does not hold is dropped, and a count above the meeting's viewer
//!   limit counts as the limit.

use meeting::viewers::MAX_MEETINGS_PER_REPORT;
use meeting::{MeetingId, Meetings};

/// The longest node name, bytes.
pub const MAX_NODE_NAME: usize = 64;
/// The most viewers one node may report for one meeting: far above what one node can
/// hold open (its connection caps), far below what would fill every meeting.
pub const MAX_NODE_VIEWERS: u32 = 1_000_000;
/// The longest `viewers` list, bytes: a full report of 64-byte ids with 7-digit counts.
pub const MAX_VIEWERS_PARAM: usize = MAX_MEETINGS_PER_REPORT * (64 + 1 + 7 + 1);

/// A node name: 1 to [`MAX_NODE_NAME`] letters, digits, `-`, `_`, `.` or `:` (what a
/// host name or an instance id needs; nothing that changes meaning in a key or a log).
pub fn valid_node_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NODE_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

/// A report that passed every rule: what is counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewerReport {
    /// The reporting node.
    pub node: String,
    /// Viewers per meeting the MC holds, each capped at the meeting's limit.
    pub counts: Vec<(MeetingId, u32)>,
}

/// Why a report was refused: the query field at fault and why (logged, not sent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportRefused {
    /// `node` or `viewers`.
    pub field: &'static str,
    /// Why.
    pub reason: String,
}

fn refused(field: &'static str, reason: impl Into<String>) -> ReportRefused {
    ReportRefused {
        field,
        reason: reason.into(),
    }
}

/// Parses and bounds a report against the meetings the MC holds now.
///
/// # Errors
/// [`ReportRefused`] naming the first broken rule; nothing of the report is counted.
pub fn parse(
    node: &str,
    viewers: &str,
    meetings: &Meetings,
) -> Result<ViewerReport, ReportRefused> {
    if !valid_node_name(node) {
        return Err(refused(
            "node",
            format!("1 to {MAX_NODE_NAME} letters, digits, '-', '_', '.' or ':'"),
        ));
    }
    if viewers.len() > MAX_VIEWERS_PARAM {
        return Err(refused("viewers", "the list is too long"));
    }
    let mut counts: Vec<(MeetingId, u32)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, pair) in viewers.split(',').filter(|p| !p.is_empty()).enumerate() {
        if i >= MAX_MEETINGS_PER_REPORT {
            return Err(refused(
                "viewers",
                format!("more than {MAX_MEETINGS_PER_REPORT} meetings"),
            ));
        }
        let Some((id, count)) = pair
            .split_once(':')
            .and_then(|(id, n)| Some((MeetingId::parse(id).ok()?, n.parse::<u32>().ok()?)))
        else {
            return Err(refused(
                "viewers",
                format!("bad entry {pair:?}: use id:count"),
            ));
        };
        if count > MAX_NODE_VIEWERS {
            return Err(refused(
                "viewers",
                format!("{count} viewers of {id} on one node (at most {MAX_NODE_VIEWERS})"),
            ));
        }
        if !seen.insert(id.clone()) {
            return Err(refused("viewers", format!("{id} is named twice")));
        }
        // A meeting the MC does not hold counts for nothing (a node may still report
        // one just removed); a count above the limit cannot matter beyond the limit.
        if let Ok(meeting) = meetings.get(&id) {
            let count = meeting.viewer_limit.map_or(count, |limit| count.min(limit));
            counts.push((id, count));
        }
    }
    Ok(ViewerReport {
        node: node.to_owned(),
        counts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use meeting::{MeetingSecrets, NewMeeting};

    fn meetings() -> Meetings {
        let mut meetings = Meetings::new();
        for (id, limit) in [("open", None), ("limited", Some(20))] {
            let request = NewMeeting {
                id: id.into(),
                title: String::new(),
                viewer_limit: limit,
                private: false,
                recording_depth_days: None,
                languages: Vec::new(),
            };
            let secrets = MeetingSecrets {
                stream_key: "k".into(),
                host_token: "h".into(),
            };
            let id = MeetingId::parse(id).expect("id");
            meetings.create(id, &request, secrets, 0).expect("create");
        }
        meetings
    }

    fn id(text: &str) -> MeetingId {
        MeetingId::parse(text).expect("id")
    }

    #[test]
    fn a_real_report_is_counted_and_unknown_meetings_are_dropped() {
        let report = parse("node-a.eu:1", "open:3,limited:2,gone:9", &meetings()).expect("ok");
        assert_eq!(report.node, "node-a.eu:1");
        assert_eq!(report.counts, vec![(id("open"), 3), (id("limited"), 2)]);
        assert!(parse("a", "", &meetings())
            .expect("empty")
            .counts
            .is_empty());
    }

    #[test]
    fn a_count_is_capped_at_the_limit_and_an_absurd_one_refuses_the_report() {
        let capped = parse("a", "limited:25", &meetings()).expect("ok");
        assert_eq!(capped.counts, vec![(id("limited"), 20)]);
        assert_eq!(
            parse("a", &format!("open:{MAX_NODE_VIEWERS}"), &meetings())
                .expect("at the cap")
                .counts,
            vec![(id("open"), MAX_NODE_VIEWERS)]
        );
        for bad in [
            "limited:4000000000",
            "open:1000001",
            "open:1,open:2",
            "open",
            "open:-1",
            "a/b:1",
        ] {
            assert_eq!(
                parse("a", bad, &meetings()).map_err(|e| e.field),
                Err("viewers"),
                "{bad}"
            );
        }
    }

    #[test]
    fn names_and_sizes_are_bounded() {
        for bad in [
            "",
            "node a",
            "a/b",
            "a\nb",
            "ü",
            &"n".repeat(MAX_NODE_NAME + 1),
        ] {
            assert_eq!(
                parse(bad, "", &meetings()).map_err(|e| e.field),
                Err("node"),
                "{bad:?}"
            );
        }
        assert!(valid_node_name(&"n".repeat(MAX_NODE_NAME)));
        let many: Vec<String> = (0..=MAX_MEETINGS_PER_REPORT)
            .map(|i| format!("m{i}:1"))
            .collect();
        assert_eq!(
            parse("a", &many.join(","), &meetings()).map_err(|e| e.field),
            Err("viewers")
        );
        let exact: Vec<String> = (0..MAX_MEETINGS_PER_REPORT)
            .map(|i| format!("m{i}:1"))
            .collect();
        assert!(parse("a", &exact.join(","), &meetings()).is_ok());
        let long = format!("open:{}", "1".repeat(MAX_VIEWERS_PARAM));
        assert_eq!(
            parse("a", &long, &meetings()).map_err(|e| e.field),
            Err("viewers")
        );
    }
}
