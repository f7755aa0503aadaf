//! Percentiles per time cell in bounded memory: the TTFT p50 and p99 the
//! page draws for each bin. Up to [`EXACT_VALUES`] values are kept one by
//! one (percentiles exact, nearest rank); past that every value goes into
//! a log-bucket sketch of its cell (buckets [`GAMMA`] apart from 100 ns,
//! a percentile within 0.5 % of the exact one), about 10 kB per cell that
//! holds a value.
//!
//! Owns the rule for a series' per-bin percentiles only; a run's
//! distributions (the summary's, the page's CDFs) keep theirs in
//! `arbor_runs::latency`.

use super::cells::{coarse_cell, merge_tens, slot, Cells};

/// Values kept one by one before they are sketched.
pub const EXACT_VALUES: usize = 100_000;
/// Ratio between bucket bounds.
pub const GAMMA: f64 = 1.01;
/// Values below this (nanoseconds) share the first bucket.
const LOWEST: f64 = 100.0;
/// Buckets from 100 ns to about 3 hours; later values share the last.
const BUCKETS: usize = 2_600;

/// `(instant, value)` pairs binned by their instant's cell.
#[derive(Debug, Default)]
pub struct CellValues {
    exact: Vec<(u64, u64)>,
    /// Per cell, once sketched; `None` for a cell with no value.
    sketches: Option<Vec<Option<Box<Sketch>>>>,
}

/// Counts per log bucket.
#[derive(Debug, Clone)]
struct Sketch {
    counts: Vec<u32>,
}

impl Sketch {
    fn new() -> Sketch {
        Sketch {
            counts: vec![0; BUCKETS],
        }
    }

    fn add(&mut self, value: u64) {
        let b = bucket(value);
        self.counts[b] = self.counts[b].saturating_add(1);
    }

    fn merge(&mut self, other: &Sketch) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a = a.saturating_add(*b);
        }
    }
}

fn bucket(value: u64) -> usize {
    let v = value as f64;
    if v < LOWEST {
        return 0;
    }
    let b = 1 + ((v / LOWEST).ln() / GAMMA.ln()) as usize;
    b.min(BUCKETS - 1)
}

/// The middle of bucket `b`'s bounds, nanoseconds.
fn representative(b: usize) -> u64 {
    if b == 0 {
        return LOWEST as u64;
    }
    let low = LOWEST * GAMMA.powi(b as i32 - 1);
    (low * (1.0 + GAMMA) / 2.0).round() as u64
}

impl CellValues {
    /// Adds `value` at `instant` (which must fall within `cells`).
    pub fn add(&mut self, cells: &Cells, instant: u64, value: u64) {
        match self.sketches.as_mut() {
            Some(sketches) => add_sketched(sketches, cells.cell(instant), value),
            None => {
                self.exact.push((instant, value));
                if self.exact.len() >= EXACT_VALUES {
                    let mut sketches = Vec::new();
                    for (t, v) in std::mem::take(&mut self.exact) {
                        add_sketched(&mut sketches, cells.cell(t), v);
                    }
                    self.sketches = Some(sketches);
                }
            }
        }
    }

    /// Merges ten cells into one (the instants kept one by one need
    /// nothing).
    pub fn coarsen(&mut self) {
        if let Some(sketches) = self.sketches.as_mut() {
            merge_tens(sketches, coarse_cell, |into, from| match (into, from) {
                (_, None) => {}
                (slot @ None, from) => *slot = from,
                (Some(a), Some(b)) => a.merge(&b),
            });
        }
    }

