//! What a capacity search writes: `OUT/capacity.json` (schema_version
//! `arbor.capacity/1`: the SLOs, the space searched, every probe in order
//! and the answer), and for a virtual probe its directory
//! `OUT/probe-K-<knob>-<value>/`: a `summary.json` shaped like a run's
//! where the report reads it (`latency.*`, `throughput.*`, `counts`,
//! `config`) and a `records.jsonl` of the predicted requests, so `arbor
//! report OUT/probe-*` overlays the points like runs. A live probe's
//! directory is the run's own. Owns the files' shapes and names, and the
//! rule that OUT is new or empty; decides nothing about the search.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use arbor_engine::scheduler::Scheduler;
use arbor_engine::time::Nanos;
use arbor_error::{Error, Kind};
use arbor_runs::collector::Latency;
use serde::Serialize;

use crate::agents::{Agents, Held};
use crate::conclusion::{AnswerKind, Conclusion};
use crate::knob::{Knob, Space};
use crate::observed::Verdict;
use crate::pareto::{Figures, Pareto};
use crate::search::Knee;
use crate::served::Served;
use crate::slo::Slo;

pub const CAPACITY_FILE: &str = "capacity.json";
pub const SCHEMA_VERSION: &str = "arbor.capacity/1";
/// `summary.json` of a virtual probe.
const PROBE_SCHEMA_VERSION: &str = "arbor.capacity-probe/1";

/// The directory name of probe `k` (1-based) at `value`.
pub fn probe_dir(k: usize, knob: Knob, value: u64) -> String {
    format!("probe-{k}-{}-{}", knob.name(), knob.show(value))
}

/// The directory name of probe `k`'s `round`-th extension (1-based): the
/// same load measured again, longer, its records pooled with the probe's.
pub fn extension_dir(k: usize, knob: Knob, value: u64, round: u32) -> String {
    format!("{}-extension-{round}", probe_dir(k, knob, value))
}

/// One probed point: a row of the console's table, an entry of
/// `capacity.json`'s `probes`.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// 1-based, in the order probed.
    pub probe: usize,
    /// The knob's value (sessions, or trees per second).
    pub load: f64,
    /// Its directory, relative to OUT.
    pub dir: String,
    #[serde(flatten)]
    pub verdict: Verdict,
    /// The point in agents and jobs ([`crate::agents`]).
    pub agents: Agents,
    /// The directories of its extensions (relative to OUT), whose records
    /// the verdict pools with its own: the probe was unresolved and was
    /// measured again, longer.
    pub extensions: Vec<String>,
    /// A confirmation run: the answer's passing load measured once more
    /// after the search.
    pub confirmation: bool,
}

/// The search as `capacity.json` holds it.
#[derive(Debug, Serialize)]
pub struct Report {
    pub schema_version: &'static str,
    pub arbor_version: &'static str,
    pub mode: Mode,
    /// False: a probe failed or was too small to decide and ended the
    /// search (`stopped` says which and why; the probes up to it are
    /// listed; the answer is empty).
    pub complete: bool,
    /// Why the search ended before its answer, at which probe (`None`:
    /// it found its answer).
    pub stopped: Option<Stop>,
    pub slo: String,
    /// A point passes on every percentile bound, or on goodput when set.
    pub goodput_threshold: Option<f64>,
    pub knob: &'static str,
    pub range: [f64; 2],
    pub step: f64,
    /// The service model of the virtual points (and of a live search's
    /// prediction).
    pub service: String,
    /// A live search's start: the virtual knee it bisected around.
    pub predicted: Option<Answer>,
    /// The answer: the knee (`passing`, `failing`), its `kind` (a point,
    /// or only a bound), the unresolved loads and the deciding readings.
    pub answer: Conclusion,
    pub probes: Vec<Point>,
    /// The answer in agents: the passing load's figures (`None`: no
    /// load passed).
    pub answer_in_agents: Option<Held>,
    /// Jobs/h per replica against jobs/h per user over the probes.
    pub pareto: Pareto,
}

/// How the points were measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Plans on the virtual clock.
    Virtual,
    /// Real runs.
    Live,
}

/// Where the knee is, in the knob's own unit (sessions, trees/s).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Answer {
    /// The largest load that passed.
    pub passing: Option<f64>,
    /// The smallest load above it that failed.
    pub failing: Option<f64>,
}

