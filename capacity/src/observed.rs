//! What one load point measured (or predicted), whatever produced it, and
//! how it is judged against the SLOs: each bound's percentile (exact
//! nearest rank, as `summary.json` computes it), the goodput of requests
//! and of trees, and whether the point passes, or is too small to decide
//! (fewer successful requests than the probe needs: [`Verdict::too_small`]).
//! Owns the judging; knows nothing of run directories or the virtual
//! clock.
//!
//! A sampled point (a live probe: [`Observed::judge_sampled`]) is judged
//! on 95 % intervals rather than its readings alone
//! ([`crate::confidence`]): a percentile bound passes when the whole
//! order-statistic interval of the percentile meets it, fails when the
//! whole interval misses it, and is otherwise unresolved; with
//! `goodput>=G`, the Wilson interval of each goodput decides the same
//! way. A point with any bound unresolved (and none failed), or too small,
//! is [`Decision::Unresolved`].
//!
//! A failed request counts as an unbounded latency in every request
//! percentile and never meets a bound; cancelled requests and warmups are
//! not observations. A job is a play that ran all its turns (summary.json's
//! `job_time`).

use arbor_engine::stats::nearest_rank_index;
use arbor_engine::time::Nanos;
use serde::Serialize;

use crate::confidence::{self, LEVEL};
use crate::slo::{Bound, Metric, Slo};

/// The inter-token gaps of one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Gaps {
    /// `count` gaps of the same length (a prediction knows only the mean).
    Even { gap: Nanos, count: u64 },
    /// Every gap as measured.
    Listed(Vec<Nanos>),
}

/// One request as observed.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestSeen {
    /// False: it failed (no latency counts).
    pub ok: bool,
    pub ttft: Option<Nanos>,
    pub e2e: Nanos,
    /// `None` for a single-token answer.
    pub tpot: Option<Nanos>,
    pub gaps: Gaps,
}

impl RequestSeen {
    /// A failed request.
    pub fn failed() -> RequestSeen {
        RequestSeen {
            ok: false,
            ttft: None,
            e2e: 0,
            tpot: None,
            gaps: Gaps::Listed(Vec::new()),
        }
    }

    /// Whether the request meets `bound` on its own value.
    fn meets(&self, bound: &Bound) -> bool {
        if !self.ok {
            return false;
        }
        let within = |v: Nanos| v <= bound.limit;
        match bound.metric {
            Metric::Ttft => self.ttft.is_some_and(within),
            Metric::E2e => within(self.e2e),
            Metric::Tpot => self.tpot.is_none_or(within),
            Metric::Itl => match &self.gaps {
                Gaps::Even { gap, count } => *count == 0 || within(*gap),
                Gaps::Listed(gaps) if gaps.is_empty() => true,
                Gaps::Listed(gaps) => {
                    let mut own: Vec<(Nanos, u64)> = gaps.iter().map(|&g| (g, 1)).collect();
                    percentile(&mut own, bound.quantile).is_none_or(within)
                }
            },
            Metric::Job => true,
        }
    }
}

/// Everything one load point observed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    pub requests: Vec<RequestSeen>,
    /// Times of the plays that ran every turn.
    pub jobs: Vec<Nanos>,
    /// Every play as it flew, finished or not (the point in agents:
    /// [`crate::agents`]); empty when the probe does not say.
    pub flights: Vec<Flight>,
}

/// One play of a tree as it flew: its first request sent to its last
/// done, and each of its agents' (the top-level one and every subagent)
/// own first send to last done.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Flight {
    pub start: Nanos,
    pub end: Nanos,
    /// `(first sent, last done)` of each agent that sent a request.
    pub agents: Vec<(Nanos, Nanos)>,
}

/// A bound's percentile at one point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "ns")]
pub enum Reading {
    Value(Nanos),
    /// The percentile falls on a failed request.
    Failed,
    /// Nothing to measure (no request, or no gap).
    Missing,
}

/// One bound judged at one point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Judged {
    /// `ttft_p99`.
    pub metric: String,
    pub limit_ns: Nanos,
    pub reading: Reading,
    /// The reading meets the limit.
    pub pass: bool,
    /// The reading's interval (virtual probes: [`crate::interval`]);
    /// absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<ReadingInterval>,
    /// A sampled point's 95 % interval of the percentile (`None`: the
    /// point was not judged on intervals).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<Confidence>,
    /// What the bound decides: on a sampled point, from its interval;
    /// otherwise from its reading.
    pub decision: Decision,
}

