//! State every connection of the emulator shares, and the guard that
//! tracks one completion request against it.
//!
//! Owns [`Shared`] (config, pre-rendered `/v1/models` body, clock origin,
//! sequence numbers, prefix cache, stamp store, counters, the pacer, the
//! replica's index and what it received), the counters'
//! public snapshot [`EmulatorStats`], and [`RequestGuard`] (a request's
//! stamp and routing information, the in-flight count, client aborts). Both the router
//! (`server.rs`), the stream bodies (`body.rs`) and `/metrics`
//! (`metrics.rs`) use it; it uses none of them.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use serde::Serialize;
use tokio::time::Instant;

use super::cache::PrefixCache;
use super::config::EmulatorConfig;
use super::engine::Engine;
use super::pacer::Pacer;
use super::received::{Received, ReceivedStore};
use super::stamps::{FaultKind, ServerStamp, StampStore};

/// Counters of what the emulator did. `requests` counts completion
/// requests (both endpoints); each fault counter counts the times the fault
/// took effect.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct EmulatorStats {
    pub requests: u64,
    /// Completions that finished normally (stream with `[DONE]`, or JSON).
    pub completed: u64,
    /// Output tokens of completed requests.
    pub tokens: u64,
    pub errors_500: u64,
    pub errors_429: u64,
    pub errors_529: u64,
    pub disconnects: u64,
    pub stalls: u64,
    pub malformed: u64,
    pub context_overflows: u64,
    pub model_not_found: u64,
    pub bad_requests: u64,
    /// Requests whose client went away before the response finished.
    pub client_aborts: u64,
    /// Completion requests in flight now, and the most seen at once.
    pub active: u64,
    pub peak_active: u64,
}

impl EmulatorStats {
    /// Replicas' counters added up (`peak_active` too: an upper bound of
    /// the fleet's peak).
    pub fn sum<'a>(all: impl IntoIterator<Item = &'a EmulatorStats>) -> EmulatorStats {
        let mut t = EmulatorStats::default();
        for s in all {
            t.requests += s.requests;
            t.completed += s.completed;
            t.tokens += s.tokens;
            t.errors_500 += s.errors_500;
            t.errors_429 += s.errors_429;
            t.errors_529 += s.errors_529;
            t.disconnects += s.disconnects;
            t.stalls += s.stalls;
            t.malformed += s.malformed;
            t.context_overflows += s.context_overflows;
            t.model_not_found += s.model_not_found;
            t.bad_requests += s.bad_requests;
            t.client_aborts += s.client_aborts;
            t.active += s.active;
            t.peak_active += s.peak_active;
        }
        t
    }
}

#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) requests: AtomicU64,
    pub(crate) completed: AtomicU64,
    pub(crate) tokens: AtomicU64,
    pub(crate) errors_500: AtomicU64,
    pub(crate) errors_429: AtomicU64,
    pub(crate) errors_529: AtomicU64,
    pub(crate) disconnects: AtomicU64,
    pub(crate) stalls: AtomicU64,
    pub(crate) malformed: AtomicU64,
    pub(crate) context_overflows: AtomicU64,
    pub(crate) model_not_found: AtomicU64,
    pub(crate) bad_requests: AtomicU64,
    pub(crate) client_aborts: AtomicU64,
    pub(crate) active: AtomicU64,
    pub(crate) peak_active: AtomicU64,
    /// Prompt tokens looked up in the prefix cache, and those found
    /// (`/metrics`).
    pub(crate) prefix_queries: AtomicU64,
    pub(crate) prefix_hits: AtomicU64,
}

impl Counters {
    pub(crate) fn snapshot(&self) -> EmulatorStats {
        EmulatorStats {
            requests: self.requests.load(Relaxed),
            completed: self.completed.load(Relaxed),
            tokens: self.tokens.load(Relaxed),
            errors_500: self.errors_500.load(Relaxed),
            errors_429: self.errors_429.load(Relaxed),
            errors_529: self.errors_529.load(Relaxed),
            disconnects: self.disconnects.load(Relaxed),
            stalls: self.stalls.load(Relaxed),
            malformed: self.malformed.load(Relaxed),
            context_overflows: self.context_overflows.load(Relaxed),
            model_not_found: self.model_not_found.load(Relaxed),
            bad_requests: self.bad_requests.load(Relaxed),
            client_aborts: self.client_aborts.load(Relaxed),
            active: self.active.load(Relaxed),
            peak_active: self.peak_active.load(Relaxed),
        }
    }
}

/// State shared by every connection.
pub(crate) struct Shared {
    pub(crate) config: EmulatorConfig,
    /// The model name as a JSON string.
    pub(crate) model_json: String,
    /// The model name answers carry, as a JSON string: `model_json`
    /// unless `--answer-as`.
    pub(crate) answer_json: String,
    /// The `GET /v1/models` answer.
    pub(crate) models_body: Bytes,
    start: Instant,
    /// Sequence numbers of completion requests.
    pub(crate) seq: AtomicU64,
    cache: Mutex<PrefixCache>,
    stamps: Mutex<StampStore>,
    pub(crate) stats: Counters,
    /// Sub-millisecond wake-ups of short-ITL streams.
    pub(crate) pacer: Pacer,
    /// The batching server model, under a profile.
    pub(crate) engine: Option<Engine>,
    /// This replica's index in its fleet (0 for a single emulator).
    pub(crate) replica: usize,
    received: Mutex<ReceivedStore>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    /// Replica `replica` of a fleet whose clocks all start at `start`.
    pub(crate) fn replica(config: EmulatorConfig, replica: usize, start: Instant) -> Self {
        let model_json = serde_json::to_string(&config.model_name).expect("a string serializes");
        let answer_json = match &config.answer_as {
            Some(name) => serde_json::to_string(name).expect("a string serializes"),
            None => model_json.clone(),
        };
        let models = serde_json::json!({
            "object": "list",
            "data": [{
                "id": config.model_name,
                "object": "model",
                "created": 0,
                "owned_by": "arbor",
                "max_model_len": config.max_model_len,
            }],
        });
        let engine = config
            .profile
            .as_ref()
            .map(|p| Engine::new(p, start.into_std()));
        Shared {
            engine,
            models_body: Bytes::from(models.to_string()),
            model_json,
            answer_json,
            start,
            seq: AtomicU64::new(0),
            cache: Mutex::new(PrefixCache::new(config.cache_blocks)),
            stamps: Mutex::new(StampStore::new(config.stamp_capacity)),
            stats: Counters::default(),
            pacer: Pacer::default(),
            replica,
            received: Mutex::new(ReceivedStore::new(config.received_capacity)),
            config,
        }
    }

