//! The interval of a virtual point's bound reading (docs/capacity.md,
//! "Uncertainty: intervals on predictions"): the bound read again from
//! seeded resamples of the point's requests (and plays, for job bounds),
//! under the central profile and under each of its draws, and the
//! percentile interval of those readings. The resample `b` of every draw
//! takes the same request positions, so draws that do not differ from
//! the central profile leave the sample's share alone; without draws the
//! fit's share is unknown and the interval says so (`fit_known: false`).
//! Every reading goes through [`Observed::judge`], so a percentile that
//! falls on a failed request counts as it does in the verdict (the
//! interval is then open above: `hi_ns` null).
//!
//! Owns the arithmetic of [`ReadingInterval`] (the type is
//! [`crate::observed`]'s, beside the reading it bounds); which points get one is
//! [`crate::predict`]'s.

use crate::observed::{Observed, Reading, ReadingInterval};
use crate::slo::{Bound, Slo};
use arbor_engine::rng::{self, Purpose};
use arbor_engine::stats::central_range;
use arbor_engine::time::Nanos;
use rand::Rng;

/// Resamples of a point per draw (fewer than a plan's: a search reads
/// every bound at every load).
pub const RESAMPLES: u32 = 200;

/// How intervals are made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    pub level: f64,
    pub resamples: u32,
    pub seed: u64,
}

/// The interval of `bound`'s reading at a point observed as `central`,
/// with the same point under each draw (`draws`, empty: none in the
/// profile). `None` when the central reading has no value.
pub fn reading_interval(
    bound: &Bound,
    central: &Observed,
    draws: &[Observed],
    settings: Settings,
) -> Option<ReadingInterval> {
    let point = value(bound, central)?;
    let sources: Vec<&Observed> = if draws.is_empty() {
        vec![central]
    } else {
        draws.iter().collect()
    };
    // Failed readings sort last (`Nanos::MAX`).
    let mut readings = Vec::with_capacity(sources.len() * settings.resamples as usize);
    for observed in sources {
        let mut rng = rng::stream(settings.seed, Purpose::PredictionInterval, 0, 0, 1);
        for _ in 0..settings.resamples {
            let resample = resample(observed, &mut rng);
            readings.push(match read(bound, &resample) {
                Reading::Value(v) => v,
                Reading::Failed => Nanos::MAX,
                Reading::Missing => continue,
            });
        }
    }
    readings.sort_unstable();
    let (lo, hi) = central_range(&readings, settings.level);
    let fit_known = !draws.is_empty();
    Some(ReadingInterval {
        lo_ns: lo.min(point),
        hi_ns: (hi != Nanos::MAX).then_some(hi.max(point)),
        level: settings.level,
        method: if fit_known {
            "draws x resamples".to_string()
        } else {
            "resamples (fit unknown)".to_string()
        },
        fit_known,
    })
}

/// The bound's reading at `observed`, if a value.
fn value(bound: &Bound, observed: &Observed) -> Option<Nanos> {
    match read(bound, observed) {
        Reading::Value(v) => Some(v),
        _ => None,
    }
}

/// The bound read as the verdict reads it.
fn read(bound: &Bound, observed: &Observed) -> Reading {
    let slo = Slo {
        bounds: vec![bound.clone()],
        goodput: None,
    };
    observed.judge(&slo, 0).bounds[0].reading
}

/// `observed` with its requests and its plays' job times drawn again with
/// replacement (as many of each). The positions depend only on the
/// stream and the counts: every draw of a point is resampled alike.
fn resample(observed: &Observed, rng: &mut impl Rng) -> Observed {
    let mut out = observed.clone();
    let n = observed.requests.len();
    out.requests = (0..n)
        .map(|_| observed.requests[rng.random_range(0..n)].clone())
        .collect();
    let j = observed.jobs.len();
    out.jobs = (0..j)
        .map(|_| observed.jobs[rng.random_range(0..j)])
        .collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observed::{Gaps, RequestSeen};

    const MS: u64 = 1_000_000;

    fn settings() -> Settings {
        Settings {
            level: 0.9,
            resamples: RESAMPLES,
            seed: 3,
        }
    }

    fn observed(scale: f64) -> Observed {
        let requests = (1..=100)
            .map(|i| {
                let e2e = (i as f64 * scale) as u64 * MS;
                RequestSeen {
                    ok: true,
                    ttft: Some(e2e / 2),
                    tpot: None,
                    e2e,
                    gaps: Gaps::Even { gap: MS, count: 0 },
                }
            })
            .collect();
        Observed {
            requests,
            jobs: (1..=10)
                .map(|i| (i as f64 * scale) as u64 * 100 * MS)
                .collect(),
            flights: Vec::new(),
        }
    }

    fn bound(text: &str) -> Bound {
        Slo::parse(text).unwrap().bounds[0].clone()
    }

    #[test]
    fn the_interval_holds_the_reading_and_widens_with_the_draws() {
        let central = observed(1.0);
        let p90 = bound("e2e_p90<=1s");
        let alone = reading_interval(&p90, &central, &[], settings()).unwrap();
        let (lo, hi) = (alone.lo_ns, alone.hi_ns.unwrap());
        assert!(lo <= 90 * MS && 90 * MS <= hi && lo < hi, "{alone:?}");
        assert!(!alone.fit_known);
        let same = vec![central.clone(); 3];
        let zero = reading_interval(&p90, &central, &same, settings()).unwrap();
        assert_eq!((zero.lo_ns, zero.hi_ns), (alone.lo_ns, alone.hi_ns));
        assert!(zero.fit_known);
        let spread: Vec<Observed> = [0.7, 1.0, 1.3].iter().map(|&s| observed(s)).collect();
        let wide = reading_interval(&p90, &central, &spread, settings()).unwrap();
        assert!(wide.hi_ns.unwrap() - wide.lo_ns > hi - lo, "{wide:?}");
        assert_eq!(
            wide,
            reading_interval(&p90, &central, &spread, settings()).unwrap()
        );
        let job = reading_interval(&bound("job_p50<=1s"), &central, &[], settings()).unwrap();
        assert!(job.lo_ns <= 500 * MS && 500 * MS <= job.hi_ns.unwrap());
    }
}
