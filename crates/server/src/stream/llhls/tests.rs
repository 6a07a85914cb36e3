//! Pure parts of LL-HLS: the blocking-reload predicate and the window's playlist text.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;

use super::{LlWindow, Opened, Output, PartOut, PartSpan, Position, SegmentOut};
use packaging::window::{LiveSegment, StoredSegment, WindowSnapshot};

#[test]
fn a_position_satisfies_what_it_lists_and_nothing_later() {
    // Segment 10 complete with 2 parts, segment 11 being cut with 1 part.
    let p = Position {
        last_complete: Some((10, 2)),
        pending: Some((11, 1)),
    };
    assert!(p.satisfies(9, None));
    assert!(p.satisfies(10, None));
    assert!(!p.satisfies(11, None), "segment 11 is not complete");
    assert!(p.satisfies(10, Some(1)));
    assert!(
        p.satisfies(10, Some(2)),
        "past the last part of 10 = part 0 of 11"
    );
    assert!(p.satisfies(11, Some(0)));
    assert!(!p.satisfies(11, Some(1)));
    assert!(!p.satisfies(12, Some(0)));
    // Segment 11 opened but no part yet: part 2 of 10 (= 11.0) must wait.
    let q = Position {
        last_complete: Some((10, 2)),
        pending: Some((11, 0)),
    };
    assert!(q.satisfies(10, Some(1)));
    assert!(!q.satisfies(10, Some(2)));
    assert!(!q.satisfies(11, Some(0)));
    assert!(!Position::default().satisfies(0, Some(0)));
    assert!(!Position::default().satisfies(0, None));
}

fn segment(msn: u64, parts: &[u64]) -> Output {
    Output::Segment(segment_out(msn, parts))
}

fn segment_out(msn: u64, parts: &[u64]) -> SegmentOut {
    let mut at = 0;
    let spans = parts
        .iter()
        .map(|&d| {
            at += 100;
            PartSpan {
                bytes: at - 100..at,
                duration_ticks: d,
                independent: true,
            }
        })
        .collect();
    SegmentOut {
        msn,
        discontinuity_seq: 0,
        discontinuous: false,
        duration_ticks: parts.iter().sum(),
        program_date_time_ms: 1_700_000_000_000 + (msn as i64 - 100) * 2000,
        bytes: Bytes::from(vec![0u8; at]),
        parts: spans,
        live: true,
        config: media::fmp4::InitConfig::default(),
    }
}

/// A stream window whose segments `msns` have LL-HLS views of two 1-s parts, but for
/// those in `without_ll`.
fn stream_window(msns: impl IntoIterator<Item = u64>, without_ll: &[u64]) -> WindowSnapshot {
    let segments: VecDeque<_> = msns
        .into_iter()
        .map(|msn| {
            let ll = segment_out(msn, &[90_000, 90_000]);
            let live = LiveSegment {
                msn,
                discontinuity_seq: 0,
                discontinuous: false,
                duration_ticks: ll.duration_ticks,
                program_date_time_ms: ll.program_date_time_ms,
                data: Bytes::new(),
                ..LiveSegment::default()
            };
            let ll = (!without_ll.contains(&msn)).then_some(ll);
            Arc::new(StoredSegment::new(live, None, ll, Some(90_000)))
        })
        .collect();
    WindowSnapshot {
        segments,
        target_secs: 2,
        ..WindowSnapshot::default()
    }
}

