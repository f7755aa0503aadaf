//! Intervals on the server model's predictions (docs/capacity.md,
//! "Uncertainty: intervals on predictions"): each predicted percentile of
//! `plan --service server:` gets a `lo`..`hi` at a level (90 % by
//! default) from two shares of doubt:
//!
//! - the fit's: the plan repeated under each of the profile's draws
//!   (bootstrap refits of its coefficients), the figure read from each;
//! - the sample's: the figure read from bootstrap resamples of the plan's
//!   own requests (plays, for job time), seeded.
//!
//! Combined, the interval is the percentile interval of the figure over
//! every (draw, resample) pair: resample `b` of draw `d` is the `b`-th
//! seeded resample of that draw's values. The same resamples serve every
//! draw (a draw with the same values as the central plan gives exactly
//! the central plan's resamples), so draws that do not differ leave the
//! sample's share alone. A profile without draws gives the sample's share
//! only and says the fit's is unknown. The interval always holds the
//! central prediction (widened to it when a skewed resampling leaves it
//! outside).
//!
//! A resample's nearest-rank percentile is drawn as `compare`'s bootstrap
//! draws it: the `k`-th smallest of `n` uniform indices is
//! `Beta(k, n + 1 - k)`, so a resample costs one draw, not `n`.
//!
//! Owns the figures of one plan ([`Figures`]), the intervals' JSON
//! ([`PredictionIntervals`]) and their arithmetic. Planning under the
//! draws is the facade's.

use arbor_engine::rng::{self, Purpose};
use arbor_engine::stats::{central_range, nearest_rank, nearest_rank_index};
use arbor_engine::time::{nanos_to_secs, Nanos};
use rand_distr::{Beta, Distribution as _};
use schemars::JsonSchema;
use serde::Serialize;

/// Resamples of the requests per draw (and of the central plan).
pub const RESAMPLES: u32 = 1000;

/// The most draws a plan repeats under (`--interval-draws` at most).
pub const MAX_DRAWS: usize = 200;

/// The percentiles that get an interval.
const RANKS: [(&str, f64); 3] = [("p50", 0.50), ("p90", 0.90), ("p99", 0.99)];

/// One plan's predicted values, each list sorted ascending (nanoseconds):
/// what an interval is read from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    /// Measured requests' TTFT, mean inter-token gap and E2E.
    pub ttft: Vec<Nanos>,
    pub itl: Vec<Nanos>,
    pub e2e: Vec<Nanos>,
    /// Per play: its first send to its last end.
    pub job: Vec<Nanos>,
    /// The plan's last end.
    pub makespan: Nanos,
}

impl Figures {
    /// The figures with every list sorted.
    pub fn sorted(mut self) -> Figures {
        for values in [&mut self.ttft, &mut self.itl, &mut self.e2e, &mut self.job] {
            values.sort_unstable();
        }
        self
    }

    fn by_index(&self, figure: usize) -> &[Nanos] {
        match figure {
            0 => &self.ttft,
            1 => &self.itl,
            2 => &self.e2e,
            _ => &self.job,
        }
    }
}

/// How intervals are made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Coverage, e.g. 0.9.
    pub level: f64,
    /// Resamples of the requests per draw.
    pub resamples: u32,
    /// The plan's seed (the resamples' stream).
    pub seed: u64,
}

/// Both ends of a share of doubt alone, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
pub struct Span {
    pub lo_s: f64,
    pub hi_s: f64,
}

/// A predicted figure's interval.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Interval {
    /// The ends, in seconds; `lo_s <= central <= hi_s`.
    pub lo_s: f64,
    pub hi_s: f64,
    /// Coverage, e.g. 0.9.
    pub level: f64,
    /// `draws x resamples`, `resamples (fit unknown)` or `draws`.
    pub method: String,
    /// The fit's share alone (the figure over the draws); `null` when the
    /// profile has no draws: unknown, not zero.
    pub fit: Option<Span>,
    /// The sample's share alone (the central plan's resamples); `null`
    /// for a whole-plan figure (makespan), which has no sample.
    pub sample: Option<Span>,
}

