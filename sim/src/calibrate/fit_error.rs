//! The fit error: p50 and p90 of TTFT, ITL and E2E, predicted by the
//! model's replay against measured, per run and over all runs; and the
//! one number stage B minimises.
//!
//! Owns the metrics' definitions as calibration compares them (those of
//! the server model's predictions: TTFT = first token − sent, ITL =
//! (done − first token) / (output tokens − 1) per request, E2E = done −
//! sent; warmups never count); the table is the front end's. Replays
//! nothing itself.

use arbor_engine::stats::nearest_rank;
use arbor_engine::time::Nanos;

use super::replay::Served;
use super::request::Observed;

/// A latency metric calibration compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Ttft,
    Itl,
    E2e,
}

impl Metric {
    pub const ALL: [Metric; 3] = [Metric::Ttft, Metric::Itl, Metric::E2e];

    pub fn name(self) -> &'static str {
        match self {
            Metric::Ttft => "TTFT",
            Metric::Itl => "ITL",
            Metric::E2e => "E2E",
        }
    }

    fn of(self, sent: Nanos, first: Nanos, done: Nanos, osl: u32) -> Option<Nanos> {
        match self {
            Metric::Ttft => Some(first.saturating_sub(sent)),
            Metric::Itl => (osl > 1).then(|| done.saturating_sub(first) / u64::from(osl - 1)),
            Metric::E2e => Some(done.saturating_sub(sent)),
        }
    }
}

/// The quantiles compared.
pub const QUANTILES: [(&str, f64); 2] = [("p50", 0.5), ("p90", 0.9)];

/// One metric's quantile, measured and predicted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Compared {
    pub metric: Metric,
    pub quantile: &'static str,
    pub measured: Nanos,
    pub predicted: Nanos,
}

impl Compared {
    /// (predicted − measured) / measured, in percent (0 when both are 0).
    pub fn error_pct(&self) -> f64 {
        if self.measured == 0 {
            return if self.predicted == 0 { 0.0 } else { 100.0 };
        }
        (self.predicted as f64 - self.measured as f64) / self.measured as f64 * 100.0
    }

    /// ln(predicted / measured)², the stage-B loss (a quantile at 0 on
    /// either side counts as 1 ns).
    pub fn loss(&self) -> f64 {
        let ratio = self.predicted.max(1) as f64 / self.measured.max(1) as f64;
        ratio.ln().powi(2)
    }
}

/// Requests' measured and predicted values side by side (the replay's
/// answer for `requests[i]` is `served[i]`); pooled over runs by
/// [`Samples::extend`].
#[derive(Debug, Clone, Default)]
pub struct Samples {
    measured: [Vec<Nanos>; 3],
    predicted: [Vec<Nanos>; 3],
}

impl Samples {
    pub fn of(requests: &[Observed], served: &[Served]) -> Samples {
        let mut s = Samples::default();
        s.extend(requests, served);
        s
    }

    pub fn extend(&mut self, requests: &[Observed], served: &[Served]) {
        for (r, p) in requests.iter().zip(served) {
            if r.warmup {
                continue;
            }
            for (k, m) in Metric::ALL.into_iter().enumerate() {
                if let (Some(a), Some(b)) = (
                    m.of(r.sent, r.first, r.done, r.osl),
                    m.of(p.sent, p.first, p.done, r.osl),
                ) {
                    self.measured[k].push(a);
                    self.predicted[k].push(b);
                }
            }
        }
    }

    /// Every metric's quantiles, compared (a metric without a value is
    /// left out).
    pub fn compare(&self) -> Vec<Compared> {
        let mut out = Vec::new();
        for (k, metric) in Metric::ALL.into_iter().enumerate() {
            let mut measured = self.measured[k].clone();
            let mut predicted = self.predicted[k].clone();
            if measured.is_empty() {
                continue;
            }
            measured.sort_unstable();
            predicted.sort_unstable();
            for (quantile, p) in QUANTILES {
                out.push(Compared {
                    metric,
                    quantile,
                    measured: nearest_rank(&measured, p),
                    predicted: nearest_rank(&predicted, p),
                });
            }
        }
        out
    }
}

/// The mean loss of comparisons.
pub fn loss(compared: &[Compared]) -> f64 {
    if compared.is_empty() {
        return 0.0;
    }
    compared.iter().map(Compared::loss).sum::<f64>() / compared.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_compare_the_predicted_metrics() {
        let requests: Vec<Observed> = (1..=10)
            .map(|k| Observed::stamped(0, k * 100, k * 100 + 900, 10, 10))
            .collect();
        let served: Vec<Served> = requests
            .iter()
            .map(|r| Served {
                sent: r.sent,
                first: r.first * 2,
                done: r.first * 2 + 900,
                cached_tokens: 0,
            })
            .collect();
        let c = Samples::of(&requests, &served).compare();
        assert_eq!(c.len(), 6);
        assert_eq!((c[0].metric, c[0].quantile), (Metric::Ttft, "p50"));
        assert_eq!((c[0].measured, c[0].predicted), (500, 1000));
        assert_eq!(c[0].error_pct(), 100.0);
        assert_eq!((c[1].measured, c[1].predicted), (900, 1800));
        // ITL: 900 / 9 on both sides.
        assert_eq!((c[2].measured, c[2].predicted), (100, 100));
        assert_eq!(c[2].loss(), 0.0);
        assert!((c[0].loss() - 2f64.ln().powi(2)).abs() < 1e-12);
    }
}
