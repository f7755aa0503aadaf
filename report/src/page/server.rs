//! The server's own gauges over time, for the page: one point per
//! successful scrape of the run's `metrics.jsonl` (requests running and
//! waiting, KV-cache use), read through [`arbor_runs::server_metrics`] so the
//! series of one scrape combine as in the summary. `None` when the run
//! scraped nothing, or no scrape succeeded: the page then draws no chart.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use arbor_error::Error;
use arbor_runs::server_metrics::line;
use arbor_runs::server_metrics::names::Metric;
use arbor_runs::server_metrics::tally::PerScrape;

/// The gauges the page draws.
const DRAWN: [Metric; 3] = [Metric::Running, Metric::Waiting, Metric::KvUsage];

#[derive(Debug, Default, Serialize)]
pub struct ServerSeries {
    /// Each successful scrape's time, seconds from the run's start.
    pub t_s: Vec<f64>,
    /// By common name: the value at each scrape (`null` where a scrape
    /// lacked it); only gauges some scrape had.
    pub gauges: BTreeMap<&'static str, Vec<Option<f64>>>,
}

/// The series of the run in `dir`.
pub fn read(dir: &Path) -> Result<Option<ServerSeries>, Error> {
    let mut per_scrape = PerScrape::default();
    let mut scrapes = Vec::new();
    line::read(dir, |l| {
        if let Some(s) = per_scrape.add(&l) {
            if s.outcome == line::Outcome::Ok {
                scrapes.push(s);
            }
        }
    })?;
    if scrapes.is_empty() {
        return Ok(None);
    }
    let mut series = ServerSeries {
        t_s: scrapes.iter().map(|s| s.time_ns as f64 / 1e9).collect(),
        ..ServerSeries::default()
    };
    for metric in DRAWN {
        let values: Vec<Option<f64>> = scrapes
            .iter()
            .map(|s| s.gauges.get(&metric).copied())
            .collect();
        if values.iter().any(Option::is_some) {
            series.gauges.insert(metric.name(), values);
        }
    }
    Ok(Some(series))
}
