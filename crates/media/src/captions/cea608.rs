//! A CEA-608 decoder for data channel 1 (CC1, field 1): byte pairs in, "the text on
//! screen now" out, each time it changes.
//!
//! The model is the standard's caption memory: a displayed and a non-displayed grid of
//! 15 rows by 32 columns and one cursor. Pop-on captions are built off screen and shown
//! by End Of Caption; roll-up and paint-on captions are written on screen directly.
//! Pairs for CC2, text-service data (TR/RTD) and codes this decoder does not render
//! (colours, flash, background attributes) only show up in [`Cea608Stats::ignored`].

use super::cea608_tables::{extended_char, pac_indent, pac_row, special_char, standard_char};

const ROWS: usize = 15;
const COLS: usize = 32;

type Row = [char; COLS];
type Memory = [Row; ROWS];

const BLANK_ROW: Row = [' '; COLS];
const BLANK: Memory = [BLANK_ROW; ROWS];

/// Counters for monitoring a caption feed: a rising `parity_errors` means a damaged
/// source, a high `ignored` share usually means the captions are on another channel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cea608Stats {
    /// Pairs pushed, padding included.
    pub pairs: u64,
    /// Bytes dropped because their parity was even.
    pub parity_errors: u64,
    /// Pairs that carried data this decoder does not act on: CC2, text service,
    /// undefined or unrendered codes, bytes outside the character set.
    pub ignored: u64,
}

/// Where text goes, set by the last mode command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// RCL: text builds up in non-displayed memory until EOC.
    PopOn,
    /// RDC: text is written into displayed memory.
    PaintOn,
    /// RU2/RU3/RU4: text is written on the base row; CR scrolls, keeping this many rows.
    RollUp(usize),
    /// TR/RTD: the data belongs to the text service, not to captions.
    Text,
}

/// The data channel the last control code addressed (bit 3 of its first byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Channel {
    Cc1,
    Cc2,
}

/// Decodes CC1 from field-1 byte pairs; see the module documentation.
#[derive(Debug, Clone)]
pub struct Cea608Decoder {
    displayed: Memory,
    non_displayed: Memory,
    mode: Mode,
    /// Cursor; always `< ROWS` and `< COLS`.
    row: usize,
    col: usize,
    /// The roll-up base row; always `>= depth - 1` while in roll-up mode.
    base_row: usize,
    channel: Channel,
    /// The last control pair executed, so that its immediate repeat is skipped.
    last_control: Option<[u8; 2]>,
    /// Displayed memory was written since the last comparison with `shown`.
    dirty: bool,
    /// The text last returned by [`Cea608Decoder::push`].
    shown: String,
    stats: Cea608Stats,
}

impl Default for Cea608Decoder {
    fn default() -> Self {
        Self::new()
    }
}

/// `byte` with bit 7 set or cleared so that it has odd parity, as 608 transmits it.
pub fn with_parity(byte: u8) -> u8 {
    let b = byte & 0x7f;
    if b.count_ones().is_multiple_of(2) {
        b | 0x80
    } else {
        b
    }
}

