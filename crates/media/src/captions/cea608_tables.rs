//! The CEA-608 character sets and the preamble address code row table, kept apart
//! from the decoder's state machine so that each reads on its own.

/// The character of a standard (one-byte) code 0x20–0x7F: ASCII except where 608
/// differs; `None` for anything else.
pub(crate) fn standard_char(code: u8) -> Option<char> {
    let c = match code {
        0x2a => 'á',
        0x5c => 'é',
        0x5e => 'í',
        0x5f => 'ó',
        0x60 => 'ú',
        0x7b => 'ç',
        0x7c => '÷',
        0x7d => 'Ñ',
        0x7e => 'ñ',
        0x7f => '█',
        0x20..=0x7e => char::from(code),
        _ => return None,
    };
    Some(c)
}

/// Special North American characters, second byte 0x30–0x3F after 0x11 (0x39 is the
/// transparent space, shown as a space).
const SPECIAL: [char; 16] = [
    '®', '°', '½', '¿', '™', '¢', '£', '♪', 'à', ' ', 'è', 'â', 'ê', 'î', 'ô', 'û',
];

/// Extended Spanish/miscellaneous (0x20–0x2F) and French (0x30–0x3F), after 0x12.
const EXTENDED_12: [char; 32] = [
    'Á', 'É', 'Ó', 'Ú', 'Ü', 'ü', '‘', '¡', '*', '\'', '—', '©', '℠', '•', '“', '”', //
    'À', 'Â', 'Ç', 'È', 'Ê', 'Ë', 'ë', 'Î', 'Ï', 'ï', 'Ô', 'Ù', 'ù', 'Û', '«', '»',
];

/// Extended Portuguese (0x20–0x2F) and German/Danish (0x30–0x3F), after 0x13.
const EXTENDED_13: [char; 32] = [
    'Ã', 'ã', 'Í', 'Ì', 'ì', 'Ò', 'ò', 'Õ', 'õ', '{', '}', '\\', '^', '_', '|', '~', //
    'Ä', 'ä', 'Ö', 'ö', 'ß', '¥', '¤', '¦', 'Å', 'å', 'Ø', 'ø', '┌', '┐', '└', '┘',
];

/// The special character for second byte `code` (0x30–0x3F).
pub(crate) fn special_char(code: u8) -> Option<char> {
    SPECIAL.get(usize::from(code.checked_sub(0x30)?)).copied()
}

/// The extended character for first byte `set` (0x12 or 0x13, channel bit cleared)
/// and second byte `code` (0x20–0x3F).
pub(crate) fn extended_char(set: u8, code: u8) -> Option<char> {
    let table = match set {
        0x12 => &EXTENDED_12,
        0x13 => &EXTENDED_13,
        _ => return None,
    };
    table.get(usize::from(code.checked_sub(0x20)?)).copied()
}

/// Rows (0-based) addressed by a PAC, indexed by `(first & 0x07) << 1 | (second & 0x20 != 0)`;
/// `None` where 608 defines no row (0x10 with second byte 0x60–0x7F).
const PAC_ROWS: [Option<u8>; 16] = [
    Some(10),
    None,
    Some(0),
    Some(1),
    Some(2),
    Some(3),
    Some(11),
    Some(12),
    Some(13),
    Some(14),
    Some(4),
    Some(5),
    Some(6),
    Some(7),
    Some(8),
    Some(9),
];

/// The 0-based row of a preamble address code (first byte 0x10–0x17 with the channel
/// bit cleared, second byte 0x40–0x7F).
pub(crate) fn pac_row(first: u8, second: u8) -> Option<usize> {
    let index = usize::from(first & 0x07) << 1 | usize::from(second & 0x20 != 0);
    PAC_ROWS.get(index).copied().flatten().map(usize::from)
}

/// The column a PAC's indent puts the cursor at (0 for the colour/italic PACs).
pub(crate) fn pac_indent(second: u8) -> usize {
    let code = (second & 0x1e) >> 1;
    if code >= 8 {
        usize::from(code - 8) * 4
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pac_rows_follow_the_standard_table() {
        let rows: Vec<Option<usize>> = [
            (0x11, 0x40),
            (0x11, 0x60),
            (0x12, 0x40),
            (0x12, 0x60),
            (0x15, 0x40),
            (0x15, 0x60),
            (0x16, 0x40),
            (0x16, 0x60),
            (0x17, 0x40),
            (0x17, 0x60),
            (0x10, 0x40),
            (0x13, 0x40),
            (0x13, 0x60),
            (0x14, 0x40),
            (0x14, 0x60),
            (0x10, 0x60),
        ]
        .iter()
        .map(|&(a, b)| pac_row(a, b))
        .collect();
        let want: Vec<Option<usize>> = (0..15).map(Some).chain([None]).collect();
        assert_eq!(rows, want);
        assert_eq!(pac_indent(0x50), 0);
        assert_eq!(pac_indent(0x52), 4);
        assert_eq!(pac_indent(0x7f), 28);
        assert_eq!(pac_indent(0x4e), 0);
    }

    #[test]
    fn character_sets() {
        assert_eq!(standard_char(0x41), Some('A'));
        assert_eq!(standard_char(0x2a), Some('á'));
        assert_eq!(standard_char(0x7f), Some('█'));
        assert_eq!(standard_char(0x1f), None);
        assert_eq!(special_char(0x37), Some('♪'));
        assert_eq!(special_char(0x40), None);
        assert_eq!(special_char(0x2f), None);
        assert_eq!(extended_char(0x12, 0x20), Some('Á'));
        assert_eq!(extended_char(0x13, 0x3f), Some('┘'));
        assert_eq!(extended_char(0x13, 0x40), None);
        assert_eq!(extended_char(0x14, 0x20), None);
    }
}
