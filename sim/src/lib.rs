//! arbor-sim: server models.
//!
//! Owns the formulas that say how long a request takes on a modelled
//! server. The virtual driver (in `arbor-backends`) asks a model for each
//! request's service time. Models here are pure functions of the request:
//! no clock, no contention between requests. The [`emulator`] serves an
//! OpenAI-compatible streaming endpoint with such timings in real time.
#![forbid(unsafe_code)]

pub mod emulator;
pub mod service;

pub use service::{ServiceModel, ServiceRequest};
