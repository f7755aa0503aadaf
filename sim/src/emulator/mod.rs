//! The emulator: an OpenAI-compatible (and Anthropic Messages) streaming
//! HTTP server driven by a timing model in real time, with a content-keyed prefix cache, seeded
//! fault injection and server-side timestamps for measuring a client's own
//! error. Several of them form a fleet (`fleet.rs`: replicas with their
//! own caches, optionally behind a router by a session-affinity
//! convention, `router.rs`). See `docs/emulator.md`.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use arbor_sim::emulator::{serve, EmulatorConfig};
//! let mut config = EmulatorConfig::default();
//! config.timing.ttft = 200_000_000; // 200 ms
//! config.timing.itl = 20_000_000; // 20 ms
//! let emulator = serve(config, "127.0.0.1:0".parse().unwrap()).await?;
//! println!("listening on {}", emulator.base_url());
//! // ... send requests with an `x-arbor-request-id` header ...
//! let stamps = emulator.stamps();
//! # let _ = stamps;
//! emulator.shutdown().await;
//! # Ok(()) }
//! ```

mod answer;
mod body;
pub mod cache;
pub mod config;
mod engine;
mod faults;
mod fleet;
mod metrics;
mod pacer;
mod received;
mod request;
mod responses;
mod router;
mod server;
mod shared;
pub mod stamps;
mod tls;
mod tokens;

pub use cache::{BLOCK_BYTES, BLOCK_TOKENS};
pub use config::{
    flags, EmulatorConfig, EmulatorFlags, FailStatus, Faults, ReadTimeouts, TimingModel,
    DEFAULT_BODY_READ_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_MAX_MODEL_LEN,
    DEFAULT_MAX_TOKENS, DEFAULT_MODEL_NAME, DEFAULT_RECEIVED_CAPACITY, DEFAULT_STAMP_CAPACITY,
    MAX_REPLICAS,
};
pub use faults::FaultPlan;
pub use fleet::{serve_fleet, serve_routed, FleetHandle};
pub use received::{
    Received, DYNAMO_FINAL_HEADER, DYNAMO_PARENT_HEADER, DYNAMO_SESSION_HEADER, REPLICA_HEADER,
    SESSION_AFFINITY_HEADER, SESSION_ID_HEADER, SESSION_TOKEN_HEADER, SMG_ROUTING_KEY_HEADER,
};
pub use request::model_request_of;
pub use router::{RouteBy, MAX_KEYS};
pub use server::{serve, serve_tls, EmulatorHandle, MAX_BODY_BYTES};
pub use shared::EmulatorStats;
pub use stamps::{FaultKind, ServerStamp, REQUEST_ID_HEADER};
pub use tls::{EmulatorTls, SelfSigned, TlsError, SELF_SIGNED_NAMES};
pub use tokens::{PromptTokenizer, TextTokenizer};
