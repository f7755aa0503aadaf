//! The console output of `arbor run`: a few lines of counts and rates, and
//! a table of the latency distributions in milliseconds. Every line says
//! what it counts (requests, tokens, plays, gaps) and on which clock a
//! time is (the plan's or the run's), and the server's own metrics when
//! they were scraped.
//!
//! Given a width (a terminal's, or `COLUMNS`), everything fits it: a
//! line is wrapped at spaces under its label, and a table wider than the
//! width is split into tables of as many columns as fit, each with the
//! metric's name. Without one (a file, a pipe) the lines are whole.

use std::io::{self, Write};
use std::path::Path;

use comfy_table::{presets, CellAlignment, Table};

use arbor::runs::collector::Latency;
use arbor::runs::output::Summary;
use arbor::runs::server_metrics::ServerMetrics;

use crate::fit;

fn ms(seconds: f64) -> String {
    format!("{:.2}", seconds * 1e3)
}

/// The latency table's header and its rows (metric name first).
fn latency_cells(summary: &Summary) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let header = vec![
        "metric (ms)",
        "count",
        "mean",
        "p50",
        "p90",
        "p95",
        "p99",
        "max",
    ];
    let l = &summary.latency;
    let rows: [(&str, &Latency); 7] = [
        ("TTFT", &l.ttft),
        ("ITL (gaps)", &l.itl),
        ("TPOT", &l.tpot),
        ("E2E", &l.e2e),
        ("lateness", &l.lateness),
        ("queue wait", &l.queue_wait),
        ("job time (plays)", &l.job_time),
    ];
    let rows = rows
        .iter()
        .map(|(name, d)| {
            vec![
                name.to_string(),
                d.count.to_string(),
                ms(d.mean_s),
                ms(d.p50_s),
                ms(d.p90_s),
                ms(d.p95_s),
                ms(d.p99_s),
                ms(d.max_s),
            ]
        })
        .collect();
    (header, rows)
}

