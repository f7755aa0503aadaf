//! The console output of `arbor run`: a few lines of counts and rates, and
//! a table of the latency distributions in milliseconds.

use std::io::{self, Write};
use std::path::Path;

use comfy_table::{presets, CellAlignment, Table};

use super::output::Summary;
use super::summary::Latency;

fn ms(seconds: f64) -> String {
    format!("{:.2}", seconds * 1e3)
}

pub fn latency_table(summary: &Summary) -> Table {
    let mut table = Table::new();
    table.load_preset(presets::ASCII_MARKDOWN).set_header(vec![
        "metric (ms)",
        "count",
        "mean",
        "p50",
        "p90",
        "p95",
        "p99",
        "max",
    ]);
    let l = &summary.latency;
    let rows: [(&str, &Latency); 7] = [
        ("TTFT", &l.ttft),
        ("ITL", &l.itl),
        ("TPOT", &l.tpot),
        ("E2E", &l.e2e),
        ("lateness", &l.lateness),
        ("queue wait", &l.queue_wait),
        ("job time", &l.job_time),
    ];
    for (name, d) in rows {
        table.add_row(vec![
            name.to_string(),
            d.count.to_string(),
            ms(d.mean_s),
            ms(d.p50_s),
            ms(d.p90_s),
            ms(d.p95_s),
            ms(d.p99_s),
            ms(d.max_s),
        ]);
    }
    for index in 1..8 {
        if let Some(column) = table.column_mut(index) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    table
}

pub fn print(out: &mut impl Write, summary: &Summary, dir: &Path) -> io::Result<()> {
    let c = &summary.config;
    let n = &summary.counts;
    let t = &summary.throughput;
    writeln!(
        out,
        "arbor run: {}{}",
        c.inputs,
        if summary.cancelled {
            " (cancelled)"
        } else {
            ""
        }
    )?;
    writeln!(
        out,
        "  endpoint        {} (model {}), seed {}",
        c.url.as_deref().unwrap_or("?"),
        c.model.as_deref().unwrap_or("?"),
        c.seed
    )?;
    writeln!(
        out,
        "  requests        {} dispatched, {} ok, {} failed, {} cancelled, {} skipped",
        n.dispatched, n.ok, n.failed, n.cancelled, n.skipped
    )?;
    writeln!(
        out,
        "  plays           {} started of {} trees, {} done",
        n.plays, n.trees, n.plays_done
    )?;
    writeln!(
        out,
        "  throughput      {:.3} req/s, {:.0} input tok/s, {:.0} output tok/s over {:.3} s",
        t.work.requests_per_s, t.work.input_tokens_per_s, t.work.output_tokens_per_s, t.window_s
    )?;
    let k = &summary.concurrency;
    writeln!(
        out,
        "  peak in flight  {} observed, {} planned ({})",
        k.observed_peak, k.planned_peak, k.planned_service
    )?;
    writeln!(
        out,
        "  idle-gap shifts {} ({:.3} s skipped)",
        summary.idle.shifts, summary.idle.skipped_s
    )?;
    let cache = match summary.cache.hit_ratio {
        Some(r) => format!("{:.1}% server-reported", r * 100.0),
        None => "not reported by the server".to_string(),
    };
    writeln!(out, "  cache hits      {cache}")?;
    let sources = &summary.tokens.output_source;
    writeln!(
        out,
        "  output tokens   {} from usage, {} counted, {} planned",
        sources.usage, sources.counted, sources.planned
    )?;
    if !summary.errors.is_empty() {
        let errors: Vec<String> = summary
            .errors
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        writeln!(out, "  errors          {}", errors.join(", "))?;
    }
    writeln!(out)?;
    writeln!(out, "{}", latency_table(summary))?;
    writeln!(out)?;
    writeln!(
        out,
        "results in {} ({}, {})",
        dir.display(),
        super::output::RECORDS_FILE,
        super::output::SUMMARY_FILE
    )
}
