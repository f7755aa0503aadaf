//! arbor-sim: server models.
//!
//! Owns the formulas that say how long a request takes on a modelled
//! server. The virtual driver (in `arbor-backends`) asks a model for each
//! request's service time. The models of [`service`] are pure functions of
//! the request: no clock, no contention between requests. The [`server`]
//! model is a batching engine with a queue, a KV pool and a prefix cache,
//! advanced by its caller on a virtual clock. The [`emulator`] serves an
//! OpenAI-compatible streaming endpoint with such timings in real time.
#![forbid(unsafe_code)]

pub mod emulator;
pub mod server;
pub mod service;
pub mod token_rule;

pub use server::workload_keys::WorkloadKeys;
pub use server::{ModelEvent, ModelRequest, Profile, ServerModel};
pub use service::{ServerService, Service, ServiceModel, ServiceRequest};
