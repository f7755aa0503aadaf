//! Time cells for a series built while records stream by: cells of one
//! width from the epoch, at most a fixed number of them. The width starts
//! at [`START_WIDTH`] and grows tenfold whenever an instant falls past the
//! last cell, the cells' contents merged ten into one. Every round bin
//! width the page draws with ([`super::series::bin_width`]) is then a
//! whole number of cells, so each of the page's bins is a sum of cells:
//! memory is bounded by the cap whatever the run's length, and only
//! resolution finer than a cell is given up.
//!
//! Owns the cells' arithmetic ([`Cells`]) and the one accumulator that is
//! not a plain sum per cell: amounts spread evenly over an interval
//! ([`Spread`], O(1) per interval whatever its length).

/// The first width of a cell: 1 µs (the lanes' resolution).
pub const START_WIDTH: u64 = 1_000;

/// Cells of `width` nanoseconds from the epoch, at most `cap` of them.
#[derive(Debug, Clone, Copy)]
pub struct Cells {
    width: u64,
    cap: u64,
}

impl Cells {
    pub fn new(cap: u64) -> Cells {
        Cells {
            width: START_WIDTH,
            cap: cap.max(1),
        }
    }

    /// Width of a cell, nanoseconds.
    pub fn width(&self) -> u64 {
        self.width
    }

    /// Whether instant `t` falls past the last cell (or past the last
    /// sample instant, see [`Cells::sample_at_or_after`]).
    pub fn too_narrow_for(&self, t: u64) -> bool {
        t / self.width >= self.cap
    }

    /// Ten times wider (called after the contents were merged).
    pub fn widen(&mut self) {
        self.width = self.width.saturating_mul(10);
    }

    /// The cell holding instant `t`.
    pub fn cell(&self, t: u64) -> usize {
        (t / self.width) as usize
    }

    /// The first sample instant (a multiple of the width) at or after
    /// `t`: an instant the in-flight level is read at.
    pub fn sample_at_or_after(&self, t: u64) -> usize {
        t.div_ceil(self.width) as usize
    }
}

/// Merges `values` ten into one in place: value `j` goes to `into(j)`,
/// which must be non-decreasing with `into(j) <= j`.
pub fn merge_tens<T: Default>(
    values: &mut Vec<T>,
    into: impl Fn(usize) -> usize,
    mut merge: impl FnMut(&mut T, T),
) {
    let old = std::mem::take(values);
    for (j, v) in old.into_iter().enumerate() {
        merge(slot(values, into(j)), v);
    }
}

/// The cell of a coarser cells' that holds fine cell `j`.
pub fn coarse_cell(j: usize) -> usize {
    j / 10
}

/// The coarser cells' first sample instant at or after fine sample `j`.
pub fn coarse_sample(j: usize) -> usize {
    j.div_ceil(10)
}

/// Grows `values` to hold index `i`.
pub fn slot<T: Default>(values: &mut Vec<T>, i: usize) -> &mut T {
    if values.len() <= i {
        values.resize_with(i + 1, T::default);
    }
    &mut values[i]
}

/// Amounts spread evenly over intervals, per cell. An interval's two
/// partial cells get their share at once; the whole cells between get
/// theirs through a difference array of rates (per nanosecond), folded
/// into the amounts when the cells merge and at the end.
#[derive(Debug, Default)]
pub struct Spread {
    amount: Vec<f64>,
    rate: Vec<f64>,
}

impl Spread {
    /// Spreads `amount` over `[from, to)` (all of it to `from`'s cell for
    /// an instant). `to` must fall within `cells`.
    pub fn add(&mut self, cells: &Cells, from: u64, to: u64, amount: f64) {
        let (first, last) = (cells.cell(from), cells.cell(to));
        if to <= from || first == last {
            *slot(&mut self.amount, first) += amount;
            return;
        }
        let width = cells.width();
        let per_ns = amount / (to - from) as f64;
        *slot(&mut self.amount, first) += per_ns * ((first as u64 + 1) * width - from) as f64;
        *slot(&mut self.amount, last) += per_ns * (to - last as u64 * width) as f64;
        if first + 1 < last {
            *slot(&mut self.rate, first + 1) += per_ns;
            *slot(&mut self.rate, last) -= per_ns;
        }
    }

    /// Folds the pending rates into the amounts (cells `width` wide).
    fn resolve(&mut self, width: u64) {
        let mut running = 0.0;
        let rates = std::mem::take(&mut self.rate);
        for (j, r) in rates.into_iter().enumerate() {
            running += r;
            if running != 0.0 {
                *slot(&mut self.amount, j) += running * width as f64;
            }
        }
    }

    /// Merges ten cells (`width` wide before) into one.
    pub fn coarsen(&mut self, width: u64) {
        self.resolve(width);
        merge_tens(&mut self.amount, coarse_cell, |a, b| *a += b);
    }

    /// The amount in each cell (`width` wide), from the first.
    pub fn finish(mut self, width: u64) -> Vec<f64> {
        self.resolve(width);
        self.amount
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spread_puts_each_cell_its_share_and_survives_merging() {
        let mut cells = Cells::new(1_000);
        let mut spread = Spread::default();
        // 10 over 1.5 µs .. 31.5 µs: 0.5 µs in cell 1, whole cells 2..30,
        // 0.5 µs in cell 31.
        spread.add(&cells, 1_500, 31_500, 30.0);
        spread.add(&cells, 40_000, 40_000, 2.0);
        let fine = {
            let mut copy = Spread {
                amount: spread.amount.clone(),
                rate: spread.rate.clone(),
            };
            copy.resolve(cells.width());
            copy.amount
        };
        assert!((fine[1] - 0.5).abs() < 1e-9 && (fine[2] - 1.0).abs() < 1e-9);
        assert!((fine[30] - 1.0).abs() < 1e-9 && (fine[31] - 0.5).abs() < 1e-9);
        assert_eq!(fine[40], 2.0);
        let total: f64 = fine.iter().sum();
        assert!((total - 32.0).abs() < 1e-9);

        spread.coarsen(cells.width());
        cells.widen();
        let coarse = spread.finish(cells.width());
        // Cells of 10 µs: 0..10 µs holds 8.5, 10..20 and 20..30 hold 10,
        // 30..40 holds 1.5, 40..50 holds the instant's 2.
        let want = [8.5, 10.0, 10.0, 1.5, 2.0];
        for (got, want) in coarse.iter().zip(want) {
            assert!((got - want).abs() < 1e-9, "{coarse:?}");
        }
    }

    #[test]
    fn cells_widen_until_an_instant_fits() {
        let mut cells = Cells::new(100);
        assert!(!cells.too_narrow_for(99_999));
        assert!(cells.too_narrow_for(100_000));
        cells.widen();
        assert_eq!(cells.width(), 10_000);
        assert_eq!(cells.cell(100_000), 10);
        assert_eq!(cells.sample_at_or_after(100_001), 11);
        // The last instant of all fits at some width: no endless widening.
        let mut n = 0;
        while cells.too_narrow_for(u64::MAX) {
            cells.widen();
            n += 1;
        }
        assert!(n < 20, "{n}");
        assert_eq!(coarse_sample(11), 2);
        assert_eq!(coarse_cell(19), 1);
    }
}