    /// Monotonic nanoseconds since the emulator started.
    pub(crate) fn now_ns(&self) -> u64 {
        self.ns(Instant::now())
    }

    pub(crate) fn ns(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.start).as_nanos() as u64
    }

    fn cache_enabled(&self) -> bool {
        self.config.cache_blocks != Some(0)
    }

    pub(crate) fn cache_insert(&self, blocks: &[u64]) {
        if self.cache_enabled() && !blocks.is_empty() {
            lock(&self.cache).insert(blocks);
        }
    }

    /// Counts a prompt of `tokens` looked up in the cache, `cached` of
    /// them found.
    pub(crate) fn count_prefix_lookup(&self, tokens: u64, cached: u64) {
        self.stats.prefix_queries.fetch_add(tokens, Relaxed);
        self.stats.prefix_hits.fetch_add(cached, Relaxed);
    }

    /// (queried, cached) prompt tokens so far.
    pub(crate) fn prefix_counts(&self) -> (u64, u64) {
        (
            self.stats.prefix_queries.load(Relaxed),
            self.stats.prefix_hits.load(Relaxed),
        )
    }

    /// Blocks in the cache over its capacity; 0 when it is unbounded or
    /// off.
    pub(crate) fn cache_usage(&self) -> f64 {
        match self.config.cache_blocks {
            Some(capacity) if capacity > 0 => lock(&self.cache).len() as f64 / capacity as f64,
            _ => 0.0,
        }
    }

    pub(crate) fn cache_lookup(&self, blocks: &[u64]) -> usize {
        if self.cache_enabled() && !blocks.is_empty() {
            lock(&self.cache).lookup(blocks)
        } else {
            0
        }
    }

    /// The stamps held, in the order their requests finished.
    pub(crate) fn stamps(&self) -> Vec<ServerStamp> {
        lock(&self.stamps).snapshot()
    }

    /// Like [`Shared::stamps`], and forgets them.
    pub(crate) fn take_stamps(&self) -> Vec<ServerStamp> {
        lock(&self.stamps).drain()
    }

    /// The routing information of the most recent requests, in the order
    /// they finished.
    pub(crate) fn received(&self) -> Vec<Received> {
        lock(&self.received).snapshot()
    }
}

/// Tracks one completion request: its stamp, the in-flight count, and
/// whether it ended normally. Dropping it unfinished (the client went away)
/// still keeps the stamp, with `done_ns: None`.
pub(crate) struct RequestGuard {
    shared: Arc<Shared>,
    stamp: Option<ServerStamp>,
    received: Option<Received>,
    finished: bool,
    fault_abort: bool,
}

impl RequestGuard {
    pub(crate) fn new(shared: Arc<Shared>, stamp: Option<ServerStamp>, received: Received) -> Self {
        let active = shared.stats.active.fetch_add(1, Relaxed) + 1;
        shared.stats.peak_active.fetch_max(active, Relaxed);
        RequestGuard {
            shared,
            stamp,
            received: Some(received),
            finished: false,
            fault_abort: false,
        }
    }

    pub(crate) fn stamp_chunk(&mut self) {
        if let Some(s) = &mut self.stamp {
            let t = self.shared.now_ns();
            s.first_chunk_ns.get_or_insert(t);
            s.chunk_ns.push(t);
        }
    }

    pub(crate) fn fault(&mut self, kind: FaultKind) {
        if let Some(s) = &mut self.stamp {
            s.faults.push(kind);
        }
    }

    pub(crate) fn aborted_by_fault(&mut self) {
        self.fault_abort = true;
    }

    /// The response's last bytes are being handed to hyper.
    pub(crate) fn finish(&mut self, status: u16) {
        self.finished = true;
        if let Some(mut r) = self.received.take() {
            r.status = status;
            lock(&self.shared.received).push(r);
        }
        if let Some(mut s) = self.stamp.take() {
            s.status = status;
            s.done_ns = Some(self.shared.now_ns());
            lock(&self.shared.stamps).push(s);
        }
    }

    pub(crate) fn with_stamp(&mut self, f: impl FnOnce(&mut ServerStamp)) {
        if let Some(s) = &mut self.stamp {
            f(s);
        }
    }

    pub(crate) fn with_received(&mut self, f: impl FnOnce(&mut Received)) {
        if let Some(r) = &mut self.received {
            f(r);
        }
    }
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.shared.stats.active.fetch_sub(1, Relaxed);
        if !self.finished && !self.fault_abort {
            self.shared.stats.client_aborts.fetch_add(1, Relaxed);
        }
        if let Some(s) = self.stamp.take() {
            lock(&self.shared.stamps).push(s);
        }
        if let Some(r) = self.received.take() {
            lock(&self.shared.received).push(r);
        }
    }
}
