//! A bit reader for H.264/H.265 parameter sets: fixed-width fields and exp-Golomb
//! codes over the RBSP (the NAL payload with emulation-prevention bytes removed).

use thiserror::Error;

/// Why a bitstream field could not be read.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum BitsError {
    /// The data ended inside a field.
    #[error("bitstream ended early")]
    Eof,
    /// An exp-Golomb code longer than 32 bits (not valid in any parameter set).
    #[error("exp-golomb code too long")]
    GolombOverflow,
}

/// Removes emulation-prevention bytes: every `00 00 03` becomes `00 00`.
pub fn rbsp(nal: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(nal.len());
    let mut zeros = 0usize;
    for &b in nal {
        if zeros >= 2 && b == 0x03 {
            zeros = 0;
            continue;
        }
        zeros = if b == 0 { zeros + 1 } else { 0 };
        out.push(b);
    }
    out
}

/// Reads bits MSB first from a byte slice (already an RBSP: see [`rbsp`]).
#[derive(Debug, Clone)]
pub struct BitReader<'a> {
    data: &'a [u8],
    /// Position in bits.
    pos: usize,
}

impl<'a> BitReader<'a> {
    /// A reader at the first bit of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data, pos: 0 }
    }

    /// Bits left to read.
    pub fn remaining(&self) -> usize {
        (self.data.len() * 8).saturating_sub(self.pos)
    }

    /// Reads one bit.
    ///
    /// # Errors
    /// [`BitsError::Eof`] past the end.
    pub fn bit(&mut self) -> Result<bool, BitsError> {
        let byte = self.data.get(self.pos / 8).ok_or(BitsError::Eof)?;
        let bit = (byte >> (7 - self.pos % 8)) & 1;
        self.pos += 1;
        Ok(bit == 1)
    }

    /// Reads `n` (at most 32) bits as an unsigned number.
    ///
    /// # Errors
    /// [`BitsError::Eof`] past the end.
    pub fn bits(&mut self, n: u32) -> Result<u32, BitsError> {
        debug_assert!(n <= 32, "at most 32 bits at once");
        if self.remaining() < n as usize {
            return Err(BitsError::Eof);
        }
        let mut v = 0u64;
        for _ in 0..n {
            v = (v << 1) | u64::from(self.bit()?);
        }
        Ok(v as u32)
    }

    /// Reads one byte-wide field.
    ///
    /// # Errors
    /// [`BitsError::Eof`] past the end.
    pub fn u8(&mut self) -> Result<u8, BitsError> {
        Ok(self.bits(8)? as u8)
    }

    /// Skips `n` bits.
    ///
    /// # Errors
    /// [`BitsError::Eof`] when fewer than `n` bits remain.
    pub fn skip(&mut self, n: usize) -> Result<(), BitsError> {
        if self.remaining() < n {
            return Err(BitsError::Eof);
        }
        self.pos += n;
        Ok(())
    }

    /// Reads an unsigned exp-Golomb code, ue(v).
    ///
    /// # Errors
    /// [`BitsError::Eof`] past the end, [`BitsError::GolombOverflow`] on more than 31
    /// leading zeros.
    pub fn ue(&mut self) -> Result<u32, BitsError> {
        let mut zeros = 0u32;
        while !self.bit()? {
            zeros += 1;
            if zeros > 31 {
                return Err(BitsError::GolombOverflow);
            }
        }
        let rest = self.bits(zeros)?;
        Ok(((1u64 << zeros) - 1 + u64::from(rest)) as u32)
    }

    /// Reads a signed exp-Golomb code, se(v).
    ///
    /// # Errors
    /// As [`BitReader::ue`].
    pub fn se(&mut self) -> Result<i32, BitsError> {
        let k = i64::from(self.ue()?);
        let v = if k % 2 == 1 { (k + 1) / 2 } else { -(k / 2) };
        Ok(v as i32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Writes values as ue(v), MSB first, the way an encoder does.
    fn write_ue(values: &[u32]) -> Vec<u8> {
        let mut bits = Vec::new();
        for &v in values {
            let code = u64::from(v) + 1;
            let len = 64 - code.leading_zeros();
            bits.extend(std::iter::repeat_n(false, len as usize - 1));
            bits.extend((0..len).rev().map(|i| code >> i & 1 == 1));
        }
        bits.chunks(8)
            .map(|c| {
                c.iter()
                    .enumerate()
                    .fold(0u8, |b, (i, &x)| b | (u8::from(x) << (7 - i)))
            })
            .collect()
    }

    #[test]
    fn reads_fields_and_golomb() {
        // 1 | 010 | 011 | 00100 | 1 → ue 0, 1, 2, 3, then a flag.
        let data = [0b1010_0110, 0b0100_1000];
        let mut r = BitReader::new(&data);
        assert_eq!(r.ue(), Ok(0));
        assert_eq!(r.ue(), Ok(1));
        assert_eq!(r.ue(), Ok(2));
        assert_eq!(r.ue(), Ok(3));
        assert_eq!(r.bit(), Ok(true));
        assert_eq!(r.bits(3), Ok(0));
        assert_eq!(r.bit(), Err(BitsError::Eof));
        let mut r = BitReader::new(&[0b0010_1000]); // ue 4 → se -2
        assert_eq!(r.se(), Ok(-2));
        assert_eq!(BitReader::new(&[0; 8]).ue(), Err(BitsError::GolombOverflow));
    }

    #[test]
    fn emulation_prevention_is_removed() {
        assert_eq!(
            rbsp(&[0x00, 0x00, 0x03, 0x01, 0x00, 0x00, 0x03, 0x00, 0x03]),
            vec![0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x03]
        );
    }

    proptest! {
        #[test]
        fn golomb_round_trips(values in proptest::collection::vec(0u32..=u32::MAX - 1, 1..20)) {
            let data = write_ue(&values);
            let mut r = BitReader::new(&data);
            for &v in &values {
                prop_assert_eq!(r.ue(), Ok(v));
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let rbsp = rbsp(&data);
            let mut r = BitReader::new(&rbsp);
            while r.ue().is_ok() && r.se().is_ok() && r.bits(13).is_ok() {}
        }
    }
}