/// The intervals of a distribution's percentiles.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RankIntervals {
    pub p50: Interval,
    pub p90: Interval,
    pub p99: Interval,
}

/// The `server.intervals` object of `plan --json`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct PredictionIntervals {
    /// Coverage of every interval, e.g. 0.9.
    pub level: f64,
    /// How they were made, in words.
    pub method: String,
    /// The profile's draws the plan was repeated under (0: none).
    pub draws: u32,
    /// Draws the profile holds.
    pub draws_in_profile: u32,
    /// Seeded resamples of the requests per draw.
    pub resamples: u32,
    /// Whether the fit's share is in: false when the profile has no
    /// draws, and the intervals are the sample's share alone.
    pub fit_known: bool,
    pub ttft: RankIntervals,
    pub itl: RankIntervals,
    pub e2e: RankIntervals,
    pub job: RankIntervals,
    /// The whole plan's span: the fit's share alone (`null` without
    /// draws).
    pub makespan: Option<Interval>,
}

impl PredictionIntervals {
    /// The intervals of `central`'s figures, from `draws` (the plan under
    /// each draw; empty: the profile has none) and resamples.
    pub fn new(
        central: &Figures,
        draws: &[Figures],
        draws_in_profile: usize,
        settings: Settings,
    ) -> PredictionIntervals {
        let rank_intervals = |figure: usize| {
            let [p50, p90, p99] =
                std::array::from_fn(|r| rank_interval(central, draws, figure, r, settings));
            RankIntervals { p50, p90, p99 }
        };
        let makespan = (!draws.is_empty()).then(|| {
            let mut spans: Vec<Nanos> = draws.iter().map(|d| d.makespan).collect();
            spans.sort_unstable();
            let (lo, hi) = central_range(&spans, settings.level);
            interval(
                central.makespan,
                (lo, hi),
                settings.level,
                "draws",
                Some((lo, hi)),
                None,
            )
        });
        let method = if draws.is_empty() {
            format!(
                "{:.0} % percentile intervals of {} seeded resamples of the predicted \
                 requests (plays for job time); the fit's share is unknown: the profile \
                 has no uncertainty draws",
                settings.level * 100.0,
                settings.resamples
            )
        } else {
            format!(
                "{:.0} % percentile intervals over {} draws of the profile x {} seeded \
                 resamples of each plan's requests (plays for job time)",
                settings.level * 100.0,
                draws.len(),
                settings.resamples
            )
        };
        PredictionIntervals {
            level: settings.level,
            method,
            draws: draws.len() as u32,
            draws_in_profile: draws_in_profile as u32,
            resamples: settings.resamples,
            fit_known: !draws.is_empty(),
            ttft: rank_intervals(0),
            itl: rank_intervals(1),
            e2e: rank_intervals(2),
            job: rank_intervals(3),
            makespan,
        }
    }

    /// The console line saying how the intervals were made.
    pub fn describe(&self) -> String {
        let level = self.level * 100.0;
        if self.fit_known {
            let of = if self.draws < self.draws_in_profile {
                format!(" of {}", self.draws_in_profile)
            } else {
                String::new()
            };
            format!(
                "{level:.0} %: fit over {}{of} draws x {} resamples of the requests",
                self.draws, self.resamples
            )
        } else {
            format!(
                "{level:.0} %: {} resamples of the requests only; the fit's share is \
                 unknown (the profile has no uncertainty draws)",
                self.resamples
            )
        }
    }
}

/// The interval of percentile `RANKS[rank]` of figure `figure`.
fn rank_interval(
    central: &Figures,
    draws: &[Figures],
    figure: usize,
    rank: usize,
    settings: Settings,
) -> Interval {
    let q = RANKS[rank].1;
    let values = central.by_index(figure);
    let point = nearest_rank(values, q);
    let stream = (figure as u64, rank as u64);
    let mut uniforms = Uniforms::new(settings, q, stream);
    let mut sample: Vec<Nanos> = resampled(values, uniforms.of(values.len()));
    sample.sort_unstable();
    let sample_ends = central_range(&sample, settings.level);
    if draws.is_empty() {
        return interval(
            point,
            sample_ends,
            settings.level,
            "resamples (fit unknown)",
            None,
            Some(sample_ends),
        );
    }
    let mut fit: Vec<Nanos> = draws
        .iter()
        .map(|d| nearest_rank(d.by_index(figure), q))
        .collect();
    fit.sort_unstable();
    let mut pairs = Vec::with_capacity(draws.len() * settings.resamples as usize);
    for draw in draws {
        let values = draw.by_index(figure);
        pairs.extend(resampled(values, uniforms.of(values.len())));
    }
    pairs.sort_unstable();
    interval(
        point,
        central_range(&pairs, settings.level),
        settings.level,
        "draws x resamples",
        Some(central_range(&fit, settings.level)),
        Some(sample_ends),
    )
}

