//! Every error a client of brdyun can see, in one table.
//!
//! A [`Code`] is one condition; its row ([`CodeInfo`]) gives the numeric code, the HTTP
//! status, the fixed message, the metric label and whether the client should retry.
//! [`body::json`] writes every error body from it. The families:
//!
//! | codes | family |
//! |---|---|
//! | 102004–104118, 16 | [`ErrorCode`]: the meetings and the MC (seed 000) |
//! | 105xxx | [`OttRefusal`]: passes, backup refusals, logins |
//! | 106xxx | [`ExperimentsError`]: the experiments API and KPI beacons |
//! | 107xxx | [`FaultRuleError`]: the fault-injection API |
//! | 108xxx | [`RequestError`]: the request itself (not found, malformed, token, size, method) |
//! | 109xxx | [`Shed`]: the back-pressure answers |
//! | 114xxx | [`McAnswerFault`]: entries of an MC's answer a node refuses (logs) |
//! | 115xxx | [`Health`]: `/healthz` and `/readyz` and the reasons of a process not ready |
//!
//! Pure: no I/O, no dependency.

pub mod body;
mod code;
pub mod families;
pub mod meeting;
mod row;

pub use code::Code;
pub use families::{
    AccessRefusal, CaptionError, ExperimentsError, FaultRuleError, Health, InputFault, LadderFault,
    McAnswerFault, OttRefusal, RequestError, Shed,
};
pub use meeting::{ConnectCause, ErrorCode};
pub use row::{CodeInfo, LogLevel};

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn every_code_is_unique_and_every_row_complete() {
        let mut numbers = BTreeSet::new();
        let mut labels = BTreeSet::new();
        for code in Code::all() {
            let info = code.info();
            assert!(numbers.insert(info.code), "duplicate {}", info.code);
            assert!((400..=599).contains(&info.status), "{code:?}");
            assert!(
                !info.message.is_empty() && info.message.is_ascii(),
                "{code:?}"
            );
            assert!(!info.label.is_empty(), "{code:?}");
            // Labels are unique but for the one meaning shared by two families.
            if info.label != "body_too_large" {
                assert!(labels.insert(info.label), "duplicate label {}", info.label);
            }
            assert_eq!(Code::from_number(info.code), Some(code));
        }
        assert_eq!(
            numbers.len(),
            27 + 14 + 5 + 3 + 13 + 2 + 4 + 18 + 10 + 15 + 6 + 9
        );
    }

    #[test]
    fn bodies_are_json_with_the_fixed_message_and_an_escaped_field() {
        let body = Code::Request(RequestError::InvalidField).json(Some("a\"b\\c\n"));
        let value: serde_json::Value = serde_json::from_str(&body).expect("json");
        assert_eq!(value["code"], 108_007);
        assert_eq!(value["message"], "a field of the request is invalid");
        assert_eq!(value["field"], "a\"b\\c\n");
        let plain = Code::Meeting(ErrorCode::NotStarted).json(None);
        assert_eq!(
            plain,
            r#"{"code":103002,"message":"the meeting has not started"}"#
        );
    }

    #[test]
    fn the_temporary_conditions_are_retryable() {
        let retryable: Vec<u32> = Code::all()
            .filter(|c| c.retryable())
            .map(Code::code)
            .collect();
        let mut expected = vec![102_005, 103_002, 103_006];
        expected.extend(104_101..=104_118);
        // A connection over a cap may come back once others have ended; a body cut for
        // its deadline may come whole on a better link.
        expected.extend([108_006, 108_009, 108_010, 108_011, 109_001]);
        // An archive scan over the node's cap passes once one ends.
        expected.push(109_002);
        // Ladder faults are temporary: the encoder restarts, a rung realigns.
        expected.extend(110_001..=110_004);
        // Input faults clear when the source heals.
        expected.extend(
            (111_001..=111_005)
                .chain([111_010])
                .chain(111_020..=111_024)
                // A busy meeting is free again once its publisher leaves; a restarted
                // SRT listener takes its publishers back.
                .chain([111_029, 111_031]),
        );
        // A caption flood passes; a meeting goes live.
        expected.extend([112_007, 112_008]);
        // A probe asks again: health and readiness change by themselves.
        expected.extend([115_001, 115_002]);
        expected.extend(115_010..=115_016);
        assert_eq!(retryable, expected);
    }
}
