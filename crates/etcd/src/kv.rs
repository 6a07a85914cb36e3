//! Keys and values: ranges, puts, deletes and transactions (compare-and-swap), as
//! etcd's `/v3/kv/*` gateway speaks them.

use serde_json::{json, Value};

use crate::base64;
use crate::client::Client;
use crate::EtcdError;

/// One key with its value and revisions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    /// The key.
    pub key: Vec<u8>,
    /// The value.
    pub value: Vec<u8>,
    /// The revision that created the key.
    pub create_revision: i64,
    /// The revision of its last change: what a compare-and-swap compares.
    pub mod_revision: i64,
}

/// A condition of a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compare {
    /// The key does not exist (its create revision is 0): "create if absent".
    Absent(Vec<u8>),
    /// The key was last changed at this revision (0: absent): "swap if unchanged".
    ModRevision(Vec<u8>, i64),
}

/// An operation of a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Set a key.
    Put {
        /// The key.
        key: Vec<u8>,
        /// The value.
        value: Vec<u8>,
    },
    /// Read a key.
    Get(Vec<u8>),
    /// Remove a key.
    Delete(Vec<u8>),
}

/// What a transaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnOutcome {
    /// Every comparison held, so the success operations ran.
    pub succeeded: bool,
    /// The store's revision after the transaction.
    pub revision: i64,
    /// The key-values each `Get` of the branch that ran found, in order.
    pub gets: Vec<Vec<KeyValue>>,
}

/// One page of a range read ([`Client::range_page`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The keys, in key order.
    pub kvs: Vec<KeyValue>,
    /// More keys of the range follow the last one.
    pub more: bool,
    /// The revision the page was read at.
    pub revision: i64,
}

/// Keys per range request of [`Client::get_prefix`]: an MC's meetings (a few KiB each)
/// and viewer reports come in answers of a few MiB at most, however many there are.
pub const PAGE_KEYS: usize = 256;

/// A refusal of a pinned-revision page because etcd compacted that revision.
fn compacted_at(error: EtcdError, revision: i64) -> EtcdError {
    match error {
        EtcdError::Refused { ref message, .. } if revision > 0 && message.contains("compacted") => {
            EtcdError::Compacted(revision)
        }
        other => other,
    }
}

/// An int64 of etcd's JSON (a string, or absent for 0).
pub(crate) fn int(value: Option<&Value>) -> i64 {
    match value {
        Some(Value::String(s)) => s.parse().unwrap_or(0),
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        _ => 0,
    }
}

fn bytes_of(value: Option<&Value>) -> Result<Vec<u8>, EtcdError> {
    match value {
        None => Ok(Vec::new()),
        Some(Value::String(s)) => {
            base64::decode(s).ok_or_else(|| EtcdError::bad_answer("a key or value is not base64"))
        }
        Some(_) => Err(EtcdError::bad_answer("a key or value is not a string")),
    }
}

pub(crate) fn key_value(kv: &Value) -> Result<KeyValue, EtcdError> {
    Ok(KeyValue {
        key: bytes_of(kv.get("key"))?,
        value: bytes_of(kv.get("value"))?,
        create_revision: int(kv.get("create_revision")),
        mod_revision: int(kv.get("mod_revision")),
    })
}

fn kvs(answer: &Value) -> Result<Vec<KeyValue>, EtcdError> {
    answer
        .get("kvs")
        .and_then(Value::as_array)
        .map_or(Ok(Vec::new()), |list| list.iter().map(key_value).collect())
}

pub(crate) fn revision(answer: &Value) -> i64 {
    int(answer.get("header").and_then(|h| h.get("revision")))
}

/// The end of the range of every key that starts with `prefix`.
pub(crate) fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // Every byte 0xff (or empty): the range runs to the end of the key space.
    vec![0]
}

fn compare_json(compare: &Compare) -> Value {
    match compare {
        Compare::Absent(key) => json!({
            "key": base64::encode(key), "result": "EQUAL", "target": "CREATE",
            "create_revision": "0",
        }),
        Compare::ModRevision(key, rev) => json!({
            "key": base64::encode(key), "result": "EQUAL", "target": "MOD",
            "mod_revision": rev.to_string(),
        }),
    }
}

fn op_json(op: &Op) -> Value {
    match op {
        Op::Put { key, value } => json!({"request_put": {
            "key": base64::encode(key), "value": base64::encode(value),
        }}),
        Op::Get(key) => json!({"request_range": {"key": base64::encode(key)}}),
        Op::Delete(key) => json!({"request_delete_range": {"key": base64::encode(key)}}),
    }
}

