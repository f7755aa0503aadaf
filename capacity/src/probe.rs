//! What a probe is, and the search and the sweep over any probe. A
//! [`Probe`] measures one load point and hands back what it observed; the
//! search never knows whether the point was planned on the virtual clock
//! ([`crate::predict::VirtualProbe`]), run live (the binary's probe, an
//! `arbor run` per point), or measured some other way by a caller. Each
//! point is measured, judged against the SLOs ([`Observed::judge`]),
//! numbered, and given back to the probe to keep ([`Probe::keep`]). A
//! probe that fails stops the search at once: no verdict of it moves the
//! load ([`Stop`] says which and why).
//!
//! A sampled point ([`Probe::sampled`], a live probe) is judged on 95 %
//! intervals, and may be unresolved (too small, or an interval straddling
//! a limit): the probe is then extended ([`Probe::extend`]: measured again,
//! longer, its observations pooled) until it decides or the probe will not
//! extend it further. A point still unresolved ends the search without
//! inventing a load: the answer is only a bound
//! ([`crate::conclusion::Conclusion::of_probes`]). [`confirm`] measures the
//! answer's passing load once more and downgrades the answer when it does
//! not pass again.
//!
//! Owns the loop from a probe's observations to the points and the
//! answer; the order of the loads is [`crate::search`]'s, the judging
//! [`crate::observed`]'s, the files [`crate::output`]'s. Prints nothing.

use arbor_backends::side_by_side;
use arbor_error::Error;

use crate::agents::Agents;
use crate::conclusion::{Conclusion, Confirmation, Probed};
use crate::knob::{Knob, Space};
use crate::observed::{Decision, Observed, ReadingInterval, Verdict};
use crate::output::{extension_dir, probe_dir, Outcome, Point, Stop};
use crate::search::{self, first_failure, grid, Start};
use crate::slo::{Bound, Slo};

/// `--min-requests`'s default: the fewest successful requests a live
/// probe needs before its verdict counts. With nearest rank, the p90 of
/// 20 requests is the 18th, two requests below the slowest; with fewer,
/// a p90 bound is judged on the slowest request or the one below it, and
/// one slow request decides the probe (docs/capacity.md, "Too small to
/// decide").
pub const DEFAULT_MIN_REQUESTS: u64 = 20;

/// A way to measure one load point.
pub trait Probe {
    /// Measures the point `value`, in the knob's units (sessions, or
    /// milli-trees per second: [`Knob::number`] gives trees per second),
    /// as the search's `k`-th probe (1-based, in the order probed). An
    /// error ends the search, with the points measured before it.
    fn measure(&mut self, k: usize, value: u64) -> Result<Observed, Error>;

    /// The point once judged, with what [`Probe::measure`] observed of
    /// it, before the next point is measured: a probe that keeps files of
    /// its points writes them here (the virtual probe its directory, the
    /// verdict included). An error ends the search, this point left out.
    /// By default, nothing.
    fn keep(&mut self, point: &Point, observed: &Observed) -> Result<(), Error> {
        let _ = (point, observed);
        Ok(())
    }

    /// The fewest successful requests a point needs for its verdict to
    /// count: a point with fewer is too small to decide
    /// ([`crate::Verdict::too_small`]) and ends the search unresolved. A
    /// live probe samples a server for a while (`--min-requests`,
    /// [`DEFAULT_MIN_REQUESTS`]); by default 0, every point decides (a
    /// virtual point plans the whole workload, the same every time).
    fn min_measured(&self) -> u64 {
        0
    }

    /// The interval of `bound`'s reading at the point just measured
    /// (`observed`), when the probe can tell one (a virtual probe under the
    /// server model: [`crate::interval`]). By default, none.
    fn interval(&mut self, bound: &Bound, observed: &Observed) -> Option<ReadingInterval> {
        let _ = (bound, observed);
        None
    }
    /// Whether a point is a sample of a server, judged on 95 % intervals
    /// ([`Observed::judge_sampled`]) and possibly unresolved. By default
    /// false: a point's readings decide it (a virtual point plans the
    /// whole workload; its uncertainty is the model's, not a sample's).
    fn sampled(&self) -> bool {
        false
    }

