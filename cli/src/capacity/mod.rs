//! `arbor capacity INPUT... --slo '...'`: the largest load that meets
//! latency SLOs (docs/capacity.md, "Capacity search").
//!
//! Owns the command's wiring: the flags checked, the search run with one
//! probe per load, the console table and `OUT/capacity.json`. Modules:
//! [`slo`] (the `--slo` grammar), [`knob`] (sessions or rate, range and
//! step), [`search`] (the order of probes: bracket, then bisect),
//! [`observed`] (a point's observations judged: percentiles, goodput,
//! pass), [`served`] (a virtual point's requests), [`predict`] (a point
//! on the virtual clock, one arm per service model), [`live`] (a point as
//! a real `arbor run`), [`output`] (`capacity.json` and virtual probe
//! directories), [`table`] (the console). Each uses only those before it
//! in this list, never `run`'s internals beyond its entry point.
//!
//! Modes: virtual (the default: every point a plan under `--service`),
//! or live (`--live` or `--endpoint`: every point a run of `--duration`).
//! A live search with an explicit `--service` first searches virtually
//! and then bisects live around the predicted knee.

mod knob;
mod live;
mod observed;
mod output;
mod predict;
mod search;
mod served;
mod slo;
mod table;

use std::path::{Path, PathBuf};

use arbor_backends::side_by_side;
use arbor_engine::prompt::CacheBust;
use arbor_sim::{Service, ServiceModel};

use crate::args::CapacityArgs;
use crate::run::Rebuild;
use crate::scenario::Explicit;
use crate::{emulate, inputs, stdout};
use arbor_error::Error;

use knob::{Knob, Space};
use observed::Verdict;
use output::{Answer, Probe, Report};
use predict::Bench;
use search::{Bounds, Knee, Start};
use slo::Slo;

/// The most loads a `--sweep` plans (each writes a probe directory).
const MAX_SWEEP_LOADS: usize = 10_000;

/// `arbor capacity`.
pub fn run(args: &CapacityArgs, explicit: &Explicit, rebuild: Rebuild) -> Result<(), Error> {
    let slo = Slo::parse(&args.slo).map_err(|e| Error::input(format!("--slo {e}")))?;
    let space = Space::of(
        args.search.as_deref(),
        args.step.as_deref(),
        &args.run.policy,
    )
    .map_err(Error::input)?;
    let live = args.live || args.run.request.endpoint.is_some();
    check_flags(args, explicit, live)?;
    let bounds = Bounds {
        lo: space.lo,
        hi: space.hi,
        step: space.step,
    };
    let sweep_loads = search::grid(bounds).len();
    if args.sweep && sweep_loads > MAX_SWEEP_LOADS {
        return Err(Error::input(format!(
            "--sweep: {sweep_loads} loads from {} to {} at {}; at most {MAX_SWEEP_LOADS}: give a \
             coarser --step or a narrower --search",
            space.knob.show(space.lo),
            space.knob.show(space.hi),
            space.knob.show(space.step),
        )));
    }
    let predicting = !live || explicit.has("service");
    if predicting {
        refuse_without_first_token(&slo, &args.run.service)?;
    }
    let out = args.run.out.clone().unwrap_or_else(default_out);
    claim_out(&out, args.run.force)?;
    let bench = predicting.then(|| bench(args)).transpose()?;
    let service = args.run.service.to_string();

    let mut predicted = None;
    let mut searches = Vec::new();
    if let Some(bench) = &bench {
        let dir = if live {
            out.join("predicted")
        } else {
            out.clone()
        };
        let probes_of = VirtualProbes {
            bench,
            knob: space.knob,
            slo: &slo,
            dir: &dir,
            service: bench.service.to_string(),
            seed: args.run.policy.seed,
        };
        let found = if args.sweep {
            sweep_virtual(&probes_of, bounds)
        } else {
            search_virtual(&probes_of, bounds, space.start)
        };
        let (knee, probes) = finish(found, &dir, &space, &slo, "virtual", &service, None)?;
        if live {
            eprintln!(
                "arbor capacity: predicted on the virtual clock ({service}): {}",
                table::answer_line(space.knob, &answer(space.knob, knee), &slo.to_string())
            );
        }
        if let Some(note) = bench.lanes_note(space.knob, knee) {
            eprintln!("{note}");
        }
        predicted = Some(answer(space.knob, knee));
        searches.push((knee, probes));
    }
    if live {
        let start = match searches.first() {
            Some((knee, _)) => Start::Around(knee.passing.or(knee.failing).unwrap_or(space.start)),
            None => Start::At(space.start),
        };
        let found = search_live(args, explicit, rebuild, &space, bounds, start, &slo, &out);
        let (knee, probes) = finish(found, &out, &space, &slo, "live", &service, predicted)?;
        searches.push((knee, probes));
    }
    let Some((knee, probes)) = searches.pop() else {
        return Err(Error::other("no search was made"));
    };
    let slo_text = slo.to_string();
    stdout::print(|mut text| {
        table::print(
            &mut text,
            space.knob,
            &probes,
            &answer(space.knob, knee),
            &slo_text,
        )?;
        writeln!(
            text,
            "capacity in {}",
            out.join(output::CAPACITY_FILE).display()
        )
    })
}

