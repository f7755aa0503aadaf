//! One or more points of the capacity bench's workload, planned one after
//! another on one core, for instruction counts under
//! `valgrind --tool=cachegrind` (criterion's repetitions make that too
//! slow). Prints each point's steps, prefix-hit tokens and preemptions,
//! and a checksum of every predicted first token and end: two builds
//! that predict the same print the same.
//!
//! The loop is the server arm of `arbor_capacity::predict::Bench::point`
//! written out, not a call to it (the capacity bench calls it): it needs
//! the model's counters (steps, hits, preemptions), which a point does not
//! hand back, and it counts the scheduler and the model alone (no served
//! requests, no observations), the loop the instruction counts of
//! docs/performance.md were taken on.
//!
//! `cargo build --release -p arbor-benches --example capacity_point`, then
//! `valgrind --tool=cachegrind --cache-sim=no
//! target/release/examples/capacity_point 1000` (loads in sessions; no
//! argument: the bench's 20, 50 to 1,000).

use std::path::Path;

use arbor_backends::virtual_clock::{self, Predicted, Prompts};
use arbor_engine::dag::compile;
use arbor_engine::derive::DeriveOptions;
use arbor_engine::policy::Policy;
use arbor_engine::scheduler::Scheduler;
use arbor_formats::synthetic::SyntheticSpec;
use arbor_sim::{Profile, ServerModel, WorkloadKeys};

/// The capacity bench's workload and profile (benches/capacity.rs).
const SPEC: &str = "trees=1000,turns=10,depth=1,spawn=0.1,hash_ids=true,seed=5";
const PROFILE: &str = include_str!("../../profiles/roofline-h100-sxm-llama-3.1-8b-bf16.toml");

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let loads: Vec<u32> = if args.is_empty() {
        (1..=20).map(|k| 50 * k).collect()
    } else {
        args.iter()
            .map(|a| {
                a.parse()
                    .map_err(|_| format!("`{a}`: expected a session count"))
            })
            .collect::<Result<_, _>>()?
    };
    let spec: SyntheticSpec = SPEC.parse().map_err(|e| format!("{e}"))?;
    let workload = spec.generate();
    let compiled = compile(&workload, &Policy::default(), &DeriveOptions::default())
        .map_err(|e| format!("{e}"))?;
    let profile =
        Profile::from_toml_str(PROFILE, Path::new("roofline.toml")).map_err(|e| format!("{e}"))?;
    let keys = WorkloadKeys::new(&workload, profile.engine.block_size);
    let prompts = Prompts {
        workload: &workload,
        cache_bust: None,
        keys: Some(&keys),
    };
    let mut checksum = 0u64;
    for sessions in loads {
        let policy = Policy {
            sessions: Some(sessions),
            ..Policy::default()
        };
        let mut scheduler = Scheduler::new(compiled.clone(), policy).map_err(|e| format!("{e}"))?;
        let mut model = ServerModel::new(&profile);
        let mut predicted: Vec<Predicted> = Vec::new();
        virtual_clock::run_server(&mut scheduler, prompts, &mut model, &mut predicted)
            .map_err(|e| format!("{e}"))?;
        for p in &predicted {
            checksum = checksum
                .wrapping_mul(31)
                .wrapping_add(p.first_token ^ p.done.rotate_left(32));
        }
        let g = model.gauges();
        println!(
            "sessions {sessions}: {} requests, {} steps, {} prefix-hit tokens, {} preemptions",
            predicted.len(),
            g.steps,
            g.prefix_hit_tokens,
            g.preemptions
        );
    }
    println!("checksum {checksum:016x}");
    Ok(())
}
