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
//! the search over any probe ([`probe`]), how sure a sampled point is (95 %
//! intervals of a percentile and of a share: [`confidence`]), what the
//! search concludes, a point or only a bound, and the confirmation run
//! ([`conclusion`]), a virtual point's requests
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
//! list: `slo`, `search`, `knob`, `confidence`, `observed`, `agents`,
//! `pareto`, `interval`, `served`, `run_dir`, `output`, `conclusion`,
//! `probe`, `predict`.
#![forbid(unsafe_code)]

pub mod agents;
pub mod conclusion;
pub mod confidence;
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
pub use conclusion::{AnswerKind, Conclusion, Confirmation, Deciding};
pub use knob::{Knob, Space};
pub use observed::{Confidence, Decision, Gaps, Observed, Reading, RequestSeen, Verdict};
pub use output::{About, Answer, Cause, Mode, Outcome, Point, Stop};
pub use pareto::{Pareto, ParetoPoint};
pub use probe::{confirm, search, sweep, Probe, DEFAULT_MIN_REQUESTS};
pub use search::{Knee, Start};
pub use slo::Slo;
