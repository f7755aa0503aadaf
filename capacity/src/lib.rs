//! arbor-capacity: the capacity search, the largest load that meets
//! latency SLOs (docs/capacity.md, "Capacity search").
//!
//! Owns the SLOs and their grammar ([`slo`]), the load knob and the space
//! searched ([`knob`]), the order of probes (bracket then bisect, or the
//! grid of a sweep: [`mod@search`], pure), judging a point's observations
//! (percentiles, goodput, the verdict: [`observed`]), a point in agents
//! and jobs per hour ([`agents`]) and the Pareto of the points
//! ([`pareto`]), a virtual reading's interval ([`interval`]), what a
//! probe is and
//! the search over any probe ([`probe`]), a virtual point's requests
//! ([`served`]) and its plan on the virtual clock under a service model
//! ([`predict`], with [`predict::VirtualProbe`]), a live point's run
//! directory read back ([`run_dir`]), and what a search writes
//! (`capacity.json`, virtual probe directories: [`output`]).
//!
//! A search sees loads only through a [`Probe`]: anything that can
//! measure a point implements it (the virtual probe here; the binary's
//! live probe, which runs `arbor run` per point; a caller's own, as in
//! `examples/custom_probe.rs`), and [`search()`] or [`sweep()`] turn it
//! into points and an answer.
//!
//! Must not touch: a clock, the network, the console (prints nothing: a
//! front end words progress and tables), nor how a run runs (a live
//! point is the caller's). Writes only the files of [`output`], under the
//! directory it is given. The modules use only those before them in this
//! list: `slo`, `search`, `knob`, `observed`, `agents`, `pareto`,
//! `interval`, `served`, `run_dir`, `output`, `probe`, `predict`.
#![forbid(unsafe_code)]

pub mod agents;
pub mod interval;
pub mod knob;
pub mod observed;
pub mod output;
pub mod pareto;
pub mod predict;
pub mod probe;
pub mod run_dir;
pub mod search;
pub mod served;
pub mod slo;

pub use agents::{Agents, Held};
pub use knob::{Knob, Space};
pub use observed::{Gaps, Observed, Reading, RequestSeen, Verdict};
pub use output::{About, Answer, Cause, Mode, Outcome, Point, Stop};
pub use pareto::{Pareto, ParetoPoint};
pub use probe::{search, sweep, Probe, DEFAULT_MIN_REQUESTS};
pub use search::{Knee, Start};
pub use slo::Slo;