/// A bound reading's interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReadingInterval {
    /// The ends in nanoseconds; `hi_ns` null when the upper end falls on
    /// a failed request. `lo_ns <= reading <= hi_ns`.
    pub lo_ns: Nanos,
    pub hi_ns: Option<Nanos>,
    /// Coverage, e.g. 0.9.
    pub level: f64,
    /// `draws x resamples` or `resamples (fit unknown)`.
    pub method: String,
    /// Whether the fit's share is in (false: the profile has no draws).
    pub fit_known: bool,
}

/// A verdict that may be left open: a sampled point whose interval
/// straddles a limit, or that is too small, neither passes nor fails.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Pass,
    #[default]
    Fail,
    Unresolved,
}

impl Decision {
    /// Every part passes: a pass; any fails: a failure; else unresolved.
    fn all(parts: impl IntoIterator<Item = Decision>) -> Decision {
        let mut all = Decision::Pass;
        for part in parts {
            match part {
                Decision::Fail => return Decision::Fail,
                Decision::Unresolved => all = Decision::Unresolved,
                Decision::Pass => {}
            }
        }
        all
    }

    /// `pass`, `FAIL` or `unresolved`, as the console and the page say it.
    pub fn word(self) -> &'static str {
        match self {
            Decision::Pass => "pass",
            Decision::Fail => "FAIL",
            Decision::Unresolved => "unresolved",
        }
    }
}

/// A percentile's 95 % distribution-free interval: the observations at
/// two ranks ([`confidence::quantile_ranks`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Confidence {
    /// 0.95.
    pub level: f64,
    /// The reading at the low rank (`None`: unbounded below, too few
    /// observations).
    pub lo: Option<Reading>,
    /// The reading at the high rank (`None`: unbounded above, too few
    /// observations for this percentile).
    pub hi: Option<Reading>,
    /// The two 1-based ranks, 0 and `of + 1` for an unbounded end.
    pub ranks: [u64; 2],
    /// How many observations the percentile is over (gaps for `itl`).
    pub of: u64,
}

/// One point judged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub bounds: Vec<Judged>,
    /// Share of requests meeting every request bound (`None`: no request
    /// bound, or no request).
    pub request_goodput: Option<f64>,
    /// Share of trees meeting every job bound (`None`: no job bound, or
    /// no complete tree).
    pub job_goodput: Option<f64>,
    pub requests: u64,
    pub failed: u64,
    /// Requests that succeeded: what the percentiles rest on.
    pub measured: u64,
    pub jobs: u64,
    /// Fewer requests succeeded than the probe needs
    /// ([`crate::Probe::min_measured`], `--min-requests`): the point's
    /// readings are shown, but it neither passes nor fails, and a search
    /// stops at it unresolved.
    pub too_small: bool,
    pub pass: bool,
    /// Pass, fail, or unresolved (too small, or a sampled point whose
    /// intervals straddle a limit).
    pub decision: Decision,
    /// A sampled point's 95 % Wilson interval of `request_goodput`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_goodput_interval: Option<[f64; 2]>,
    /// A sampled point's 95 % Wilson interval of `job_goodput`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_goodput_interval: Option<[f64; 2]>,
}

impl Observed {
    /// Judges the point against `slo`; with fewer than `min_measured`
    /// successful requests it is too small to decide (never a pass).
    pub fn judge(&self, slo: &Slo, min_measured: u64) -> Verdict {
        let bounds: Vec<Judged> = slo
            .bounds
            .iter()
            .map(|bound| {
                let reading = self.reading(bound);
                let pass = matches!(reading, Reading::Value(v) if v <= bound.limit);
                Judged {
                    metric: bound.name(),
                    limit_ns: bound.limit,
                    reading,
                    pass,
                    confidence: None,
                    decision: if pass { Decision::Pass } else { Decision::Fail },
                    interval: None,
                }
            })
            .collect();
        let request_bounds: Vec<&Bound> = slo
            .bounds
            .iter()
            .filter(|b| b.metric.of_requests())
            .collect();
        let job_bounds: Vec<&Bound> = slo
            .bounds
            .iter()
            .filter(|b| !b.metric.of_requests())
            .collect();
        let request_goodput = (!request_bounds.is_empty())
            .then(|| {
                share(
                    self.requests
                        .iter()
                        .filter(|r| request_bounds.iter().all(|b| r.meets(b)))
                        .count(),
                    self.requests.len(),
                )
            })
            .flatten();
        let job_goodput = (!job_bounds.is_empty())
            .then(|| {
                share(
                    self.jobs
                        .iter()
                        .filter(|&&j| job_bounds.iter().all(|b| j <= b.limit))
                        .count(),
                    self.jobs.len(),
                )
            })
            .flatten();
        let pass = match slo.goodput {
            None => bounds.iter().all(|b| b.pass),
            Some(threshold) => {
                let holds = |has: bool, goodput: Option<f64>| {
                    !has || goodput.is_some_and(|g| g >= threshold)
                };
                holds(!request_bounds.is_empty(), request_goodput)
                    && holds(!job_bounds.is_empty(), job_goodput)
            }
        };
        let failed = self.requests.iter().filter(|r| !r.ok).count() as u64;
        let measured = self.requests.len() as u64 - failed;
        let too_small = measured < min_measured;
        let pass = pass && !self.requests.is_empty() && !too_small;
        Verdict {
            bounds,
            request_goodput,
            job_goodput,
            requests: self.requests.len() as u64,
            failed,
            measured,
            jobs: self.jobs.len() as u64,
            too_small,
            pass,
            decision: match (pass, too_small) {
                (true, _) => Decision::Pass,
                (false, true) => Decision::Unresolved,
                (false, false) => Decision::Fail,
            },
            request_goodput_interval: None,
            job_goodput_interval: None,
        }
    }