impl Answer {
    /// "largest load meeting every SLO: sessions=24 (sessions=25 fails)".
    pub fn sentence(&self, knob: Knob, slo_text: &str) -> String {
        let at = |v: f64| format!("{}={}", knob.name(), knob.show_number(v));
        match (self.passing, self.failing) {
            (Some(p), Some(f)) => format!(
                "largest load meeting every SLO: {} ({} fails; SLO {slo_text})",
                at(p),
                at(f)
            ),
            (Some(p), None) => format!(
                "every load probed meets every SLO, up to the range's top {}: raise --search's high end",
                at(p)
            ),
            (None, Some(f)) if f <= knob.number(1) => format!(
                "no load meets every SLO: even the least load, {}, fails (SLO {slo_text}): the \
                 server misses it unloaded; check the SLO against one request's latency",
                at(f)
            ),
            (None, Some(f)) => format!(
                "no load meets every SLO: even {} fails (SLO {slo_text}); lower --search's low end",
                at(f)
            ),
            (None, None) => "no load was probed".to_string(),
        }
    }

    /// `knee` in the knob's own unit.
    pub fn of(knob: Knob, knee: Knee) -> Answer {
        Answer {
            passing: knee.passing.map(|v| knob.number(v)),
            failing: knee.failing.map(|v| knob.number(v)),
        }
    }
}

/// A search's end: its points in the order probed, and what it found, or
/// the error that ended it after those points (and, when a probe ended
/// it, which one and why: `stopped`). `conclusion` says whether what it
/// found is a point or only a bound (a probe left unresolved).
#[derive(Debug)]
pub struct Outcome {
    pub points: Vec<Point>,
    pub found: Result<Knee, Error>,
    pub stopped: Option<Stop>,
    pub conclusion: Conclusion,
}

/// Why a search stopped before its answer, at which probe: its run
/// failed (the pre-flight refused it, the server failed too many of its
/// requests, the breaker stopped it, a signal, a file not written), or
/// it was too small to decide. A search never moves on from either: no
/// verdict of the probe is taken, and no advice to move the range given.
#[derive(Debug, Clone, Serialize)]
pub struct Stop {
    /// 1-based, in the order probed.
    pub probe: usize,
    /// Its load, in the knob's own unit.
    pub load: f64,
    pub cause: Cause,
    /// What happened, in words: the run's own error (the pre-flight's
    /// refusal, the failures by class with the server's own words), or
    /// the count that was too small.
    pub message: String,
    /// The error's kind, for the exit code.
    #[serde(skip)]
    pub kind: Kind,
}

/// What stopped a search at a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// The probe could not be measured: its error ended the search.
    Failed,
    /// Fewer of its requests succeeded than a probe needs
    /// ([`crate::Probe::min_measured`]).
    TooSmall,
    /// A sampled point's 95 % intervals reached across a limit (a sweep
    /// of a probe of your own: a search answers with a bound instead).
    Unresolved,
}

impl Stop {
    /// Probe `k` at `value` ended by `error`.
    pub fn failed(k: usize, knob: Knob, value: u64, error: Error) -> Stop {
        Stop {
            probe: k,
            load: knob.number(value),
            cause: Cause::Failed,
            message: error.message,
            kind: error.kind,
        }
    }

    /// `point`, with fewer than `min_measured` successful requests.
    pub fn too_small(point: &Point, min_measured: u64) -> Stop {
        let v = &point.verdict;
        Stop {
            probe: point.probe,
            load: point.load,
            cause: Cause::TooSmall,
            message: format!(
                "too small to decide: {} of its {} requests succeeded, fewer than the {} a probe \
                 needs (--min-requests); the answer is unresolved: lengthen each probe \
                 (--duration) or lower --min-requests",
                v.measured, v.requests, min_measured
            ),
            kind: Kind::TooFewMeasured,
        }
    }

    /// `point`, unresolved on its 95 % intervals though not too small.
    pub fn unresolved(point: &Point) -> Stop {
        Stop {
            probe: point.probe,
            load: point.load,
            cause: Cause::Unresolved,
            message: "unresolved: a 95 % interval of its readings reaches across a limit; \
                      lengthen each probe"
                .to_string(),
            kind: Kind::TooFewMeasured,
        }
    }

    /// The error a search that stopped here ends with: which probe, and
    /// why, in the kind of what happened.
    pub fn error(&self, knob: Knob) -> Error {
        let at = format!("{}={}", knob.name(), knob.show_number(self.load));
        Error {
            kind: self.kind,
            message: match self.cause {
                Cause::Failed => format!(
                    "probe {} ({at}) failed, and the search stopped without an answer: {}",
                    self.probe, self.message
                ),
                Cause::TooSmall | Cause::Unresolved => {
                    format!("probe {} ({at}) is {}", self.probe, self.message)
                }
            },
        }
    }
}

