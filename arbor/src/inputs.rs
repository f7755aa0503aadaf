//! Turns the input and policy options into a compiled workload and a
//! policy, the same way for `plan` and `run`: load (traces, synthetic or
//! the bundled sample), take the subset asked for (`subset.rs`), flatten
//! the request shape (`--flatten-tools`), recount tokens, fit prompts to the server
//! (`--isl-scale`, `--max-context`), check the policy's combinations
//! (naming the flags), refuse a workload or plan too large for this
//! machine before allocating it (estimated from counts and sizes), compile,
//! and build schedulers. Every input or
//! policy failure becomes an exit-code-2 [`Error`].

use std::path::Path;

use arbor_backends::virtual_clock;
use arbor_engine::dag::{self, CompiledWorkload};
use arbor_engine::derive::DeriveOptions;
use arbor_engine::error::{PolicyConflict, PolicyError};
use arbor_engine::fit::FitReport;
use arbor_engine::policy::{GapTransform, Policy};
use arbor_engine::scheduler::{Footprint, Scheduler};
use arbor_engine::Workload;
use arbor_formats::load;
use arbor_formats::synthetic::SyntheticSpec;
use arbor_runs::config::SubsetRecord;
use arbor_sim::ServiceModel;

use crate::options::{InputOptions, PolicyOptions, ScenarioOptions};
use crate::{scenario, Observer};
use arbor_error::Error;
use arbor_formats::data;
use arbor_formats::load::sample;
use arbor_formats::manifest::Corpus;

/// What the inputs were, for reports.
#[derive(Clone)]
pub struct LoadedInput {
    pub workload: Workload,
    pub description: String,
    /// What `--isl-scale`/`--max-context` did, when given.
    pub fit: Option<FitReport>,
    /// The part of the corpus taken (`--trees`, `--tree`,
    /// `--max-requests`), when only part was.
    pub subset: Option<SubsetRecord>,
    /// The trace inputs' identity (or the bundled sample's); `None` for a
    /// synthetic workload alone or a stream input.
    pub corpus: Option<Corpus>,
}

pub fn load(args: &InputOptions, observer: &dyn Observer) -> Result<LoadedInput, Error> {
    let mut parts = Vec::new();
    let paths = data::resolve_inputs(&args.inputs)?;
    let corpus = if paths.is_empty() && args.synthetic.is_some() {
        None
    } else {
        data::corpus_of(&paths)?
    };
    let mut workload = if paths.is_empty() && args.synthetic.is_none() {
        parts.push("bundled sample (4 Weka traces)".to_string());
        sample::workload().map_err(Error::input)?
    } else {
        let mut w = Workload::default();
        for loaded in load::load_all(&paths, args.format).map_err(Error::input)? {
            let name = loaded.format.map_or("?", |f| f.name());
            parts.push(format!("{} ({name})", loaded.path));
            w.trees.extend(loaded.trees);
        }
        w
    };
    if let Some(text) = &args.synthetic {
        let spec = synthetic_spec(text)?;
        let estimate = spec.estimate();
        check_memory(estimate.bytes, || {
            format!(
                "--synthetic trees={} would generate about {:.1e} turns",
                estimate.trees, estimate.turns
            )
        })?;
        parts.push(format!("synthetic {}", spec.to_spec_string()));
        workload.trees.extend(spec.generate().trees);
    }
    let subset = crate::subset::apply(&mut workload, &args.subset)?.map(|taken| {
        observer.notice(&taken.description);
        parts.push(taken.description);
        taken.record
    });
    if args.flatten_tools {
        let flattened = arbor_engine::shape::flatten(&mut workload);
        parts.push(format!(
            "tools flattened in {} text turns (--flatten-tools)",
            flattened.turns
        ));
    }
    if let Some(path) = &args.tokenizer {
        let tokenizer = crate::tokenizer::load(path)?;
        let recount = crate::tokenizer::apply(&tokenizer, &mut workload);
        if !recount.multi_token_words.is_empty() {
            observer.notice(&format!(
                "warning: {}: {} words of arbor's synthesis vocabulary are not single tokens ({}): \
                 synthesized prompts will be a little longer than recorded",
                path.display(),
                recount.multi_token_words.len(),
                recount.multi_token_words.join(",")
            ));
        }
        parts.push(format!(
            "{} text turns counted with {}",
            recount.text_turns,
            path.display()
        ));
    }
    let fit = args.fit.fit();
    let fit = (!fit.is_identity()).then(|| arbor_engine::fit::apply(&mut workload, &fit));
    Ok(LoadedInput {
        workload,
        description: parts.join(", "),
        fit,
        subset,
        corpus,
    })
}

