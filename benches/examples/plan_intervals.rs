//! What the intervals of `arbor plan --service server:` cost: the
//! capacity bench's workload (1,000 trees) at one load, planned once
//! under the profile, then again under each of 20 draws (the roofline
//! profile with every coefficient scaled by 0.90 ... 1.10) side by side
//! on every core, then the intervals' arithmetic (1,000 resamples per
//! draw). The same steps as `arbor::intervals::intervals`, written out
//! because the benches do not depend on the facade; each timed alone on
//! the wall clock and printed.
//!
//! `cargo build --release -p arbor-benches --example plan_intervals`, then
//! `target/release/examples/plan_intervals [SESSIONS] [DRAWS]` (default
//! 200 sessions, 20 draws).

use std::path::Path;
use std::time::Instant;

use arbor_backends::side_by_side;
use arbor_backends::virtual_clock::{self, Predicted, Prompts};
use arbor_engine::dag::compile;
use arbor_engine::derive::DeriveOptions;
use arbor_engine::policy::Policy;
use arbor_engine::scheduler::Scheduler;
use arbor_formats::synthetic::SyntheticSpec;
use arbor_report::plan::intervals::{Figures, PredictionIntervals, Settings, RESAMPLES};
use arbor_report::plan::server::figures;
use arbor_sim::server::profile::Draw;
use arbor_sim::{Profile, ServerModel, WorkloadKeys};

/// The capacity bench's workload and profile (benches/capacity.rs).
const SPEC: &str = "trees=1000,turns=10,depth=1,spawn=0.1,hash_ids=true,seed=5";
const PROFILE: &str = include_str!("../../profiles/roofline-h100-sxm-llama-3.1-8b-bf16.toml");

fn main() -> Result<(), String> {
    let args: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse().map_err(|_| format!("`{a}`: expected a number")))
        .collect::<Result<_, _>>()?;
    let sessions = args.first().copied().unwrap_or(200);
    let draws = args.get(1).copied().unwrap_or(20) as usize;
    let spec: SyntheticSpec = SPEC.parse().map_err(|e| format!("{e}"))?;
    let workload = spec.generate();
    let policy = Policy {
        sessions: Some(sessions),
        ..Policy::default()
    };
    let compiled =
        compile(&workload, &policy, &DeriveOptions::default()).map_err(|e| format!("{e}"))?;
    let profile =
        Profile::from_toml_str(PROFILE, Path::new("roofline.toml")).map_err(|e| format!("{e}"))?;
    let keys = WorkloadKeys::new(&workload, profile.engine.block_size);
    let prompts = Prompts {
        workload: &workload,
        cache_bust: None,
        keys: Some(&keys),
    };
    let plan = |profile: &Profile| -> Result<Figures, String> {
        let mut scheduler =
            Scheduler::new(compiled.clone(), policy.clone()).map_err(|e| format!("{e}"))?;
        let mut model = ServerModel::new(profile);
        let mut predicted: Vec<Predicted> = Vec::new();
        virtual_clock::run_server(&mut scheduler, prompts, &mut model, &mut predicted)
            .map_err(|e| format!("{e}"))?;
        Ok(figures(&scheduler, &predicted))
    };
    let scaled: Vec<Profile> = (0..draws)
        .map(|i| {
            let f = 0.9 + 0.2 * i as f64 / (draws.max(2) - 1) as f64;
            let mut step = profile.step.clone();
            for c in [
                &mut step.constant_ns,
                &mut step.per_seq_ns,
                &mut step.per_token_ns,
                &mut step.per_token_above_knee_ns,
                &mut step.per_decode_context_token_ns,
                &mut step.per_prefill_attention_ns,
            ] {
                *c *= f;
            }
            profile.with_draw(&Draw {
                step,
                overhead: profile.overhead,
            })
        })
        .collect();

    let started = Instant::now();
    let central = plan(&profile)?;
    let one = started.elapsed();
    let started = Instant::now();
    let cores = side_by_side::cores();
    let under: Vec<Figures> = side_by_side::plan_each(draws, cores, |i| plan(&scaled[i]))
        .into_iter()
        .collect::<Result<_, _>>()?;
    let replans = started.elapsed();
    let started = Instant::now();
    let settings = Settings {
        level: 0.9,
        resamples: RESAMPLES,
        seed: 0,
    };
    let intervals = PredictionIntervals::new(&central, &under, draws, settings);
    let arithmetic = started.elapsed();
    println!(
        "{sessions} sessions, {} requests: one plan {:.3} s; {draws} draws on {cores} cores {:.3} s; \
         intervals {:.3} s",
        central.ttft.len(),
        one.as_secs_f64(),
        replans.as_secs_f64(),
        arithmetic.as_secs_f64()
    );
    let p50 = &intervals.ttft.p50;
    println!("ttft p50 [{:.4}, {:.4}] s", p50.lo_s, p50.hi_s);
    Ok(())
}