impl Cea608Decoder {
    /// A decoder with an empty screen, in pop-on mode, listening to CC1.
    pub fn new() -> Self {
        Self {
            displayed: BLANK,
            non_displayed: BLANK,
            mode: Mode::PopOn,
            row: ROWS - 1,
            col: 0,
            base_row: ROWS - 1,
            channel: Channel::Cc1,
            last_control: None,
            dirty: false,
            shown: String::new(),
            stats: Cea608Stats::default(),
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> Cea608Stats {
        self.stats
    }

    /// Feeds one byte pair as carried (odd parity in bit 7). Returns the whole displayed
    /// text when it changed: rows top to bottom joined by '\n', trailing spaces trimmed,
    /// empty rows skipped, and an empty string when the screen was cleared.
    pub fn push(&mut self, pair: [u8; 2]) -> Option<String> {
        self.stats.pairs += 1;
        let first = self.check_parity(pair[0]);
        let second = self.check_parity(pair[1]);
        match first {
            Some(0) if second == Some(0) => {} // padding
            // A control code needs both bytes.
            Some(b1 @ 0x10..=0x1f) => {
                if let Some(b2) = second {
                    self.control(b1, b2);
                }
            }
            Some(0x01..=0x0f) => {
                self.last_control = None;
                self.stats.ignored += 1;
            }
            // A first byte with bad parity that looks like a control byte takes its
            // operand down with it; otherwise only the bad byte is lost.
            None if (0x10..=0x1f).contains(&(pair[0] & 0x7f)) => {}
            _ => self.text(first, second),
        }
        self.refresh()
    }

    /// The byte without its parity bit, or `None` (counted) if its parity is even.
    fn check_parity(&mut self, byte: u8) -> Option<u8> {
        if byte.count_ones() % 2 == 1 {
            Some(byte & 0x7f)
        } else {
            self.stats.parity_errors += 1;
            None
        }
    }

    /// One or two standard characters for the channel last selected.
    fn text(&mut self, first: Option<u8>, second: Option<u8>) {
        self.last_control = None;
        if self.channel != Channel::Cc1 || self.mode == Mode::Text {
            self.stats.ignored += 1;
            return;
        }
        let mut unknown = false;
        for byte in [first, second].into_iter().flatten() {
            match standard_char(byte) {
                Some(c) => self.write_char(c),
                None => unknown |= byte != 0,
            }
        }
        if unknown {
            self.stats.ignored += 1;
        }
    }

    /// A two-byte code (first byte 0x10–0x1F): doubling, channel selection, dispatch.
    fn control(&mut self, b1: u8, b2: u8) {
        if self.last_control == Some([b1, b2]) {
            // The redundant copy; a third identical pair is a new command.
            self.last_control = None;
            return;
        }
        self.last_control = Some([b1, b2]);
        self.channel = if b1 & 0x08 == 0 {
            Channel::Cc1
        } else {
            Channel::Cc2
        };
        if self.channel != Channel::Cc1 || !self.execute(b1 & !0x08, b2) {
            self.stats.ignored += 1;
        }
    }

    /// Executes a CC1 code (channel bit cleared); false if it had no meaning here.
    fn execute(&mut self, b1: u8, b2: u8) -> bool {
        if b1 == 0x14 && (0x20..=0x2f).contains(&b2) {
            return self.misc(b2);
        }
        if self.mode == Mode::Text {
            return false;
        }
        match (b1, b2) {
            (0x17, 0x21..=0x23) => self.col = (self.col + usize::from(b2 - 0x20)).min(COLS - 1),
            // Mid-row codes change style and occupy a cell, shown as a space.
            (0x11, 0x20..=0x2f) => self.write_char(' '),
            (0x11, 0x30..=0x3f) => match special_char(b2) {
                Some(c) => self.write_char(c),
                None => return false,
            },
            // Sent after a standard fallback character, which they replace.
            (0x12 | 0x13, 0x20..=0x3f) => match extended_char(b1, b2) {
                Some(c) => {
                    self.col = self.col.saturating_sub(1);
                    self.write_char(c);
                }
                None => return false,
            },
            (0x10..=0x17, 0x40..=0x7f) => return self.preamble(b1, b2),
            _ => return false,
        }
        true
    }

    /// Miscellaneous control codes (0x14 0x20–0x2F); false for those not acted on.
    fn misc(&mut self, code: u8) -> bool {
        let captions = self.mode != Mode::Text;
        match code {
            0x20 => self.mode = Mode::PopOn,
            0x21 if captions => self.backspace(),
            0x24 if captions => {
                let (row, col) = (self.row, self.col);
                if let Some(cells) = self.target().get_mut(row).and_then(|r| r.get_mut(col..)) {
                    cells.fill(' ');
                }
            }
            0x25..=0x27 => self.roll_up(usize::from(code - 0x23)),
            0x29 => self.mode = Mode::PaintOn,
            0x2a | 0x2b => self.mode = Mode::Text,
            0x2c => {
                self.displayed = BLANK;
                self.dirty = true;
            }
            0x2d if captions => self.carriage_return(),
            0x2e => self.non_displayed = BLANK,
            0x2f => {
                std::mem::swap(&mut self.displayed, &mut self.non_displayed);
                self.mode = Mode::PopOn;
                self.dirty = true;
            }
            // AOF, AON, FON, and the cursor commands while in text mode.
            _ => return false,
        }
        true
    }

    /// A preamble address code: moves the cursor to a row and indent; in roll-up mode
    /// the caption rows move with it to the new base row.
    fn preamble(&mut self, b1: u8, b2: u8) -> bool {
        let Some(row) = pac_row(b1, b2) else {
            return false;
        };
        let row = match self.mode {
            Mode::RollUp(depth) => {
                let base = row.max(depth - 1);
                if base != self.base_row {
                    self.move_window(base, depth);
                }
                base
            }
            _ => row,
        };
        self.row = row.min(ROWS - 1);
        self.col = pac_indent(b2).min(COLS - 1);
        true
    }

    /// RU2/RU3/RU4. Coming from another mode, both memories are erased and the window
    /// sits at the bottom row; within roll-up only the depth changes.
    fn roll_up(&mut self, depth: usize) {
        if !matches!(self.mode, Mode::RollUp(_)) {
            self.displayed = BLANK;
            self.non_displayed = BLANK;
            self.dirty = true;
            self.base_row = ROWS - 1;
            self.col = 0;
        }
        self.mode = Mode::RollUp(depth);
        self.base_row = self.base_row.clamp(depth - 1, ROWS - 1);
        self.row = self.base_row;
        self.clear_outside_window(depth);
    }

    /// CR: in roll-up mode, scrolls the window up one row and returns the cursor to
    /// the start of the (now empty) base row; no effect in the other modes.
    fn carriage_return(&mut self) {
        let Mode::RollUp(depth) = self.mode else {
            return;
        };
        let top = (self.base_row + 1).saturating_sub(depth);
        for r in top..self.base_row {
            if let Some(&next) = self.displayed.get(r + 1) {
                self.displayed[r] = next;
            }
        }
        if let Some(base) = self.displayed.get_mut(self.base_row) {
            *base = BLANK_ROW;
        }
        self.clear_outside_window(depth);
        self.row = self.base_row;
        self.col = 0;
        self.dirty = true;
    }

    /// Moves the `depth` roll-up rows so that they end on `new_base`.
    fn move_window(&mut self, new_base: usize, depth: usize) {
        let old = std::mem::replace(&mut self.displayed, BLANK);
        for i in 0..depth {
            let (Some(src), Some(dst)) = (self.base_row.checked_sub(i), new_base.checked_sub(i))
            else {
                break;
            };
            if let (Some(&row), Some(slot)) = (old.get(src), self.displayed.get_mut(dst)) {
                *slot = row;
            }
        }
        self.base_row = new_base.min(ROWS - 1);
        self.dirty = true;
    }

    /// Erases displayed rows outside the roll-up window, so at most `depth` remain.
    fn clear_outside_window(&mut self, depth: usize) {
        let top = (self.base_row + 1).saturating_sub(depth);
        for (r, row) in self.displayed.iter_mut().enumerate() {
            if (r < top || r > self.base_row) && *row != BLANK_ROW {
                *row = BLANK_ROW;
                self.dirty = true;
            }
        }
    }

    /// BS: the cursor moves one column left, erasing the character there.
    fn backspace(&mut self) {
        if self.col == 0 {
            return;
        }
        self.col -= 1;
        let (row, col) = (self.row, self.col);
        if let Some(cell) = self.target().get_mut(row).and_then(|r| r.get_mut(col)) {
            *cell = ' ';
        }
    }

    /// Writes at the cursor and advances; at column 32 the last cell is overwritten.
    fn write_char(&mut self, c: char) {
        let (row, col) = (self.row, self.col);
        if let Some(cell) = self.target().get_mut(row).and_then(|r| r.get_mut(col)) {
            *cell = c;
        }
        self.col = (col + 1).min(COLS - 1);
    }

    /// The memory text and cursor commands act on in the current mode.
    fn target(&mut self) -> &mut Memory {
        if self.mode == Mode::PopOn {
            &mut self.non_displayed
        } else {
            self.dirty = true;
            &mut self.displayed
        }
    }

    /// The displayed text if it differs from what was last returned.
    fn refresh(&mut self) -> Option<String> {
        if !std::mem::take(&mut self.dirty) {
            return None;
        }
        let text = render(&self.displayed);
        if text == self.shown {
            return None;
        }
        self.shown.clone_from(&text);
        Some(text)
    }
}

/// Rows top to bottom, trailing spaces trimmed, empty rows skipped.
fn render(memory: &Memory) -> String {
    let mut lines = Vec::new();
    for row in memory {
        let line: String = row.iter().collect();
        let line = line.trim_end_matches(' ');
        if !line.is_empty() {
            lines.push(line.to_owned());
        }
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests;
