//! Confidence intervals for a sampled load point (docs/capacity.md, "How
//! sure a probe is"): a distribution-free interval of a percentile from
//! order statistics, and the Wilson interval of a share (goodput). Pure
//! arithmetic over counts and ranks; knows nothing of SLOs or requests.
//!
//! **A percentile.** Among `n` observations drawn from one distribution,
//! the number `B` at or below the true `q`-quantile is binomial(n, q), so
//! the `r`-th smallest observation is at or below the quantile exactly
//! when `B >= r`. The interval is the pair of ranks `(lo, hi)` with
//! `P(B < lo) <= (1 - level) / 2` (lo as large as that allows) and
//! `P(B < hi) >= 1 - (1 - level) / 2` (hi as small as that allows): the
//! true quantile lies between the `lo`-th and the `hi`-th smallest
//! observation with at least `level` confidence, whatever the
//! distribution. With too few observations one end does not exist: rank
//! 0 is unbounded below, rank `n + 1` unbounded above (the p99 of fewer
//! than 368 observations has no upper end at 95 %).
//!
//! **A share.** `k` of `n` met the bounds: the Wilson score interval,
//! `(p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)` with `p = k/n`
//! and `z` the normal quantile of the level (1.96 at 95 %).

/// The confidence of every interval arbor draws: 95 %.
pub const LEVEL: f64 = 0.95;

/// The two-sided normal quantile of [`LEVEL`].
pub const Z_95: f64 = 1.959_963_984_540_054;

/// The 1-based ranks `(lo, hi)` among `n` sorted observations that bracket
/// the `quantile` (0 < quantile < 1) with at least [`LEVEL`] confidence.
/// `lo == 0`: no observation is low enough (the interval is unbounded
/// below); `hi == n + 1`: none is high enough (unbounded above).
pub fn quantile_ranks(n: u64, quantile: f64) -> (u64, u64) {
    let tail = (1.0 - LEVEL) / 2.0;
    if n == 0 {
        return (0, 1);
    }
    let q = quantile.clamp(f64::MIN_POSITIVE, 1.0 - f64::EPSILON);
    // The binomial(n, q) pmf, walked up from 0 in logarithms (no
    // underflow of (1 - q)^n for large n), summed into the CDF.
    let ln_odds = (q / (1.0 - q)).ln();
    let mut ln_pmf = n as f64 * (1.0 - q).ln();
    let mut below = 0.0; // P(B <= j - 1), i.e. P(B < j)
    let mut lo = 0;
    let mut hi = n + 1;
    for j in 0..=n {
        // below = P(B < j) = P(B <= j - 1).
        if j >= 1 && below <= tail {
            lo = j;
        }
        if j >= 1 && below >= 1.0 - tail {
            hi = j;
            break;
        }
        below += ln_pmf.exp();
        ln_pmf += ((n - j) as f64 / (j + 1) as f64).ln() + ln_odds;
    }
    (lo, hi)
}

/// The Wilson score interval of `successes` of `trials` at [`LEVEL`];
/// `None` without a trial.
pub fn wilson(successes: u64, trials: u64) -> Option<[f64; 2]> {
    if trials == 0 {
        return None;
    }
    let n = trials as f64;
    let p = successes.min(trials) as f64 / n;
    let z2 = Z_95 * Z_95;
    let scale = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / scale;
    let half = Z_95 / scale * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    Some([(centre - half).max(0.0), (centre + half).min(1.0)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_twenty_is_bracketed_by_the_6th_and_15th() {
        // The textbook interval: P(6 <= B <= 14) = 0.9586 for B ~ bin(20, .5)
        // (P(B <= 5) = 0.0207, P(B <= 14) = 0.9793).
        assert_eq!(quantile_ranks(20, 0.5), (6, 15));
        // Ten: P(B <= 1) = 0.0107, P(B <= 2) = 0.0547; P(B <= 8) = 0.9893.
        assert_eq!(quantile_ranks(10, 0.5), (2, 9));
    }

    #[test]
    fn a_high_percentile_of_few_observations_has_no_upper_end() {
        // P(B <= 19) = 1 - 0.9^20 = 0.878 < 0.975: nothing above.
        // P(B <= 14) = 0.0113, P(B <= 15) = 0.0432: the 15th is the low end.
        assert_eq!(quantile_ranks(20, 0.9), (15, 21));
        // p99 needs 368 observations before its upper end exists:
        // P(B <= n - 1) = 1 - 0.99^n, and 0.99^367 = 0.02501 > 0.025,
        // 0.99^368 = 0.02476 <= 0.025.
        assert_eq!(quantile_ranks(367, 0.99), (359, 368));
        assert_eq!(quantile_ranks(368, 0.99), (360, 368));
        // One observation: nothing below, nothing above.
        assert_eq!(quantile_ranks(1, 0.5), (0, 2));
        assert_eq!(quantile_ranks(0, 0.5), (0, 1));
    }

    #[test]
    fn the_p90_of_a_hundred() {
        // B ~ bin(100, 0.9): P(B <= 83) = 0.0206, P(B <= 84) = 0.0399;
        // P(B <= 94) = 0.9424, P(B <= 95) = 0.9763.
        assert_eq!(quantile_ranks(100, 0.9), (84, 96));
    }

    #[test]
    fn large_samples_narrow_around_the_nearest_rank() {
        let (lo, hi) = quantile_ranks(100_000, 0.99);
        // sd of B is sqrt(1e5 * .99 * .01) = 31.5: about 62 ranks each side.
        assert!((98_930..98_945).contains(&lo), "{lo}");
        assert!((99_055..99_070).contains(&hi), "{hi}");
    }

    #[test]
    fn wilson_against_hand_computed_values() {
        let close =
            |a: [f64; 2], b: [f64; 2]| (a[0] - b[0]).abs() < 1e-4 && (a[1] - b[1]).abs() < 1e-4;
        // 9 of 10: (0.5958, 0.9821).
        let w = wilson(9, 10).unwrap();
        assert!(close(w, [0.5958, 0.9821]), "{w:?}");
        // 10 of 10: (0.7225, 1).
        let w = wilson(10, 10).unwrap();
        assert!(close(w, [0.7225, 1.0]), "{w:?}");
        // 0 of 20: (0, 0.1611).
        let w = wilson(0, 20).unwrap();
        assert!(close(w, [0.0, 0.1611]), "{w:?}");
        // 95 of 100: (0.8883, 0.9785).
        let w = wilson(95, 100).unwrap();
        assert!(close(w, [0.8883, 0.9785]), "{w:?}");
        assert_eq!(wilson(0, 0), None);
    }
}
