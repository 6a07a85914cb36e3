//! Where an LL-HLS playlist stands: what a blocking reload waits for.

/// What the LL-HLS playlist lists: the last complete segment with its part count, and
/// the segment being cut with its part count. A blocking reload waits on this.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Position {
    /// Last complete segment: (MSN, parts).
    pub last_complete: Option<(u64, usize)>,
    /// Segment being cut: (MSN, parts listed).
    pub pending: Option<(u64, usize)>,
}

impl Position {
    /// Whether a playlist at this position satisfies `_HLS_msn=msn` (and
    /// `_HLS_part=part`): it lists that part, or anything after it (a part index past
    /// the segment's last part means the next segment's first part).
    pub fn satisfies(&self, msn: u64, part: Option<usize>) -> bool {
        let complete = self.last_complete;
        match part {
            None => complete.is_some_and(|(last, _)| last >= msn),
            Some(part) => {
                if let Some((last, parts)) = complete {
                    if msn < last || (msn == last && part < parts) {
                        return true;
                    }
                }
                match self.pending {
                    Some((pending, parts)) => {
                        (pending == msn && part < parts)
                            || (pending > msn && parts > 0)
                            || complete.is_some_and(|(last, _)| last > msn)
                    }
                    None => false,
                }
            }
        }
    }
}
