//! MTG-3 client versions, cross-node viewer counts, and a node's answer to a new viewer.

use meeting::{
    admit_new_viewer, check_client, ClientVersion, ConnectCause, ErrorCode, McLink, MeetingId,
    MeetingState, MeetingView, ViewerCounts,
};
use proptest::prelude::*;

#[test]
fn versions_parse_and_compare() {
    let v = |s: &str| s.parse::<ClientVersion>().unwrap();
    assert!(v("2.1.0.456") > v("2.1.0.455"));
    assert!(v("2.1") == v("2.1.0.0"));
    assert!(v("10.0") > v("9.99.99.99"));
    for bad in ["", "1..2", "a.b", "1.2.3.4.5", "-1", "1.2.", "99999999999"] {
        assert!(bad.parse::<ClientVersion>().is_err(), "{bad:?}");
    }
}

#[test]
fn old_clients_get_102011_or_16() {
    let min = Some(ClientVersion::new([2, 1, 0, 456]));
    assert_eq!(check_client(Some("2.1.0.456"), min, false), Ok(()));
    assert_eq!(check_client(None, min, false), Ok(()));
    assert_eq!(check_client(Some("2.0"), None, false), Ok(()));
    assert_eq!(
        check_client(Some("2.1.0.455"), min, false)
            .unwrap_err()
            .code(),
        102_011
    );
    assert_eq!(check_client(Some("2.0"), min, true).unwrap_err().code(), 16);
    assert_eq!(
        check_client(Some("garbage"), min, false),
        Err(ErrorCode::UpgradeRequired)
    );
}

#[test]
fn viewer_counts_sum_fresh_reports_only() {
    let m = MeetingId::parse("m").unwrap();
    let mut counts = ViewerCounts::new(5_000);
    assert!(counts.report("a", [(m.clone(), 2)], 0));
    assert!(counts.report("b", [(m.clone(), 3)], 1_000));
    assert_eq!(counts.total(&m, 1_000), 5);
    assert_eq!(counts.reported_by("a", &m, 1_000), 2);
    // Node a stops reporting: after the lifetime only b counts.
    assert_eq!(counts.total(&m, 5_500), 3);
    assert!(counts.report("a", [(m.clone(), 1)], 6_000));
    assert_eq!(counts.total(&m, 6_000), 4);
}

fn view(state: MeetingState, locked: bool, limit: Option<u32>, viewers: u64) -> MeetingView {
    MeetingView {
        id: "m".into(),
        state,
        locked,
        viewer_limit: limit,
        viewers,
        ladder: Vec::new(),
        private: false,
        removed: Vec::new(),
        waiting: false,
        recording_depth_days: None,
        languages: Vec::new(),
    }
}

#[test]
fn a_node_answers_each_condition_with_its_code() {
    use McLink::*;
    use MeetingState::*;
    let live = view(Live, false, None, 0);
    let code = |r: Result<(), ErrorCode>| r.unwrap_err().code();
    assert_eq!(admit_new_viewer(Connected, Some(&live), 0, 0, true), Ok(()));
    assert_eq!(
        code(admit_new_viewer(Connected, None, 0, 0, false)),
        104_005
    );
    assert_eq!(
        code(admit_new_viewer(
            Connected,
            Some(&view(Created, false, None, 0)),
            0,
            0,
            false
        )),
        103_002
    );
    assert_eq!(
        code(admit_new_viewer(
            Connected,
            Some(&view(Closed, false, None, 0)),
            0,
            0,
            true
        )),
        103_003
    );
    assert_eq!(
        code(admit_new_viewer(
            Connected,
            Some(&view(Live, true, None, 0)),
            0,
            0,
            true
        )),
        103_011
    );
    // Live on the MC, not delivered here yet: starting.
    assert_eq!(
        code(admit_new_viewer(Connected, Some(&live), 0, 0, false)),
        103_002
    );
    // Limit 3: 2 elsewhere (3 total, 1 of them reported by us) + 1 here now = full.
    let limited = view(Live, false, Some(3), 3);
    assert_eq!(
        code(admit_new_viewer(Connected, Some(&limited), 1, 1, true)),
        103_006
    );
    assert_eq!(
        admit_new_viewer(Connected, Some(&view(Live, false, Some(3), 2)), 1, 0, true),
        Ok(())
    );
    // The MC is away: a delivered meeting keeps admitting on its last view...
    let lost = Lost(ConnectCause::Refused);
    assert_eq!(admit_new_viewer(lost, Some(&live), 0, 0, true), Ok(()));
    // ...a new one gets 102005, or the cause when the MC never answered.
    assert_eq!(code(admit_new_viewer(lost, None, 0, 0, false)), 102_005);
    assert_eq!(code(admit_new_viewer(Starting, None, 0, 0, false)), 102_005);
    let never = Unreachable(ConnectCause::TlsCertificate);
    assert_eq!(
        code(admit_new_viewer(never, Some(&live), 0, 0, false)),
        104_107
    );
}

#[test]
fn the_link_remembers_whether_the_mc_ever_answered() {
    let cause = ConnectCause::Refused;
    assert_eq!(McLink::Starting.failed(cause), McLink::Unreachable(cause));
    assert_eq!(McLink::Connected.failed(cause), McLink::Lost(cause));
    assert_eq!(
        McLink::Lost(ConnectCause::Dns).failed(cause),
        McLink::Lost(cause)
    );
}

proptest! {
    /// Never more than the limit: admitting only while `admit_new_viewer` says yes, the
    /// viewers across two nodes that see each other's reports never exceed it.
    #[test]
    fn the_limit_holds_across_nodes(limit in 0u32..20, arrivals in proptest::collection::vec(0usize..2, 0..60)) {
        let mut here = [0u64; 2];
        for node in arrivals {
            let total = here[0] + here[1];
            let v = view(MeetingState::Live, false, Some(limit), total);
            if admit_new_viewer(McLink::Connected, Some(&v), here[node], here[node], true).is_ok() {
                here[node] += 1;
            }
            prop_assert!(here[0] + here[1] <= u64::from(limit));
        }
    }

    #[test]
    fn version_parse_never_panics(s in "\\PC{0,40}") {
        let _ = s.parse::<ClientVersion>();
    }

    #[test]
    fn version_order_matches_tuples(a in proptest::array::uniform4(0u32..5), b in proptest::array::uniform4(0u32..5)) {
        prop_assert_eq!(ClientVersion::new(a).cmp(&ClientVersion::new(b)), a.cmp(&b));
        let text = format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3]);
        prop_assert_eq!(text.parse::<ClientVersion>().unwrap(), ClientVersion::new(a));
    }
}
