//! The headline metrics an aggregate spreads, and where each is in a
//! run's `summary.json`: TTFT, ITL, TPOT and E2E (mean, p50, p90, p99),
//! job time (mean, p50, p90, p99), request, input- and output-token
//! throughput, and the cache-hit ratio. Owns the table and reading a
//! metric's value out of a summary; no arithmetic (that is `stats`).

use serde_json::Value;

/// A headline metric: its name in `aggregate.json`, its JSON pointer in
/// `summary.json`, its unit, and, for a latency, the pointer of the count
/// that must be non-zero for the value to mean anything.
pub struct Headline {
    pub name: &'static str,
    pub pointer: &'static str,
    pub unit: &'static str,
    pub count: Option<&'static str>,
}

macro_rules! latency {
    ($metric:literal, $stat:literal) => {
        Headline {
            name: concat!($metric, "_", $stat),
            pointer: concat!("/latency/", $metric, "/", $stat, "_s"),
            unit: "s",
            count: Some(concat!("/latency/", $metric, "/count")),
        }
    };
}

macro_rules! latencies {
    ($($metric:literal),*) => {
        [$(
            latency!($metric, "mean"),
            latency!($metric, "p50"),
            latency!($metric, "p90"),
            latency!($metric, "p99"),
        )*]
    };
}

/// The latencies, in the order `aggregate.json`'s documentation lists them.
pub const LATENCIES: [Headline; 20] = latencies!("ttft", "itl", "tpot", "e2e", "job_time");

/// The throughputs and the cache-hit ratio.
pub const RATES: [Headline; 4] = [
    Headline {
        name: "request_throughput",
        pointer: "/throughput/requests_per_s",
        unit: "requests/s",
        count: None,
    },
    Headline {
        name: "input_token_throughput",
        pointer: "/throughput/input_tokens_per_s",
        unit: "tokens/s",
        count: None,
    },
    Headline {
        name: "output_token_throughput",
        pointer: "/throughput/output_tokens_per_s",
        unit: "tokens/s",
        count: None,
    },
    Headline {
        name: "cache_hit_ratio",
        pointer: "/cache/hit_ratio",
        unit: "ratio",
        count: None,
    },
];

impl Headline {
    /// The metric's value in one summary: `None` when it is missing or
    /// `null` (no cached tokens reported), or when its count is 0 (a
    /// latency over no requests).
    pub fn value(&self, summary: &Value) -> Option<f64> {
        if let Some(count) = self.count {
            if summary.pointer(count).and_then(Value::as_u64) == Some(0) {
                return None;
            }
        }
        summary.pointer(self.pointer).and_then(Value::as_f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_metric_over_no_requests_or_null_has_no_value() {
        let summary = serde_json::json!({
            "latency": {
                "ttft": {"count": 3, "p50_s": 0.25},
                "job_time": {"count": 0, "p50_s": 0.0}
            },
            "cache": {"hit_ratio": null}
        });
        let ttft_p50 = LATENCIES
            .iter()
            .find(|h| h.name == "ttft_p50")
            .expect("row");
        assert_eq!(ttft_p50.value(&summary), Some(0.25));
        let job_p50 = LATENCIES
            .iter()
            .find(|h| h.name == "job_time_p50")
            .expect("row");
        assert_eq!(job_p50.pointer, "/latency/job_time/p50_s");
        assert_eq!(job_p50.value(&summary), None);
        assert_eq!(RATES[3].value(&summary), None);
    }
}
