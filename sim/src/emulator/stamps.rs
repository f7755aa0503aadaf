//! Server-side timestamps of each request, for measuring a client's error,
//! and the header that names the request they belong to.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// The header a client sets to have a request stamped: its value becomes
/// the [`ServerStamp::request_id`]. arbor's live client sends it with every
/// request; the emulator is the one that reads it.
pub const REQUEST_ID_HEADER: &str = "x-arbor-request-id";

/// A fault that was applied to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    Error500,
    Error429,
    Error529,
    Disconnect,
    Stall,
    Malformed,
}

/// What the emulator saw of one request that carried an
/// `x-arbor-request-id` header. Times are monotonic nanoseconds since the
/// emulator started (`GET /arbor/clock` tells the current value).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerStamp {
    /// The `x-arbor-request-id` header.
    pub request_id: String,
    /// Sequence number of the completion request (fault decisions use it).
    pub seq: u64,
    /// `/v1/chat/completions` or `/v1/completions`.
    pub endpoint: String,
    pub stream: bool,
    /// HTTP status sent.
    pub status: u16,
    /// When the handler started (request head parsed).
    pub received_ns: u64,
    /// When the first content chunk was handed to hyper (streams only).
    pub first_chunk_ns: Option<u64>,
    /// When each content chunk was handed to hyper (streams only).
    pub chunk_ns: Vec<u64>,
    /// When the last bytes (final chunk, usage, `[DONE]`; or the whole
    /// body / error response) were handed to hyper. `None`: the response
    /// did not finish (client gone or an injected disconnect).
    pub done_ns: Option<u64>,
    pub prompt_tokens: u32,
    pub cached_tokens: u32,
    /// Output tokens the request asked for (and gets, unless cut).
    pub max_tokens: u32,
    pub faults: Vec<FaultKind>,
}

/// The most recent `capacity` stamps.
#[derive(Debug)]
pub(crate) struct StampStore {
    capacity: usize,
    items: VecDeque<ServerStamp>,
}

impl StampStore {
    pub(crate) fn new(capacity: usize) -> Self {
        StampStore {
            capacity,
            items: VecDeque::new(),
        }
    }

    pub(crate) fn push(&mut self, stamp: ServerStamp) {
        if self.capacity == 0 {
            return;
        }
        if self.items.len() == self.capacity {
            self.items.pop_front();
        }
        self.items.push_back(stamp);
    }

    pub(crate) fn snapshot(&self) -> Vec<ServerStamp> {
        self.items.iter().cloned().collect()
    }

    pub(crate) fn drain(&mut self) -> Vec<ServerStamp> {
        self.items.drain(..).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(i: u64) -> ServerStamp {
        ServerStamp {
            request_id: i.to_string(),
            seq: i,
            endpoint: String::new(),
            stream: true,
            status: 200,
            received_ns: i,
            first_chunk_ns: None,
            chunk_ns: vec![],
            done_ns: None,
            prompt_tokens: 0,
            cached_tokens: 0,
            max_tokens: 0,
            faults: vec![],
        }
    }

    #[test]
    fn keeps_the_most_recent() {
        let mut s = StampStore::new(3);
        for i in 0..5 {
            s.push(stamp(i));
        }
        let ids: Vec<u64> = s.snapshot().iter().map(|x| x.seq).collect();
        assert_eq!(ids, vec![2, 3, 4]);
        assert_eq!(s.drain().len(), 3);
        assert!(s.snapshot().is_empty());
    }
}
