//! `arbor calibrate --probe`: the designed calibration (docs/capacity.md,
//! "The probe"). Sends the experiment `arbor_sim::calibrate::probe`
//! designs, one run per phase, each into its own directory under the
//! probe's output, through the live run machinery ([`crate::run::run`]:
//! the phase's conversations written as a workload in arbor's own trace
//! format, sent by closed-loop lanes or at their instants); fits a pilot
//! profile on the phases so far to time the `mixed` phase; then fits the
//! profile on every phase's run ([`calibrate::fit_resampled`]).
//!
//! Owns the driving: the workload files, each run's options, the order.
//! Never decides what to send (the design's) nor how to fit (the
//! calibration's). Writes only under [`ProbeOptions::out`]; tells the
//! observer of each phase before it runs.

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use arbor_engine::policy::GapTransform;
use arbor_error::Error;
use arbor_sim::calibrate::probe::{self, Conversation, Phase, ProbeLimits, Sending};
use arbor_sim::calibrate::{self, Calibration, Fitting, GivenLimits, Options};
use serde_json::json;

use crate::options::RunOptions;
use crate::Observer;

/// What a probe sends and how it fits.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// How each phase's run reaches the server: its request options
    /// (endpoint, model, API, headers, body), the tokenizer, or the
    /// built-in emulator's profile when there is no endpoint. Its
    /// workload, policy and output are the probe's.
    pub run: RunOptions,
    /// The engine limits; `max_num_seqs` and `max_num_batched_tokens` are
    /// required (the design needs them).
    pub limits: GivenLimits,
    /// The most tokens one request may hold (`None`: from the pool).
    pub max_context: Option<u32>,
    /// Output tokens of a decode phase's requests.
    pub decode_tokens: u32,
    /// Each lone prompt sent this many times.
    pub repeat: u32,
    /// The probe's directory: one run directory per phase.
    pub out: PathBuf,
    /// Whether stage B corrects the fit.
    pub correction: bool,
    /// Bootstrap resamples of the fit's uncertainty.
    pub resamples: u32,
    /// When the profile is fitted (its label), and the salt of the
    /// phases' cache-bust markers (so a probe never finds an earlier
    /// probe's prompts in the server's prefix cache).
    pub fitted_at: SystemTime,
}

/// One phase as it ran.
#[derive(Debug, Clone)]
pub struct PhaseRun {
    pub name: String,
    pub identifies: &'static str,
    pub requests: usize,
    pub dir: PathBuf,
    pub wall_s: f64,
}

/// What a probe did and found.
#[derive(Debug, Clone)]
pub struct Probed {
    pub phases: Vec<PhaseRun>,
    pub calibration: Calibration,
    /// The whole probe's wall time, the fits included.
    pub wall_s: f64,
}

/// The design's view of the limits given; an error naming the flag of a
/// limit it cannot do without.
pub fn probe_limits(options: &ProbeOptions) -> Result<ProbeLimits, Error> {
    let need = |value: Option<u32>, flag: &str| {
        value.filter(|&v| v > 0).ok_or_else(|| {
            Error::input(format!(
                "calibrate --probe: give {flag} N (the server's; the experiment is designed \
                 around it)"
            ))
        })
    };
    let l = &options.limits;
    let max_num_seqs = need(l.max_num_seqs, "--max-num-seqs")?;
    let budget = need(l.max_num_batched_tokens, "--max-num-batched-tokens")?;
    Ok(ProbeLimits {
        max_num_seqs,
        budget,
        pool_tokens: l
            .block_size
            .zip(l.num_gpu_blocks)
            .map(|(b, n)| u64::from(b) * u64::from(n)),
        max_context: options.max_context,
        decode_tokens: options.decode_tokens.max(2),
        repeat: options.repeat.max(1),
    })
}

