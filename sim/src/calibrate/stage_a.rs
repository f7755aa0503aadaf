//! Stage A: the step-time coefficients by non-negative least squares over
//! rows read off the rebuilt timeline.
//!
//! Owns the rows and the knee search; solves with [`super::nnls`], reads
//! the batches from [`super::timeline`]. Two kinds of row:
//!
//! - a decode row per request with more than one output token: the time
//!   from its first token to its last is the sum of the steps that made
//!   its other tokens, and each step's features come from the timeline
//!   (summing the steps, rather than one row per gap, keeps the rows exact
//!   when the records spread tokens evenly over a chunk);
//! - a prefill row per request that ran alone (nothing else in flight
//!   from its send to its first token): its TTFT is the per-request
//!   overhead (arrival and departure, one column) plus its prefill steps.
//!
//! Rows are weighted by one over their step count, so each weighs as one
//! step whatever its length. The knee is the candidate (eighths of the
//! token budget, and the budget itself: no knee) with the least residual.

use crate::server::{StepCoefficients, StepFeatures};

use arbor_engine::time::Nanos;

use super::nnls::Normal;
use super::request::Observed;
use super::runs::Run;
use super::timeline::{self, Tokens};

/// Columns: the six step coefficients, then the per-request overhead.
const COLUMNS: usize = 7;
/// Fits repeated with the tokens placed by the fit before.
const RESPACINGS: usize = 3;

/// What stage A found.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    pub step: StepCoefficients,
    /// The per-request overhead the TTFTs of lone requests show beyond
    /// their steps (arrival and departure together), ns.
    pub overhead_ns: f64,
    pub decode_rows: u64,
    pub prefill_rows: u64,
    /// The weighted root-mean-square residual per step, ns.
    pub rms_ns: f64,
    /// Rows left out as outliers ([`Fitting::Probe`]); 0 otherwise.
    pub trimmed_rows: u64,
    /// Lone rows left out as the slower of a repeated request
    /// ([`Fitting::Probe`]); 0 otherwise.
    pub slower_repeats: u64,
}

/// How the rows are made: as for any runs, or as for the probe's
/// designed runs (`arbor calibrate --probe`), where a client's first
/// token is the stamp most often late (by milliseconds on a loaded
/// machine: it carries the response's head) and least squares would
/// follow such a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fitting {
    #[default]
    Ordinary,
    /// A request alone from its send to its end gives one row, its whole
    /// time (overhead, prefill steps and decode steps), not its TTFT and
    /// its decode apart: the first token's stamp drops out. Then rows
    /// whose weighted residual is more than [`TRIM_SCALES`] robust
    /// standard deviations (1.4826 · the median absolute deviation) from
    /// the median residual, of lone and of decode rows apart, and at
    /// least [`TRIM_FLOOR_NS`] from it, are left out and the fit made
    /// again; up to [`TRIM_PASSES`] times, each from the last fit, until
    /// the rows left out no longer change.
    Probe,
}

/// The most times the rows are trimmed, each time from the last fit.
const TRIM_PASSES: usize = 6;
/// How many robust standard deviations a kept row may be off.
pub const TRIM_SCALES: f64 = 4.0;
/// A row nearer than this (weighted, ns) is never left out: a client's
/// stamp is often late by a few hundred microseconds.
pub const TRIM_FLOOR_NS: f64 = 500_000.0;

/// Why stage A cannot fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoRows;

/// The knees tried: eighths of `budget` and `budget` (above which no step
/// goes: no knee).
pub fn knee_candidates(budget: u32) -> Vec<u32> {
    let mut knees: Vec<u32> = (1..=8u64)
        .map(|k| (u64::from(budget) * k / 8) as u32)
        .filter(|&k| k > 0)
        .collect();
    knees.dedup();
    knees
}

/// Per request, the summed feature rows of its steps, one per knee.
struct Sums {
    rows: Vec<[f64; 6]>,
    steps: u64,
}

