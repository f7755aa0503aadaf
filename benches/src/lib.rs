//! arbor-benches: shared set-up for the criterion benches in `benches/`.
//!
//! The benches measure the engine alone (scheduler events per second on a
//! synthetic workload) so a regression in the hot loop shows up without
//! I/O noise. Whole-command figures (`arbor plan` on a million turns) are
//! taken with `/usr/bin/time`; see `docs/performance.md`.
#![forbid(unsafe_code)]

use arbor_backends::virtual_clock;
use arbor_engine::dag::{compile, CompiledWorkload};
use arbor_engine::derive::DeriveOptions;
use arbor_engine::policy::Policy;
use arbor_engine::scheduler::Scheduler;
use arbor_formats::synthetic::SyntheticSpec;
use arbor_sim::ServiceModel;

/// A compiled synthetic workload for the given spec string.
pub fn compiled(spec: &str, policy: &Policy) -> CompiledWorkload {
    let spec: SyntheticSpec = spec.parse().expect("bench spec parses");
    compile(&spec.generate(), policy, &DeriveOptions::default())
        .expect("synthetic workloads compile")
}

/// Runs a plan to the end and returns the number of scheduler events.
pub fn run_plan(workload: CompiledWorkload, policy: Policy, model: &ServiceModel) -> u64 {
    let mut scheduler = Scheduler::new(workload, policy).expect("bench policy is valid");
    virtual_clock::run(&mut scheduler, model).expect("engine run");
    scheduler.stats().events
}
