//! The console view of an aggregate: one row per headline metric (in
//! `arbor::runs::aggregate::metrics`' order), its runs, mean, standard deviation, 95 %
//! interval, min and max; latencies in milliseconds. Owns the wording
//! only; the figures are `aggregate.json`'s.

use comfy_table::{presets, CellAlignment, Table};

use arbor::runs::aggregate::metrics::{LATENCIES, RATES};
use arbor::runs::aggregate::Aggregate;

/// The spread table of `aggregate`; `None` when it has no metric.
pub fn spread_table(aggregate: &Aggregate) -> Option<Table> {
    if aggregate.metrics.is_empty() {
        return None;
    }
    let mut table = Table::new();
    table.load_preset(presets::ASCII_MARKDOWN).set_header(vec![
        "metric", "unit", "runs", "mean", "std", "95% low", "95% high", "min", "max",
    ]);
    for headline in LATENCIES.iter().chain(RATES.iter()) {
        let Some(metric) = aggregate.metrics.get(headline.name) else {
            continue;
        };
        // Latencies are stored in seconds and shown in milliseconds.
        let (unit, scale) = match metric.unit {
            "s" => ("ms", 1e3),
            unit => (unit, 1.0),
        };
        let shown = |v: f64| format!("{:.3}", v * scale);
        let maybe = |v: Option<f64>| v.map_or_else(|| "-".to_string(), shown);
        let s = &metric.spread;
        table.add_row(vec![
            headline.name.to_string(),
            unit.to_string(),
            s.n.to_string(),
            shown(s.mean),
            maybe(s.std),
            maybe(s.ci95_low),
            maybe(s.ci95_high),
            shown(s.min),
            shown(s.max),
        ]);
    }
    for index in 2..9 {
        if let Some(column) = table.column_mut(index) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    Some(table)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use arbor::runs::aggregate::stats::Spread;
    use arbor::runs::aggregate::{MetricSpread, AGGREGATE_SCHEMA};

    #[test]
    fn latencies_are_shown_in_ms_and_one_run_has_no_interval() {
        let mut metrics = BTreeMap::new();
        metrics.insert(
            "ttft_p50".to_string(),
            MetricSpread {
                unit: "s",
                spread: Spread::of(&[0.010, 0.012]).expect("two"),
            },
        );
        metrics.insert(
            "request_throughput".to_string(),
            MetricSpread {
                unit: "requests/s",
                spread: Spread::of(&[8.5]).expect("one"),
            },
        );
        let aggregate = Aggregate {
            schema_version: AGGREGATE_SCHEMA,
            runs_planned: Some(2),
            runs_complete: 2,
            seed: Some(0),
            scenario: None,
            submission_valid: false,
            submission_invalid_reasons: vec!["no_scenario".into()],
            confidence: 0.95,
            metrics,
            runs: Vec::new(),
        };
        let text = spread_table(&aggregate).expect("a table").to_string();
        let ttft = text.lines().find(|l| l.contains("ttft_p50")).expect("row");
        assert!(ttft.contains("| ms ") && ttft.contains("11.000"), "{text}");
        let rate = text
            .lines()
            .find(|l| l.contains("request_throughput"))
            .expect("row");
        assert!(rate.contains("8.500") && rate.contains(" - "), "{text}");
        let rows: Vec<&str> = text.lines().skip(2).collect();
        assert!(rows[0].contains("ttft_p50"), "table order: {text}");
    }
}