    /// Judges a sampled point (a live probe) on 95 % intervals: each
    /// bound's percentile interval, or with `goodput>=G` each goodput's
    /// Wilson interval, must lie wholly within the bound to pass and
    /// wholly outside to fail; otherwise, or with fewer than
    /// `min_measured` successful requests, the point is unresolved. The
    /// readings are as [`Observed::judge`] gives them.
    pub fn judge_sampled(&self, slo: &Slo, min_measured: u64) -> Verdict {
        let mut verdict = self.judge(slo, min_measured);
        for (judged, bound) in verdict.bounds.iter_mut().zip(&slo.bounds) {
            let mut weighted = self.weighted(bound);
            weighted.sort_unstable();
            let of: u64 = weighted.iter().map(|&(_, w)| w).sum();
            let (lo, hi) = confidence::quantile_ranks(of, bound.quantile);
            let end = |rank: u64| -> Option<Reading> {
                (rank >= 1 && rank <= of).then(|| match at_rank(&weighted, rank) {
                    Nanos::MAX => Reading::Failed,
                    v => Reading::Value(v),
                })
            };
            let confidence = Confidence {
                level: LEVEL,
                lo: end(lo),
                hi: end(hi),
                ranks: [lo, hi],
                of,
            };
            let meets =
                |r: Option<Reading>| matches!(r, Some(Reading::Value(v)) if v <= bound.limit);
            judged.decision = if meets(confidence.hi) {
                Decision::Pass
            } else if matches!(confidence.lo, Some(Reading::Failed))
                || matches!(confidence.lo, Some(Reading::Value(v)) if v > bound.limit)
            {
                Decision::Fail
            } else {
                Decision::Unresolved
            };
            judged.confidence = Some(confidence);
        }
        let count = |of_requests: bool| {
            slo.bounds
                .iter()
                .any(|b| b.metric.of_requests() == of_requests)
        };
        let trials = |goodput: Option<f64>, n: usize| {
            goodput.and_then(|g| confidence::wilson((g * n as f64).round() as u64, n as u64))
        };
        verdict.request_goodput_interval = trials(verdict.request_goodput, self.requests.len());
        verdict.job_goodput_interval = trials(verdict.job_goodput, self.jobs.len());
        let by_goodput = |has: bool, interval: Option<[f64; 2]>, threshold: f64| match interval {
            _ if !has => Decision::Pass,
            None => Decision::Unresolved,
            Some([lo, _]) if lo >= threshold => Decision::Pass,
            Some([_, hi]) if hi < threshold => Decision::Fail,
            Some(_) => Decision::Unresolved,
        };
        let decision = match slo.goodput {
            None => Decision::all(verdict.bounds.iter().map(|b| b.decision)),
            Some(threshold) => Decision::all([
                by_goodput(count(true), verdict.request_goodput_interval, threshold),
                by_goodput(count(false), verdict.job_goodput_interval, threshold),
            ]),
        };
        verdict.decision = if verdict.too_small || self.requests.is_empty() {
            Decision::Unresolved
        } else {
            decision
        };
        verdict.pass = verdict.decision == Decision::Pass;
        verdict
    }

    /// The percentile a bound is on.
    fn reading(&self, bound: &Bound) -> Reading {
        let mut weighted = self.weighted(bound);
        match percentile(&mut weighted, bound.quantile) {
            None => Reading::Missing,
            Some(Nanos::MAX) => Reading::Failed,
            Some(v) => Reading::Value(v),
        }
    }