/// Refuses flags a capacity search cannot honour (exit 2).
fn check_flags(args: &CapacityArgs, explicit: &Explicit, live: bool) -> Result<(), Error> {
    if args.run.repeat.is_some() {
        return Err(Error::input(
            "--repeat: not with capacity (each load is one run); run `arbor run --repeat N` at \
             the load it finds",
        ));
    }
    if args.run.scenario.scenario.is_some() {
        return Err(Error::input(
            "--scenario: a recipe locks the load; capacity changes it on purpose",
        ));
    }
    if live && args.sweep {
        return Err(Error::input(
            "--sweep: virtual only (a live sweep would run every load for --duration); drop \
             --live and --endpoint, or drop --sweep to search live",
        ));
    }
    if live && args.run.policy.duration.is_none() {
        return Err(Error::input(
            "--duration: a live search needs it, to bound each probe (e.g. --duration 60)",
        ));
    }
    if !live {
        let given = emulate::flags_given(explicit);
        if !given.is_empty() {
            return Err(Error::input(format!(
                "{}: the built-in emulator's, used only by a live search: add --live, or drop them",
                given.join(", ")
            )));
        }
    }
    Ok(())
}

/// A recorded service time has no first token: TTFT, ITL and TPOT bounds
/// would judge nothing.
fn refuse_without_first_token(slo: &Slo, service: &Service) -> Result<(), Error> {
    if *service != Service::Model(ServiceModel::Recorded) {
        return Ok(());
    }
    match slo.bounds.iter().find(|b| b.metric.needs_first_token()) {
        None => Ok(()),
        Some(bound) => Err(Error::input(format!(
            "--slo {bound}: --service recorded predicts no first token, so only e2e and job \
             bounds mean anything; give --service fixed:TTFT_MS:ITL_MS or \
             throughput:PREFILL_TOK_S:DECODE_TOK_S, or drop {}",
            bound.name()
        ))),
    }
}

/// `arbor-results/<UTC time>-capacity`.
fn default_out() -> PathBuf {
    let (compact, _) = arbor_runs::output::utc_stamps(std::time::SystemTime::now());
    PathBuf::from("arbor-results").join(format!("{compact}-capacity-{}", std::process::id()))
}

/// Creates OUT; one that holds files already needs `--force`.
fn claim_out(out: &Path, force: bool) -> Result<(), Error> {
    let used = std::fs::read_dir(out).is_ok_and(|mut entries| entries.next().is_some());
    if used && !force {
        return Err(Error::input(format!(
            "--out {}: not empty; expected a new or empty directory (or --force)",
            out.display()
        )));
    }
    std::fs::create_dir_all(out)
        .map_err(|e| Error::other(format!("{}: cannot create: {e}", out.display())))
}

/// The workload loaded and compiled once, for every virtual point.
fn bench(args: &CapacityArgs) -> Result<Bench, Error> {
    let policy = inputs::policy(&args.run.policy, &args.run.scenario)?;
    let options = inputs::derive_options(&args.run.input);
    let cache_bust = args.run.request.cache_bust.then_some(CacheBust {
        seed: policy.seed,
        salt: args.run.request.cache_bust_salt,
    });
    let compiled = inputs::compile(&args.run.input, policy, &options, false)?;
    Ok(Bench::new(
        compiled.compiled,
        compiled.loaded.workload,
        cache_bust,
        args.run.policy.clone(),
        args.run.scenario.clone(),
        args.run.service.clone(),
    ))
}

/// A search's end: what it found and its probes, or its error and the
/// probes made before it.
type Found = (Result<Knee, Error>, Vec<Probe>);

/// What a virtual probe needs besides its number and load.
struct VirtualProbes<'a> {
    bench: &'a Bench,
    knob: Knob,
    slo: &'a Slo,
    /// Where probe directories go.
    dir: &'a Path,
    service: String,
    seed: u64,
}