/// A table of the name column and the `columns` (indices) of `rows`.
fn table_of(header: &[&str], rows: &[Vec<String>], columns: &[usize]) -> Table {
    let pick = |cells: Vec<String>| -> Vec<String> {
        std::iter::once(0)
            .chain(columns.iter().copied())
            .filter_map(|i| cells.get(i).cloned())
            .collect()
    };
    let mut table = Table::new();
    table
        .load_preset(presets::ASCII_MARKDOWN)
        .set_header(pick(header.iter().map(|h| h.to_string()).collect()));
    for row in rows {
        table.add_row(pick(row.clone()));
    }
    for index in 1..=columns.len() {
        if let Some(column) = table.column_mut(index) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    table
}

/// Columns of a table as [`presets::ASCII_MARKDOWN`] draws it.
fn table_width(table: &Table) -> usize {
    table.lines().map(|l| fit::width(&l)).max().unwrap_or(0)
}

/// The latency tables: one, or, when it is wider than `width`, as many
/// as it takes for each to fit (the metric's name in each; a column wider
/// than the width alone stays whole).
pub fn latency_tables(summary: &Summary, width: Option<usize>) -> Vec<Table> {
    let (header, rows) = latency_cells(summary);
    let all: Vec<usize> = (1..header.len()).collect();
    let Some(width) = width else {
        return vec![table_of(&header, &rows, &all)];
    };
    let mut tables = Vec::new();
    let mut columns: Vec<usize> = Vec::new();
    for &column in &all {
        let mut wider = columns.clone();
        wider.push(column);
        if !columns.is_empty() && table_width(&table_of(&header, &rows, &wider)) > width {
            tables.push(table_of(&header, &rows, &columns));
            columns = vec![column];
        } else {
            columns = wider;
        }
    }
    tables.push(table_of(&header, &rows, &columns));
    tables
}

/// Prints the console summary within `width` columns (no limit: `None`);
/// `emulator` describes the built-in emulator's settings when the run
/// used it. The verdict and the line naming the run's files follow it
/// ([`crate::verdict`], [`results_line`]).
pub fn print(
    out: &mut impl Write,
    summary: &Summary,
    emulator: Option<&str>,
    width: Option<usize>,
) -> io::Result<()> {
    let mut text = Vec::new();
    lines(&mut text, summary, emulator, width)?;
    let text = String::from_utf8_lossy(&text);
    for line in text.lines() {
        for part in fitted(line, width) {
            writeln!(out, "{part}")?;
        }
    }
    Ok(())
}

/// `line` wrapped at spaces within `width`, under its label: a line of
/// the summary (`  label           figures`) goes on under the figures'
/// column, any other at its own indent. A table's line is never wrapped
/// (the tables fit already).
fn fitted(line: &str, width: Option<usize>) -> Vec<String> {
    match width {
        Some(width) if fit::width(line) > width && !line.starts_with('|') => {
            let indent = if line.starts_with("  ") && line.get(17..18) == Some(" ") {
                18
            } else {
                line.len() - line.trim_start().len()
            };
            let (head, rest) = line.split_at(indent.min(line.len()));
            let hanging = " ".repeat(indent);
            fit::wrap(head, &hanging, rest, width)
        }
        _ => vec![line.to_string()],
    }
}

/// The console summary, each line whole.
fn lines(
    out: &mut impl Write,
    summary: &Summary,
    emulator: Option<&str>,
    width: Option<usize>,
) -> io::Result<()> {
    let c = &summary.config;
    let n = &summary.counts;
    let t = &summary.throughput;
    let cancelled = match (&summary.stopped_by, summary.cancelled) {
        (Some(signal), _) => format!(" (cancelled by {signal})"),
        (None, true) => " (cancelled)".to_string(),
        (None, false) => String::new(),
    };
    writeln!(out, "arbor run: {}{cancelled}", c.inputs)?;
    writeln!(
        out,
        "  endpoint        {} (model {}), seed {}",
        c.url.as_deref().unwrap_or("?"),
        c.model.as_deref().unwrap_or("?"),
        c.seed
    )?;
    if let Some(settings) = emulator {
        writeln!(out, "  emulator        built in: {settings}")?;
    }
    // What the reader must know before the figures: failures in the
    // server's own words, short outputs, another model's answers.
    for warning in &summary.warnings {
        writeln!(out, "  warning         {warning}")?;
    }
    writeln!(
        out,
        "  requests        {} dispatched: {} ok, {} failed, {} cancelled; {} turns never sent{}",
        n.dispatched,
        n.ok,
        n.failed,
        n.cancelled,
        n.skipped,
        if n.retries > 0 {
            format!("; {} tries again after a refusal (--retry-on)", n.retries)
        } else {
            String::new()
        }
    )?;
    writeln!(
        out,
        "  plays           {} started ({} trees in the workload), {} finished",
        n.plays, n.trees, n.plays_done
    )?;
    writeln!(
        out,
        "  throughput      {:.3} ok requests/s, {:.0} input tokens/s, {:.0} output tokens/s \
         over {:.3} s (first send to last done)",
        t.work.requests_per_s, t.work.input_tokens_per_s, t.work.output_tokens_per_s, t.window_s
    )?;
    let tokens = &summary.tokens;
    let input = &tokens.input_source;
    writeln!(
        out,
        "  input tokens    {} in {} ok requests ({} usage-reported, {} as planned); \
         usage-reported {} against {} planned{}",
        t.work.input_tokens,
        t.work.requests,
        input.usage,
        input.planned,
        tokens.reported_input_tokens,
        tokens.planned_input_tokens,
        relative(tokens.reported_input_tokens, tokens.planned_input_tokens)
    )?;
    let output = &tokens.output_source;
    writeln!(
        out,
        "  output tokens   {} in {} ok requests ({} usage-reported, {} counted from chunks, {} as \
         planned); measured {} against {} planned{}, {} requests short of their plan",
        t.work.output_tokens,
        t.work.requests,
        output.usage,
        output.counted,
        output.planned,
        tokens.received_output_tokens,
        tokens.planned_output_tokens,
        relative(tokens.received_output_tokens, tokens.planned_output_tokens),
        tokens.short_outputs
    )?;
    let cache = match summary.cache.hit_ratio {
        Some(r) => format!(
            "{:.1}% of input tokens (server-reported cached tokens, {} requests)",
            r * 100.0,
            summary.cache.requests
        ),
        None => "not reported by the server".to_string(),
    };
    writeln!(out, "  cache hits      {cache}")?;
    if let Some(h) = &summary.history {
        writeln!(
            out,
            "  history         {}: {} turns built from generated text, {} kept the recorded answer",
            h.mode, h.live_turns, h.recorded_fallbacks
        )?;
    }
    if let Some(reuse) = &summary.reuse {
        writeln!(out, "  prefix reuse    {}", reuse.in_words())?;
    }
    let k = &summary.concurrency;
    writeln!(
        out,
        "  peak in flight  {} observed; {} planned (virtual clock, --service {}, at {:.3} s of plan time)",
        k.observed_peak, k.planned_peak, k.planned_service, k.planned_peak_at_s
    )?;
    if let Some(m) = &summary.server_metrics {
        writeln!(out, "  server metrics  {}", server_line(m))?;
    }
    writeln!(
        out,
        "  idle gaps       {} shortened by the idle-gap cap ({:.3} s of idle time skipped)",
        summary.idle.shifts, summary.idle.skipped_s
    )?;
    writeln!(out)?;
    for (i, table) in latency_tables(summary, width).iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        writeln!(out, "{table}")?;
    }
    writeln!(
        out,
        "count: ok requests for TTFT, ITL gaps, TPOT and E2E; every request with the stamps for \
         lateness and queue wait; complete plays for job time"
    )
}

/// The line that says where the run's files are (after the verdict),
/// within `width` columns.
pub fn results_line(out: &mut impl Write, dir: &Path, width: Option<usize>) -> io::Result<()> {
    writeln!(out)?;
    let line = format!(
        "results in {} ({}, {})",
        dir.display(),
        arbor::runs::output::RECORDS_FILE,
        arbor::runs::output::SUMMARY_FILE
    );
    for part in fitted(&line, width) {
        writeln!(out, "{part}")?;
    }
    Ok(())
}

/// What the server's own metrics said: each gauge's mean and max over the
/// scrapes, the prefix-cache hit ratio from its counters, the scrapes.
fn server_line(m: &ServerMetrics) -> String {
    let mut parts: Vec<String> = m
        .gauges
        .iter()
        .map(|(name, g)| format!("{name} mean {:.2} max {:.2}", g.mean, g.max))
        .collect();
    if let Some(r) = m.prefix_hit_ratio {
        parts.push(format!(
            "prefix-cache hits {:.1}% (server counters)",
            r * 100.0
        ));
    }
    parts.push(format!(
        "{} scrapes ok, {} failed ({})",
        m.scrapes.ok,
        m.scrapes.failed,
        arbor::runs::server_metrics::METRICS_FILE
    ));
    parts.join("; ")
}

/// ` (+1.2 %)`: how far `reported` is from `planned`; empty without a plan.
fn relative(reported: u64, planned: u64) -> String {
    if planned == 0 {
        return String::new();
    }
    let delta = (reported as f64 - planned as f64) / planned as f64 * 100.0;
    format!(" ({delta:+.1} %)")
}
