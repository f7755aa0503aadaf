//! The `--slo` grammar: comma-separated clauses `METRIC_pNN<=DURATION`
//! (metrics `ttft`, `itl`, `tpot`, `e2e`, `job`; percentiles `p50` to
//! `p99.9`) and at most one `goodput>=SHARE`. Owns parsing and the words
//! of its errors (each names the clause and what was expected); judges
//! nothing (that is [`crate::observed`]).

use std::fmt;

use arbor_engine::policy::parse_duration;
use arbor_engine::time::{Nanos, NANOS_PER_MS, NANOS_PER_SEC};

/// What a bound is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Metric {
    /// Time to first token of a request.
    Ttft,
    /// Inter-token gaps: the percentile over every gap of every request;
    /// a request meets the bound when that percentile of its own gaps does.
    Itl,
    /// Time per output token after the first, one value a request.
    Tpot,
    /// A request's latency, sent to last byte.
    E2e,
    /// A tree's time (one play), its first request sent to its last done.
    Job,
}

impl Metric {
    const ALL: [(Metric, &'static str); 5] = [
        (Metric::Ttft, "ttft"),
        (Metric::Itl, "itl"),
        (Metric::Tpot, "tpot"),
        (Metric::E2e, "e2e"),
        (Metric::Job, "job"),
    ];

    pub fn name(self) -> &'static str {
        Metric::ALL
            .iter()
            .find(|(m, _)| *m == self)
            .map_or("?", |(_, name)| name)
    }

    /// Whether the metric is of requests (else of trees).
    pub fn of_requests(self) -> bool {
        self != Metric::Job
    }

    /// Whether the metric needs a first-token time (a recorded service
    /// time has none).
    pub fn needs_first_token(self) -> bool {
        matches!(self, Metric::Ttft | Metric::Itl | Metric::Tpot)
    }
}

/// One `METRIC_pNN<=DURATION` clause.
#[derive(Debug, Clone, PartialEq)]
pub struct Bound {
    pub metric: Metric,
    /// The percentile as written (`99`, `99.9`), for names.
    pub percentile_text: String,
    /// The percentile as a fraction (0.99).
    pub quantile: f64,
    pub limit: Nanos,
}

impl Bound {
    /// `ttft_p99`.
    pub fn name(&self) -> String {
        format!("{}_p{}", self.metric.name(), self.percentile_text)
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}<={}", self.name(), show_duration(self.limit))
    }
}

/// Every clause of `--slo`.
#[derive(Debug, Clone, PartialEq)]
pub struct Slo {
    /// In the order given.
    pub bounds: Vec<Bound>,
    /// `goodput>=G`: a point passes when the share of requests (and of
    /// trees) meeting every bound of their kind is at least G. `None`:
    /// every percentile bound must hold.
    pub goodput: Option<f64>,
}

impl Slo {
    /// Parses `--slo`'s text. The error names the clause.
    pub fn parse(text: &str) -> Result<Slo, String> {
        let mut slo = Slo {
            bounds: Vec::new(),
            goodput: None,
        };
        for clause in text.split(',').map(str::trim) {
            if clause.is_empty() {
                return Err(format!(
                    "`{text}`: an empty clause; expected comma-separated clauses such as \
                     ttft_p99<=2s,itl_p99<=80ms,job_p90<=120s"
                ));
            }
            if let Some(share) = clause.strip_prefix("goodput>=") {
                if slo.goodput.is_some() {
                    return Err(format!("`{clause}`: goodput is given twice"));
                }
                slo.goodput = Some(goodput(clause, share)?);
                continue;
            }
            let bound = bound(clause)?;
            if slo.bounds.iter().any(|b| b.name() == bound.name()) {
                return Err(format!("`{clause}`: {} is given twice", bound.name()));
            }
            slo.bounds.push(bound);
        }
        if slo.bounds.is_empty() {
            return Err(format!(
                "`{text}`: no latency bound; expected at least one clause such as ttft_p99<=2s"
            ));
        }
        Ok(slo)
    }
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut clauses: Vec<String> = self.bounds.iter().map(Bound::to_string).collect();
        if let Some(g) = self.goodput {
            clauses.push(format!("goodput>={g}"));
        }
        write!(f, "{}", clauses.join(","))
    }
}

