//! What `metrics.jsonl` adds up to: the `server_metrics` section of
//! `summary.json`. `arbor run` and `arbor summarize` both build it here,
//! from the file's lines ([`ServerMetrics::of_run_dir`]), so both give the
//! same section.
//!
//! Owns the rules: a gauge's value in one scrape is its series combined
//! (requests summed across engines, fractions averaged), and only
//! successful scrapes count; a gauge is summarized by mean and max over
//! them. A counter's increase is summed over its series, from the first
//! value each series showed to its last (a value going down is a restart
//! of the server: the new value is all increase). The prefix-cache hit
//! ratio is hits over queries from the counters' increases (queries
//! being hits plus misses on servers that count misses, like llama.cpp).
//!
//! With several endpoints each line names its replica: a counter series
//! is then also keyed by its replica (each replica's increase summed), a
//! gauge's figures pool every replica's scrapes, and `replicas` holds each
//! replica's own section, by the same rules.

use std::collections::BTreeMap;
use std::path::Path;

use arbor_engine::time::Nanos;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use arbor_error::Error;

use super::line::{self, Line, Outcome};
use super::names::{Combine, Kind, Metric};

/// The `server_metrics` section of `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerMetrics {
    pub scrapes: ScrapeCounts,
    /// Recognised gauges, by common name: those seen in a successful
    /// scrape.
    pub gauges: BTreeMap<String, Gauge>,
    /// Recognised counters' increase over the run, by common name.
    pub counters: BTreeMap<String, f64>,
    /// Prefix-cache hits over queries from the counters; null without
    /// them, or when nothing was looked up.
    pub prefix_hit_ratio: Option<f64>,
    /// With several endpoints: each replica's own section, by its index
    /// in `config.endpoints`; absent with one.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub replicas: BTreeMap<String, ServerMetrics>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScrapeCounts {
    pub ok: u64,
    /// Failed scrapes (no answer, an HTTP error, no sample in the answer).
    pub failed: u64,
}

/// A gauge over the run's successful scrapes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Gauge {
    pub mean: f64,
    pub max: f64,
    /// Scrapes it was in.
    pub scrapes: u64,
}

/// A counter series: its metric, the server's name, its labels and its
/// replica.
type SeriesKey = (Metric, String, Vec<(String, String)>, Option<u32>);

/// One counter series (a name and its labels).
#[derive(Debug, Clone, Copy)]
struct CounterSeries {
    last: f64,
    increase: f64,
}

/// One scrape as its outcome line closes it: its recognised gauges, each
/// one value (its series combined).
#[derive(Debug, Clone, PartialEq)]
pub struct Scraped {
    pub time_ns: Nanos,
    pub outcome: Outcome,
    /// Empty for a failed scrape.
    pub gauges: BTreeMap<Metric, f64>,
}

/// Gauge values scrape by scrape, from the lines in order (a scrape's
/// samples, then its outcome): what the summary and the report's chart
/// both read.
#[derive(Debug, Default)]
pub struct PerScrape {
    /// The current scrape's gauge series: sum and count.
    pending: BTreeMap<Metric, (f64, u32)>,
}

impl PerScrape {
    /// Takes a line; at a scrape's outcome, returns the scrape.
    pub fn add(&mut self, line: &Line) -> Option<Scraped> {
        let Some(outcome) = line.outcome() else {
            let metric = line.metric.as_deref().and_then(Metric::named)?;
            if metric.kind() == Kind::Gauge {
                let entry = self.pending.entry(metric).or_insert((0.0, 0));
                entry.0 += line.value;
                entry.1 += 1;
            }
            return None;
        };
        let pending = std::mem::take(&mut self.pending);
        let gauges = match outcome {
            Outcome::Failed => BTreeMap::new(),
            Outcome::Ok => pending
                .into_iter()
                .map(|(metric, (sum, n))| {
                    let value = match metric.combine() {
                        Combine::Sum => sum,
                        Combine::Mean => sum / f64::from(n.max(1)),
                    };
                    (metric, value)
                })
                .collect(),
        };
        Some(Scraped {
            time_ns: line.time_ns,
            outcome,
            gauges,
        })
    }
}

/// Takes the lines in order.
#[derive(Debug, Default)]
pub struct Tally {
    scrapes: ScrapeCounts,
    per_scrape: PerScrape,
    /// Per gauge: sum, max and count over the scrapes.
    gauges: BTreeMap<Metric, (f64, f64, u64)>,
    counters: BTreeMap<SeriesKey, CounterSeries>,
    /// Each replica's own tally, when lines name one.
    replicas: BTreeMap<u32, Tally>,
}

impl Tally {
    pub fn add(&mut self, line: Line) {
        if let Some(replica) = line.replica {
            let mut own = line.clone();
            own.replica = None;
            self.replicas.entry(replica).or_default().add(own);
        }
        if let Some(scraped) = self.per_scrape.add(&line) {
            match scraped.outcome {
                Outcome::Failed => self.scrapes.failed += 1,
                Outcome::Ok => self.scrapes.ok += 1,
            }
            for (metric, value) in scraped.gauges {
                let g = self.gauges.entry(metric).or_insert((0.0, value, 0));
                g.0 += value;
                g.1 = g.1.max(value);
                g.2 += 1;
            }
            return;
        }
        let Some(metric) = line.metric.as_deref().and_then(Metric::named) else {
            return;
        };
        if metric.kind() != Kind::Counter {
            return;
        }
        let key = (
            metric,
            line.name,
            line.labels.into_iter().collect(),
            line.replica,
        );
        let v = line.value;
        self.counters
            .entry(key)
            .and_modify(|c| {
                c.increase += if v >= c.last { v - c.last } else { v };
                c.last = v;
            })
            .or_insert(CounterSeries {
                last: v,
                increase: 0.0,
            });
    }

    pub fn finish(self) -> ServerMetrics {
        let gauges = self
            .gauges
            .into_iter()
            .map(|(metric, (sum, max, n))| {
                let gauge = Gauge {
                    mean: sum / n.max(1) as f64,
                    max,
                    scrapes: n,
                };
                (metric.name().to_string(), gauge)
            })
            .collect();
        let mut increases: BTreeMap<Metric, f64> = BTreeMap::new();
        for ((metric, _, _, _), series) in self.counters {
            *increases.entry(metric).or_insert(0.0) += series.increase;
        }
        let hits = increases.get(&Metric::PrefixHits).copied();
        let queries = increases.get(&Metric::PrefixQueries).copied().or_else(|| {
            let misses = increases.get(&Metric::PrefixMisses)?;
            Some(hits? + misses)
        });
        let prefix_hit_ratio = match (hits, queries) {
            (Some(h), Some(q)) if q > 0.0 => Some(h / q),
            _ => None,
        };
        ServerMetrics {
            scrapes: self.scrapes,
            gauges,
            counters: increases
                .into_iter()
                .map(|(metric, v)| (metric.name().to_string(), v))
                .collect(),
            prefix_hit_ratio,
            replicas: self
                .replicas
                .into_iter()
                .map(|(replica, tally)| (replica.to_string(), tally.finish()))
                .collect(),
        }
    }
}

impl ServerMetrics {
    /// The section of the run in `dir`, from its `metrics.jsonl`; `None`
    /// when the run scraped nothing (no such file).
    pub fn of_run_dir(dir: &Path) -> Result<Option<ServerMetrics>, Error> {
        let mut tally = Tally::default();
        let found = line::read(dir, |l| tally.add(l))?;
        Ok(found.then(|| tally.finish()))
    }
}
