//! The comparison table: for every metric, BASE's value and, per NEW, its
//! value, the delta (absolute and relative) and, for percentiles read from
//! records, the bootstrap interval of the delta. Owns the arithmetic of a
//! delta; reads runs through [`RunDir`], resamples through [`bootstrap`].

use serde::Serialize;

use super::bootstrap;
use super::metric::{Metric, Worse};
use super::run_dir::RunDir;

/// One NEW run's figures for one metric.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Cell {
    pub value: Option<f64>,
    /// NEW - BASE, in the metric's unit.
    pub delta: Option<f64>,
    /// The delta in percent of BASE; `None` when BASE is 0 and NEW is not.
    pub relative_pct: Option<f64>,
    /// 95 % bootstrap interval of the delta (percentiles of records only).
    pub ci: Option<(f64, f64)>,
}

/// One metric across the runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub metric: Metric,
    pub base: Option<f64>,
    /// In the order of the NEW runs.
    pub new: Vec<Cell>,
}

/// The rows of every metric, in [`Metric::all`] order.
pub fn rows(base: &RunDir, news: &[RunDir], resamples: u32, seed: u64) -> Vec<Row> {
    Metric::all()
        .into_iter()
        .enumerate()
        .map(|(index, metric)| {
            let base_value = base.value(metric);
            let new = news
                .iter()
                .enumerate()
                .map(|(i, run)| {
                    let value = run.value(metric);
                    let delta = base_value.zip(value).map(|(b, n)| n - b);
                    let relative_pct = base_value.zip(delta).and_then(|(b, d)| relative(b, d));
                    let stream = (index as u64, i as u64 + 1);
                    Cell {
                        value,
                        delta,
                        relative_pct,
                        ci: interval_ms(metric, base, run, resamples, seed, stream),
                    }
                })
                .collect();
            Row {
                metric,
                base: base_value,
                new,
            }
        })
        .collect()
}

/// A delta in percent of BASE: 0 when nothing changed, `None` from 0.
fn relative(base: f64, delta: f64) -> Option<f64> {
    if delta == 0.0 {
        Some(0.0)
    } else if base == 0.0 {
        None
    } else {
        Some(delta / base.abs() * 100.0)
    }
}

/// The bootstrap interval of a percentile's delta, in ms.
fn interval_ms(
    metric: Metric,
    base: &RunDir,
    new: &RunDir,
    resamples: u32,
    seed: u64,
    stream: (u64, u64),
) -> Option<(f64, f64)> {
    let Metric::Latency(latency, stat) = metric else {
        return None;
    };
    let q = stat.quantile()?;
    let (lo, hi) = bootstrap::interval(
        base.sorted(latency)?,
        new.sorted(latency)?,
        q,
        resamples,
        seed,
        stream,
    )?;
    Some((lo as f64 / 1e6, hi as f64 / 1e6))
}

/// How much worse NEW is than BASE (negative: better), in the unit;
/// `None` when either value is missing or neither way is worse.
pub fn worsening(metric: Metric, cell: &Cell) -> Option<f64> {
    let delta = cell.delta?;
    match metric.worse() {
        Worse::Higher => Some(delta),
        Worse::Lower => Some(-delta),
        Worse::Neither => None,
    }
}