impl Sums {
    fn new(knees: usize) -> Sums {
        Sums {
            rows: vec![[0.0; 6]; knees],
            steps: 0,
        }
    }

    fn add(&mut self, f: &StepFeatures, knees: &[u32]) {
        for (row, &knee) in self.rows.iter_mut().zip(knees) {
            for (r, v) in row.iter_mut().zip(StepCoefficients::feature_row(f, knee)) {
                *r += v;
            }
        }
        self.steps += 1;
    }
}

/// A row ready for the solver: its sums, its measured time, whether it
/// carries the overhead, and the request it came from (its index over
/// all runs' requests, for resampling).
struct Row {
    sums: Sums,
    measured_ns: f64,
    overhead: bool,
    request: usize,
    /// Left out as an outlier ([`Fitting::Probe`]).
    trimmed: bool,
    /// Left out as the slower of a repeated lone request.
    slower: bool,
}

/// Stage A's rows of the best fit, to refit on resamples
/// ([`Rows::refit`], the bootstrap's).
pub struct Rows {
    rows: Vec<Row>,
    knees: Vec<u32>,
    /// Requests over all runs.
    pub requests: usize,
}

/// Fits `runs` for an engine with `budget` tokens a step, and returns the
/// rows the fit stands on. Where records did not stamp every token, the
/// fit is repeated with the tokens placed by the last fit's step times
/// ([`Tokens::respace`]); the fit with the least residual stands.
pub fn fit_with_rows(runs: &[Run], budget: u32, fitting: Fitting) -> Result<(Fit, Rows), NoRows> {
    let knees = knee_candidates(budget);
    let mut tokens: Vec<Tokens> = runs.iter().map(|r| Tokens::of(&r.requests)).collect();
    let mut rows = build_rows(runs, &tokens, budget, &knees, fitting);
    let mut last = solve(&rows, &knees, |_| 1)?;
    let mut best = (last.clone(), rows);
    for _ in 0..RESPACINGS {
        for (run, t) in runs.iter().zip(&mut tokens) {
            t.respace(&run.requests, budget, &last.step);
        }
        rows = build_rows(runs, &tokens, budget, &knees, fitting);
        last = solve(&rows, &knees, |_| 1)?;
        if last.rms_ns < best.0.rms_ns {
            best = (last.clone(), rows);
        }
    }
    let requests = runs.iter().map(|r| r.requests.len()).sum();
    let (mut fit, mut rows) = best;
    if fitting == Fitting::Probe {
        // Each pass from a fit the worst rows no longer pull.
        let mut before: Vec<bool> = rows.iter().map(|r| r.trimmed).collect();
        for _ in 0..TRIM_PASSES {
            let trimmed = trim_outliers(&mut rows, &knees, &fit);
            fit = solve(&rows, &knees, |_| 1)?;
            fit.trimmed_rows = trimmed;
            let now: Vec<bool> = rows.iter().map(|r| r.trimmed).collect();
            if now == before {
                break;
            }
            before = now;
        }
    }
    Ok((
        fit,
        Rows {
            rows,
            knees,
            requests,
        },
    ))
}

impl Rows {
    /// The fit with request `i`'s rows counted `times(i)` times (a
    /// resample of the requests), the knee searched again.
    pub fn refit(&self, times: impl Fn(usize) -> u32) -> Result<Fit, NoRows> {
        solve(&self.rows, &self.knees, times)
    }
}