/// What `capacity.json` says of a search besides its points and answer.
#[derive(Debug, Clone, Copy)]
pub struct About<'a> {
    pub mode: Mode,
    pub space: &'a Space,
    pub slo: &'a Slo,
    /// The service model of the virtual points (and of a live search's
    /// prediction), as `--service` names it.
    pub service: &'a str,
    /// A live search's start: the virtual knee it bisected around.
    pub predicted: Option<Answer>,
    /// The replicas each load was spread over (the Pareto's throughput
    /// per replica; 1 for one server or the virtual clock).
    pub replicas: usize,
}

impl Outcome {
    /// Writes `capacity.json` of the search into `dir` (also after an
    /// error, with the points made before it: `"complete": false`) and
    /// hands back the knee, or the error; an answer that is only a bound
    /// is an error here too ([`Kind::TooFewMeasured`], its sentence): use
    /// [`Outcome::conclude`] for the bound itself.
    pub fn finish(self, dir: &Path, about: About) -> Result<(Knee, Vec<Point>), Error> {
        let knob = about.space.knob;
        let slo = about.slo.to_string();
        let (knee, conclusion, points) = self.conclude(dir, about)?;
        match conclusion.bound_sentence(knob, &slo) {
            None => Ok((knee, points)),
            Some(sentence) => Err(Error {
                kind: Kind::TooFewMeasured,
                message: sentence,
            }),
        }
    }

    /// Writes `capacity.json` of the search into `dir` (also after an
    /// error, with the points made before it: `"complete": false`) and
    /// hands back the knee, the answer (a point or only a bound) and the
    /// points, or the error that ended the search.
    pub fn conclude(
        self,
        dir: &Path,
        about: About,
    ) -> Result<(Knee, Conclusion, Vec<Point>), Error> {
        let Outcome {
            points,
            found,
            stopped,
            conclusion,
        } = self;
        let knob = about.space.knob;
        let answer_in_agents = held(
            &points,
            found
                .as_ref()
                .ok()
                .and_then(|knee| knee.passing)
                .map(|v| knob.number(v)),
        );
        let pareto = Pareto::of(
            points.iter().map(|p| Figures {
                probe: p.probe,
                load: p.load,
                jobs_per_hour: p.agents.jobs_per_hour,
                jobs_per_hour_per_user: p.agents.jobs_per_hour_per_user,
                pass: p.verdict.pass,
            }),
            about.replicas,
        );
        let report = Report {
            schema_version: SCHEMA_VERSION,
            arbor_version: env!("CARGO_PKG_VERSION"),
            mode: about.mode,
            complete: found.is_ok(),
            stopped,
            slo: about.slo.to_string(),
            goodput_threshold: about.slo.goodput,
            knob: knob.name(),
            range: [knob.number(about.space.lo), knob.number(about.space.hi)],
            step: knob.number(about.space.step),
            service: about.service.to_string(),
            predicted: about.predicted,
            answer: if found.is_ok() {
                conclusion
            } else {
                Conclusion {
                    kind: AnswerKind::Unresolved,
                    ..Conclusion::default()
                }
            },
            probes: points,
            answer_in_agents,
            pareto,
        };
        write_report(dir, &report)?;
        let knee = found?;
        Ok((knee, report.answer, report.probes))
    }
}

/// The answer in agents: the figures of the point at `passing` (the
/// largest load that passed, in the knob's unit), when it passed.
pub fn held(points: &[Point], passing: Option<f64>) -> Option<Held> {
    let passing = passing?;
    let point = points
        .iter()
        .find(|p| p.load == passing && p.verdict.pass)?;
    Some(Held {
        load: point.load,
        agents: point.agents.clone(),
    })
}

/// Creates OUT, the search's directory; one that holds files already
/// needs `force` (`--force`).
pub fn claim(out: &Path, force: bool) -> Result<(), Error> {
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

/// Writes `OUT/capacity.json`.
pub fn write_report(out: &Path, report: &Report) -> Result<PathBuf, Error> {
    let path = out.join(CAPACITY_FILE);
    let bytes = serde_json::to_vec_pretty(report)
        .map_err(|e| Error::other(format!("cannot encode {CAPACITY_FILE}: {e}")))?;
    std::fs::write(&path, bytes)
        .map_err(|e| Error::other(format!("{}: cannot write: {e}", path.display())))?;
    Ok(path)
}

#[derive(Serialize)]
struct ProbeSummary<'a> {
    schema_version: &'static str,
    arbor_version: &'static str,
    /// Not a run: a plan on the virtual clock.
    source: &'static str,
    complete: bool,
    cancelled: bool,
    knob: &'static str,
    load: f64,
    verdict: &'a Verdict,
    elapsed_s: f64,
    counts: Counts,
    latency: Latencies,
    throughput: Throughput,
    config: Config<'a>,
}