    /// Measures probe `k` at `value` again, longer, as its `round`-th
    /// extension (1-based; its directory [`extension_dir`]), when the point
    /// was unresolved: the observations are pooled with the probe's. `None`:
    /// no more extensions (by default, none at all). An error ends the
    /// search as [`Probe::measure`]'s does.
    fn extend(&mut self, k: usize, value: u64, round: u32) -> Result<Option<Observed>, Error> {
        let _ = (k, value, round);
        Ok(None)
    }
}

/// Why the search's walk stopped before its knee.
enum Halt {
    /// A probe stayed unresolved after its extensions.
    Unresolved,
    /// A probe failed.
    Stopped(Error),
}

/// Searches the largest load of `space` that meets `slo`, from `start`
/// ([`Start::At`] the space's `start` for a search of its own,
/// [`Start::Around`] a predicted knee), one `probe` per load; no load is
/// probed twice. The outcome holds the points in the order probed and the
/// knee, or the error that ended the search after those points: a probe
/// that failed, or one too small to decide ([`Probe::min_measured`]),
/// stops it at once (`stopped` says which and why).
pub fn search(probe: &mut impl Probe, space: &Space, start: Start, slo: &Slo) -> Outcome {
    let mut points: Vec<(u64, Point)> = Vec::new();
    let mut stopped = None;
    let walked = search::search(space.bounds(), start, |value| {
        let point = match judge(probe, points.len() + 1, space.knob, value, slo) {
            Ok(point) => point,
            Err(stop) => {
                let error = stop.error(space.knob);
                stopped = Some(stop);
                return Err(Halt::Stopped(error));
            }
        };
        let decision = point.verdict.decision;
        points.push((value, point));
        match decision {
            Decision::Pass => Ok(true),
            Decision::Fail => Ok(false),
            Decision::Unresolved => Err(Halt::Unresolved),
        }
    });
    let probed = probed(&points);
    let (found, conclusion) = match walked {
        Ok(knee) => (Ok(knee), Conclusion::point(space.knob, knee, &probed)),
        Err(Halt::Unresolved) => {
            let (conclusion, knee) = Conclusion::of_probes(space.knob, &probed);
            (Ok(knee), conclusion)
        }
        Err(Halt::Stopped(error)) => (Err(error), Conclusion::default()),
    };
    Outcome {
        points: points.into_iter().map(|(_, p)| p).collect(),
        found,
        stopped,
        conclusion,
    }
}

/// Measures the answer's passing load once more (a fresh probe, numbered
/// after the others) and records it in the outcome: when it passes again
/// the answer holds (`confirmation.held`); when it fails or stays
/// unresolved, the load counts as unresolved and the answer is downgraded
/// to the bound the other probes support. Nothing to do without a
/// passing load, or after an error.
pub fn confirm(probe: &mut impl Probe, space: &Space, slo: &Slo, outcome: &mut Outcome) {
    let Ok(knee) = &outcome.found else {
        return;
    };
    let Some(value) = knee.passing else {
        return;
    };
    let k = outcome.points.len() + 1;
    let point = match judge(probe, k, space.knob, value, slo) {
        Ok(point) => point,
        Err(stop) => {
            outcome.found = Err(stop.error(space.knob));
            outcome.stopped = Some(stop);
            outcome.conclusion = Conclusion::default();
            return;
        }
    };
    let decision = point.verdict.decision;
    let load = point.load;
    let mut point = point;
    point.confirmation = true;
    outcome.points.push(point);
    let values: Vec<(u64, Point)> = outcome
        .points
        .iter()
        .map(|p| (space.knob.value_of(p.load), p.clone()))
        .collect();
    let probed = probed(&values);
    let held = decision == Decision::Pass;
    let mut conclusion = if held {
        let mut c = outcome.conclusion.clone();
        c.passing_by = Conclusion::point(space.knob, *knee, &probed).passing_by;
        c
    } else {
        let (conclusion, knee) = Conclusion::of_probes(space.knob, &probed);
        outcome.found = Ok(knee);
        conclusion
    };
    conclusion.confirmation = Some(Confirmation {
        probe: k,
        load,
        decision,
        held,
    });
    outcome.conclusion = conclusion;
}

