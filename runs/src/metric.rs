//! The metric vocabulary of a run, declared once: its latency
//! distributions ([`Latency`]), the figures of one ([`Stat`]) and its
//! rates ([`Rate`]), each with its name and where it sits in a typed
//! [`Summary`]. `compare` (and `--fail-on`), `aggregate` and the spread
//! page all name their metrics from here, so none of them spells a JSON
//! path of `summary.json`.

use crate::collector::Latency as Distribution;
use crate::output::Summary;

/// A latency distribution of a run (`summary.json`'s `latency.*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Latency {
    Ttft,
    Itl,
    Tpot,
    E2e,
    Lateness,
    QueueWait,
    JobTime,
}

impl Latency {
    pub const ALL: [Latency; 7] = [
        Latency::Ttft,
        Latency::Itl,
        Latency::Tpot,
        Latency::E2e,
        Latency::Lateness,
        Latency::QueueWait,
        Latency::JobTime,
    ];

    /// Its key under `latency` in `summary.json`.
    pub fn name(self) -> &'static str {
        match self {
            Latency::Ttft => "ttft",
            Latency::Itl => "itl",
            Latency::Tpot => "tpot",
            Latency::E2e => "e2e",
            Latency::Lateness => "lateness",
            Latency::QueueWait => "queue_wait",
            Latency::JobTime => "job_time",
        }
    }

    /// Its distribution in a summary.
    pub fn of(self, summary: &Summary) -> &Distribution {
        let l = &summary.latency;
        match self {
            Latency::Ttft => &l.ttft,
            Latency::Itl => &l.itl,
            Latency::Tpot => &l.tpot,
            Latency::E2e => &l.e2e,
            Latency::Lateness => &l.lateness,
            Latency::QueueWait => &l.queue_wait,
            Latency::JobTime => &l.job_time,
        }
    }

    /// A figure of its distribution in seconds; `None` over no values
    /// (a latency of no request, job time without a complete play).
    pub fn stat(self, summary: &Summary, stat: Stat) -> Option<f64> {
        let d = self.of(summary);
        (d.count > 0).then(|| stat.of(d))
    }
}

/// Which figure of a latency distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stat {
    Mean,
    P50,
    P90,
    P99,
}

impl Stat {
    pub const ALL: [Stat; 4] = [Stat::Mean, Stat::P50, Stat::P90, Stat::P99];

    pub fn name(self) -> &'static str {
        match self {
            Stat::Mean => "mean",
            Stat::P50 => "p50",
            Stat::P90 => "p90",
            Stat::P99 => "p99",
        }
    }

    /// The quantile of a percentile; `None` for the mean.
    pub fn quantile(self) -> Option<f64> {
        match self {
            Stat::Mean => None,
            Stat::P50 => Some(0.50),
            Stat::P90 => Some(0.90),
            Stat::P99 => Some(0.99),
        }
    }

    /// This figure of a distribution, in seconds.
    pub fn of(self, d: &Distribution) -> f64 {
        match self {
            Stat::Mean => d.mean_s,
            Stat::P50 => d.p50_s,
            Stat::P90 => d.p90_s,
            Stat::P99 => d.p99_s,
        }
    }
}

/// A rate of a run: its throughputs and the server-reported cache-hit
/// ratio.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rate {
    Requests,
    InputTokens,
    OutputTokens,
    CacheHits,
}

impl Rate {
    pub const ALL: [Rate; 4] = [
        Rate::Requests,
        Rate::InputTokens,
        Rate::OutputTokens,
        Rate::CacheHits,
    ];

    /// Its value in a summary, in [`Rate::unit`]; `None` for the cache-hit
    /// ratio when the server reported no cached tokens.
    pub fn of(self, summary: &Summary) -> Option<f64> {
        let work = &summary.throughput.work;
        match self {
            Rate::Requests => Some(work.requests_per_s),
            Rate::InputTokens => Some(work.input_tokens_per_s),
            Rate::OutputTokens => Some(work.output_tokens_per_s),
            Rate::CacheHits => summary.cache.hit_ratio,
        }
    }

    /// `requests/s`, `tokens/s`, or `ratio` (0 to 1).
    pub fn unit(self) -> &'static str {
        match self {
            Rate::Requests => "requests/s",
            Rate::InputTokens | Rate::OutputTokens => "tokens/s",
            Rate::CacheHits => "ratio",
        }
    }
}
