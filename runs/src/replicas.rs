//! The per-replica side of `summary.json`: a run over several endpoints
//! (`--endpoint` repeated, docs/routing.md) broken down by the replica
//! each request was sent to, and how unevenly the load fell.
//!
//! Owns [`ReplicaReport`] and building it from the collector's
//! per-replica figures ([`crate::collector::Measured::replicas`]): every
//! replica the run named appears, one that got no request included, so
//! the requests, tokens and cached tokens of the rows add up to the run's
//! totals (each measured record has exactly one replica). Job time is the
//! run's alone: a play's turns go to several replicas.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::collector::{CacheReport, Measured, Throughput};
use crate::latency::Latency;

/// One replica's figures, over the measured requests sent to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReplicaFigures {
    /// Its index in `config.endpoints`.
    pub replica: u32,
    /// Its base URL, redacted (absent when the run did not name it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Measured requests sent to it, by outcome.
    pub requests: u64,
    pub ok: u64,
    pub failed: u64,
    pub cancelled: u64,
    /// Its share of the run's measured requests (0 to 1).
    pub share: f64,
    pub ttft: Latency,
    pub itl: Latency,
    pub tpot: Latency,
    pub e2e: Latency,
    /// The client's queue wait before the request went (the run's cap).
    pub queue_wait: Latency,
    /// Over its own window (its first `sent` to its last `done`).
    pub throughput: Throughput,
    /// What it said about its prefix cache.
    pub cache: CacheReport,
    /// Its failed requests by error class.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub errors: BTreeMap<String, u64>,
}

/// How unevenly the replicas were loaded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Imbalance {
    /// The busiest replica's requests over the mean per replica: 1 is
    /// even, N is everything on one of N.
    pub requests_max_over_mean: f64,
    /// The same over the ok requests' input tokens (the prefill work).
    pub input_tokens_max_over_mean: f64,
    /// The replica with the most requests, and the one with the fewest
    /// (the lower index on a tie).
    pub busiest: u32,
    pub least_busy: u32,
    /// The highest replica cache-hit ratio minus the lowest; null unless
    /// at least two replicas reported cached tokens.
    pub hit_ratio_spread: Option<f64>,
}

/// The run broken down by replica.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReplicaReport {
    /// In index order, every replica the run named.
    pub replicas: Vec<ReplicaFigures>,
    pub imbalance: Imbalance,
}

impl ReplicaReport {
    /// The report over `per_replica` (the collector's figures by index)
    /// and the run's `endpoints` (redacted base URLs, by index; may be
    /// empty). `None` when no measured record named a replica and the run
    /// named fewer than two endpoints.
    pub fn build(per_replica: &BTreeMap<u32, Measured>, endpoints: &[String]) -> Option<Self> {
        if per_replica.is_empty() && endpoints.len() < 2 {
            return None;
        }
        let named = u32::try_from(endpoints.len()).unwrap_or(u32::MAX);
        let highest = per_replica.keys().next_back().map_or(0, |&k| k + 1);
        let count = named.max(highest);
        let total: u64 = per_replica.values().map(|m| m.requests.dispatched).sum();
        let replicas: Vec<ReplicaFigures> = (0..count)
            .map(|i| figures(i, per_replica.get(&i), endpoints, total))
            .collect();
        let imbalance = imbalance(&replicas);
        Some(ReplicaReport {
            replicas,
            imbalance,
        })
    }
}

/// The run's endpoints by replica index (redacted base URLs).
pub fn endpoints_of(config: &crate::config::RunConfig) -> Vec<String> {
    match config.endpoints.is_empty() {
        true => config.endpoint.iter().cloned().collect(),
        false => config.endpoints.clone(),
    }
}

fn figures(
    replica: u32,
    measured: Option<&Measured>,
    endpoints: &[String],
    total: u64,
) -> ReplicaFigures {
    let empty;
    let m = match measured {
        Some(m) => m,
        None => {
            empty = crate::collector::Collector::new().finish();
            &empty
        }
    };
    ReplicaFigures {
        replica,
        endpoint: endpoints.get(replica as usize).cloned(),
        requests: m.requests.dispatched,
        ok: m.requests.ok,
        failed: m.requests.failed,
        cancelled: m.requests.cancelled,
        share: ratio(m.requests.dispatched, total),
        ttft: m.latency.ttft,
        itl: m.latency.itl,
        tpot: m.latency.tpot,
        e2e: m.latency.e2e,
        queue_wait: m.latency.queue_wait,
        throughput: m.throughput.clone(),
        cache: m.cache.clone(),
        errors: m.errors.clone(),
    }
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The largest value over the mean (1 when all are 0).
fn max_over_mean(values: impl Iterator<Item = u64> + Clone) -> f64 {
    let n = values.clone().count() as f64;
    let sum: u64 = values.clone().sum();
    let max = values.max().unwrap_or(0);
    if sum == 0 || n == 0.0 {
        1.0
    } else {
        max as f64 / (sum as f64 / n)
    }
}

fn imbalance(replicas: &[ReplicaFigures]) -> Imbalance {
    let requests = replicas.iter().map(|r| r.requests);
    let busiest = replicas
        .iter()
        .fold(None::<&ReplicaFigures>, |best, r| match best {
            Some(b) if b.requests >= r.requests => Some(b),
            _ => Some(r),
        })
        .map_or(0, |r| r.replica);
    let least_busy = replicas
        .iter()
        .fold(None::<&ReplicaFigures>, |best, r| match best {
            Some(b) if b.requests <= r.requests => Some(b),
            _ => Some(r),
        })
        .map_or(0, |r| r.replica);
    let ratios: Vec<f64> = replicas.iter().filter_map(|r| r.cache.hit_ratio).collect();
    let hit_ratio_spread = (ratios.len() >= 2).then(|| {
        let max = ratios.iter().copied().fold(f64::MIN, f64::max);
        let min = ratios.iter().copied().fold(f64::MAX, f64::min);
        max - min
    });
    Imbalance {
        requests_max_over_mean: max_over_mean(requests),
        input_tokens_max_over_mean: max_over_mean(
            replicas.iter().map(|r| r.throughput.work.input_tokens),
        ),
        busiest,
        least_busy,
        hit_ratio_spread,
    }
}
