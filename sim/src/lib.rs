//! arbor-sim: server models.
//!
//! Owns the formulas that say how long a request takes on a modelled
//! server. The virtual driver (in `arbor-backends`) asks a model for each
//! request's service time; later the emulator will use the same models in
//! real time. Models here are pure functions of the request: no clock, no
//! contention between requests.
#![forbid(unsafe_code)]

pub mod service;

pub use service::{ServiceModel, ServiceRequest};