/// The seeded `Beta(k, n + 1 - k)` draws of one percentile's resamples,
/// kept for each `n` met (draws of one workload mostly share it), so
/// every draw is resampled by the same stream.
struct Uniforms {
    settings: Settings,
    q: f64,
    stream: (u64, u64),
    by_n: Vec<(usize, Vec<f64>)>,
}

impl Uniforms {
    fn new(settings: Settings, q: f64, stream: (u64, u64)) -> Uniforms {
        Uniforms {
            settings,
            q,
            stream,
            by_n: Vec::new(),
        }
    }

    /// The resamples' positions (in `0..1`) among `n` sorted values.
    fn of(&mut self, n: usize) -> &[f64] {
        if let Some(i) = self.by_n.iter().position(|(m, _)| *m == n) {
            return &self.by_n[i].1;
        }
        let mut rng = rng::stream(
            self.settings.seed,
            Purpose::PredictionInterval,
            self.stream.0,
            self.stream.1,
            0,
        );
        let k = nearest_rank_index(n.max(1), self.q) + 1;
        let draws = match Beta::new(k as f64, (n.max(1) + 1 - k) as f64) {
            Ok(beta) => (0..self.settings.resamples)
                .map(|_| beta.sample(&mut rng))
                .collect(),
            Err(_) => vec![0.0; self.settings.resamples as usize],
        };
        self.by_n.push((n, draws));
        &self.by_n.last().expect("just pushed").1
    }
}

/// The resampled percentiles of `sorted` at `positions`; none when empty.
fn resampled(sorted: &[Nanos], positions: &[f64]) -> Vec<Nanos> {
    let n = sorted.len();
    if n == 0 {
        return Vec::new();
    }
    positions
        .iter()
        .map(|u| sorted[((u * n as f64) as usize).min(n - 1)])
        .collect()
}

