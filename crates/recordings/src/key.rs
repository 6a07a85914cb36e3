//! Object keys: a function of the timeline only, so every node of a group names the same
//! recording the same way.
//!
//! `{prefix}/{archive…}/{span:010}-{first:020}-{last:020}-{count:010}.arc`, where
//! `archive…` is the archive's directory under `data_dir/archive` (`meeting/ts`,
//! `meeting/rungs/720p/ts`), `span` the data file's number (its start divided by the file
//! span), `first`/`last` the MSNs of its first and last segment and `count` how many
//! segments it holds. Fixed widths make a listing sort by span, then first MSN.

use std::fmt;

/// The name of one archive object, without its prefix and archive directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// The data file's number: its start time divided by the file span.
    pub span: u32,
    /// MSN of the first segment.
    pub first_msn: u64,
    /// MSN of the last segment.
    pub last_msn: u64,
    /// Number of segments.
    pub count: u64,
}

/// The file name extension of archive objects.
pub const EXTENSION: &str = "arc";

impl ObjectKey {
    /// Every MSN from `first_msn` to `last_msn` is in the object.
    pub fn is_gapless(&self) -> bool {
        self.last_msn
            .checked_sub(self.first_msn)
            .and_then(|d| d.checked_add(1))
            == Some(self.count)
    }

    /// This object holds every segment `other` holds: a gapless object of the same span
    /// whose MSNs reach at least as far both ways (same-timeline segments with the same
    /// MSN are the same bytes).
    pub fn covers(&self, other: &ObjectKey) -> bool {
        self == other
            || (self.span == other.span
                && self.is_gapless()
                && self.first_msn <= other.first_msn
                && self.last_msn >= other.last_msn)
    }

    /// Reads a key back from an object's file name; anything else (a stranger's object in
    /// the prefix, a temporary upload) is `None`.
    pub fn parse(name: &str) -> Option<ObjectKey> {
        let stem = name.strip_suffix(EXTENSION)?.strip_suffix('.')?;
        let mut parts = stem.split('-');
        let mut next = |width: usize| {
            let part = parts.next()?;
            (part.len() == width && part.bytes().all(|b| b.is_ascii_digit()))
                .then(|| part.parse::<u64>().ok())
                .flatten()
        };
        let key = ObjectKey {
            span: u32::try_from(next(10)?).ok()?,
            first_msn: next(20)?,
            last_msn: next(20)?,
            count: next(10)?,
        };
        (parts.next().is_none() && key.first_msn <= key.last_msn && key.count >= 1).then_some(key)
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:010}-{:020}-{:020}-{:010}.{EXTENSION}",
            self.span, self.first_msn, self.last_msn, self.count
        )
    }
}

/// What the uploader does with a closed file, given the objects already in its span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// An object there already holds every segment of ours: nothing to upload.
    Present(ObjectKey),
    /// Upload ours; afterwards remove these objects, which ours covers (a node that
    /// joined late or missed segments uploaded first).
    Upload {
        /// Objects made redundant by ours.
        redundant: Vec<ObjectKey>,
    },
}

/// Decides the upload of `ours` against the objects `existing` in the bucket (any span;
/// only ours counts).
pub fn plan(ours: &ObjectKey, existing: &[ObjectKey]) -> Plan {
    let same_span = existing.iter().filter(|k| k.span == ours.span);
    if let Some(covering) = same_span.clone().find(|k| k.covers(ours)) {
        return Plan::Present(*covering);
    }
    Plan::Upload {
        redundant: same_span.filter(|k| ours.covers(k)).copied().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(first_msn: u64, last_msn: u64, count: u64) -> ObjectKey {
        ObjectKey {
            span: 3,
            first_msn,
            last_msn,
            count,
        }
    }

    #[test]
    fn keys_round_trip_and_sort_by_span_then_msn() {
        let k = key(12, 311, 300);
        let text = k.to_string();
        assert_eq!(
            text,
            "0000000003-00000000000000000012-00000000000000000311-0000000300.arc"
        );
        assert_eq!(ObjectKey::parse(&text), Some(k));
        let later = key(13, 14, 2).to_string();
        assert!(text < later);
        for bad in [
            "0000000003-12-311-300.arc",
            "0000000003-00000000000000000012-00000000000000000311-0000000300.ts",
            "0000000003-00000000000000000312-00000000000000000311-0000000300.arc",
            "0000000003-00000000000000000012-00000000000000000311-0000000000.arc",
            "x",
        ] {
            assert_eq!(ObjectKey::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_same_recording_is_present_a_fuller_one_replaces_partial_ones() {
        let full = key(10, 309, 300);
        let late = key(200, 309, 110);
        let gappy = key(10, 309, 290);
        assert_eq!(plan(&full, &[full]), Plan::Present(full));
        assert_eq!(plan(&late, &[full]), Plan::Present(full));
        assert_eq!(plan(&gappy, &[full]), Plan::Present(full));
        assert_eq!(
            plan(&full, &[late, gappy]),
            Plan::Upload {
                redundant: vec![late, gappy]
            }
        );
        // A gappy object covers nothing but itself; an object of another span is not ours.
        assert_eq!(plan(&late, &[gappy]), Plan::Upload { redundant: vec![] });
        let other_span = ObjectKey { span: 4, ..full };
        assert_eq!(
            plan(&full, &[other_span]),
            Plan::Upload { redundant: vec![] }
        );
    }
}
