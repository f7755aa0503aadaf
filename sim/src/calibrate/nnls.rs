//! Non-negative least squares: the Lawson–Hanson active-set method over a
//! handful of columns.
//!
//! Owns the solver only. Rows are added one at a time into the normal
//! equations ([`Normal`]: `AᵀA`, `Aᵀb`, `bᵀb`), so any number of rows
//! costs memory for the few columns alone; the solve works on those sums.
//! Columns are scaled to unit length before solving (the coefficients of
//! a step-time model differ by nine orders of magnitude) and the answer is
//! scaled back. Knows nothing of step times.

/// The normal equations of a least-squares problem with `n` columns.
#[derive(Debug, Clone)]
pub struct Normal {
    n: usize,
    /// `AᵀA`, row-major `n × n`.
    gram: Vec<f64>,
    /// `Aᵀb`.
    atb: Vec<f64>,
    /// `bᵀb`.
    btb: f64,
}

/// A solution: `x ≥ 0` and the sum of squared residuals `‖Ax − b‖²`.
#[derive(Debug, Clone, PartialEq)]
pub struct Solution {
    pub x: Vec<f64>,
    pub residual: f64,
}

impl Normal {
    pub fn new(n: usize) -> Normal {
        Normal {
            n,
            gram: vec![0.0; n * n],
            atb: vec![0.0; n],
            btb: 0.0,
        }
    }

    /// Adds the row `a·x ≈ b` with weight `w` (the row and `b` are both
    /// multiplied by `w`). A row of the wrong length or with a value that
    /// is not finite is ignored.
    pub fn add(&mut self, a: &[f64], b: f64, w: f64) {
        if a.len() != self.n || !b.is_finite() || !w.is_finite() || a.iter().any(|v| !v.is_finite())
        {
            return;
        }
        let w2 = w * w;
        for i in 0..self.n {
            if a[i] == 0.0 {
                continue;
            }
            for j in 0..self.n {
                self.gram[i * self.n + j] += w2 * a[i] * a[j];
            }
            self.atb[i] += w2 * a[i] * b;
        }
        self.btb += w2 * b * b;
    }

    /// The non-negative least-squares solution. A column that no row
    /// touches gets 0.
    pub fn solve(&self) -> Solution {
        let n = self.n;
        // Scale every column to unit length.
        let scale: Vec<f64> = (0..n)
            .map(|i| {
                let d = self.gram[i * n + i];
                if d > 0.0 {
                    1.0 / d.sqrt()
                } else {
                    0.0
                }
            })
            .collect();
        let g = |i: usize, j: usize| self.gram[i * n + j] * scale[i] * scale[j];
        let h: Vec<f64> = (0..n).map(|i| self.atb[i] * scale[i]).collect();
        let usable: Vec<bool> = scale.iter().map(|&s| s > 0.0).collect();

        let tolerance = 1e-12 * h.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        let mut x = vec![0.0; n];
        let mut passive = vec![false; n];
        // The gradient of −½‖Ax − b‖²: Aᵀb − AᵀA x.
        let gradient = |x: &[f64]| -> Vec<f64> {
            (0..n)
                .map(|i| h[i] - (0..n).map(|j| g(i, j) * x[j]).sum::<f64>())
                .collect()
        };
        for _ in 0..(3 * n + 10) {
            let w = gradient(&x);
            let entering = (0..n)
                .filter(|&j| usable[j] && !passive[j] && w[j] > tolerance)
                .max_by(|&a, &b| w[a].total_cmp(&w[b]));
            let Some(t) = entering else { break };
            passive[t] = true;
            // Inner loop: keep the unconstrained solution on the passive
            // set feasible by stepping back towards x.
            for _ in 0..(3 * n + 10) {
                let s = solve_on(&g, &h, &passive, n);
                let feasible = (0..n).all(|j| !passive[j] || s[j] > 0.0);
                if feasible {
                    x = s;
                    break;
                }
                let alpha = (0..n)
                    .filter(|&j| passive[j] && s[j] <= 0.0)
                    .map(|j| x[j] / (x[j] - s[j]))
                    .fold(1.0f64, f64::min);
                for j in 0..n {
                    x[j] += alpha * (s[j] - x[j]);
                    if passive[j] && x[j] <= 1e-15 {
                        passive[j] = false;
                        x[j] = 0.0;
                    }
                }
            }
        }
        // ‖Ax − b‖² = bᵀb − 2xᵀAᵀb + xᵀAᵀAx (in scaled columns).
        let quad: f64 = (0..n)
            .map(|i| x[i] * (0..n).map(|j| g(i, j) * x[j]).sum::<f64>())
            .sum();
        let cross: f64 = (0..n).map(|i| x[i] * h[i]).sum();
        let residual = (self.btb - 2.0 * cross + quad).max(0.0);
        Solution {
            x: (0..n).map(|i| x[i] * scale[i]).collect(),
            residual,
        }
    }
}

