//! arbor-backends: drivers that run the engine.
//!
//! `virtual_clock` runs the scheduler against a service model on a virtual
//! clock, as fast as the CPU allows. A live HTTP driver will sit beside it;
//! both only decide where `now` and completions come from.
#![forbid(unsafe_code)]

pub mod virtual_clock;