impl Client {
    /// The key's value now (linearizable), and the store's revision.
    ///
    /// # Errors
    /// No endpoint answered, or etcd refused.
    pub async fn get(&self, key: &[u8]) -> Result<(Option<KeyValue>, i64), EtcdError> {
        let answer = self
            .call("/v3/kv/range", &json!({"key": base64::encode(key)}))
            .await?;
        Ok((kvs(&answer)?.into_iter().next(), revision(&answer)))
    }

    /// Every key under `prefix`, in key order, and the store's revision, read in pages
    /// of [`PAGE_KEYS`] keys (see [`Client::get_prefix_paged`]).
    ///
    /// # Errors
    /// As [`Client::get`].
    pub async fn get_prefix(&self, prefix: &[u8]) -> Result<(Vec<KeyValue>, i64), EtcdError> {
        self.get_prefix_paged(prefix, PAGE_KEYS).await
    }

    /// Every key under `prefix`, in key order, read `page` keys per range request: each
    /// request continues after the last key of the one before, at the revision of the
    /// first, so the whole read is one consistent view however many pages it takes and
    /// no answer grows with the number of keys.
    ///
    /// # Errors
    /// As [`Client::get`]; [`EtcdError::Compacted`] when the first page's revision was
    /// compacted away before the last page was read (read again).
    pub async fn get_prefix_paged(
        &self,
        prefix: &[u8],
        page: usize,
    ) -> Result<(Vec<KeyValue>, i64), EtcdError> {
        let end = prefix_end(prefix);
        let mut from = prefix.to_vec();
        let mut all = Vec::new();
        let mut at_revision = 0;
        loop {
            let found = self.range_page(&from, &end, page, at_revision).await?;
            at_revision = found.revision;
            let Some(last) = found.kvs.last() else {
                break;
            };
            // The next page starts at the smallest key after the last one read.
            from.clone_from(&last.key);
            from.push(0);
            all.extend(found.kvs);
            if !found.more {
                break;
            }
        }
        Ok((all, at_revision))
    }

    /// One page of the keys in `[from, end)`: at most `limit` keys, in key order, at
    /// `revision` (0: now), with the revision read at and whether more keys follow.
    ///
    /// # Errors
    /// As [`Client::get`]; [`EtcdError::Compacted`] when `revision` was compacted away.
    pub async fn range_page(
        &self,
        from: &[u8],
        end: &[u8],
        limit: usize,
        revision_at: i64,
    ) -> Result<Page, EtcdError> {
        let mut request = json!({
            "key": base64::encode(from),
            "range_end": base64::encode(end),
            "limit": limit.max(1).to_string(),
        });
        if revision_at > 0 {
            request["revision"] = json!(revision_at.to_string());
        }
        let answer = self
            .call("/v3/kv/range", &request)
            .await
            .map_err(|e| compacted_at(e, revision_at))?;
        Ok(Page {
            kvs: kvs(&answer)?,
            more: answer.get("more").and_then(Value::as_bool).unwrap_or(false),
            revision: if revision_at > 0 {
                revision_at
            } else {
                revision(&answer)
            },
        })
    }

    /// Sets a key; returns the store's revision after it.
    ///
    /// # Errors
    /// As [`Client::get`].
    pub async fn put(&self, key: &[u8], value: &[u8]) -> Result<i64, EtcdError> {
        let answer = self
            .call(
                "/v3/kv/put",
                &json!({"key": base64::encode(key), "value": base64::encode(value)}),
            )
            .await?;
        Ok(revision(&answer))
    }

    /// Runs `success` when every comparison holds, else `failure`, atomically.
    ///
    /// # Errors
    /// As [`Client::get`]. A transaction whose answer was lost may or may not have
    /// run: callers compare again before they retry.
    pub async fn txn(
        &self,
        compares: &[Compare],
        success: &[Op],
        failure: &[Op],
    ) -> Result<TxnOutcome, EtcdError> {
        let body = json!({
            "compare": compares.iter().map(compare_json).collect::<Vec<_>>(),
            "success": success.iter().map(op_json).collect::<Vec<_>>(),
            "failure": failure.iter().map(op_json).collect::<Vec<_>>(),
        });
        let answer = self.call("/v3/kv/txn", &body).await?;
        let gets = answer
            .get("responses")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(|r| r.get("response_range"))
                    .map(kvs)
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?
            .unwrap_or_default();
        Ok(TxnOutcome {
            succeeded: answer
                .get("succeeded")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            revision: revision(&answer),
            gets,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_range_ends_past_its_last_key() {
        assert_eq!(prefix_end(b"/m/"), b"/m0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff"), vec![0]);
    }

    #[test]
    fn int64s_are_strings_or_absent() {
        assert_eq!(int(Some(&json!("42"))), 42);
        assert_eq!(int(Some(&json!(7))), 7);
        assert_eq!(int(None), 0);
    }
}
