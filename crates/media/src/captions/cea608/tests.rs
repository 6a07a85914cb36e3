use super::*;

/// One step of a caption script.
enum S {
    /// A control code, sent twice as encoders do.
    C(u8, u8),
    /// A control code sent once.
    Once(u8, u8),
    /// Standard characters, two per pair.
    T(&'static str),
    /// A pair exactly as given (parity included).
    Raw([u8; 2]),
}
use S::*;

const RCL: S = C(0x14, 0x20);
const BS: S = C(0x14, 0x21);
const DER: S = C(0x14, 0x24);
const RU2: S = C(0x14, 0x25);
const RU3: S = C(0x14, 0x26);
const RDC: S = C(0x14, 0x29);
const TR: S = C(0x14, 0x2a);
const EDM: S = C(0x14, 0x2c);
const CR: S = C(0x14, 0x2d);
const ENM: S = C(0x14, 0x2e);
const EOC: S = C(0x14, 0x2f);
/// PACs at column 0 of rows 14 and 15.
const ROW14: S = C(0x14, 0x50);
const ROW15: S = C(0x14, 0x70);

fn pair(a: u8, b: u8) -> [u8; 2] {
    [with_parity(a), with_parity(b)]
}

fn pairs(script: &[S]) -> Vec<[u8; 2]> {
    let mut out = Vec::new();
    for step in script {
        match *step {
            C(a, b) => out.extend([pair(a, b), pair(a, b)]),
            Once(a, b) => out.push(pair(a, b)),
            T(s) => out.extend(
                s.as_bytes()
                    .chunks(2)
                    .map(|c| pair(c[0], c.get(1).copied().unwrap_or(0))),
            ),
            Raw(p) => out.push(p),
        }
    }
    out
}

/// Every text the decoder reported while running `script`.
fn feed(d: &mut Cea608Decoder, script: &[S]) -> Vec<String> {
    pairs(script)
        .into_iter()
        .filter_map(|p| d.push(p))
        .collect()
}

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn parity_is_odd() {
    for b in 0..=255u8 {
        let p = with_parity(b);
        assert_eq!(p.count_ones() % 2, 1);
        assert_eq!(p & 0x7f, b & 0x7f);
    }
    assert_eq!(pair(0, 0), [0x80, 0x80]);
}

#[test]
fn pop_on_shows_at_eoc_and_clears_at_edm() {
    let mut d = Cea608Decoder::new();
    assert!(feed(&mut d, &[RCL, ROW15, T("HELLO")]).is_empty());
    assert_eq!(feed(&mut d, &[EOC]), ["HELLO"]);
    assert_eq!(feed(&mut d, &[EDM]), [""]);
    // Clearing an empty screen changes nothing.
    assert!(feed(&mut d, &[EDM]).is_empty());

    let script = [RCL, ROW14, T("TOP  "), ROW15, T("BOTTOM"), EOC];
    assert_eq!(feed(&mut d, &script), ["TOP\nBOTTOM"]);
    // ENM empties the caption being built: the next EOC shows nothing.
    assert_eq!(feed(&mut d, &[RCL, ROW15, T("X"), ENM, EOC]), [""]);
    // The memories swap: the old caption comes back.
    assert_eq!(feed(&mut d, &[EOC]), ["TOP\nBOTTOM"]);
}

#[test]
fn roll_up_keeps_its_depth() {
    let mut d = Cea608Decoder::new();
    let mut seen = feed(&mut d, &[RU2, CR, ROW15, T("ONE")]);
    assert_eq!(seen, ["ON", "ONE"]);
    for (line, want) in [
        ("TWO", "ONE\nTWO"),
        ("THREE", "TWO\nTHREE"),
        ("FOUR", "THREE\nFOUR"),
    ] {
        seen = feed(&mut d, &[CR, ROW15, T(line)]);
        assert_eq!(seen.last().map(String::as_str), Some(want));
        assert!(seen.iter().all(|s| s.lines().count() <= 2), "{seen:?}");
    }
    // A deeper window keeps more rows; a shallower one drops the top.
    assert_eq!(
        feed(&mut d, &[RU3, CR, T("FIVE")]).last().unwrap(),
        "THREE\nFOUR\nFIVE"
    );
    assert_eq!(feed(&mut d, &[RU2]), ["FOUR\nFIVE"]);
    // A PAC to another row moves the window; text continues on the new base row.
    assert!(feed(&mut d, &[C(0x15, 0x50)]).is_empty());
    assert_eq!(feed(&mut d, &[T("X")]), ["FOUR\nXIVE"]);
    // A base row too high for the depth is pushed down so both rows still fit.
    assert!(feed(&mut d, &[C(0x11, 0x50)]).is_empty());
    assert_eq!(feed(&mut d, &[CR, T("Y")]), ["XIVE", "XIVE\nY"]);
    // Entering pop-on leaves the screen; RU from pop-on erases it.
    assert!(feed(&mut d, &[RCL, T("Q")]).is_empty());
    assert_eq!(feed(&mut d, &[RU2]), [""]);
}

#[test]
fn paint_on_writes_directly() {
    let mut d = Cea608Decoder::new();
    assert_eq!(feed(&mut d, &[RDC, ROW15, T("HI")]), ["HI"]);
    assert_eq!(feed(&mut d, &[BS]), ["H"]);
    // TO2 moves the cursor two columns right.
    assert_eq!(feed(&mut d, &[ROW15, C(0x17, 0x22), T("Y")]), ["H Y"]);
    // DER from column 1 keeps only the first character.
    assert_eq!(feed(&mut d, &[ROW15, C(0x17, 0x21), DER]), ["H"]);
    // Mid-row codes take a cell, shown as a space.
    assert_eq!(feed(&mut d, &[C(0x11, 0x2e), T("Z")]), ["H Z"]);
}

#[test]
fn doubled_control_codes_run_once() {
    let mut d = Cea608Decoder::new();
    assert_eq!(
        feed(&mut d, &[RDC, ROW15, T("ABCD")]).last().unwrap(),
        "ABCD"
    );
    assert_eq!(feed(&mut d, &[BS]), ["ABC"]);
    // Three in a row: the third is a new command.
    let three = [Once(0x14, 0x21), Once(0x14, 0x21), Once(0x14, 0x21)];
    assert_eq!(feed(&mut d, &three), ["AB", "A"]);
    // Text between two identical codes makes the second a new command.
    let split = [T("XY"), Once(0x14, 0x21), T("Z"), Once(0x14, 0x21)];
    assert_eq!(feed(&mut d, &split), ["AXY", "AX", "AXZ", "AX"]);
    // Padding between the copies does not.
    let padded = [
        T("Q"),
        Once(0x14, 0x21),
        Raw([0x80, 0x80]),
        Once(0x14, 0x21),
    ];
    assert_eq!(feed(&mut d, &padded), ["AXQ", "AX"]);
}

#[test]
fn parity_errors_are_dropped_and_counted() {
    let mut d = Cea608Decoder::new();
    feed(&mut d, &[RDC, ROW15]);
    // 0x42 'B' has even parity as sent: only 'A' is shown.
    assert_eq!(d.push([with_parity(b'A'), 0x42]).as_deref(), Some("A"));
    assert_eq!(d.stats().parity_errors, 1);
    // EDM with a bad first byte: neither erases nor shows its second byte (',').
    assert_eq!(d.push([0x14, with_parity(0x2c)]), None);
    // BS with a bad second byte is dropped too.
    assert_eq!(d.push([with_parity(0x14), 0x21]), None);
    assert_eq!(d.stats().parity_errors, 3);
    // A bad text byte first: the good second byte still counts.
    assert_eq!(d.push([0x42, with_parity(b'C')]).as_deref(), Some("AC"));
    // The good copy of the code then runs.
    assert_eq!(feed(&mut d, &[EDM]), [""]);
    let stats = d.stats();
    assert_eq!(stats.parity_errors, 4);
    assert_eq!(stats.pairs, 2 + 2 + 4 + 2);
    assert_eq!(stats.ignored, 0);
}

#[test]
fn cc2_and_text_service_are_ignored() {
    let mut d = Cea608Decoder::new();
    assert_eq!(feed(&mut d, &[RDC, ROW15, T("A")]), ["A"]);
    // CC2 (first bytes 0x18–0x1F): its mode, text and erase do not touch CC1.
    let cc2 = [
        C(0x1c, 0x29),
        C(0x1c, 0x70),
        T("ZZ"),
        C(0x1c, 0x2c),
        C(0x19, 0x37),
    ];
    assert!(feed(&mut d, &cc2).is_empty());
    // A CC1 code selects channel 1 again (TO1, then text).
    assert_eq!(feed(&mut d, &[C(0x17, 0x21), T("B")]), ["A B"]);
    assert_eq!(d.stats().ignored, 5);
    // TR switches to the text service until a caption mode command.
    assert!(feed(&mut d, &[TR, T("TEXT"), C(0x11, 0x37)]).is_empty());
    assert_eq!(feed(&mut d, &[RDC, T("C")]), ["A BC"]);
}

#[test]
fn special_extended_and_standard_characters() {
    let mut d = Cea608Decoder::new();
    let script = [
        RDC,
        ROW15,
        T("U"),
        C(0x12, 0x24), // Ü replaces the U sent before it
        T("ber "),
        C(0x11, 0x37), // ♪
        Raw(pair(0x2a, 0x7e)),
        C(0x11, 0x39), // transparent space
        T("x"),
        C(0x13, 0x34), // ß replaces the x
        Raw(pair(0x5c, 0x7f)),
    ];
    let seen = feed(&mut d, &script);
    assert_eq!(seen.last().unwrap(), "Über ♪áñ ßé█");
    // An extended character at column 0 has nothing to replace.
    assert_eq!(feed(&mut d, &[EDM, ROW14, C(0x12, 0x27)]), ["", "¡"]);
}

#[test]
fn cursor_is_clamped_at_the_last_column() {
    let mut d = Cea608Decoder::new();
    // Row 15, indent 28; then more text than fits: the last cell is overwritten.
    let seen = feed(&mut d, &[RDC, C(0x14, 0x7e), T("ABCDEFGH"), C(0x17, 0x23)]);
    let want = format!("{}ABCH", " ".repeat(28));
    assert_eq!(seen.last(), Some(&want));
    assert_eq!(
        feed(&mut d, &[C(0x17, 0x23), T("Z")]).last().unwrap(),
        &format!("{}ABCZ", " ".repeat(28))
    );
}

#[test]
fn random_pairs_never_panic_and_stay_on_the_grid() {
    let mut d = Cea608Decoder::new();
    let mut state = 0x2545_f491_4f6c_dd1d;
    let mut changes = 0;
    for _ in 0..100_000 {
        let r = xorshift(&mut state);
        let (mut a, mut b) = (r as u8, (r >> 8) as u8);
        if (r >> 16) & 7 != 0 {
            a = with_parity(a);
            b = with_parity(b);
        }
        if (r >> 19) & 3 == 0 {
            a = with_parity(0x10 | (a & 0x0f));
        }
        if let Some(text) = d.push([a, b]) {
            changes += 1;
            let lines: Vec<&str> = text.split('\n').collect();
            assert!(lines.len() <= 15, "{text:?}");
            for line in lines {
                assert!(line.chars().count() <= 32, "{line:?}");
                assert!(text.is_empty() || !line.trim_end().is_empty(), "{text:?}");
            }
        }
    }
    let stats = d.stats();
    assert_eq!(stats.pairs, 100_000);
    assert!(
        changes > 100 && stats.parity_errors > 0 && stats.ignored > 0,
        "{stats:?}"
    );
}