#[test]
fn the_window_renders_the_golden_playlist() {
    let mut w = LlWindow::new(2000, 1000, None);
    w.apply(Output::Init {
        discontinuity_seq: 0,
        bytes: Bytes::from_static(b"init"),
    });
    // Complete segments are the stream window's: the state keeps only the latest
    // until the channel takes it.
    w.apply(segment(103, &[90_000, 90_000]));
    assert_eq!(w.take_ready(102), None, "only the segment it completed");
    assert!(w.take_ready(103).is_some());
    w.apply(Output::Opened(Opened {
        msn: 104,
        discontinuity_seq: 0,
        discontinuous: false,
        program_date_time_ms: 1_700_000_008_000,
    }));
    assert!(w.apply(Output::Part(PartOut {
        msn: 104,
        index: 0,
        bytes: Bytes::from_static(b"part"),
        duration_ticks: 90_000,
        independent: true,
    })));
    let snapshot = w.snapshot(&stream_window(100..104, &[]));
    let expected = "#EXTM3U
#EXT-X-VERSION:9
#EXT-X-TARGETDURATION:3
#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=18.000,PART-HOLD-BACK=3.000
#EXT-X-PART-INF:PART-TARGET=1.000
#EXT-X-MEDIA-SEQUENCE:100
#EXT-X-DISCONTINUITY-SEQUENCE:0
#EXT-X-INDEPENDENT-SEGMENTS
#EXT-X-MAP:URI=\"ll-init-0.mp4\"
#EXT-X-PROGRAM-DATE-TIME:2023-11-14T22:13:20.000Z
#EXT-X-PART:DURATION=1.000,URI=\"part-100-0.m4s\",INDEPENDENT=YES
#EXT-X-PART:DURATION=1.000,URI=\"part-100-1.m4s\",INDEPENDENT=YES
#EXTINF:2.000,
llseg-100.m4s
#EXT-X-PROGRAM-DATE-TIME:2023-11-14T22:13:22.000Z
#EXT-X-PART:DURATION=1.000,URI=\"part-101-0.m4s\",INDEPENDENT=YES
#EXT-X-PART:DURATION=1.000,URI=\"part-101-1.m4s\",INDEPENDENT=YES
#EXTINF:2.000,
llseg-101.m4s
#EXT-X-PROGRAM-DATE-TIME:2023-11-14T22:13:24.000Z
#EXT-X-PART:DURATION=1.000,URI=\"part-102-0.m4s\",INDEPENDENT=YES
#EXT-X-PART:DURATION=1.000,URI=\"part-102-1.m4s\",INDEPENDENT=YES
#EXTINF:2.000,
llseg-102.m4s
#EXT-X-PROGRAM-DATE-TIME:2023-11-14T22:13:26.000Z
#EXT-X-PART:DURATION=1.000,URI=\"part-103-0.m4s\",INDEPENDENT=YES
#EXT-X-PART:DURATION=1.000,URI=\"part-103-1.m4s\",INDEPENDENT=YES
#EXTINF:2.000,
llseg-103.m4s
#EXT-X-PROGRAM-DATE-TIME:2023-11-14T22:13:28.000Z
#EXT-X-PART:DURATION=1.000,URI=\"part-104-0.m4s\",INDEPENDENT=YES
#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"part-104-1.m4s\"
";
    assert_eq!(std::str::from_utf8(&snapshot.full.bytes).unwrap(), expected);
    assert_eq!(
        snapshot.position,
        Position {
            last_complete: Some((103, 2)),
            pending: Some((104, 1)),
        }
    );
    assert_eq!(snapshot.part(104, 0).as_deref(), Some(&b"part"[..]));
    assert_eq!(snapshot.part(102, 1).map(|b| b.len()), Some(100));
    assert!(snapshot.part(104, 1).is_none());
    assert_eq!(snapshot.init(0).as_deref(), Some(&b"init"[..]));
    // The playlist lists the stream window's newest consecutive run of segments with
    // an LL-HLS view: the window's trim is its trim, and a gap in the sequence or a
    // segment without parts starts the list afresh.
    w.apply(segment(104, &[90_000, 90_000]));
    w.apply(segment(105, &[90_000, 90_000]));
    let listed = |window: &WindowSnapshot| -> Vec<u64> {
        w.snapshot(window).segments.iter().map(|s| s.msn).collect()
    };
    assert_eq!(
        listed(&stream_window(101..106, &[])),
        [101, 102, 103, 104, 105]
    );
    assert_eq!(listed(&stream_window((101..105).chain([200]), &[])), [200]);
    assert_eq!(listed(&stream_window(101..106, &[103])), [104, 105]);
}

#[test]
fn a_configured_hold_back_is_never_below_two_parts() {
    let window = stream_window([1], &[]);
    let w = LlWindow::new(2000, 1000, Some(1500));
    assert!(std::str::from_utf8(&w.snapshot(&window).full.bytes)
        .unwrap()
        .contains(",PART-HOLD-BACK=2.000\n"));
    let w = LlWindow::new(2000, 1000, Some(2500));
    assert!(std::str::from_utf8(&w.snapshot(&window).full.bytes)
        .unwrap()
        .contains(",PART-HOLD-BACK=2.500\n"));
}
