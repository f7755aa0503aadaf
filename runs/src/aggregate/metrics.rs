//! The headline metrics an aggregate spreads: TTFT, ITL, TPOT and E2E
//! (mean, p50, p90, p99), job time (mean, p50, p90, p99), request, input-
//! and output-token throughput, and the cache-hit ratio. Owns the table
//! (the names `aggregate.json` publishes, in its documented order);
//! reading a value is the vocabulary's ([`crate::metric`]), arithmetic is
//! `stats`'.

use crate::metric::{Latency, Rate, Stat};
use crate::output::Summary;

/// A headline metric: its name in `aggregate.json` and which figure of a
/// summary it is.
pub struct Headline {
    pub name: &'static str,
    pub of: Of,
}

/// Which figure of a summary a headline is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Of {
    /// In seconds.
    Latency(Latency, Stat),
    Rate(Rate),
}

macro_rules! latency {
    ($latency:ident, $name:literal, $stat:ident, $figure:literal) => {
        Headline {
            name: concat!($name, "_", $figure),
            of: Of::Latency(Latency::$latency, Stat::$stat),
        }
    };
}

macro_rules! latencies {
    ($($latency:ident $name:literal),*) => {
        [$(
            latency!($latency, $name, Mean, "mean"),
            latency!($latency, $name, P50, "p50"),
            latency!($latency, $name, P90, "p90"),
            latency!($latency, $name, P99, "p99"),
        )*]
    };
}

/// The latencies, in the order `aggregate.json`'s documentation lists them.
pub const LATENCIES: [Headline; 20] = latencies!(
    Ttft "ttft", Itl "itl", Tpot "tpot", E2e "e2e", JobTime "job_time"
);

/// The throughputs and the cache-hit ratio.
pub const RATES: [Headline; 4] = [
    Headline {
        name: "request_throughput",
        of: Of::Rate(Rate::Requests),
    },
    Headline {
        name: "input_token_throughput",
        of: Of::Rate(Rate::InputTokens),
    },
    Headline {
        name: "output_token_throughput",
        of: Of::Rate(Rate::OutputTokens),
    },
    Headline {
        name: "cache_hit_ratio",
        of: Of::Rate(Rate::CacheHits),
    },
];

impl Headline {
    /// Its unit in `aggregate.json`: seconds for a latency, the rate's own.
    pub fn unit(&self) -> &'static str {
        match self.of {
            Of::Latency(..) => "s",
            Of::Rate(rate) => rate.unit(),
        }
    }

    /// The values the metric can take, `(low, high)`: a latency or a
    /// throughput is never below 0, the cache-hit ratio never above 1.
    pub fn range(&self) -> (f64, f64) {
        match self.of {
            Of::Rate(Rate::CacheHits) => (0.0, 1.0),
            Of::Latency(..) | Of::Rate(_) => (0.0, f64::INFINITY),
        }
    }

    /// The metric's value in one summary: `None` for a latency over no
    /// values, or the cache-hit ratio of a server that reported no cached
    /// tokens.
    pub fn value(&self, summary: &Summary) -> Option<f64> {
        match self.of {
            Of::Latency(latency, stat) => latency.stat(summary, stat),
            Of::Rate(rate) => rate.of(summary),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_headline_is_named_after_the_figure_it_reads() {
        for h in LATENCIES.iter() {
            let Of::Latency(latency, stat) = h.of else {
                panic!("{} is not a latency", h.name)
            };
            assert_eq!(h.name, format!("{}_{}", latency.name(), stat.name()));
            assert_eq!(h.unit(), "s");
        }
        let units: Vec<&str> = RATES.iter().map(Headline::unit).collect();
        assert_eq!(units, ["requests/s", "tokens/s", "tokens/s", "ratio"]);
    }
}
