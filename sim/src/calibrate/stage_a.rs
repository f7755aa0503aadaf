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

use super::nnls::Normal;
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
}

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

/// A row ready for the solver: its sums, its measured time, and whether it
/// carries the overhead.
struct Row {
    sums: Sums,
    measured_ns: f64,
    overhead: bool,
}

/// Fits `runs` for an engine with `budget` tokens a step. Where records
/// did not stamp every token, the fit is repeated with the tokens placed
/// by the last fit's step times ([`Tokens::respace`]); the fit with the
/// least residual stands.
pub fn fit(runs: &[Run], budget: u32) -> Result<Fit, NoRows> {
    let mut tokens: Vec<Tokens> = runs.iter().map(|r| Tokens::of(&r.requests)).collect();
    let mut last = fit_once(runs, &tokens, budget)?;
    let mut best = last.clone();
    for _ in 0..RESPACINGS {
        for (run, t) in runs.iter().zip(&mut tokens) {
            t.respace(&run.requests, budget, &last.step);
        }
        last = fit_once(runs, &tokens, budget)?;
        if last.rms_ns < best.rms_ns {
            best = last.clone();
        }
    }
    Ok(best)
}

/// One fit over the tokens placed as `tokens` says.
fn fit_once(runs: &[Run], tokens: &[Tokens], budget: u32) -> Result<Fit, NoRows> {
    let knees = knee_candidates(budget);
    let mut rows: Vec<Row> = Vec::new();
    for (run, tokens) in runs.iter().zip(tokens) {
        let requests = &run.requests;
        let mut decode: Vec<Sums> = requests.iter().map(|_| Sums::new(knees.len())).collect();
        timeline::for_each_decode_step(requests, tokens, budget, |i, f| decode[i].add(f, &knees));
        for (r, sums) in requests.iter().zip(decode) {
            if sums.steps > 0 {
                rows.push(Row {
                    sums,
                    measured_ns: (r.done - r.first) as f64,
                    overhead: false,
                });
            }
        }
        for (r, alone) in requests.iter().zip(timeline::alone(requests)) {
            if !alone {
                continue;
            }
            let mut sums = Sums::new(knees.len());
            for f in timeline::lone_prefill(r, budget) {
                sums.add(&f, &knees);
            }
            rows.push(Row {
                sums,
                measured_ns: r.ttft() as f64,
                overhead: true,
            });
        }
    }
    let decode_rows = rows.iter().filter(|r| !r.overhead).count() as u64;
    let prefill_rows = rows.len() as u64 - decode_rows;
    if rows.is_empty() {
        return Err(NoRows);
    }
    let mut best: Option<(f64, usize, Vec<f64>)> = None;
    for (k, _) in knees.iter().enumerate() {
        let mut normal = Normal::new(COLUMNS);
        for row in &rows {
            let mut a = [0.0; COLUMNS];
            a[..6].copy_from_slice(&row.sums.rows[k]);
            a[6] = if row.overhead { 1.0 } else { 0.0 };
            let weight = 1.0 / row.sums.steps.max(1) as f64;
            normal.add(&a, row.measured_ns, weight);
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
        rms_ns: (residual / rows.len() as f64).sqrt(),
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
