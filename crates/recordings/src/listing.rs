//! What the bucket holds of one meeting, for the MC's recordings API: each recorded
//! rendition (the source, every ladder rung and audio language), its objects and bytes, and its
//! periods — runs of objects with no MSN missing between them — with their times.
//! Reads the listing, then the index of each period's first and last object only.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::bucket::Bucket;
use crate::key::ObjectKey;
use crate::remote::{RemoteArchive, RemoteError};

/// One recorded period of a rendition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Period {
    /// Start of its first segment, Unix ms.
    pub from_ms: i64,
    /// End of its last segment, Unix ms.
    pub to_ms: i64,
    /// MSN of its first segment.
    pub first_msn: u64,
    /// MSN of its last segment.
    pub last_msn: u64,
    /// Segments in it.
    pub segments: u64,
}

/// One rendition's recording in the bucket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RenditionRecording {
    /// `source`, or the rung's name.
    pub rendition: String,
    /// Its key prefix in the bucket.
    pub prefix: String,
    /// Objects (one per recorded file span).
    pub objects: usize,
    /// Bytes stored.
    pub bytes: u64,
    /// Its periods, oldest first.
    pub periods: Vec<Period>,
}

/// Most rungs read of one meeting (a ladder has a handful).
const MAX_RUNGS: usize = 16;
/// Most audio languages read of one meeting beside its floor (a stream has 7 at most).
const MAX_LANGUAGES: usize = 7;
/// Where a meeting's rungs are recorded, under its name.
const RUNGS_DIR: &str = "rungs";
/// Where a meeting's audio languages are recorded, under its name.
const LANGUAGES_DIR: &str = "languages";
/// What a language's rendition name starts with (`audio-spa`).
const LANGUAGE_PREFIX: &str = "audio-";

/// The name under which the source rendition is listed.
pub const SOURCE: &str = "source";

/// Every rendition of `meeting` recorded in `bucket`: the source first, then the rungs
/// by name, then the audio languages. A meeting with nothing recorded has none.
///
/// # Errors
/// A listing or an index read failed.
pub async fn meeting_recordings(
    bucket: &Bucket,
    meeting: &str,
) -> Result<Vec<RenditionRecording>, RemoteError> {
    let archives = meeting_archives(bucket, meeting).await?;
    let mut out = Vec::new();
    for (rendition, names) in archives {
        let archive = RemoteArchive::new(bucket, &names);
        let objects = archive.objects_with_sizes().await?;
        if objects.is_empty() {
            continue;
        }
        let bytes = objects.iter().map(|(_, size)| size).sum();
        let count = objects.len();
        let periods = periods(&archive, objects.into_iter().map(|(k, _)| k).collect()).await?;
        out.push(RenditionRecording {
            rendition,
            prefix: archive.prefix().to_string(),
            objects: count,
            bytes,
            periods,
        });
    }
    Ok(out)
}

/// The archives `meeting` may have in `bucket`: its source's, then each rung's found
/// under its prefix, by name, then each audio language's (`languages/audio-{code}`) —
/// each as its rendition's name and its archive names.
///
/// # Errors
/// The listing of the rungs or languages failed.
pub async fn meeting_archives(
    bucket: &Bucket,
    meeting: &str,
) -> Result<Vec<(String, Vec<String>)>, RemoteError> {
    let mut archives = vec![(SOURCE.to_owned(), vec![meeting.to_owned(), "ts".to_owned()])];
    for (dir, most, is_name) in [
        (RUNGS_DIR, MAX_RUNGS, is_rung_name as fn(&str) -> bool),
        (LANGUAGES_DIR, MAX_LANGUAGES, is_language_name),
    ] {
        for name in names_under(bucket, meeting, dir, most, is_name).await? {
            let names = vec![
                meeting.to_owned(),
                dir.to_owned(),
                name.clone(),
                "ts".to_owned(),
            ];
            archives.push((name, names));
        }
    }
    Ok(archives)
}