/// The unconstrained least-squares solution on the passive columns (the
/// others 0): Gaussian elimination with partial pivoting on their block of
/// the normal equations. A singular direction gets 0.
fn solve_on(g: &impl Fn(usize, usize) -> f64, h: &[f64], passive: &[bool], n: usize) -> Vec<f64> {
    let cols: Vec<usize> = (0..n).filter(|&j| passive[j]).collect();
    let m = cols.len();
    let mut a: Vec<Vec<f64>> = cols
        .iter()
        .map(|&i| {
            let mut row: Vec<f64> = cols.iter().map(|&j| g(i, j)).collect();
            row.push(h[i]);
            row
        })
        .collect();
    let mut pivot_of = vec![None; m];
    let mut r = 0;
    for c in 0..m {
        let Some(p) = (r..m).max_by(|&x, &y| a[x][c].abs().total_cmp(&a[y][c].abs())) else {
            break;
        };
        if a[p][c].abs() < 1e-12 {
            continue;
        }
        a.swap(r, p);
        let pivot_row = a[r].clone();
        for (k, row) in a.iter_mut().enumerate() {
            let f = row[c] / pivot_row[c];
            if k == r || f == 0.0 {
                continue;
            }
            for (v, p) in row[c..].iter_mut().zip(&pivot_row[c..]) {
                *v -= f * p;
            }
        }
        pivot_of[c] = Some(r);
        r += 1;
    }
    let mut out = vec![0.0; n];
    for (c, &col) in cols.iter().enumerate() {
        if let Some(row) = pivot_of[c] {
            out[col] = a[row][m] / a[row][c];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normal(rows: &[(Vec<f64>, f64)]) -> Normal {
        let mut n = Normal::new(rows[0].0.len());
        for (a, b) in rows {
            n.add(a, *b, 1.0);
        }
        n
    }

    fn close(a: &[f64], b: &[f64], tol: f64) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tol)
    }

    #[test]
    fn an_exact_non_negative_system_is_recovered() {
        // b = 2·a0 + 0·a1 + 5·a2, with columns of very different sizes.
        let truth = [2.0, 0.0, 5e-6];
        let rows: Vec<(Vec<f64>, f64)> = (0..20)
            .map(|i| {
                let a = vec![1.0, (i % 7) as f64, (i * i * 1000) as f64];
                let b = a.iter().zip(truth).map(|(x, t)| x * t).sum();
                (a, b)
            })
            .collect();
        let s = normal(&rows).solve();
        assert!(close(&s.x, &truth, 1e-9), "{:?}", s.x);
        assert!(s.residual < 1e-9, "{}", s.residual);
    }

    #[test]
    fn a_coefficient_that_would_go_negative_is_held_at_zero() {
        // Unconstrained: b = 3 − 1·a1 exactly; constrained, a1 is 0 and
        // the constant is the mean.
        let rows: Vec<(Vec<f64>, f64)> = (0..4)
            .map(|i| (vec![1.0, i as f64], 3.0 - i as f64))
            .collect();
        let s = normal(&rows).solve();
        assert!(close(&s.x, &[1.5, 0.0], 1e-9), "{:?}", s.x);
        // Residual: (1.5² + 0.5² + 0.5² + 1.5²) = 5.
        assert!((s.residual - 5.0).abs() < 1e-9, "{}", s.residual);
    }

    #[test]
    fn collinear_and_empty_columns_do_not_break_the_solve() {
        // a1 = 2·a0 (collinear), a2 never used.
        let rows: Vec<(Vec<f64>, f64)> = (1..6)
            .map(|i| (vec![i as f64, 2.0 * i as f64, 0.0], 4.0 * i as f64))
            .collect();
        let s = normal(&rows).solve();
        assert_eq!(s.x[2], 0.0);
        assert!(s.x.iter().all(|v| *v >= 0.0));
        assert!((s.x[0] + 2.0 * s.x[1] - 4.0).abs() < 1e-9, "{:?}", s.x);
        assert!(s.residual < 1e-9);
    }

    #[test]
    fn weights_and_bad_rows() {
        let mut n = Normal::new(1);
        n.add(&[1.0], 1.0, 1.0);
        n.add(&[1.0], 3.0, 3.0);
        n.add(&[f64::NAN], 3.0, 1.0);
        n.add(&[1.0, 2.0], 3.0, 1.0);
        // Weighted mean: (1·1 + 9·3) / 10.
        let s = n.solve();
        assert!((s.x[0] - 2.8).abs() < 1e-12, "{:?}", s.x);
    }
}
