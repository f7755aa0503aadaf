//! The vocabulary of `compare` and of `--fail-on`: every metric compare
//! shows ([`Metric`]: its name, unit and which way is worse) and a
//! threshold on one ([`Threshold`], [`fail_on`] parsing one `--fail-on`
//! value; the front end hands it to its argument parser). Names and
//! parsing only: how a metric is read from a run directory is
//! `run_dir`'s, how a threshold is judged `gate`'s.
//!
//! The latencies and their figures are the run's vocabulary
//! ([`arbor_runs::metric`]); the names built from them are compare's own
//! (`ttft_p99`, `requests_per_s`, `errors`, ...), in milliseconds and
//! counts; the aggregate's headline metrics
//! (`arbor_runs::aggregate::metrics`) name a smaller set in seconds
//! (`request_throughput`, ...) for `aggregate.json`. Both are published
//! output, so each keeps its own names.

use std::fmt;

pub use arbor_runs::metric::{Latency, Stat};

/// One figure `compare` shows, in the order it shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Latency(Latency, Stat),
    RequestsPerS,
    InputTokensPerS,
    OutputTokensPerS,
    /// Failed requests (cancelled ones are not errors).
    Errors,
    /// Failed requests over dispatched ones, in percent.
    ErrorRate,
    /// The server-reported cache-hit ratio, in percent.
    CacheHitRatio,
    Dispatched,
    Ok,
    Cancelled,
    Skipped,
}

/// What a metric's values count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Ms,
    Count,
    RequestsPerS,
    TokensPerS,
    Percent,
}

impl Unit {
    pub fn name(self) -> &'static str {
        match self {
            Unit::Ms => "ms",
            Unit::Count => "count",
            Unit::RequestsPerS => "req/s",
            Unit::TokensPerS => "tok/s",
            Unit::Percent => "%",
        }
    }
}

/// Which way a metric gets worse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Worse {
    Higher,
    Lower,
    /// Neither (what the workload asked for): shown, never gated.
    Neither,
}

impl Metric {
    /// Every metric, in the order compare prints them.
    pub fn all() -> Vec<Metric> {
        let mut all: Vec<Metric> = Latency::ALL
            .iter()
            .flat_map(|&l| Stat::ALL.iter().map(move |&s| Metric::Latency(l, s)))
            .collect();
        all.extend([
            Metric::RequestsPerS,
            Metric::InputTokensPerS,
            Metric::OutputTokensPerS,
            Metric::Errors,
            Metric::ErrorRate,
            Metric::CacheHitRatio,
            Metric::Dispatched,
            Metric::Ok,
            Metric::Cancelled,
            Metric::Skipped,
        ]);
        all
    }

    pub fn unit(self) -> Unit {
        match self {
            Metric::Latency(..) => Unit::Ms,
            Metric::RequestsPerS => Unit::RequestsPerS,
            Metric::InputTokensPerS | Metric::OutputTokensPerS => Unit::TokensPerS,
            Metric::ErrorRate | Metric::CacheHitRatio => Unit::Percent,
            Metric::Errors
            | Metric::Dispatched
            | Metric::Ok
            | Metric::Cancelled
            | Metric::Skipped => Unit::Count,
        }
    }

    pub fn worse(self) -> Worse {
        match self {
            Metric::Latency(..)
            | Metric::Errors
            | Metric::ErrorRate
            | Metric::Cancelled
            | Metric::Skipped => Worse::Higher,
            Metric::RequestsPerS
            | Metric::InputTokensPerS
            | Metric::OutputTokensPerS
            | Metric::CacheHitRatio
            | Metric::Ok => Worse::Lower,
            Metric::Dispatched => Worse::Neither,
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Metric::Latency(l, s) => write!(f, "{}_{}", l.name(), s.name()),
            Metric::RequestsPerS => f.write_str("requests_per_s"),
            Metric::InputTokensPerS => f.write_str("input_tokens_per_s"),
            Metric::OutputTokensPerS => f.write_str("output_tokens_per_s"),
            Metric::Errors => f.write_str("errors"),
            Metric::ErrorRate => f.write_str("error_rate"),
            Metric::CacheHitRatio => f.write_str("cache_hit_ratio"),
            Metric::Dispatched => f.write_str("dispatched"),
            Metric::Ok => f.write_str("ok"),
            Metric::Cancelled => f.write_str("cancelled"),
            Metric::Skipped => f.write_str("skipped"),
        }
    }
}