/// A spec string, or a path to a .toml/.json spec file.
fn synthetic_spec(text: &str) -> Result<SyntheticSpec, Error> {
    let looks_like_file =
        text.ends_with(".toml") || text.ends_with(".json") || Path::new(text).is_file();
    if looks_like_file && !text.contains('=') {
        SyntheticSpec::from_file(Path::new(text)).map_err(Error::input)
    } else {
        text.parse()
            .map_err(|e: PolicyError| Error::input(format!("--synthetic: {e}")))
    }
}

pub fn derive_options(args: &InputOptions) -> DeriveOptions {
    DeriveOptions {
        overlap_tolerance: args.overlap_tolerance,
    }
}

/// The policy the flags describe, its combinations checked.
pub fn policy(args: &PolicyOptions, agentx: &ScenarioOptions) -> Result<Policy, Error> {
    let policy = Policy {
        tool_time: args.tool_time(),
        think_time: args.think_time_pct.unwrap_or(GapTransform::Recorded),
        other_time: args.other_time(),
        spawn_time: args.spawn_time(),
        join_time: args.join_time(),
        gap_scale: args.gap_scale(),
        arrival: args.arrival(),
        copies: args.copies(),
        stagger: args.stagger(),
        max_inflight: args.max_inflight,
        sessions: args.sessions,
        loop_lanes: args.loop_lanes,
        idle_gap_cap: args.idle_gap_cap,
        duration: args.duration,
        grace: args.grace(),
        seed: args.seed(),
        start_window: agentx.start_window,
        tree_idle_cap: args.tree_idle_cap,
        warmup_spread: agentx.warmup_spread,
        warmup_requests_per_lane: agentx.warmup_requests_per_lane,
        cache_warmup_duration: agentx.cache_warmup_duration,
        shard: args.shard,
    };
    policy.validate().map_err(policy_failure)?;
    Ok(policy)
}

/// A policy error in the words of the flags.
pub fn policy_failure(error: PolicyError) -> Error {
    let PolicyError::Conflict(conflict) = error else {
        return Error::input(error);
    };
    Error::input(match conflict {
        PolicyConflict::NoCopies => "--copies: expected at least 1",
        PolicyConflict::NoInflight => "--max-inflight: expected at least 1",
        PolicyConflict::NoSessions => "--sessions: expected at least 1",
        PolicyConflict::LoopWithoutSessions => "--loop: needs --sessions N (lanes to loop)",
        PolicyConflict::StaggerWithSessions => {
            "--stagger: applies to open-loop runs; with --sessions, lanes start by --arrival"
        }
        PolicyConflict::StartWindowWithoutSessions => {
            "--start-window: needs --sessions N (it places each lane's first tree)"
        }
        PolicyConflict::LoopWithoutDuration => "--loop: needs --duration S, or the run never ends",
        PolicyConflict::CacheWarmupCountAndDuration => {
            "--warmup-requests-per-lane and --cache-warmup-duration: give one (a count or a \
             duration bounds the accelerated cache warmup, not both)"
        }
        PolicyConflict::CacheWarmupWithoutStartWindow => {
            "--warmup-requests-per-lane/--cache-warmup-duration: needs --start-window MIN:MAX \
             (the accelerated cache warmup continues each lane from its t*; --scenario \
             agentx-mvp sets one)"
        }
        PolicyConflict::IdleCapWithShard => {
            "--idle-gap-cap with --shard: the global idle-gap cap needs every shard idle at \
             once, which no shard knows; drop one of them (--tree-idle-cap is per tree and \
             shards exactly)"
        }
        PolicyConflict::StartWindowWithShard => {
            "--start-window with --shard: all lanes start profiling at one instant, which \
             shards cannot share; drop one of them"
        }
    })
}

/// A workload loaded and compiled under a policy.
#[derive(Clone)]
pub struct Compiled {
    pub loaded: LoadedInput,
    pub policy: Policy,
    pub compiled: CompiledWorkload,
}

