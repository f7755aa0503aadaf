//! [`Work`]: requests and tokens over a window, and their rates. One
//! shape for the load a plan puts on a server (`plan --json`'s `demand`)
//! and what a run's server did (`summary.json`'s `throughput`).

use arbor_engine::time::{nanos_to_secs, Nanos};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Requests and tokens over a window, and their rates: the load a plan
/// puts on a server (`demand`), or what a run's server did (`throughput`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Work {
    pub requests: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub requests_per_s: f64,
    pub input_tokens_per_s: f64,
    pub output_tokens_per_s: f64,
}

impl Work {
    /// The counts over `window` nanoseconds (rates 0 for an empty window).
    pub fn over(window: Nanos, requests: u64, input_tokens: u64, output_tokens: u64) -> Work {
        let per_s = |x: u64| {
            if window == 0 {
                0.0
            } else {
                x as f64 / nanos_to_secs(window)
            }
        };
        Work {
            requests,
            input_tokens,
            output_tokens,
            requests_per_s: per_s(requests),
            input_tokens_per_s: per_s(input_tokens),
            output_tokens_per_s: per_s(output_tokens),
        }
    }
}
