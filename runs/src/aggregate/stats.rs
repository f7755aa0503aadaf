//! The arithmetic of an aggregate: over one metric's values across runs,
//! the mean, the sample standard deviation (n − 1) and the 95 % Student-t
//! interval of the mean, `mean ± t(0.975, n − 1) · sd / √n`, cut to the
//! range the metric can take ([`Spread::within`]: a latency's mean is
//! never below 0, a ratio's never above 1; the cut interval holds the
//! mean whenever the whole one does, so its coverage is the same). Owns
//! the t quantiles: a table for 1 to 30 degrees of freedom, the normal's
//! 1.96 beyond (off by less than 2 % at 31). Reads no file.

use schemars::JsonSchema;
use serde::Serialize;

/// `t(0.975, df)` for df = 1..=30 (two-sided 95 %).
const T_975: [f64; 30] = [
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281, 2.2010,
    2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860, 2.0796, 2.0739, 2.0687,
    2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
];

/// The normal's 0.975 quantile: `t` beyond 30 degrees of freedom.
const Z_975: f64 = 1.96;

/// The two-sided 95 % Student-t quantile for `df` degrees of freedom
/// (`None` for 0: one value has no interval).
pub fn t_975(df: usize) -> Option<f64> {
    match df {
        0 => None,
        1..=30 => T_975.get(df - 1).copied(),
        _ => Some(Z_975),
    }
}

/// One metric over the runs that have it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Spread {
    /// Runs that have the metric.
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (divisor n − 1); `null` with one run.
    pub std: Option<f64>,
    pub min: f64,
    pub max: f64,
    /// `t(0.975, n − 1)`; `null` with one run.
    pub t_critical: Option<f64>,
    /// The 95 % interval of the mean, within the metric's range; `null`
    /// with one run.
    pub ci95_low: Option<f64>,
    pub ci95_high: Option<f64>,
    /// The values, run by run (runs without the metric left out).
    pub values: Vec<f64>,
}

impl Spread {
    /// `None` for no values.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let first = *values.first()?;
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n as f64;
        let (min, max) = values
            .iter()
            .fold((first, first), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        let t = t_975(n - 1);
        let std = t.map(|_| {
            let squares: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
            (squares / (n - 1) as f64).sqrt()
        });
        let half = match (t, std) {
            (Some(t), Some(sd)) => Some(t * sd / (n as f64).sqrt()),
            _ => None,
        };
        Some(Spread {
            n,
            mean,
            std,
            min,
            max,
            t_critical: t,
            ci95_low: half.map(|h| mean - h),
            ci95_high: half.map(|h| mean + h),
            values: values.to_vec(),
        })
    }

    /// [`Spread::of`] with the interval cut to `low..=high`, the values
    /// the metric can take.
    pub fn within(values: &[f64], low: f64, high: f64) -> Option<Spread> {
        let mut s = Spread::of(values)?;
        s.ci95_low = s.ci95_low.map(|v| v.clamp(low, high));
        s.ci95_high = s.ci95_high.map(|v| v.clamp(low, high));
        Some(s)
    }

    /// The interval's width (`None` with one run).
    #[cfg(test)]
    pub fn width(&self) -> Option<f64> {
        Some(self.ci95_high? - self.ci95_low?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn mean_sample_sd_and_t_interval_by_hand() {
        // 1, 2, 3: mean 2, sd 1, half-width 4.3027 / sqrt 3.
        let s = Spread::of(&[1.0, 2.0, 3.0]).expect("values");
        assert_eq!(s.n, 3);
        assert!(close(s.mean, 2.0));
        assert!(close(s.std.expect("sd"), 1.0));
        assert_eq!(s.t_critical, Some(4.3027));
        let half = 4.3027 / 3f64.sqrt();
        assert!(close(s.ci95_low.expect("low"), 2.0 - half));
        assert!(close(s.ci95_high.expect("high"), 2.0 + half));
        assert_eq!((s.min, s.max), (1.0, 3.0));
    }

    #[test]
    fn the_interval_stays_within_what_the_metric_can_take() {
        // Two runs' p99 ITL: the t-interval (t = 12.7) reaches below 0,
        // which no latency's mean can.
        let open = Spread::of(&[0.000_28, 0.000_34]).expect("two");
        assert!(open.ci95_low.unwrap() < 0.0);
        let cut = Spread::within(&[0.000_28, 0.000_34], 0.0, f64::INFINITY).expect("two");
        assert_eq!(cut.ci95_low, Some(0.0));
        assert_eq!(cut.ci95_high, open.ci95_high);
        assert_eq!((cut.mean, cut.std), (open.mean, open.std));
        // A ratio's interval stops at 1.
        let ratio = Spread::within(&[0.9, 0.99], 0.0, 1.0).expect("two");
        assert_eq!(ratio.ci95_high, Some(1.0));
        assert!(ratio.ci95_low.unwrap() >= 0.0);
    }

    #[test]
    fn one_value_has_no_spread_and_none_has_nothing() {
        let s = Spread::of(&[5.0]).expect("one value");
        assert_eq!((s.n, s.mean, s.std, s.ci95_low), (1, 5.0, None, None));
        assert_eq!(Spread::of(&[]), None);
    }

    #[test]
    fn the_interval_narrows_when_a_run_is_added() {
        // The same data: a third run at the mean of the first two leaves
        // the mean and shrinks both t and sd / sqrt(n).
        let two = Spread::of(&[10.0, 12.0]).expect("two");
        let three = Spread::of(&[10.0, 12.0, 11.0]).expect("three");
        assert!(close(two.mean, three.mean));
        let (w2, w3) = (two.width().expect("w2"), three.width().expect("w3"));
        assert!(w3 < w2 / 3.0, "{w2} -> {w3}");
    }

    #[test]
    fn t_quantiles_fall_to_the_normal() {
        assert_eq!(t_975(0), None);
        assert_eq!(t_975(1), Some(12.7062));
        assert_eq!(t_975(30), Some(2.0423));
        assert_eq!(t_975(31), Some(1.96));
        let table: Vec<f64> = (1..=31).filter_map(t_975).collect();
        assert!(table.windows(2).all(|w| w[1] < w[0]), "decreasing");
    }
}
