//! What each completion request told the emulator about its routing, kept
//! for tests: the session headers of every affinity convention, the body's
//! user, the request id, the replica that answered and the cached tokens
//! it answered with, and (with [`EmulatorConfig::keep_bodies`]) the raw
//! body.
//!
//! Owns [`Received`] and its bounded store (the most recent
//! [`EmulatorConfig::received_capacity`] requests, in the order they
//! finished). `shared.rs` keeps one per replica; the handles read it.
//!
//! [`EmulatorConfig::keep_bodies`]: super::config::EmulatorConfig::keep_bodies
//! [`EmulatorConfig::received_capacity`]: super::config::EmulatorConfig::received_capacity

use std::collections::VecDeque;

use bytes::Bytes;
use hyper::HeaderMap;
use serde::Serialize;

use super::stamps::REQUEST_ID_HEADER;

/// `X-Session-Affinity` (AIPerf's default session header).
pub const SESSION_AFFINITY_HEADER: &str = "x-session-affinity";
/// Dynamo's session, its parent session, and its last turn.
pub const DYNAMO_SESSION_HEADER: &str = "x-dynamo-session-id";
pub const DYNAMO_PARENT_HEADER: &str = "x-dynamo-parent-session-id";
pub const DYNAMO_FINAL_HEADER: &str = "x-dynamo-session-final";
/// llm-d's server-issued session token.
pub const SESSION_TOKEN_HEADER: &str = "x-session-token";
/// SGLang model gateway's routing key.
pub const SMG_ROUTING_KEY_HEADER: &str = "x-smg-routing-key";
/// A plain session header.
pub const SESSION_ID_HEADER: &str = "x-session-id";
/// The replica that answered, on every completion response.
pub const REPLICA_HEADER: &str = "x-arbor-replica";

/// One completion request as a replica received it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Received {
    /// The replica that answered (0 for a single emulator).
    pub replica: usize,
    /// `x-arbor-request-id`.
    pub request_id: Option<String>,
    /// The path it was sent to.
    pub endpoint: &'static str,
    pub session_affinity: Option<String>,
    pub dynamo_session_id: Option<String>,
    pub dynamo_parent_session_id: Option<String>,
    pub dynamo_session_final: Option<String>,
    pub session_token: Option<String>,
    pub smg_routing_key: Option<String>,
    pub session_id: Option<String>,
    /// The body's `user`, or a Messages body's `metadata.user_id`.
    pub user: Option<String>,
    /// HTTP status answered (0: the client went away first).
    pub status: u16,
    pub prompt_tokens: u32,
    /// The cached tokens it answered with.
    pub cached_tokens: u32,
    /// The raw body, when the configuration keeps bodies.
    #[serde(skip)]
    pub body: Option<Bytes>,
}

impl Received {
    /// The routing headers of a request to `endpoint` on `replica`.
    pub(crate) fn from_headers(
        replica: usize,
        endpoint: &'static str,
        headers: &HeaderMap,
    ) -> Self {
        let get = |name: &str| {
            headers
                .get(name)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        };
        Received {
            replica,
            request_id: get(REQUEST_ID_HEADER),
            endpoint,
            session_affinity: get(SESSION_AFFINITY_HEADER),
            dynamo_session_id: get(DYNAMO_SESSION_HEADER),
            dynamo_parent_session_id: get(DYNAMO_PARENT_HEADER),
            dynamo_session_final: get(DYNAMO_FINAL_HEADER),
            session_token: get(SESSION_TOKEN_HEADER),
            smg_routing_key: get(SMG_ROUTING_KEY_HEADER),
            session_id: get(SESSION_ID_HEADER),
            ..Received::default()
        }
    }

    /// The body as text (empty when bodies are not kept).
    pub fn body_text(&self) -> String {
        self.body
            .as_ref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    }
}

/// The most recent `capacity` entries.
#[derive(Debug)]
pub(crate) struct ReceivedStore {
    capacity: usize,
    entries: VecDeque<Received>,
}

impl ReceivedStore {
    pub(crate) fn new(capacity: usize) -> Self {
        ReceivedStore {
            capacity,
            entries: VecDeque::new(),
        }
    }

    pub(crate) fn push(&mut self, r: Received) {
        if self.capacity == 0 {
            return;
        }
        if self.entries.len() == self.capacity {
            self.entries.pop_front();
        }
        self.entries.push_back(r);
    }

    pub(crate) fn snapshot(&self) -> Vec<Received> {
        self.entries.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_keeps_the_most_recent() {
        let mut s = ReceivedStore::new(2);
        for i in 0..3 {
            s.push(Received {
                prompt_tokens: i,
                ..Received::default()
            });
        }
        let kept: Vec<u32> = s.snapshot().iter().map(|r| r.prompt_tokens).collect();
        assert_eq!(kept, [1, 2]);
        let mut off = ReceivedStore::new(0);
        off.push(Received::default());
        assert!(off.snapshot().is_empty());
    }
}