impl VirtualProbes<'_> {
    /// Plans probe `k` at `value`, judges it and writes its directory.
    fn probe(&self, k: usize, value: u64) -> Result<Probe, Error> {
        let prediction = self.bench.point(self.knob, value)?;
        let probe = probe(k, self.knob, value, prediction.observed.judge(self.slo));
        output::write_virtual_probe(
            self.dir,
            &probe,
            self.knob,
            &prediction,
            &self.service,
            self.seed,
        )?;
        Ok(probe)
    }
}

/// Searches on the virtual clock from `start`.
fn search_virtual(probes_of: &VirtualProbes, bounds: Bounds, start: u64) -> Found {
    let mut probes = Vec::new();
    let knee = search::search(bounds, Start::At(start), |value| {
        let probe = probes_of.probe(probes.len() + 1, value)?;
        let pass = probe.verdict.pass;
        probes.push(probe);
        Ok(pass)
    });
    (knee, probes)
}

/// Plans every load of the range side by side ([`side_by_side`]), each
/// probe's directory written by the worker that planned it; probes are
/// numbered in load order, whatever the cores.
fn sweep_virtual(probes_of: &VirtualProbes, bounds: Bounds) -> Found {
    let loads = search::grid(bounds);
    let planned = side_by_side::plan_each(loads.len(), side_by_side::cores(), |i| {
        probes_of.probe(i + 1, loads[i])
    });
    let mut probes = Vec::with_capacity(planned.len());
    for result in planned {
        match result {
            Ok(probe) => probes.push(probe),
            Err(e) => return (Err(e), probes),
        }
    }
    let passes: Vec<(u64, bool)> = loads
        .iter()
        .zip(&probes)
        .map(|(&load, probe)| (load, probe.verdict.pass))
        .collect();
    (Ok(search::first_failure(&passes)), probes)
}

/// Searches live: each probe a run in its own directory under `out`.
#[allow(clippy::too_many_arguments)]
fn search_live(
    args: &CapacityArgs,
    explicit: &Explicit,
    rebuild: Rebuild,
    space: &Space,
    bounds: Bounds,
    start: Start,
    slo: &Slo,
    out: &Path,
) -> Found {
    let mut probes = Vec::new();
    let knee = search::search(bounds, start, |value| {
        let k = probes.len() + 1;
        let dir = out.join(output::probe_dir(k, space.knob, value));
        eprintln!(
            "arbor capacity: probe {k}: {}={} live, in {}",
            space.knob.name(),
            space.knob.show(value),
            dir.display()
        );
        let observed = live::point(args, explicit, rebuild, k, space.knob, value, &dir)?;
        let probe = probe(k, space.knob, value, observed.judge(slo));
        let pass = probe.verdict.pass;
        probes.push(probe);
        Ok(pass)
    });
    (knee, probes)
}

fn probe(k: usize, knob: Knob, value: u64, verdict: Verdict) -> Probe {
    Probe {
        probe: k,
        load: knob.number(value),
        dir: output::probe_dir(k, knob, value),
        verdict,
    }
}

fn answer(knob: Knob, knee: Knee) -> Answer {
    Answer {
        passing: knee.passing.map(|v| knob.number(v)),
        failing: knee.failing.map(|v| knob.number(v)),
    }
}

/// Writes `capacity.json` of a search into `dir` (also after an error,
/// with the probes made before it) and hands back what it found.
fn finish(
    found: Found,
    dir: &Path,
    space: &Space,
    slo: &Slo,
    mode: &'static str,
    service: &str,
    predicted: Option<Answer>,
) -> Result<(Knee, Vec<Probe>), Error> {
    let (knee, probes) = found;
    let knob = space.knob;
    let report = Report {
        schema_version: output::SCHEMA_VERSION,
        arbor_version: env!("CARGO_PKG_VERSION"),
        mode,
        complete: knee.is_ok(),
        slo: slo.to_string(),
        goodput_threshold: slo.goodput,
        knob: knob.name(),
        range: [knob.number(space.lo), knob.number(space.hi)],
        step: knob.number(space.step),
        service: service.to_string(),
        predicted,
        answer: answer(
            knob,
            *knee.as_ref().unwrap_or(&Knee {
                passing: None,
                failing: None,
            }),
        ),
        probes,
    };
    output::write_report(dir, &report)?;
    let knee = knee?;
    Ok((knee, report.probes))
}