/// The names of the archives under `{meeting}/{dir}/` that `is_name` accepts, sorted,
/// `most` at most. Names as a node writes them, so none reaches a URI or a key it
/// could not have come from; a bucket with more is not a node's.
async fn names_under(
    bucket: &Bucket,
    meeting: &str,
    dir: &str,
    most: usize,
    is_name: fn(&str) -> bool,
) -> Result<Vec<String>, RemoteError> {
    let prefix = bucket.archive_prefix(&[meeting, dir]);
    let listed = bucket.store.list_with_delimiter(Some(&prefix)).await?;
    let mut names: Vec<String> = listed
        .common_prefixes
        .iter()
        .filter_map(|p| p.filename())
        .filter(|name| is_name(name))
        .map(str::to_owned)
        .collect();
    names.sort();
    names.truncate(most);
    Ok(names)
}

/// A rung's archive name: a plain name not taken by the languages.
fn is_rung_name(name: &str) -> bool {
    dvr::store::is_plain_name(name) && !name.starts_with(LANGUAGE_PREFIX)
}

/// A language's archive name: `audio-` and an ISO 639-2 code.
pub fn is_language_name(name: &str) -> bool {
    name.strip_prefix(LANGUAGE_PREFIX)
        .is_some_and(|code| code.len() == 3 && code.bytes().all(|b| b.is_ascii_lowercase()))
}

/// The runs of `keys` (one per span, the fullest) with no MSN missing between them.
pub fn runs(keys: Vec<ObjectKey>) -> Vec<Vec<ObjectKey>> {
    let mut per_span: BTreeMap<u32, ObjectKey> = BTreeMap::new();
    for key in keys {
        per_span
            .entry(key.span)
            .and_modify(|held| {
                if (key.is_gapless(), key.count) > (held.is_gapless(), held.count) {
                    *held = key;
                }
            })
            .or_insert(key);
    }
    let mut runs: Vec<Vec<ObjectKey>> = Vec::new();
    for key in per_span.into_values() {
        match runs.last_mut() {
            Some(run)
                if run.last().is_some_and(|last| {
                    last.is_gapless()
                        && key.is_gapless()
                        && last.last_msn.checked_add(1) == Some(key.first_msn)
                }) =>
            {
                run.push(key);
            }
            _ => runs.push(vec![key]),
        }
    }
    runs
}

async fn periods(
    archive: &RemoteArchive,
    keys: Vec<ObjectKey>,
) -> Result<Vec<Period>, RemoteError> {
    let mut out = Vec::new();
    for run in runs(keys) {
        let (Some(first), Some(last)) = (run.first(), run.last()) else {
            continue;
        };
        let head = archive.index(first).await?;
        let tail = if first == last {
            head.clone()
        } else {
            archive.index(last).await?
        };
        let (Some(start), Some(end)) = (head.first(), tail.last()) else {
            continue;
        };
        out.push(Period {
            from_ms: start.start_ms,
            to_ms: end.end_ms(),
            first_msn: first.first_msn,
            last_msn: last.last_msn,
            segments: run.iter().map(|k| k.count).sum(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(span: u32, first_msn: u64, last_msn: u64, count: u64) -> ObjectKey {
        ObjectKey {
            span,
            first_msn,
            last_msn,
            count,
        }
    }

    #[test]
    fn periods_break_where_msns_are_missing() {
        let keys = vec![
            key(1, 1, 5, 5),
            key(2, 6, 10, 5),
            key(2, 8, 10, 3),  // a late joiner's partial copy: not counted
            key(3, 11, 15, 4), // a gap inside
            key(4, 16, 20, 5),
            key(6, 30, 34, 5), // the meeting paused
        ];
        let runs = runs(keys);
        let spans: Vec<Vec<u32>> = runs
            .iter()
            .map(|r| r.iter().map(|k| k.span).collect())
            .collect();
        assert_eq!(spans, vec![vec![1, 2], vec![3], vec![4], vec![6]]);
    }
}
