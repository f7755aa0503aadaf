//! arbor-engine: the pure, deterministic core of arbor.
//!
//! Data flows one way: file -> [`load`] -> [`model::Workload`] ->
//! [`derive`] (edges from recorded times) -> [`dag`] (validated, compiled to
//! flat arrays) -> [`scheduler::Scheduler`] <-> a driver (virtual or live).
//!
//! No I/O happens here except reading input files in [`load`]; no clock, no
//! threads, no hash-order iteration. Time is integer nanoseconds passed in by
//! the caller.
#![forbid(unsafe_code)]

pub mod breakdown;
pub mod content;
pub mod dag;
pub mod derive;
pub mod error;
pub mod fit;
pub mod input;
pub mod inspect;
pub mod load;
pub mod model;
pub mod policy;
pub mod prompt;
pub mod queue;
pub mod rng;
pub mod scheduler;
pub mod shard;
pub mod start;
pub mod stats;
pub mod synthetic;
pub mod time;

pub use error::{EngineError, InputError, PolicyError};
pub use model::{
    Agent, AgentKind, Anchor, Edge, EdgeKind, HashScope, InputKind, Message, Role, Tree, Turn,
    TurnText, Workload,
};
pub use time::Nanos;
