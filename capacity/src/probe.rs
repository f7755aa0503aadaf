//! What a probe is, and the search and the sweep over any probe. A
//! [`Probe`] measures one load point and hands back what it observed; the
//! search never knows whether the point was planned on the virtual clock
//! ([`crate::predict::VirtualProbe`]), run live (the binary's probe, an
//! `arbor run` per point), or measured some other way by a caller. Each
//! point is measured, judged against the SLOs ([`Observed::judge`]),
//! numbered, and given back to the probe to keep ([`Probe::keep`]).
//!
//! Owns the loop from a probe's observations to the points and the
//! answer; the order of the loads is [`crate::search`]'s, the judging
//! [`crate::observed`]'s, the files [`crate::output`]'s. Prints nothing.

use arbor_backends::side_by_side;
use arbor_error::Error;

use crate::knob::{Knob, Space};
use crate::observed::Observed;
use crate::output::{probe_dir, Outcome, Point};
use crate::search::{self, first_failure, grid, Start};
use crate::slo::Slo;

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
}

/// Searches the largest load of `space` that meets `slo`, from `start`
/// ([`Start::At`] the space's `start` for a search of its own,
/// [`Start::Around`] a predicted knee), one `probe` per load; no load is
/// probed twice. The outcome holds the points in the order probed and the
/// knee, or the error that ended the search after those points.
pub fn search(probe: &mut impl Probe, space: &Space, start: Start, slo: &Slo) -> Outcome {
    let mut points = Vec::new();
    let found = search::search(space.bounds(), start, |value| {
        let point = judge(probe, points.len() + 1, space.knob, value, slo)?;
        let pass = point.verdict.pass;
        points.push(point);
        Ok(pass)
    });
    Outcome { points, found }
}

/// Probes every load of `space`'s [`grid`] (lo, lo + step, ... hi) instead
/// of searching, on up to `workers` threads ([`side_by_side::cores`] for
/// every core), each point measured and kept by a copy of `probe` in the
/// thread that took it. Points are numbered in load order and come back
/// in that order whatever the workers. The answer is the first load that
/// fails and the one before it ([`first_failure`]); a probe's error ends
/// the outcome at the first point that failed so, in load order.
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
        match result {
            Ok(point) => points.push(point),
            Err(e) => {
                return Outcome {
                    points,
                    found: Err(e),
                }
            }
        }
    }
    let passes: Vec<(u64, bool)> = loads
        .iter()
        .zip(&points)
        .map(|(&load, point)| (load, point.verdict.pass))
        .collect();
    Outcome {
        found: Ok(first_failure(&passes)),
        points,
    }
}

/// Measures probe `k` at `value`, judges it and lets the probe keep it.
fn judge(
    probe: &mut impl Probe,
    k: usize,
    knob: Knob,
    value: u64,
    slo: &Slo,
) -> Result<Point, Error> {
    let observed = probe.measure(k, value)?;
    let point = Point {
        probe: k,
        load: knob.number(value),
        dir: probe_dir(k, knob, value),
        verdict: observed.judge(slo),
    };
    probe.keep(&point, &observed)?;
    Ok(point)
}