/// The points as the conclusion reads them.
fn probed(points: &[(u64, Point)]) -> Vec<Probed<'_>> {
    points
        .iter()
        .map(|(value, p)| Probed {
            probe: p.probe,
            value: *value,
            verdict: &p.verdict,
        })
        .collect()
}

/// Probes every load of `space`'s [`grid`] (lo, lo + step, ... hi) instead
/// of searching, on up to `workers` threads ([`side_by_side::cores`] for
/// every core), each point measured and kept by a copy of `probe` in the
/// thread that took it. Points are numbered in load order and come back
/// in that order whatever the workers. The answer is the first load that
/// fails and the one before it ([`first_failure`]); a probe's error, or a
/// point too small to decide, ends the outcome at the first such point in
/// load order.
pub fn sweep<P: Probe + Clone + Sync>(
    probe: &P,
    space: &Space,
    slo: &Slo,
    workers: usize,
) -> Outcome {
    let loads = grid(space.bounds());
    let measured = side_by_side::plan_each(loads.len(), workers, |i| {
        judge(&mut probe.clone(), i + 1, space.knob, loads[i], slo)
    });
    let mut points = Vec::with_capacity(measured.len());
    for result in measured {
        let stop = match result {
            Ok(point) if point.verdict.decision == Decision::Unresolved => {
                let stop = if point.verdict.too_small {
                    Stop::too_small(&point, probe.min_measured())
                } else {
                    Stop::unresolved(&point)
                };
                points.push(point);
                stop
            }
            Ok(point) => {
                points.push(point);
                continue;
            }
            Err(stop) => stop,
        };
        return Outcome {
            points,
            found: Err(stop.error(space.knob)),
            stopped: Some(stop),
            conclusion: Conclusion::default(),
        };
    }
    let passes: Vec<(u64, bool)> = loads
        .iter()
        .zip(&points)
        .map(|(&load, point)| (load, point.verdict.pass))
        .collect();
    let knee = first_failure(&passes);
    let values: Vec<(u64, Point)> = loads.iter().copied().zip(points.iter().cloned()).collect();
    let conclusion = Conclusion::point(space.knob, knee, &probed(&values));
    Outcome {
        found: Ok(knee),
        points,
        stopped: None,
        conclusion,
    }
}

/// Measures probe `k` at `value`, judges it, extends it while it is
/// unresolved and the probe extends it ([`Probe::extend`]), and lets the
/// probe keep it; an error stops the search at this probe.
fn judge(
    probe: &mut impl Probe,
    k: usize,
    knob: Knob,
    value: u64,
    slo: &Slo,
) -> Result<Point, Stop> {
    let stop = |e| Stop::failed(k, knob, value, e);
    let mut observed = probe.measure(k, value).map_err(stop)?;
    let mut verdict = verdict(probe, &observed, slo);
    let mut extensions = Vec::new();
    while verdict.decision == Decision::Unresolved {
        let round = extensions.len() as u32 + 1;
        let Some(more) = probe.extend(k, value, round).map_err(stop)? else {
            break;
        };
        observed.requests.extend(more.requests);
        observed.jobs.extend(more.jobs);
        observed.flights.extend(more.flights);
        extensions.push(extension_dir(k, knob, value, round));
        verdict = self::verdict(probe, &observed, slo);
    }
    for (judged, bound) in verdict.bounds.iter_mut().zip(&slo.bounds) {
        judged.interval = probe.interval(bound, &observed);
    }
    let point = Point {
        probe: k,
        load: knob.number(value),
        dir: probe_dir(k, knob, value),
        agents: Agents::of(&observed, &verdict),
        verdict,
        extensions,
        confirmation: false,
    };
    probe.keep(&point, &observed).map_err(stop)?;
    Ok(point)
}

/// A point's verdict: on intervals when the probe samples.
fn verdict(probe: &impl Probe, observed: &Observed, slo: &Slo) -> Verdict {
    if probe.sampled() {
        observed.judge_sampled(slo, probe.min_measured())
    } else {
        observed.judge(slo, probe.min_measured())
    }
}
