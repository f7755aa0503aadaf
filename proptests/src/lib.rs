//! arbor-proptests: the scheduling invariants, stated and checked.
//!
//! This library holds what the property tests share: turning a generated
//! synthetic spec and policy into a finished plan. The properties live in
//! `tests/properties.rs`; each has a doc comment saying what it guarantees.
//! `PROPTEST_CASES=N` raises the number of cases for deep runs.
#![forbid(unsafe_code)]

use arbor_backends::virtual_clock;
use arbor_engine::dag::compile;
use arbor_engine::derive::DeriveOptions;
use arbor_engine::policy::Policy;
use arbor_engine::scheduler::Scheduler;
use arbor_engine::Workload;
use arbor_sim::ServiceModel;

/// Compiles `workload` (exact derivation) and runs it to the end.
pub fn plan(workload: &Workload, policy: Policy, model: &ServiceModel) -> Scheduler {
    let options = DeriveOptions {
        overlap_tolerance: 0,
    };
    let compiled = compile(workload, &policy, &options).expect("generated workloads compile");
    let mut scheduler = Scheduler::new(compiled, policy).expect("generated policies are valid");
    virtual_clock::run(&mut scheduler, model).expect("the virtual driver never misuses the engine");
    scheduler
}

/// Cases per property: `PROPTEST_CASES` when set (deep runs by hand), else
/// `default` (what CI runs).
pub fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
