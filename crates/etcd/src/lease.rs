//! Leases: keys that die with their lease unless written again under a newer one, so a
//! record of something that stopped reporting (a node's viewer report) removes itself.

use serde_json::json;

use crate::base64;
use crate::client::Client;
use crate::kv::{int, revision};
use crate::EtcdError;

impl Client {
    /// Grants a lease of `ttl_s` seconds and returns its id; etcd removes every key put
    /// under it once it expires (etcd may round a very short TTL up to its minimum).
    ///
    /// # Errors
    /// As [`Client::get`]; [`EtcdError::BadAnswer`] when the answer names no lease.
    pub async fn grant_lease(&self, ttl_s: i64) -> Result<i64, EtcdError> {
        let answer = self
            .call("/v3/lease/grant", &json!({"TTL": ttl_s.max(1).to_string()}))
            .await?;
        match int(answer.get("ID")) {
            0 => Err(EtcdError::bad_answer("the lease grant names no lease")),
            id => Ok(id),
        }
    }

    /// Sets a key under lease `lease` (from [`Client::grant_lease`]); returns the
    /// store's revision after it.
    ///
    /// # Errors
    /// As [`Client::get`]; [`EtcdError::Refused`] when the lease has expired.
    pub async fn put_with_lease(
        &self,
        key: &[u8],
        value: &[u8],
        lease: i64,
    ) -> Result<i64, EtcdError> {
        let answer = self
            .call(
                "/v3/kv/put",
                &json!({
                    "key": base64::encode(key),
                    "value": base64::encode(value),
                    "lease": lease.to_string(),
                }),
            )
            .await?;
        Ok(revision(&answer))
    }
}