    /// Nearest-rank percentiles `qs` of the values of each of `bins`
    /// bins, bin `i` holding the instants of cells `i * per_bin ..
    /// (i + 1) * per_bin` (`cells` as they are now; the last bin also
    /// holds any later cell). `None` for a bin without values.
    pub fn percentiles(
        self,
        cells: &Cells,
        per_bin: usize,
        bins: usize,
        qs: &[f64],
    ) -> Vec<Vec<Option<u64>>> {
        let per_bin = per_bin.max(1);
        let bin_of = |cell: usize| (cell / per_bin).min(bins.saturating_sub(1));
        let mut out = vec![vec![None; bins]; qs.len()];
        let rank = |q: f64, n: u64| ((q * n as f64).ceil() as u64).clamp(1, n);
        match self.sketches {
            None => {
                let mut values: Vec<(usize, u64)> = self
                    .exact
                    .into_iter()
                    .map(|(t, v)| (bin_of(cells.cell(t)), v))
                    .collect();
                values.sort_unstable();
                for group in values.chunk_by(|a, b| a.0 == b.0) {
                    for (k, &q) in qs.iter().enumerate() {
                        let r = rank(q, group.len() as u64) as usize - 1;
                        out[k][group[0].0] = Some(group[r].1);
                    }
                }
            }
            Some(sketches) => {
                let mut merged: Vec<Option<Sketch>> = vec![None; bins];
                for (cell, sketch) in sketches.into_iter().enumerate() {
                    let Some(sketch) = sketch else { continue };
                    match &mut merged[bin_of(cell)] {
                        Some(m) => m.merge(&sketch),
                        slot @ None => *slot = Some(*sketch),
                    }
                }
                for (i, sketch) in merged.into_iter().enumerate() {
                    let Some(sketch) = sketch else { continue };
                    let n: u64 = sketch.counts.iter().map(|&c| u64::from(c)).sum();
                    for (k, &q) in qs.iter().enumerate() {
                        let want = rank(q, n);
                        let mut seen = 0u64;
                        for (b, &c) in sketch.counts.iter().enumerate() {
                            seen += u64::from(c);
                            if seen >= want {
                                out[k][i] = Some(representative(b));
                                break;
                            }
                        }
                    }
                }
            }
        }
        out
    }
}

fn add_sketched(sketches: &mut Vec<Option<Box<Sketch>>>, cell: usize, value: u64) {
    slot(sketches, cell)
        .get_or_insert_with(|| Box::new(Sketch::new()))
        .add(value);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nearest-rank percentile of `values`.
    fn exact(values: &mut [u64], q: f64) -> u64 {
        values.sort_unstable();
        let r = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
        values[r - 1]
    }

    #[test]
    fn exact_below_the_limit_within_half_a_percent_beyond() {
        let cells = Cells::new(1_000_000);
        let value = |i: u64| 50_000 + (i * 7_919 % 100_000) * 97;
        // Two bins of 1,000 cells (1 ms): instants spread over 2 ms.
        let instant = |i: u64| i * 1_999 % 2_000_000;
        for n in [1_000u64, 3 * EXACT_VALUES as u64] {
            let mut values = CellValues::default();
            for i in 0..n {
                values.add(&cells, instant(i), value(i));
            }
            assert_eq!(values.sketches.is_some(), n as usize >= EXACT_VALUES);
            let got = values.percentiles(&cells, 1_000, 2, &[0.5, 0.99]);
            for (bin, from) in [(0usize, 0u64), (1, 1_000_000)] {
                let mut all: Vec<u64> = (0..n)
                    .filter(|&i| (from..from + 1_000_000).contains(&instant(i)))
                    .map(value)
                    .collect();
                for (k, q) in [0.5, 0.99].into_iter().enumerate() {
                    let (g, e) = (got[k][bin].unwrap(), exact(&mut all, q));
                    if n < EXACT_VALUES as u64 {
                        assert_eq!(g, e, "exact below the limit");
                    } else {
                        let error = (g as f64 - e as f64).abs() / e as f64;
                        assert!(error <= 0.0051, "{g} against {e}");
                    }
                }
            }
        }
    }

    #[test]
    fn merged_cells_keep_their_values_and_empty_bins_have_none() {
        let mut cells = Cells::new(100);
        let mut values = CellValues::default();
        for i in 0..EXACT_VALUES as u64 {
            values.add(&cells, (i % 50) * 1_000, 1_000_000);
        }
        values.coarsen();
        cells.widen();
        let got = values.percentiles(&cells, 5, 3, &[0.5]);
        let near = |v: Option<u64>| v.is_some_and(|v| v.abs_diff(1_000_000) <= 5_000);
        assert!(near(got[0][0]), "{:?}", got[0]);
        assert_eq!(got[0][1], None);
        assert_eq!(got[0][2], None);
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
    }
}