/// Marks the rows beyond [`TRIM_SCALES`] robust standard deviations of
/// `fit` as trimmed; how many.
fn trim_outliers(rows: &mut [Row], knees: &[u32], fit: &Fit) -> u64 {
    let Some(k) = knees.iter().position(|&k| k == fit.step.knee_tokens) else {
        return 0;
    };
    let x = [
        fit.step.constant_ns,
        fit.step.per_seq_ns,
        fit.step.per_token_ns,
        fit.step.per_token_above_knee_ns,
        fit.step.per_decode_context_token_ns,
        fit.step.per_prefill_attention_ns,
    ];
    let residual = |row: &Row| {
        let predicted: f64 = row.sums.rows[k]
            .iter()
            .zip(x)
            .map(|(a, b)| a * b)
            .sum::<f64>()
            + if row.overhead { fit.overhead_ns } else { 0.0 };
        (row.measured_ns - predicted) / row.sums.steps.max(1) as f64
    };
    // Lone-prefill rows (a TTFT each) and decode rows (a sum of steps)
    // scatter differently: each kind against its own scale.
    let mut trimmed = 0;
    rows.iter_mut().for_each(|r| r.trimmed = false);
    for overhead in [false, true] {
        let mut off: Vec<f64> = rows
            .iter()
            .filter(|r| r.overhead == overhead)
            .map(residual)
            .collect();
        // Around the median residual, not 0: late stamps pull the fit,
        // so the kept rows' residuals sit off 0 together.
        let Some(center) = median(&mut off) else {
            continue;
        };
        let mut spread: Vec<f64> = off.iter().map(|r| (r - center).abs()).collect();
        let scale = median(&mut spread).unwrap_or(0.0) * 1.4826;
        let bound = (TRIM_SCALES * scale).max(TRIM_FLOOR_NS);
        for row in rows.iter_mut().filter(|r| r.overhead == overhead) {
            if (residual(row) - center).abs() > bound {
                row.trimmed = true;
                trimmed += 1;
            }
        }
    }
    trimmed
}

/// The median of `values` (sorted in place), `None` when empty.
fn median(values: &mut [f64]) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied()
}

/// The rows of `runs` with the tokens placed as `tokens` says.
fn build_rows(
    runs: &[Run],
    tokens: &[Tokens],
    budget: u32,
    knees: &[u32],
    fitting: Fitting,
) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    let mut offset = 0;
    for (run, tokens) in runs.iter().zip(tokens) {
        let requests = &run.requests;
        let mut decode: Vec<Sums> = requests.iter().map(|_| Sums::new(knees.len())).collect();
        timeline::for_each_decode_step(requests, tokens, budget, |i, f| decode[i].add(f, knees));
        let whole = match fitting {
            Fitting::Ordinary => vec![false; requests.len()],
            Fitting::Probe => alone_throughout(requests),
        };
        for (i, (r, mut sums)) in requests.iter().zip(decode).enumerate() {
            if whole[i] {
                // Its whole time: the overhead, its prefill, its decode.
                for f in timeline::lone_prefill(r, budget) {
                    sums.add(&f, knees);
                }
                rows.push(Row {
                    sums,
                    measured_ns: (r.done - r.sent) as f64,
                    overhead: true,
                    request: offset + i,
                    trimmed: false,
                    slower: false,
                });
                continue;
            }
            if sums.steps > 0 {
                rows.push(Row {
                    sums,
                    measured_ns: (r.done - r.first) as f64,
                    overhead: false,
                    request: offset + i,
                    trimmed: false,
                    slower: false,
                });
            }
        }
        for (i, (r, alone)) in requests.iter().zip(timeline::alone(requests)).enumerate() {
            if !alone || whole[i] {
                continue;
            }
            let mut sums = Sums::new(knees.len());
            for f in timeline::lone_prefill(r, budget) {
                sums.add(&f, knees);
            }
            rows.push(Row {
                sums,
                measured_ns: r.ttft() as f64,
                overhead: true,
                request: offset + i,
                trimmed: false,
                slower: false,
            });
        }
        offset += requests.len();
    }
    if fitting == Fitting::Probe {
        mark_slower_repeats(&mut rows, runs);
    }
    rows
}

