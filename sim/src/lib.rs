//! arbor-sim: server models.
//!
//! Owns the formulas that say how long a request takes on a modelled
//! server. The virtual driver (in `arbor-backends`) asks a model for each
//! request's service time. The models of [`service`] are pure functions of
//! the request: no clock, no contention between requests. The [`server`]
//! model is a batching engine with a queue, a KV pool and a prefix cache,
//! advanced by its caller on a virtual clock. The [`emulator`] serves an
//! OpenAI-compatible streaming endpoint with such timings in real time.
//! [`calibrate`] fits a server model's profile to a real server from the
//! run directories of live runs against it (read through `arbor-runs`,
//! never written); it prints nothing and reads no clock.
#![forbid(unsafe_code)]

pub mod calibrate;
pub mod emulator;
pub mod server;
pub mod service;
pub mod token_rule;

pub use server::workload_keys::WorkloadKeys;
pub use server::{ModelEvent, ModelRequest, Profile, ServerModel};
pub use service::{ServerService, Service, ServiceModel, ServiceRequest};
