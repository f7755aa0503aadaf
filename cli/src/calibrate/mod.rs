//! `arbor calibrate RUN_DIR... -o PROFILE.toml`: a server profile fitted
//! from live runs' records (docs/capacity.md, "Calibration").
//!
//! Modules, each used only by those after it: [`nnls`] (the
//! Lawson–Hanson solver), [`request`] (a request as the client measured
//! it), [`follows`] (which request each was sent after), [`runs`] (run
//! directories read into requests), [`limits`] (the engine limits:
//! flags, or the server's scraped `cache_config_info`), [`timeline`]
//! (each step's batch rebuilt from the records), [`stage_a`] (least
//! squares over decode and lone-prefill rows, the knee search),
//! [`replay`] (the runs replayed through the server model),
//! [`fit_error`] (p50/p90 of TTFT, ITL, E2E, predicted against measured)
//! and [`stage_b`] (bounded correction factors by replay). This module
//! runs them in order, prints what each found and
//! writes the profile. Of the other commands it uses only `run`'s UTC
//! stamp (for the label); it writes nothing into a run directory.

mod fit_error;
mod follows;
mod limits;
mod nnls;
mod replay;
mod request;
mod runs;
mod stage_a;
mod stage_b;
mod timeline;

use std::io::{self, Write};

use arbor_sim::server::{Overheads, Profile, ProfileOrigin, SchedulingPolicy};

use crate::args::CalibrateArgs;
use crate::stdout;
use arbor_error::Error;

use fit_error::{Compared, Samples};
use limits::LimitFlags;
use runs::Run;
use stage_b::Factors;

/// Runs `arbor calibrate`.
pub fn run(args: &CalibrateArgs) -> Result<(), Error> {
    let runs = args
        .run_dirs
        .iter()
        .map(|dir| runs::read(dir))
        .collect::<Result<Vec<Run>, Error>>()?;
    let requests: usize = runs.iter().map(|r| r.requests.len()).sum();
    if requests == 0 {
        return Err(Error::input(
            "calibrate: no finished request in the runs' records.jsonl: nothing to fit",
        ));
    }
    let flags = LimitFlags {
        max_num_seqs: args.max_num_seqs,
        max_num_batched_tokens: args.max_num_batched_tokens,
        block_size: args.block_size,
        num_gpu_blocks: args.num_gpu_blocks,
    };
    let engine = limits::resolve(&flags, &runs, SchedulingPolicy::Vllm)?;
    let fit = stage_a::fit(&runs, engine.max_num_batched_tokens).map_err(|_| {
        Error::input(
            "calibrate: no request with two output tokens or more, and none that ran alone: \
             nothing to fit the step time on",
        )
    })?;
    let fitted = Profile {
        label: label(&runs),
        origin: ProfileOrigin::Fitted,
        engine,
        step: fit.step.clone(),
        overhead: Overheads {
            arrival_ns: fit.overhead_ns.round() as u64,
            departure_ns: 0,
        },
    };
    let correction = (!args.no_correction).then(|| {
        let before = stage_b::loss(&fitted, &runs);
        let (factors, after) = stage_b::correct(&fitted, &runs);
        (factors, before, after)
    });
    let profile = match &correction {
        Some((factors, _, _)) => stage_b::apply(&fitted, factors),
        None => fitted,
    };
    let blocks = compare(&profile, &runs);
    std::fs::write(&args.out, profile.to_toml())
        .map_err(|e| Error::other(format!("{}: cannot write: {e}", args.out.display())))?;
    stdout::print(|out| {
        write_report(out, &runs, &profile, &fit, correction.as_ref(), &blocks)?;
        writeln!(out, "wrote {}", args.out.display())
    })
}

/// What the profile's label says: fitted here, against what, when, from
/// which runs.
fn label(runs: &[Run]) -> String {
    let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
    let first = |f: fn(&Run) -> Option<&String>| runs.iter().find_map(f).cloned();
    let model = first(|r| r.model.as_ref()).unwrap_or_else(|| "an unnamed model".into());
    let server = first(|r| r.server.as_ref()).unwrap_or_else(|| "an unrecorded server".into());
    let when = arbor_runs::output::utc_stamps(std::time::SystemTime::now()).1;
    format!(
        "fitted here by arbor calibrate on {when} against {model} served by {server}, from runs {}",
        names.join(", ")
    )
}

