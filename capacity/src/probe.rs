//! What a probe is, and the search and the sweep over any probe. A
//! [`Probe`] measures one load point and hands back what it observed; the
//! search never knows whether the point was planned on the virtual clock
//! ([`crate::predict::VirtualProbe`]), run live (the binary's probe, an
//! `arbor run` per point), or measured some other way by a caller. Each
//! point is measured, judged against the SLOs ([`Observed::judge`]),
//! numbered, and given back to the probe to keep ([`Probe::keep`]). A
//! probe that fails, or a point too small to decide (fewer successful
//! requests than [`Probe::min_measured`]), stops the search at once: no
//! verdict of it moves the load ([`Stop`] says which and why).
//!
//! Owns the loop from a probe's observations to the points and the
//! answer; the order of the loads is [`crate::search`]'s, the judging
//! [`crate::observed`]'s, the files [`crate::output`]'s. Prints nothing.

use arbor_backends::side_by_side;
use arbor_error::Error;

use crate::agents::Agents;
use crate::knob::{Knob, Space};
use crate::observed::{Observed, ReadingInterval};
use crate::output::{probe_dir, Outcome, Point, Stop};
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
}

/// Searches the largest load of `space` that meets `slo`, from `start`
/// ([`Start::At`] the space's `start` for a search of its own,
/// [`Start::Around`] a predicted knee), one `probe` per load; no load is
/// probed twice. The outcome holds the points in the order probed and the
/// knee, or the error that ended the search after those points: a probe
/// that failed, or one too small to decide ([`Probe::min_measured`]),
/// stops it at once (`stopped` says which and why).
pub fn search(probe: &mut impl Probe, space: &Space, start: Start, slo: &Slo) -> Outcome {
    let mut points = Vec::new();
    let mut stopped = None;
    let found = search::search(space.bounds(), start, |value| {
        let point = match judge(probe, points.len() + 1, space.knob, value, slo) {
            Ok(point) => point,
            Err(stop) => {
                let error = stop.error(space.knob);
                stopped = Some(stop);
                return Err(error);
            }
        };
        let too_small = point
            .verdict
            .too_small
            .then(|| Stop::too_small(&point, probe.min_measured()));
        let pass = point.verdict.pass;
        points.push(point);
        match too_small {
            Some(stop) => {
                let error = stop.error(space.knob);
                stopped = Some(stop);
                Err(error)
            }
            None => Ok(pass),
        }
    });
    Outcome {
        points,
        found,
        stopped,
    }
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
            Ok(point) if point.verdict.too_small => {
                let stop = Stop::too_small(&point, probe.min_measured());
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
        };
    }
    let passes: Vec<(u64, bool)> = loads
        .iter()
        .zip(&points)
        .map(|(&load, point)| (load, point.verdict.pass))
        .collect();
    Outcome {
        found: Ok(first_failure(&passes)),
        points,
        stopped: None,
    }
}

/// Measures probe `k` at `value`, judges it and lets the probe keep it;
/// an error stops the search at this probe.
fn judge(
    probe: &mut impl Probe,
    k: usize,
    knob: Knob,
    value: u64,
    slo: &Slo,
) -> Result<Point, Stop> {
    let stop = |e| Stop::failed(k, knob, value, e);
    let observed = probe.measure(k, value).map_err(stop)?;
    let mut verdict = observed.judge(slo, probe.min_measured());
    for (judged, bound) in verdict.bounds.iter_mut().zip(&slo.bounds) {
        judged.interval = probe.interval(bound, &observed);
    }
    let point = Point {
        probe: k,
        load: knob.number(value),
        dir: probe_dir(k, knob, value),
        agents: Agents::of(&observed, &verdict),
        verdict,
    };
    probe.keep(&point, &observed).map_err(stop)?;
    Ok(point)
}