/// Of lone rows of one run sending the same request (prompt, cached
/// tokens, output) more than once, keeps the quickest: a client's stamp
/// is only ever late, so the quickest repeat is the least late.
fn mark_slower_repeats(rows: &mut [Row], runs: &[Run]) {
    let mut owner: Vec<(usize, usize)> = Vec::new();
    for (k, run) in runs.iter().enumerate() {
        owner.extend((0..run.requests.len()).map(|i| (k, i)));
    }
    let key = |row: &Row| {
        let (k, i) = owner[row.request];
        let r = &runs[k].requests[i];
        (k, r.isl, r.cached, r.osl)
    };
    let mut quickest: std::collections::HashMap<(usize, u32, Option<u32>, u32), usize> =
        std::collections::HashMap::new();
    for (j, row) in rows.iter().enumerate() {
        if !row.overhead {
            continue;
        }
        let best = quickest.entry(key(row)).or_insert(j);
        if row.measured_ns < rows[*best].measured_ns {
            *best = j;
        }
    }
    let kept: std::collections::HashSet<usize> = quickest.into_values().collect();
    for (j, row) in rows.iter_mut().enumerate() {
        row.slower = row.overhead && !kept.contains(&j);
    }
}

/// Which requests had nothing else in flight from their send to their
/// end.
fn alone_throughout(requests: &[Observed]) -> Vec<bool> {
    let mut order: Vec<usize> = (0..requests.len()).collect();
    order.sort_by_key(|&i| (requests[i].sent, i));
    let mut out = vec![false; requests.len()];
    let mut latest_done: Option<Nanos> = None;
    for (k, &i) in order.iter().enumerate() {
        let r = &requests[i];
        let before_clear = latest_done.is_none_or(|d| d <= r.sent);
        let after_clear = order.get(k + 1).is_none_or(|&j| requests[j].sent >= r.done);
        out[i] = before_clear && after_clear;
        latest_done = Some(latest_done.map_or(r.done, |d| d.max(r.done)));
    }
    out
}

/// The least-squares fit over `rows`, each counted `times(request)`
/// times, at the knee of least residual.
fn solve(rows: &[Row], knees: &[u32], times: impl Fn(usize) -> u32) -> Result<Fit, NoRows> {
    let counted = |row: &Row| {
        if row.trimmed || row.slower {
            0
        } else {
            times(row.request)
        }
    };
    let decode_rows: u64 = rows
        .iter()
        .filter(|r| !r.overhead)
        .map(|r| u64::from(counted(r)))
        .sum();
    let all_rows: u64 = rows.iter().map(|r| u64::from(counted(r))).sum();
    let prefill_rows = all_rows - decode_rows;
    if all_rows == 0 {
        return Err(NoRows);
    }
    let mut best: Option<(f64, usize, Vec<f64>)> = None;
    for (k, _) in knees.iter().enumerate() {
        let mut normal = Normal::new(COLUMNS);
        for row in rows {
            let n = counted(row);
            if n == 0 {
                continue;
            }
            let mut a = [0.0; COLUMNS];
            a[..6].copy_from_slice(&row.sums.rows[k]);
            a[6] = if row.overhead { 1.0 } else { 0.0 };
            let weight = 1.0 / row.sums.steps.max(1) as f64;
            normal.add(&a, row.measured_ns, weight * f64::from(n).sqrt());
        }
        let solution = normal.solve();
        if best
            .as_ref()
            .is_none_or(|(residual, _, _)| solution.residual < *residual)
        {
            best = Some((solution.residual, k, solution.x));
        }
    }
    let Some((residual, k, x)) = best else {
        return Err(NoRows);
    };
    Ok(Fit {
        step: StepCoefficients {
            constant_ns: x[0],
            per_seq_ns: x[1],
            per_token_ns: x[2],
            knee_tokens: knees[k],
            per_token_above_knee_ns: x[3],
            per_decode_context_token_ns: x[4],
            per_prefill_attention_ns: x[5],
        },
        overhead_ns: x[6],
        decode_rows,
        prefill_rows,
        rms_ns: (residual / all_rows as f64).sqrt(),
        trimmed_rows: 0,
        slower_repeats: rows.iter().filter(|r| r.slower).count() as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knees_are_eighths_of_the_budget() {
        assert_eq!(
            knee_candidates(2048),
            [256, 512, 768, 1024, 1280, 1536, 1792, 2048]
        );
        assert_eq!(knee_candidates(4), [1, 2, 3, 4]);
    }
}
