//! What the planned prefix-reuse figures cost before a run's clock starts
//! (docs/run.md, "Prefix reuse"): a synthetic workload whose turns extend
//! their prompts, planned on the virtual clock under the recorded
//! service, then keyed by `ReusePlan::of` (every prompt token keyed,
//! every distinct prefix kept), timed on the wall clock, with the
//! process's resident memory before and after the keying (Linux
//! `/proc/self/status`).
//!
//! `cargo build --release -p arbor-benches --example reuse_cost`, then
//! `target/release/examples/reuse_cost [TREES]` (default 20).

use std::time::Instant;

use arbor_backends::reuse::ReusePlan;
use arbor_backends::virtual_clock;
use arbor_engine::dag::compile;
use arbor_engine::derive::DeriveOptions;
use arbor_engine::policy::Policy;
use arbor_engine::scheduler::Scheduler;
use arbor_formats::synthetic::SyntheticSpec;
use arbor_sim::ServiceModel;

/// Trees of 100 root turns whose prompts grow 600 tokens a turn.
const SPEC: &str = "turns=100,depth=1,spawn=0.1,isl=2000,isl_growth=600,seed=5";

/// The process's resident memory now and at its peak, in MB.
fn resident_mb() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = |key: &str| {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (kb("VmRSS:") / 1024.0, kb("VmHWM:") / 1024.0)
}

fn main() -> Result<(), String> {
    let trees: u32 = match std::env::args().nth(1) {
        Some(a) => a.parse().map_err(|_| format!("`{a}`: expected a number"))?,
        None => 20,
    };
    let spec: SyntheticSpec = format!("trees={trees},{SPEC}")
        .parse()
        .map_err(|e| format!("{e}"))?;
    let workload = spec.generate();
    let policy = Policy::default();
    let compiled =
        compile(&workload, &policy, &DeriveOptions::default()).map_err(|e| format!("{e}"))?;
    let mut scheduler = Scheduler::new(compiled, policy).map_err(|e| format!("{e}"))?;
    virtual_clock::run(&mut scheduler, &ServiceModel::Recorded).map_err(|e| format!("{e}"))?;
    let (before, _) = resident_mb();
    let started = Instant::now();
    let plan = ReusePlan::of(&scheduler, &workload, None, None).map_err(|e| e.to_string())?;
    let keyed = started.elapsed();
    let (after, peak) = resident_mb();
    let totals = plan.totals();
    println!(
        "{trees} trees: {} prompt tokens keyed in {:.3} s; resident {before:.0} MB before, \
         {after:.0} MB after, peak {peak:.0} MB",
        totals.prompt_tokens,
        keyed.as_secs_f64(),
    );
    Ok(())
}
