//! Watches: one long POST to `/v3/watch` whose answer is a stream of JSON messages,
//! each a batch of changes under the watched prefix.

use bytes::Bytes;
use http_body_util::BodyExt;
use serde_json::{json, Value};

use crate::base64;
use crate::client::{Answer, Client};
use crate::kv::{int, key_value, prefix_end, revision, KeyValue};
use crate::EtcdError;

/// Longest message a watch keeps buffering before it gives up on the stream.
const MAX_MESSAGE: usize = 64 * 1024 * 1024;

/// One change seen by a watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A key was set (created or changed).
    Put(KeyValue),
    /// A key was removed (only its key and revision are set).
    Delete(KeyValue),
}

/// The changes of one revision or more, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchBatch {
    /// The store's revision when the batch was sent.
    pub revision: i64,
    /// The changes.
    pub events: Vec<Event>,
}

/// A running watch over a prefix.
pub struct Watch {
    answer: Answer,
    buffer: Vec<u8>,
}

impl Client {
    /// Watches every key under `prefix` from `start_revision` on (the revision after
    /// the one a [`Client::get_prefix`] returned: nothing in between is missed).
    ///
    /// # Errors
    /// No endpoint accepted the watch.
    pub async fn watch_prefix(
        &self,
        prefix: &[u8],
        start_revision: i64,
    ) -> Result<Watch, EtcdError> {
        let body = Bytes::from(
            serde_json::to_vec(&json!({"create_request": {
                "key": base64::encode(prefix),
                "range_end": base64::encode(&prefix_end(prefix)),
                "start_revision": start_revision.to_string(),
            }}))
            .map_err(EtcdError::bad_answer)?,
        );
        let mut last = EtcdError::Unavailable("no endpoint tried".into());
        let start = self.preferred();
        for step in 0..self.endpoint_count() {
            let opened = tokio::time::timeout(
                self.timeout(),
                self.open(start + step, "/v3/watch", body.clone()),
            )
            .await
            .unwrap_or_else(|_| Err(EtcdError::Unavailable("timed out".into())));
            match opened {
                Ok(answer) => {
                    return Ok(Watch {
                        answer,
                        buffer: Vec::new(),
                    })
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }
}

impl Watch {
    /// The next batch of changes; waits as long as nothing changes.
    ///
    /// # Errors
    /// The stream ended or broke ([`EtcdError::Unavailable`]), the watched revision
    /// was compacted away ([`EtcdError::Compacted`]), or a message is not etcd's.
    pub async fn next(&mut self) -> Result<WatchBatch, EtcdError> {
        loop {
            if let Some(batch) = self.take_message()? {
                return Ok(batch);
            }
            let frame = self
                .answer
                .body
                .frame()
                .await
                .ok_or_else(|| EtcdError::Unavailable("watch stream ended".into()))?
                .map_err(|e| EtcdError::Unavailable(e.to_string()))?;
            if let Ok(data) = frame.into_data() {
                self.buffer.extend_from_slice(&data);
                if self.buffer.len() > MAX_MESSAGE {
                    return Err(EtcdError::bad_answer("watch message too large"));
                }
            }
        }
    }

    /// Parses the buffered messages until one carries changes.
    fn take_message(&mut self) -> Result<Option<WatchBatch>, EtcdError> {
        loop {
            let mut stream =
                serde_json::Deserializer::from_slice(&self.buffer).into_iter::<Value>();
            let message = match stream.next() {
                Some(Ok(message)) => message,
                Some(Err(e)) if e.is_eof() => return Ok(None),
                Some(Err(e)) => return Err(EtcdError::bad_answer(e)),
                None => return Ok(None),
            };
            let used = stream.byte_offset();
            self.buffer.drain(..used);
            if let Some(error) = message.get("error") {
                return Err(EtcdError::Unavailable(format!("watch: {error}")));
            }
            let Some(result) = message.get("result") else {
                continue;
            };
            let compacted = int(result.get("compact_revision"));
            if compacted > 0 {
                return Err(EtcdError::Compacted(compacted));
            }
            if result.get("canceled").and_then(Value::as_bool) == Some(true) {
                return Err(EtcdError::Unavailable("watch canceled".into()));
            }
            let Some(events) = result.get("events").and_then(Value::as_array) else {
                continue; // created, or a progress notice
            };
            let events = events
                .iter()
                .map(|event| {
                    let kv = key_value(event.get("kv").unwrap_or(&Value::Null))?;
                    Ok(match event.get("type").and_then(Value::as_str) {
                        Some("DELETE") => Event::Delete(kv),
                        _ => Event::Put(kv),
                    })
                })
                .collect::<Result<Vec<_>, EtcdError>>()?;
            return Ok(Some(WatchBatch {
                revision: revision(result),
                events,
            }));
        }
    }
}