/// The interval around `point` (widened to hold it), in seconds.
fn interval(
    point: Nanos,
    (lo, hi): (Nanos, Nanos),
    level: f64,
    method: &str,
    fit: Option<(Nanos, Nanos)>,
    sample: Option<(Nanos, Nanos)>,
) -> Interval {
    let span = |(lo, hi): (Nanos, Nanos)| Span {
        lo_s: nanos_to_secs(lo),
        hi_s: nanos_to_secs(hi),
    };
    Interval {
        lo_s: nanos_to_secs(lo.min(point)),
        hi_s: nanos_to_secs(hi.max(point)),
        level,
        method: method.to_string(),
        fit: fit.map(span),
        sample: sample.map(span),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn settings() -> Settings {
        Settings {
            level: 0.9,
            resamples: RESAMPLES,
            seed: 7,
        }
    }

    /// 200 requests spread 1..200 ms (times `scale`), 20 plays.
    fn figures(scale: f64) -> Figures {
        let ms = |v: u64| (v as f64 * scale * MS as f64) as u64;
        Figures {
            ttft: (1..=200).map(ms).collect(),
            itl: (1..=200).map(|v| ms(v) / 10).collect(),
            e2e: (1..=200).map(|v| ms(v) * 3).collect(),
            job: (1..=20).map(|v| ms(v) * 50).collect(),
            makespan: ms(2_000),
        }
        .sorted()
    }

    fn width(i: &Interval) -> f64 {
        i.hi_s - i.lo_s
    }

    #[test]
    fn every_interval_holds_its_central_value() {
        let central = figures(1.0);
        let draws: Vec<Figures> = [0.9, 0.95, 1.0, 1.05, 1.1]
            .iter()
            .map(|&s| figures(s))
            .collect();
        for draws in [&draws[..], &[]] {
            let it = PredictionIntervals::new(&central, draws, draws.len(), settings());
            for (values, ranks) in [
                (&central.ttft, &it.ttft),
                (&central.itl, &it.itl),
                (&central.e2e, &it.e2e),
                (&central.job, &it.job),
            ] {
                for (i, q) in [(&ranks.p50, 0.5), (&ranks.p90, 0.9), (&ranks.p99, 0.99)] {
                    let point = nanos_to_secs(nearest_rank(values, q));
                    assert!(i.lo_s <= point && point <= i.hi_s, "{q}: {i:?}");
                    assert!(i.lo_s < i.hi_s, "a spread sample has width: {i:?}");
                }
            }
        }
    }

    #[test]
    fn spread_draws_widen_the_interval() {
        let central = figures(1.0);
        let narrow: Vec<Figures> = [0.99, 1.0, 1.01].iter().map(|&s| figures(s)).collect();
        let wide: Vec<Figures> = [0.7, 0.85, 1.0, 1.15, 1.3]
            .iter()
            .map(|&s| figures(s))
            .collect();
        let narrow = PredictionIntervals::new(&central, &narrow, 3, settings());
        let wide = PredictionIntervals::new(&central, &wide, 5, settings());
        assert!(width(&wide.ttft.p50) > 2.0 * width(&narrow.ttft.p50));
        assert!(width(&wide.job.p90) > width(&narrow.job.p90));
        let fit = wide.ttft.p50.fit.unwrap();
        assert!(fit.lo_s < 0.09 && fit.hi_s > 0.11, "{fit:?}");
        let makespan = wide.makespan.unwrap();
        assert!(makespan.lo_s <= 1.5 && makespan.hi_s >= 2.5, "{makespan:?}");
    }

    #[test]
    fn draws_equal_to_the_centre_leave_the_sample_share_alone() {
        let central = figures(1.0);
        let same = vec![central.clone(); 4];
        let with = PredictionIntervals::new(&central, &same, 4, settings());
        let without = PredictionIntervals::new(&central, &[], 0, settings());
        for (a, b) in [
            (&with.ttft.p50, &without.ttft.p50),
            (&with.e2e.p99, &without.e2e.p99),
            (&with.job.p90, &without.job.p90),
        ] {
            assert_eq!((a.lo_s, a.hi_s), (b.lo_s, b.hi_s));
            assert_eq!(a.sample, b.sample);
            let fit = a.fit.unwrap();
            assert_eq!(fit.lo_s, fit.hi_s, "no spread from the fit");
        }
        assert!(with.fit_known && !without.fit_known);
        assert!(without.ttft.p50.fit.is_none() && without.makespan.is_none());
        assert!(
            without.describe().contains("unknown"),
            "{}",
            without.describe()
        );
    }

    #[test]
    fn the_same_seed_gives_the_same_intervals_and_another_may_not() {
        let central = figures(1.0);
        let draws: Vec<Figures> = [0.9, 1.1].iter().map(|&s| figures(s)).collect();
        let a = PredictionIntervals::new(&central, &draws, 2, settings());
        assert_eq!(a, PredictionIntervals::new(&central, &draws, 2, settings()));
        let other = Settings {
            seed: 8,
            ..settings()
        };
        let b = PredictionIntervals::new(&central, &[], 0, other);
        let c = PredictionIntervals::new(&central, &[], 0, settings());
        assert_ne!(b.ttft, c.ttft);
    }

    #[test]
    fn a_higher_level_is_wider_and_no_values_give_a_point() {
        let central = figures(1.0);
        let at = |level| {
            PredictionIntervals::new(
                &central,
                &[],
                0,
                Settings {
                    level,
                    ..settings()
                },
            )
        };
        assert!(width(&at(0.99).e2e.p50) > width(&at(0.5).e2e.p50));
        let empty = PredictionIntervals::new(&Figures::default(), &[], 0, settings());
        assert_eq!((empty.itl.p99.lo_s, empty.itl.p99.hi_s), (0.0, 0.0));
    }
}