#[derive(Serialize)]
struct Counts {
    dispatched: u64,
    ok: u64,
    failed: u64,
    cancelled: u64,
}

/// Each a distribution over requests (a prediction's gaps are even within
/// a request, so `itl` holds one gap a request) or plays (`job_time`).
#[derive(Serialize)]
struct Latencies {
    ttft: Latency,
    itl: Latency,
    tpot: Latency,
    e2e: Latency,
    job_time: Latency,
}

#[derive(Serialize)]
struct Throughput {
    window_s: f64,
    requests_per_s: f64,
    input_tokens_per_s: f64,
    output_tokens_per_s: f64,
}

#[derive(Serialize)]
struct Config<'a> {
    service: &'a str,
    seed: u64,
}

/// What a virtual probe's directory holds besides its verdict: the plan
/// as the scheduler left it, its requests and jobs, and the settings
/// `summary.json`'s `config` names.
pub struct Planned<'a> {
    pub scheduler: &'a Scheduler,
    pub served: &'a [Served],
    /// The times of the plays that ran every turn.
    pub jobs: &'a [Nanos],
    /// The service model, as `--service` names it.
    pub service: &'a str,
    pub seed: u64,
}

/// Writes a virtual probe's directory, `point.dir` under `out`.
pub fn write_virtual_probe(
    out: &Path,
    point: &Point,
    knob: Knob,
    planned: &Planned,
) -> Result<(), Error> {
    let dir = out.join(&point.dir);
    let fail = |path: &Path, e: std::io::Error| {
        Error::other(format!("{}: cannot write: {e}", path.display()))
    };
    std::fs::create_dir_all(&dir).map_err(|e| fail(&dir, e))?;
    let records = dir.join(arbor_runs::records_file::RECORDS_FILE);
    let file = File::create(&records).map_err(|e| fail(&records, e))?;
    let mut lines = BufWriter::with_capacity(1 << 16, file);
    let trees = planned.scheduler.trees();
    for s in planned.served {
        let Some(tree) = trees.get(s.tree as usize) else {
            continue;
        };
        let agent = tree
            .agent_of
            .get(s.turn as usize)
            .and_then(|&a| tree.agent_ids.get(a as usize))
            .map_or("", String::as_str);
        serde_json::to_writer(&mut lines, &s.line(&tree.id, agent))
            .map_err(std::io::Error::from)
            .and_then(|()| lines.write_all(b"\n"))
            .map_err(|e| fail(&records, e))?;
    }
    lines.flush().map_err(|e| fail(&records, e))?;

    let window = makespan(planned.scheduler);
    let per_s = |n: u64| {
        if window == 0 {
            0.0
        } else {
            n as f64 / (window as f64 / 1e9)
        }
    };
    let served = planned.served;
    let values = |f: &dyn Fn(&Served) -> Option<Nanos>| -> Latency {
        let mut v: Vec<Nanos> = served.iter().filter_map(f).collect();
        Latency::of(&mut v)
    };
    let latency = Latencies {
        ttft: values(&|s| s.first.map(|f| f - s.sent)),
        itl: values(&|s| s.gap.filter(|_| s.osl > 1)),
        tpot: values(&|s| s.gap.filter(|_| s.osl > 1)),
        e2e: values(&|s| Some(s.done - s.sent)),
        job_time: Latency::of(&mut planned.jobs.to_vec()),
    };
    let summary = ProbeSummary {
        schema_version: PROBE_SCHEMA_VERSION,
        arbor_version: env!("CARGO_PKG_VERSION"),
        source: "virtual",
        complete: true,
        cancelled: false,
        knob: knob.name(),
        load: point.load,
        verdict: &point.verdict,
        elapsed_s: window as f64 / 1e9,
        counts: Counts {
            dispatched: served.len() as u64,
            ok: served.len() as u64,
            failed: 0,
            cancelled: 0,
        },
        latency,
        throughput: Throughput {
            window_s: window as f64 / 1e9,
            requests_per_s: per_s(served.len() as u64),
            input_tokens_per_s: per_s(served.iter().map(|s| u64::from(s.isl)).sum()),
            output_tokens_per_s: per_s(served.iter().map(|s| u64::from(s.osl)).sum()),
        },
        config: Config {
            service: planned.service,
            seed: planned.seed,
        },
    };
    let path = dir.join("summary.json");
    let bytes = serde_json::to_vec_pretty(&summary)
        .map_err(|e| Error::other(format!("cannot encode {}: {e}", path.display())))?;
    std::fs::write(&path, bytes).map_err(|e| fail(&path, e))
}

/// The makespan of a finished plan.
fn makespan(scheduler: &Scheduler) -> Nanos {
    scheduler.slots().iter().map(|s| s.end).max().unwrap_or(0)
}