/// Runs the probe's phases against the server and fits the profile.
pub fn probe(options: &ProbeOptions, observer: &dyn Observer) -> Result<Probed, Error> {
    let started = Instant::now();
    let limits = probe_limits(options)?;
    std::fs::create_dir_all(&options.out)
        .map_err(|e| Error::other(format!("{}: cannot create: {e}", options.out.display())))?;
    let salt = options
        .fitted_at
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs() << 8)
        .unwrap_or(0);
    let mut phases = Vec::new();
    for (i, phase) in probe::design(&limits).iter().enumerate() {
        phases.push(run_phase(options, phase, salt + i as u64, observer)?);
    }
    let dirs = |phases: &[PhaseRun]| phases.iter().map(|p| p.dir.clone()).collect::<Vec<_>>();
    // A pilot fit of the phases so far times the mixed phase.
    let pilot = calibrate::fit_with(
        &Options {
            run_dirs: dirs(&phases),
            limits: pilot_limits(&options.limits),
            correction: false,
            fitted_at: options.fitted_at,
        },
        0,
        Fitting::Probe,
    )?;
    let mixed = probe::mixed(&limits, &pilot.profile);
    phases.push(run_phase(options, &mixed, salt + 255, observer)?);
    observer.notice(&format!(
        "arbor calibrate --probe: {} phases sent in {:.1} s; fitting",
        phases.len(),
        started.elapsed().as_secs_f64()
    ));
    let calibration = calibrate::fit_with(
        &Options {
            run_dirs: dirs(&phases),
            limits: options.limits,
            correction: options.correction,
            fitted_at: options.fitted_at,
        },
        options.resamples,
        Fitting::Probe,
    )?;
    Ok(Probed {
        phases,
        calibration,
        wall_s: started.elapsed().as_secs_f64(),
    })
}

/// The limits of the pilot fit: the given ones, the pool's filled in
/// (the pilot's replay needs one; it only times the mixed phase).
fn pilot_limits(given: &GivenLimits) -> GivenLimits {
    GivenLimits {
        block_size: given.block_size.or(Some(16)),
        num_gpu_blocks: given.num_gpu_blocks.or(Some(1 << 20)),
        ..*given
    }
}

/// Writes `phase`'s workload and runs it into its directory.
fn run_phase(
    options: &ProbeOptions,
    phase: &Phase,
    salt: u64,
    observer: &dyn Observer,
) -> Result<PhaseRun, Error> {
    let dir = options.out.join(&phase.name);
    let workload = options.out.join(format!("{}.workload.jsonl", phase.name));
    write_workload(&workload, phase)?;
    let requests: usize = phase.conversations.iter().map(|c| c.turns.len()).sum();
    observer.notice(&format!(
        "arbor calibrate --probe: phase {} ({requests} requests; {}) in {}",
        phase.name,
        phase.identifies,
        dir.display()
    ));
    let mut run = options.run.clone();
    run.input.inputs = vec![workload];
    run.input.format = Some(arbor_formats::input::Format::Arbor);
    run.input.synthetic = None;
    let p = &mut run.policy;
    p.tool_time = Some(GapTransform::Zero);
    p.think_time_pct = Some(GapTransform::Zero);
    p.other_time = Some(GapTransform::Zero);
    p.spawn_time = Some(GapTransform::Zero);
    p.join_time = Some(GapTransform::Zero);
    p.sessions = match phase.sending {
        Sending::Lanes(n) => Some(n),
        Sending::AfterPrefix { .. } => Some(1),
        Sending::At => None,
    };
    p.arrival = None;
    p.duration = None;
    p.loop_lanes = false;
    run.request.cache_bust = true;
    run.request.cache_bust_salt = salt;
    run.metrics.metrics_all = true;
    run.out = Some(dir.clone());
    run.force = true;
    run.progress = false;
    run.repeat = None;
    run.slo = None;
    let started = Instant::now();
    crate::run::run(&run, &Quiet(observer))?;
    Ok(PhaseRun {
        name: phase.name.clone(),
        identifies: phase.identifies,
        requests,
        dir,
        wall_s: started.elapsed().as_secs_f64(),
    })
}

