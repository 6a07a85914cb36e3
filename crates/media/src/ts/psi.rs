//! Program-specific information: the PAT and the PMT, their section framing across
//! packets, and the MPEG-2 CRC32 that protects (and, for the muxer, seals) each section.

use thiserror::Error;

/// Why a PSI section was rejected.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PsiError {
    /// The section is shorter than its header or its declared length.
    #[error("psi section truncated")]
    Truncated,
    /// The table_id is not the one expected on this PID.
    #[error("psi table id {0:#04x} unexpected")]
    TableId(u8),
    /// The CRC32 at the end of the section does not match its contents.
    #[error("psi section crc mismatch")]
    Crc,
}

pub use crate::crc::crc32_mpeg2;

/// Largest section a PSI table may use (private sections; PAT/PMT are limited to 1024).
const MAX_SECTION: usize = 4096;

/// Reassembles PSI sections that span packets on one PID.
#[derive(Debug, Default)]
pub struct SectionAssembler {
    buf: Vec<u8>,
    /// True while the bytes in `buf` are the start of a section.
    started: bool,
}

impl SectionAssembler {
    /// An assembler waiting for its first payload_unit_start_indicator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets a partial section (after lost packets).
    pub fn reset(&mut self) {
        self.buf.clear();
        self.started = false;
    }

    /// Feeds one packet's payload; appends every section it completes to `out`
    /// (raw bytes from table_id to the CRC, not yet checked).
    pub fn push(&mut self, pusi: bool, payload: &[u8], out: &mut Vec<Vec<u8>>) {
        let mut data = payload;
        if pusi {
            let Some((&pointer, rest)) = data.split_first() else {
                self.reset();
                return;
            };
            let pointer = usize::from(pointer);
            let Some(tail) = rest.get(..pointer) else {
                self.reset();
                return;
            };
            if self.started {
                self.buf.extend_from_slice(tail);
                self.take_complete(out);
            }
            self.reset();
            self.started = true;
            data = rest.get(pointer..).unwrap_or_default();
        } else if !self.started {
            return;
        }
        self.buf.extend_from_slice(data);
        self.take_complete(out);
        if self.buf.len() > MAX_SECTION {
            self.reset();
        }
    }

    /// Moves complete sections out of the buffer; stops at stuffing (0xff).
    fn take_complete(&mut self, out: &mut Vec<Vec<u8>>) {
        loop {
            match self.buf.first() {
                None => return,
                Some(0xff) => {
                    self.reset();
                    return;
                }
                Some(_) => {}
            }
            let Some(len) = section_len(&self.buf) else {
                return;
            };
            if self.buf.len() < len {
                return;
            }
            let rest = self.buf.split_off(len);
            out.push(std::mem::replace(&mut self.buf, rest));
        }
    }
}

/// Total length of the section starting at `buf[0]`, once its header is in.
fn section_len(buf: &[u8]) -> Option<usize> {
    let [_, b1, b2, ..] = *buf else { return None };
    Some(3 + ((usize::from(b1 & 0x0f) << 8) | usize::from(b2)))
}

/// The long-form section header shared by the PAT and the PMT, with the body between
/// the header and the CRC.
struct LongSection<'a> {
    id: u16,
    version: u8,
    current: bool,
    body: &'a [u8],
}

fn parse_long(section: &[u8], table_id: u8) -> Result<LongSection<'_>, PsiError> {
    let len = section_len(section).ok_or(PsiError::Truncated)?;
    if len < 12 {
        return Err(PsiError::Truncated);
    }
    let section = section.get(..len).ok_or(PsiError::Truncated)?;
    if section[0] != table_id {
        return Err(PsiError::TableId(section[0]));
    }
    if crc32_mpeg2(section) != 0 {
        return Err(PsiError::Crc);
    }
    Ok(LongSection {
        id: u16::from_be_bytes([section[3], section[4]]),
        version: (section[5] >> 1) & 0x1f,
        current: section[5] & 0x01 != 0,
        body: &section[8..len - 4],
    })
}

/// One entry of a PAT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PatEntry {
    /// The program number (0 designates the network PID, not a program).
    pub program_number: u16,
    /// The PID carrying that program's PMT.
    pub pid: u16,
}

/// The program association table: where each program's PMT is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pat {
    /// transport_stream_id.
    pub transport_stream_id: u16,
    /// version_number; a change means the table changed.
    pub version: u8,
    /// current_next_indicator: false for a table that applies later.
    pub current: bool,
    /// The programs, in table order.
    pub programs: Vec<PatEntry>,
}