/// How much worse NEW may be than BASE.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Allowance {
    /// Percent of BASE's value (`+10%`).
    Relative(f64),
    /// In the metric's unit (`+5`).
    Absolute(f64),
}

impl fmt::Display for Allowance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Allowance::Relative(p) => write!(f, "+{p}%"),
            Allowance::Absolute(a) => write!(f, "+{a}"),
        }
    }
}

/// `metric=+N%` or `metric=+N`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Threshold {
    pub metric: Metric,
    pub allowance: Allowance,
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.metric, self.allowance)
    }
}

/// The thresholds of one `--fail-on` value.
#[derive(Debug, Clone, PartialEq)]
pub struct Thresholds(pub Vec<Threshold>);

/// A `--fail-on` value: comma-separated `metric=+N%` or `metric=+N`.
pub fn fail_on(text: &str) -> Result<Thresholds, String> {
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim) {
        let Some((name, allowance)) = item.split_once('=') else {
            return Err(format!(
                "expected METRIC=+N% or METRIC=+N separated by commas (e.g. ttft_p99=+10%,errors=+0), got `{item}`"
            ));
        };
        out.push(Threshold {
            metric: gated_metric(name.trim())?,
            allowance: allowance_of(name.trim(), allowance.trim())?,
        });
    }
    Ok(Thresholds(out))
}

fn gated_metric(name: &str) -> Result<Metric, String> {
    let all = Metric::all();
    let Some(&metric) = all.iter().find(|m| m.to_string() == name) else {
        let names: Vec<String> = all
            .iter()
            .filter(|m| m.worse() != Worse::Neither)
            .map(Metric::to_string)
            .collect();
        return Err(format!(
            "unknown metric `{name}`; expected one of {}",
            names.join(", ")
        ));
    };
    if metric.worse() == Worse::Neither {
        return Err(format!(
            "`{name}` cannot be a threshold: neither way is worse (it is what the workload asked for)"
        ));
    }
    Ok(metric)
}

fn allowance_of(name: &str, text: &str) -> Result<Allowance, String> {
    let bad = || {
        format!(
            "expected +N% (relative) or +N (absolute, at least 0) after `{name}=`, got `{text}`"
        )
    };
    let unsigned = text.strip_prefix('+').unwrap_or(text);
    let (number, relative) = match unsigned.strip_suffix('%') {
        Some(n) => (n, true),
        None => (unsigned, false),
    };
    // `f64::from_str` takes `inf`, `NaN` and a sign: only digits and a point here.
    if number.is_empty() || !number.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(bad());
    }
    let value: f64 = number.parse().map_err(|_| bad())?;
    Ok(if relative {
        Allowance::Relative(value)
    } else {
        Allowance::Absolute(value)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_parse_relative_and_absolute() {
        let t = fail_on("ttft_p99=+10%, itl_p50=+5%,errors=+0,requests_per_s=2.5").unwrap();
        assert_eq!(
            t.0,
            vec![
                Threshold {
                    metric: Metric::Latency(Latency::Ttft, Stat::P99),
                    allowance: Allowance::Relative(10.0)
                },
                Threshold {
                    metric: Metric::Latency(Latency::Itl, Stat::P50),
                    allowance: Allowance::Relative(5.0)
                },
                Threshold {
                    metric: Metric::Errors,
                    allowance: Allowance::Absolute(0.0)
                },
                Threshold {
                    metric: Metric::RequestsPerS,
                    allowance: Allowance::Absolute(2.5)
                },
            ]
        );
        assert_eq!(t.0[0].to_string(), "ttft_p99=+10%");
    }

    #[test]
    fn bad_thresholds_say_what_was_expected() {
        for (text, needle) in [
            (
                "ttft_p42=+1%",
                "unknown metric `ttft_p42`; expected one of ttft_mean",
            ),
            ("ttft_p99", "expected METRIC=+N%"),
            ("ttft_p99=+x%", "expected +N% (relative)"),
            ("ttft_p99=-5%", "got `-5%`"),
            ("ttft_p99=inf", "got `inf`"),
            ("ttft_p99=", "got ``"),
            ("dispatched=+0", "neither way is worse"),
        ] {
            let err = fail_on(text).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn every_metric_name_parses_back() {
        for m in Metric::all() {
            if m.worse() != Worse::Neither {
                let t = fail_on(&format!("{m}=+1")).unwrap();
                assert_eq!(t.0[0].metric, m);
            }
        }
    }
}