    /// The observations a bound's percentile is over, each with its
    /// weight (a failed request is `Nanos::MAX`), unsorted.
    fn weighted(&self, bound: &Bound) -> Vec<(Nanos, u64)> {
        let mut weighted: Vec<(Nanos, u64)> = Vec::new();
        let failed = (Nanos::MAX, 1);
        match bound.metric {
            Metric::Job => weighted.extend(self.jobs.iter().map(|&j| (j, 1))),
            Metric::Itl => {
                for r in &self.requests {
                    match (&r.gaps, r.ok) {
                        (_, false) => weighted.push(failed),
                        (Gaps::Even { gap, count }, true) if *count > 0 => {
                            weighted.push((*gap, *count));
                        }
                        (Gaps::Even { .. }, true) => {}
                        (Gaps::Listed(gaps), true) => {
                            weighted.extend(gaps.iter().map(|&g| (g, 1)));
                        }
                    }
                }
            }
            Metric::Ttft | Metric::Tpot | Metric::E2e => {
                for r in &self.requests {
                    let value = match bound.metric {
                        Metric::Ttft => r.ttft,
                        Metric::Tpot => r.tpot,
                        _ => Some(r.e2e),
                    };
                    match (r.ok, value) {
                        (false, _) => weighted.push(failed),
                        (true, Some(v)) => weighted.push((v, 1)),
                        (true, None) => {}
                    }
                }
            }
        }
        weighted
    }
}

/// The value at 1-based `rank` of sorted weighted values (a value of
/// weight k holds k ranks); the last value past the end.
fn at_rank(sorted: &[(Nanos, u64)], rank: u64) -> Nanos {
    let mut below = 0u64;
    for &(value, weight) in sorted {
        below += weight;
        if below >= rank {
            return value;
        }
    }
    sorted.last().map_or(0, |&(v, _)| v)
}

/// The nearest-rank `quantile` of values with weights (a value of weight
/// k counts k times); sorts in place. `None` when empty.
fn percentile(weighted: &mut [(Nanos, u64)], quantile: f64) -> Option<Nanos> {
    weighted.sort_unstable();
    let total: u64 = weighted.iter().map(|&(_, w)| w).sum();
    if total == 0 {
        return None;
    }
    let rank = nearest_rank_index(usize::try_from(total).unwrap_or(usize::MAX), quantile) as u64;
    let mut below = 0u64;
    for &(value, weight) in weighted.iter() {
        below += weight;
        if below > rank {
            return Some(value);
        }
    }
    weighted.last().map(|&(v, _)| v)
}