impl Pat {
    /// Parses and CRC-checks a PAT section.
    ///
    /// # Errors
    /// [`PsiError`] on a short section, a table_id other than 0 or a CRC mismatch.
    pub fn parse(section: &[u8]) -> Result<Self, PsiError> {
        let s = parse_long(section, 0x00)?;
        let programs = s
            .body
            .chunks_exact(4)
            .map(|e| PatEntry {
                program_number: u16::from_be_bytes([e[0], e[1]]),
                pid: u16::from_be_bytes([e[2] & 0x1f, e[3]]),
            })
            .collect();
        Ok(Pat {
            transport_stream_id: s.id,
            version: s.version,
            current: s.current,
            programs,
        })
    }

    /// The PMT PID of the first real program.
    pub fn first_program(&self) -> Option<PatEntry> {
        self.programs
            .iter()
            .copied()
            .find(|p| p.program_number != 0)
    }
}

/// One elementary stream listed in a PMT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PmtStream {
    /// stream_type (0x1b H.264, 0x24 H.265, 0x0f AAC ADTS, …).
    pub stream_type: u8,
    /// The PID carrying the stream.
    pub pid: u16,
    /// The language its `ISO_639_language_descriptor` names, if any.
    pub language: Option<crate::language::Language>,
}

/// The program map table: the elementary streams of one program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pmt {
    /// program_number.
    pub program_number: u16,
    /// version_number; a change means the program changed.
    pub version: u8,
    /// current_next_indicator: false for a table that applies later.
    pub current: bool,
    /// The PID carrying the program clock reference.
    pub pcr_pid: u16,
    /// The elementary streams, in table order.
    pub streams: Vec<PmtStream>,
}

impl Pmt {
    /// Parses and CRC-checks a PMT section.
    ///
    /// # Errors
    /// [`PsiError`] on a short or inconsistent section, a table_id other than 2 or a
    /// CRC mismatch.
    pub fn parse(section: &[u8]) -> Result<Self, PsiError> {
        let s = parse_long(section, 0x02)?;
        let [p0, p1, i0, i1, ref rest @ ..] = *s.body else {
            return Err(PsiError::Truncated);
        };
        let info_len = (usize::from(i0 & 0x0f) << 8) | usize::from(i1);
        let mut es = rest.get(info_len..).ok_or(PsiError::Truncated)?;
        let mut streams = Vec::new();
        while !es.is_empty() {
            let [stream_type, e0, e1, l0, l1, ref tail @ ..] = *es else {
                return Err(PsiError::Truncated);
            };
            let desc_len = (usize::from(l0 & 0x0f) << 8) | usize::from(l1);
            let descriptors = tail.get(..desc_len).ok_or(PsiError::Truncated)?;
            es = &tail[desc_len..];
            streams.push(PmtStream {
                stream_type,
                pid: u16::from_be_bytes([e0 & 0x1f, e1]),
                language: crate::language::from_descriptors(descriptors),
            });
        }
        Ok(Pmt {
            program_number: s.id,
            version: s.version,
            current: s.current,
            pcr_pid: u16::from_be_bytes([p0 & 0x1f, p1]),
            streams,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_check_value() {
        // The catalogue check value of CRC-32/MPEG-2.
        assert_eq!(crc32_mpeg2(b"123456789"), 0x0376_e6e7);
    }

    fn seal(mut section: Vec<u8>) -> Vec<u8> {
        let crc = crc32_mpeg2(&section);
        section.extend(crc.to_be_bytes());
        section
    }

    fn pat() -> Vec<u8> {
        seal(vec![
            0x00,
            0xb0,
            13,
            0x00,
            0x01,
            0xc1 | (3 << 1),
            0,
            0,
            0x00,
            0x01,
            0xf0,
            0x00,
        ])
    }

    #[test]
    fn pat_parses_and_crc_is_checked() {
        let section = pat();
        let pat = Pat::parse(&section).unwrap();
        assert_eq!(pat.version, 3);
        assert_eq!(
            pat.first_program(),
            Some(PatEntry {
                program_number: 1,
                pid: 0x1000
            })
        );
        let mut bad = section.clone();
        bad[9] ^= 1;
        assert_eq!(Pat::parse(&bad), Err(PsiError::Crc));
        assert_eq!(Pmt::parse(&section), Err(PsiError::TableId(0)));
    }

    #[test]
    fn sections_spanning_packets_are_joined() {
        let section = pat();
        let mut asm = SectionAssembler::new();
        let mut out = Vec::new();
        let mut first = vec![0u8];
        first.extend(&section[..5]);
        asm.push(true, &first, &mut out);
        assert!(out.is_empty());
        let mut second = section[5..].to_vec();
        second.extend([0xff; 10]);
        asm.push(false, &second, &mut out);
        assert_eq!(out, vec![section.clone()]);
        // A continuation without a start is ignored.
        asm.push(false, &section, &mut out);
        assert_eq!(out.len(), 1);
    }
}
