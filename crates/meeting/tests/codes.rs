//! The code table: every code of seed 000 is there once, with a status, both messages,
//! and the 18 connect causes fill 104101..=104118 in order.

use std::collections::BTreeSet;

use meeting::{ConnectCause, ErrorCode};

#[test]
fn every_seed_code_is_in_the_table_exactly_once() {
    let codes: Vec<u32> = ErrorCode::ALL.iter().map(|c| c.code()).collect();
    let unique: BTreeSet<u32> = codes.iter().copied().collect();
    assert_eq!(unique.len(), codes.len(), "duplicate code in {codes:?}");
    let mut expected: BTreeSet<u32> = [
        102_004, 102_005, 102_011, 103_002, 103_003, 103_006, 103_011, 104_005, 16,
    ]
    .into_iter()
    .collect();
    expected.extend(104_101..=104_118);
    assert_eq!(unique, expected);
}

#[test]
fn connect_causes_are_numbered_in_order() {
    for (i, cause) in ConnectCause::ALL.iter().enumerate() {
        assert_eq!(cause.code(), 104_101 + i as u32, "{cause:?}");
        assert_eq!(
            ErrorCode::from_code(cause.code()),
            Some(ErrorCode::McConnect(*cause))
        );
    }
}

#[test]
fn rows_are_complete_and_labels_unique() {
    let mut labels = BTreeSet::new();
    for code in ErrorCode::ALL {
        let info = code.info();
        assert!((400..=599).contains(&info.status), "{code:?}");
        assert!(!info.message.is_empty() && info.message.is_ascii());
        assert!(!info.message.contains('"') && !info.message.contains('\\'));
        assert!(!info.message_zh.is_empty());
        assert!(labels.insert(info.label), "label {} twice", info.label);
        assert_eq!(ErrorCode::from_code(code.code()), Some(code));
        let body: serde_json::Value = serde_json::from_str(&code.json_body()).unwrap();
        assert_eq!(body["code"], code.code());
        assert_eq!(body["message"], code.message());
    }
    assert_eq!(ErrorCode::from_code(500), None);
}

#[test]
fn seed_texts_are_the_second_language() {
    assert_eq!(
        ErrorCode::MeetingExists.message_zh(),
        "會議已經存在無法創建"
    );
    assert_eq!(ErrorCode::Locked.message_zh(), "會議被主持人鎖定");
    assert_eq!(ErrorCode::NotOnMc.message_zh(), "會議在MC上不存在");
    assert_eq!(
        ErrorCode::McConnect(ConnectCause::Refused).message_zh(),
        "無法和MC服務器建立連接"
    );
    assert!(ErrorCode::UpgradeInSession.message_zh().contains("16"));
}

#[test]
fn statuses_fit_the_condition() {
    assert_eq!(ErrorCode::MeetingExists.status(), 409);
    assert_eq!(ErrorCode::NotStarted.status(), 503);
    assert_eq!(ErrorCode::Closed.status(), 410);
    assert_eq!(ErrorCode::NotOnMc.status(), 404);
    assert_eq!(
        ErrorCode::McConnect(ConnectCause::ConnectTimeout).status(),
        504
    );
    assert_eq!(ErrorCode::McConnect(ConnectCause::Refused).status(), 502);
    assert!(ErrorCode::NotStarted.is_retryable());
    assert!(!ErrorCode::Closed.is_retryable());
}