fn share(part: usize, whole: usize) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn ok(ttft_ms: u64, gap_ms: u64, gaps: u64) -> RequestSeen {
        RequestSeen {
            ok: true,
            ttft: Some(ttft_ms * MS),
            e2e: (ttft_ms + gap_ms * gaps) * MS,
            tpot: (gaps > 0).then_some(gap_ms * MS),
            gaps: Gaps::Even {
                gap: gap_ms * MS,
                count: gaps,
            },
        }
    }

    #[test]
    fn weighted_nearest_rank_counts_each_weight() {
        let mut v = vec![(5, 1), (1, 8), (9, 1)];
        assert_eq!(percentile(&mut v, 0.5), Some(1));
        assert_eq!(percentile(&mut v, 0.8), Some(1));
        assert_eq!(percentile(&mut v, 0.9), Some(5));
        assert_eq!(percentile(&mut v, 0.99), Some(9));
        assert_eq!(percentile(&mut [], 0.5), None);
    }

    #[test]
    fn percentiles_goodput_and_the_verdict() {
        let observed = Observed {
            requests: (0..10)
                .map(|i| ok(100 * (i + 1), 10, 9))
                .chain([RequestSeen::failed()])
                .collect(),
            jobs: vec![10 * MS, 30 * MS],
            flights: Vec::new(),
        };
        let slo = Slo::parse("ttft_p50<=1s,itl_p90<=10ms,job_p50<=20ms").unwrap();
        let v = observed.judge(&slo, 0);
        assert_eq!(v.bounds[0].reading, Reading::Value(600 * MS));
        assert!(v.bounds[0].pass);
        // 90 gaps of 10 ms and one failed request: p90 is a gap.
        assert_eq!(v.bounds[1].reading, Reading::Value(10 * MS));
        assert_eq!(v.bounds[2].reading, Reading::Value(10 * MS));
        assert!(v.pass);
        assert_eq!(v.request_goodput, Some(10.0 / 11.0));
        assert_eq!(v.job_goodput, Some(0.5));
        assert_eq!((v.requests, v.failed, v.jobs), (11, 1, 2));

        // The p99 of TTFT falls on the failed request.
        let v = observed.judge(&Slo::parse("ttft_p99<=10s").unwrap(), 0);
        assert_eq!(v.bounds[0].reading, Reading::Failed);
        assert!(!v.pass);
        // With a goodput threshold the percentiles no longer decide.
        let v = observed.judge(&Slo::parse("ttft_p99<=500ms,goodput>=0.45").unwrap(), 0);
        assert_eq!(v.request_goodput, Some(5.0 / 11.0));
        assert!(v.pass);
        let v = observed.judge(&Slo::parse("ttft_p99<=500ms,goodput>=0.5").unwrap(), 0);
        assert!(!v.pass);
    }

    #[test]
    fn nothing_observed_never_passes() {
        let v = Observed::default().judge(&Slo::parse("e2e_p50<=1s").unwrap(), 0);
        assert_eq!(v.bounds[0].reading, Reading::Missing);
        assert!(!v.pass);
    }

    #[test]
    fn fewer_successful_requests_than_needed_is_too_small_to_decide() {
        let slo = Slo::parse("ttft_p50<=1s").unwrap();
        // Two fast requests and one failure: the SLO holds on what there
        // is, but two measured requests decide nothing.
        let observed = Observed {
            requests: vec![ok(100, 10, 9), ok(100, 10, 9), RequestSeen::failed()],
            jobs: Vec::new(),
            flights: Vec::new(),
        };
        let v = observed.judge(&slo, 20);
        assert_eq!((v.requests, v.failed, v.measured), (3, 1, 2));
        assert!(v.too_small);
        assert!(!v.pass);
        assert!(v.bounds[0].pass, "the readings stay as measured");
        // Failures do not count towards the minimum; enough successes do.
        let v = observed.judge(&slo, 3);
        assert!(v.too_small);
        let v = observed.judge(&slo, 2);
        assert!(!v.too_small);
        assert!(v.pass);
        // No minimum: the verdict as before.
        assert!(!observed.judge(&slo, 0).too_small);
    }

    #[test]
    fn a_sampled_point_decides_on_its_intervals() {
        // 20 fast requests: the p50's interval (6th to 15th) meets 1 s,
        // but the p90's has no upper end: it cannot pass on 20.
        let fast = Observed {
            requests: (1..=20).map(|i| ok(10 * i, 1, 1)).collect(),
            jobs: Vec::new(),
            flights: Vec::new(),
        };
        let v = fast.judge_sampled(&Slo::parse("ttft_p50<=1s").unwrap(), 0);
        let c = v.bounds[0].confidence.unwrap();
        assert_eq!(c.ranks, [6, 15]);
        assert_eq!(
            (c.lo, c.hi),
            (
                Some(Reading::Value(60 * MS)),
                Some(Reading::Value(150 * MS))
            )
        );
        assert_eq!(v.decision, Decision::Pass);
        assert!(v.pass);
        let v = fast.judge_sampled(&Slo::parse("ttft_p90<=1s").unwrap(), 0);
        assert_eq!(v.bounds[0].confidence.unwrap().hi, None);
        assert_eq!(v.decision, Decision::Unresolved);
        assert!(v.bounds[0].pass, "the reading itself meets it");
        assert!(!v.pass);
        // A limit below the 6th: the whole interval misses it.
        let v = fast.judge_sampled(&Slo::parse("ttft_p50<=50ms").unwrap(), 0);
        assert_eq!(v.decision, Decision::Fail);
        // Between the 6th and the 15th: unresolved.
        let v = fast.judge_sampled(&Slo::parse("ttft_p50<=100ms").unwrap(), 0);
        assert_eq!(v.decision, Decision::Unresolved);
        // Failed requests are unbounded latencies: with 15 of 20 failed,
        // the p50's low end falls on a failure and the bound fails.
        let failing = Observed {
            requests: (1..=5)
                .map(|i| ok(10 * i, 1, 1))
                .chain((0..15).map(|_| RequestSeen::failed()))
                .collect(),
            jobs: Vec::new(),
            flights: Vec::new(),
        };
        let v = failing.judge_sampled(&Slo::parse("ttft_p50<=1s").unwrap(), 0);
        assert_eq!(v.bounds[0].confidence.unwrap().lo, Some(Reading::Failed));
        assert_eq!(v.decision, Decision::Fail);
        // Too small is unresolved whatever the intervals say.
        let v = fast.judge_sampled(&Slo::parse("ttft_p50<=1s").unwrap(), 21);
        assert!(v.too_small);
        assert_eq!(v.decision, Decision::Unresolved);
    }
}