/// The fit error per run and over all runs, of `profile`'s replay.
fn compare(profile: &Profile, runs: &[Run]) -> Vec<(String, Vec<Compared>, u64, u64)> {
    let mut all = Samples::default();
    let (mut all_model, mut all_server) = (0u64, 0u64);
    let mut blocks = Vec::new();
    for run in runs {
        let served = replay::replay(profile, &run.requests);
        all.extend(&run.requests, &served);
        // Prefix-cache hits: the model's against the server's, over the
        // requests whose server reported them.
        let (model, server) = run
            .requests
            .iter()
            .zip(&served)
            .filter_map(|(r, s)| r.cached.map(|c| (u64::from(s.cached_tokens), u64::from(c))))
            .fold((0, 0), |(m, s), (a, b)| (m + a, s + b));
        all_model += model;
        all_server += server;
        blocks.push((
            run.name.clone(),
            Samples::of(&run.requests, &served).compare(),
            model,
            server,
        ));
    }
    if runs.len() > 1 {
        blocks.push(("all".into(), all.compare(), all_model, all_server));
    }
    blocks
}

fn write_report(
    out: &mut dyn Write,
    runs: &[Run],
    profile: &Profile,
    fit: &stage_a::Fit,
    correction: Option<&(Factors, f64, f64)>,
    blocks: &[(String, Vec<Compared>, u64, u64)],
) -> io::Result<()> {
    let requests: usize = runs.iter().map(|r| r.requests.len()).sum();
    let skipped: u64 = runs.iter().map(|r| r.skipped).sum();
    writeln!(
        out,
        "arbor calibrate: {} run(s), {requests} finished requests ({skipped} left out: failed, \
         cancelled or unstamped)",
        runs.len()
    )?;
    let e = &profile.engine;
    writeln!(
        out,
        "engine: max_num_seqs {}, max_num_batched_tokens {}, block_size {}, num_gpu_blocks {}",
        e.max_num_seqs, e.max_num_batched_tokens, e.block_size, e.num_gpu_blocks
    )?;
    writeln!(
        out,
        "stage A: {} decode rows, {} lone-prefill rows; knee {} tokens; rms {:.3} ms a step",
        fit.decode_rows,
        fit.prefill_rows,
        fit.step.knee_tokens,
        fit.rms_ns / 1e6
    )?;
    for run in runs {
        if let Some(n) = run.preemptions.filter(|&n| n > 0.0) {
            writeln!(
                out,
                "  {}: the server preempted {n} times; a client cannot see the recomputation \
                 that costs, so this run's rows understate the work (calibrate from runs whose \
                 KV pool was not exhausted)",
                run.name
            )?;
        }
    }
    if fit.prefill_rows == 0 {
        writeln!(
            out,
            "  no request ran alone: the per-request overhead is not identified (0); add a \
             low-load run (e.g. --sessions 1)"
        )?;
    }
    match correction {
        Some((factors, before, after)) => {
            let shown: Vec<String> = stage_b::GROUPS
                .iter()
                .zip(factors.0)
                .map(|(g, f)| format!("{g} ×{f:.3}"))
                .collect();
            writeln!(
                out,
                "stage B: {} (loss {before:.4} -> {after:.4})",
                shown.join(", ")
            )?;
        }
        None => writeln!(out, "stage B: skipped (--no-correction)")?,
    }
    let s = &profile.step;
    writeln!(
        out,
        "step ns = {:.1} + {:.2}·seqs + {:.3}·tokens + {:.3}·max(0, tokens − {}) + {:.5}·decode \
         context + {:.7}·prefill attention; overhead {} ns a request",
        s.constant_ns,
        s.per_seq_ns,
        s.per_token_ns,
        s.per_token_above_knee_ns,
        s.knee_tokens,
        s.per_decode_context_token_ns,
        s.per_prefill_attention_ns,
        profile.overhead.arrival_ns + profile.overhead.departure_ns
    )?;
    for (name, _, model, server) in blocks {
        if *server > 0 || *model > 0 {
            writeln!(
                out,
                "prefix cache ({name}): the model found {model} cached prompt tokens where the \
                 server reported {server}"
            )?;
        }
    }
    writeln!(out, "fit error (replay of each run through the profile):")?;
    let table: Vec<(String, Vec<Compared>)> = blocks
        .iter()
        .map(|(name, compared, _, _)| (name.clone(), compared.clone()))
        .collect();
    fit_error::write_table(out, &table)
}