/// An observer that passes a run's warnings on and keeps its result lines
/// (each run's summary) to itself.
struct Quiet<'a>(&'a dyn Observer);

impl Observer for Quiet<'_> {
    fn notice(&self, line: &str) {
        self.0.notice(line);
    }
    fn output(&self, _line: &str) -> Result<(), Error> {
        Ok(())
    }
}

/// `phase`'s conversations as arbor's own trace format: one tree each, one
/// agent whose turns extend each other, sent at the tree's arrival; or,
/// after a shared prefix, one tree whose root sends the prefix and
/// spawns an agent per conversation at its end.
fn write_workload(path: &Path, phase: &Phase) -> Result<(), Error> {
    let mut text = String::new();
    match phase.sending {
        Sending::AfterPrefix { prefix } => {
            text.push_str(&after_prefix(prefix, &phase.conversations).to_string());
            text.push('\n');
        }
        Sending::Lanes(_) | Sending::At => {
            for (i, c) in phase.conversations.iter().enumerate() {
                text.push_str(&tree(i, c).to_string());
                text.push('\n');
            }
        }
    }
    std::fs::write(path, text)
        .map_err(|e| Error::other(format!("{}: cannot write: {e}", path.display())))
}

/// One tree: the root sends the `prefix` (hash blocks 1..), then spawns a
/// background agent per conversation, each one turn: the prefix's blocks
/// and a block of its own.
fn after_prefix(prefix: u32, conversations: &[Conversation]) -> serde_json::Value {
    let blocks: Vec<u64> = (1..=u64::from(prefix.div_ceil(16))).collect();
    let turn = |isl: u32, osl: u32, ids: &[u64]| {
        json!({"start_ns": 0, "duration_ns": null, "isl": isl, "osl": osl, "ttft_ns": null,
               "model": 0, "input": "tool_result", "hash_ids": ids, "text": null,
               "tokens_estimated": false})
    };
    let mut agents = vec![json!({"id": "prefix", "parent": null, "kind": "root",
                                 "end_ns": null, "turns": [turn(prefix, 1, &blocks)]})];
    let mut edges = Vec::new();
    for (j, c) in conversations.iter().enumerate() {
        let t = c
            .turns
            .first()
            .copied()
            .unwrap_or(probe::Turn { isl: 16, osl: 2 });
        let mut ids = blocks.clone();
        ids.push(1_000_000 + j as u64);
        agents.push(
            json!({"id": format!("batch-{j}"), "parent": 0, "kind": "background",
                           "end_ns": null, "turns": [turn(t.isl, t.osl, &ids)]}),
        );
        edges.push(
            json!({"from": [0, 0], "to": [j + 1, 0], "anchor": "end", "gap_ns": 0,
                          "kind": "spawn"}),
        );
    }
    json!({"arbor": 1, "id": "probe-batch", "arrival_ns": 0, "block_size": 16,
           "hash_scope": "local", "tool_tokens": 0, "system_tokens": 0, "models": ["probe"],
           "agents": agents, "edges": edges})
}

fn tree(i: usize, c: &Conversation) -> serde_json::Value {
    let turns: Vec<serde_json::Value> = c
        .turns
        .iter()
        .enumerate()
        .map(|(k, t)| {
            json!({"start_ns": k, "duration_ns": null, "isl": t.isl, "osl": t.osl,
                   "ttft_ns": null, "model": 0, "input": "tool_result", "hash_ids": [],
                   "text": null, "tokens_estimated": false})
        })
        .collect();
    json!({"arbor": 1, "id": format!("probe-{i}"), "arrival_ns": c.at_ns, "block_size": 16,
           "hash_scope": "local", "tool_tokens": 0, "system_tokens": 0, "models": ["probe"],
           "agents": [{"id": "root", "parent": null, "kind": "root", "end_ns": null,
                       "turns": turns}]})
}