fn goodput(clause: &str, share: &str) -> Result<f64, String> {
    match share.trim().parse::<f64>() {
        Ok(g) if (0.0..=1.0).contains(&g) => Ok(g),
        _ => Err(format!(
            "`{clause}`: expected goodput>=SHARE with SHARE from 0 to 1 (e.g. goodput>=0.95)"
        )),
    }
}

fn bound(clause: &str) -> Result<Bound, String> {
    let expected = "expected METRIC_pNN<=DURATION (METRIC one of ttft, itl, tpot, e2e, job; \
                    pNN from p50 to p99.9; e.g. ttft_p99<=2s), or goodput>=SHARE";
    let Some((name, limit)) = clause.split_once("<=") else {
        return Err(format!("`{clause}`: {expected}"));
    };
    let Some((metric, percentile)) = name.trim().rsplit_once("_p") else {
        return Err(format!("`{clause}`: {expected}"));
    };
    let Some(metric) = Metric::ALL
        .iter()
        .find(|(_, n)| *n == metric)
        .map(|(m, _)| *m)
    else {
        return Err(format!(
            "`{clause}`: unknown metric `{metric}`; expected ttft, itl, tpot, e2e or job"
        ));
    };
    let quantile = match percentile.parse::<f64>() {
        Ok(p) if (50.0..=99.9).contains(&p) && !percentile.starts_with('+') => p / 100.0,
        _ => {
            return Err(format!(
                "`{clause}`: unknown percentile `p{percentile}`; expected p50 to p99.9 (e.g. p90, p99, p99.9)"
            ))
        }
    };
    let limit = parse_duration(limit).map_err(|e| format!("`{clause}`: {e}"))?;
    if limit == 0 {
        return Err(format!("`{clause}`: expected a bound above 0"));
    }
    Ok(Bound {
        metric,
        percentile_text: percentile.to_string(),
        quantile,
        limit,
    })
}

/// `2s`, `80ms`, `1.5s`: a duration as a clause shows it.
pub fn show_duration(ns: Nanos) -> String {
    if ns.is_multiple_of(NANOS_PER_SEC) {
        format!("{}s", ns / NANOS_PER_SEC)
    } else if ns.is_multiple_of(NANOS_PER_MS) {
        format!("{}ms", ns / NANOS_PER_MS)
    } else {
        format!("{}ms", ns as f64 / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clauses_parse() {
        let slo = Slo::parse("ttft_p99<=2s, itl_p99<=80ms,job_p90<=120s,goodput>=0.95").unwrap();
        assert_eq!(slo.bounds.len(), 3);
        assert_eq!(slo.bounds[0].metric, Metric::Ttft);
        assert_eq!(slo.bounds[0].limit, 2_000_000_000);
        assert_eq!(slo.bounds[1].limit, 80_000_000);
        assert_eq!(slo.bounds[2].name(), "job_p90");
        assert_eq!(slo.goodput, Some(0.95));
        assert_eq!(
            slo.to_string(),
            "ttft_p99<=2s,itl_p99<=80ms,job_p90<=120s,goodput>=0.95"
        );
        let slo = Slo::parse("e2e_p99.9<=1.5").unwrap();
        assert!((slo.bounds[0].quantile - 0.999).abs() < 1e-12);
        assert_eq!(slo.bounds[0].to_string(), "e2e_p99.9<=1500ms");
    }

    #[test]
    fn errors_name_the_clause() {
        for (text, needle) in [
            ("ttfb_p99<=2s", "unknown metric `ttfb`"),
            ("ttft_p100<=2s", "unknown percentile `p100`"),
            ("ttft_p40<=2s", "p50 to p99.9"),
            (
                "ttft_p99<2s",
                "`ttft_p99<2s`: expected METRIC_pNN<=DURATION",
            ),
            ("ttft_p99<=2 parsecs", "`ttft_p99<=2 parsecs`"),
            ("ttft_p99<=0", "above 0"),
            ("ttft_p99<=1s,,itl_p50<=1s", "empty clause"),
            ("goodput>=1.5", "SHARE from 0 to 1"),
            ("goodput>=0.9", "no latency bound"),
            ("ttft_p99<=1s,ttft_p99<=2s", "given twice"),
        ] {
            let e = Slo::parse(text).unwrap_err();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }
}
