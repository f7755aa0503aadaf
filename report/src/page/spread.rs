//! The multi-run page's spread (`OUT/report.html` of `arbor run --repeat
//! N`, and `arbor report OUT`): the aggregate's validity stamp and its
//! reasons, and for each headline metric its mean, 95 % t-interval and
//! each run's value, placed on the page's runs so the page colours a
//! run's dot as it colours the run everywhere else.
//!
//! Owns the shape the page draws from an [`Aggregate`]; takes the numbers
//! as the aggregate resolved them (its arithmetic is `aggregate::stats`)
//! and reads nothing.

use serde::Serialize;

use arbor_runs::aggregate::metrics::{LATENCIES, RATES};
use arbor_runs::aggregate::runs::RunState;
use arbor_runs::aggregate::stats::Spread;
use arbor_runs::aggregate::Aggregate;

/// What the page's spread section draws.
#[derive(Debug, Serialize)]
pub struct SpreadPage {
    /// The directory of the sequence, as given.
    pub path: String,
    pub runs_planned: Option<u32>,
    pub runs_complete: u32,
    pub scenario: Option<String>,
    pub submission_valid: bool,
    pub submission_invalid_reasons: Vec<String>,
    pub confidence: f64,
    /// Every planned run: its directory and state (`complete`,
    /// `cancelled`, ...), whether the page has it among its runs.
    pub runs: Vec<RunRow>,
    /// Headline metrics in `aggregate.json`'s documented order (latencies,
    /// then rates), those the complete runs have.
    pub metrics: Vec<MetricRow>,
}

#[derive(Debug, Serialize)]
pub struct RunRow {
    pub dir: String,
    pub state: String,
    /// Its index among the page's runs (`None`: no summary to draw).
    pub page_run: Option<usize>,
}

#[derive(Debug, Serialize)]
pub struct MetricRow {
    pub name: &'static str,
    pub unit: &'static str,
    /// As `aggregate.json` has it.
    #[serde(flatten)]
    pub spread: Spread,
    /// Each complete run's value: `[page run index, value]`.
    pub points: Vec<(usize, f64)>,
}

impl SpreadPage {
    /// The spread of `aggregate`, whose runs with a summary are the page's
    /// runs in order (`page_dirs`, their directory names).
    pub fn of(aggregate: &Aggregate, path: String, page_dirs: &[String]) -> SpreadPage {
        let page_run = |dir: &str| page_dirs.iter().position(|d| d == dir);
        let runs = aggregate
            .runs
            .iter()
            .map(|r| RunRow {
                dir: r.dir.clone(),
                state: state_name(r.state),
                page_run: page_run(&r.dir),
            })
            .collect();
        let metrics = LATENCIES
            .iter()
            .chain(RATES.iter())
            .filter_map(|headline| {
                let spread = &aggregate.metrics.get(headline.name)?.spread;
                let points = aggregate
                    .runs
                    .iter()
                    .filter(|r| r.state == RunState::Complete)
                    .filter_map(|r| {
                        let value = headline.value(r.summary.as_ref()?)?;
                        Some((page_run(&r.dir)?, value))
                    })
                    .collect();
                Some(MetricRow {
                    name: headline.name,
                    unit: headline.unit(),
                    spread: spread.clone(),
                    points,
                })
            })
            .collect();
        SpreadPage {
            path,
            runs_planned: aggregate.runs_planned,
            runs_complete: aggregate.runs_complete,
            scenario: aggregate.scenario.clone(),
            submission_valid: aggregate.submission_valid,
            submission_invalid_reasons: aggregate.submission_invalid_reasons.clone(),
            confidence: aggregate.confidence,
            runs,
            metrics,
        }
    }
}

/// A run state as `aggregate.json` spells it.
fn state_name(state: RunState) -> String {
    serde_json::to_value(state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}