/// Loads the inputs (at least one tree), gives a recipe's lanes enough
/// copies, and compiles.
pub fn compile(
    input: &InputOptions,
    mut policy: Policy,
    options: &DeriveOptions,
    recipe: bool,
    observer: &dyn Observer,
) -> Result<Compiled, Error> {
    let loaded = load(input, observer)?;
    if loaded.workload.trees.is_empty() {
        return Err(Error::input(
            "the inputs hold no trees: expected at least one trace",
        ));
    }
    if recipe {
        scenario::fit_lanes(&mut policy, loaded.workload.trees.len());
    }
    let compiled = dag::compile(&loaded.workload, &policy, options).map_err(Error::input)?;
    check_plan(&compiled, &policy, observer)?;
    Ok(Compiled {
        loaded,
        policy,
        compiled,
    })
}

/// Refuses a plan too large to hold, before the scheduler allocates it:
/// more plays or requests than its `u32` ids number, or an estimate of its
/// arrays ([`Scheduler::footprint`]) over [`memory_limit`]. Notes lanes
/// that would hold no tree (they are not made).
fn check_plan(
    compiled: &CompiledWorkload,
    policy: &Policy,
    observer: &dyn Observer,
) -> Result<(), Error> {
    let what = || {
        if policy.copies > 1 {
            format!("--copies {} would plan", policy.copies)
        } else {
            "the inputs would plan".to_string()
        }
    };
    let Some(footprint) = Scheduler::footprint(compiled, policy) else {
        return Err(Error::input(format!(
            "{} more requests than can be counted: expected fewer",
            what()
        )));
    };
    check_memory(footprint.bytes as f64, || {
        format!("{} {:.1e} turns", what(), footprint.turns as f64)
    })?;
    if !footprint.fits_ids() {
        return Err(Error::input(format!(
            "{} {} plays of {} requests: expected at most {} of each (arbor numbers them in 32 bits)",
            what(),
            footprint.plays,
            footprint.turns,
            Footprint::MAX_COUNT
        )));
    }
    if let Some(sessions) = policy.sessions {
        if u64::from(sessions) > footprint.lanes {
            observer.notice(&format!(
                "note: --sessions {sessions}: only {} (tree, copy) plays to deal, so {} lanes hold a share; the other {} would hold nothing and are not made",
                footprint.plays,
                footprint.lanes,
                u64::from(sessions) - footprint.lanes
            ));
        }
    }
    Ok(())
}

/// Refuses `bytes` over [`memory_limit`], in the words `what` gives
/// (`--copies N would plan 2.4e9 turns`).
fn check_memory(bytes: f64, what: impl Fn() -> String) -> Result<(), Error> {
    let (limit, why) = memory_limit();
    if bytes <= limit as f64 {
        return Ok(());
    }
    Err(Error::input(format!(
        "{}, about {}; the limit is {} ({why}): expected a smaller workload (see docs/reliability.md)",
        what(),
        show_gb(bytes),
        show_gb(limit as f64)
    )))
}

/// `340 GB`, `1.5 GB`, `inf GB`.
fn show_gb(bytes: f64) -> String {
    let gb = bytes / 1e9;
    if gb >= 10.0 || !gb.is_finite() {
        format!("{gb:.0} GB")
    } else {
        format!("{gb:.1} GB")
    }
}

/// The most memory a plan's estimate may reach: half of this machine's
/// memory (`MemTotal` of `/proc/meminfo`), leaving the rest to the
/// workload, the driver and the reports; 8 GiB where it cannot be read.
fn memory_limit() -> (u64, &'static str) {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            kb.checked_mul(1024)
        });
    match total {
        Some(bytes) => (bytes / 2, "half this machine's memory"),
        None => (8 << 30, "8 GiB, this machine's memory being unknown"),
    }
}

impl Compiled {
    /// A scheduler of (a copy of) the compiled workload.
    pub fn schedule(&self) -> Result<Scheduler, Error> {
        scheduler(self.compiled.clone(), self.policy.clone())
    }
}

/// A scheduler of `compiled` under `policy`.
pub fn scheduler(compiled: CompiledWorkload, policy: Policy) -> Result<Scheduler, Error> {
    Scheduler::new(compiled, policy).map_err(policy_failure)
}

/// Runs `scheduler` to the end on the virtual clock; an engine error is
/// reported after `what`.
pub fn run_virtual(
    scheduler: &mut Scheduler,
    service: &ServiceModel,
    what: &str,
) -> Result<(), Error> {
    virtual_clock::run(scheduler, service)
        .map(|_| ())
        .map_err(|e| Error::other(format!("{what}: {e}")))
}
