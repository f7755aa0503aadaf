//! What `compare` shows: runs that are not comparable first (under
//! `--allow-different`), the settings that differ, then the side-by-side
//! table and the thresholds for people, or one JSON object (`--json`)
//! holding the same, each written into the writer it is given, and one
//! crossed threshold's line.
//! Owns formatting only; the same rows always give the same bytes.

use std::io::{self, Write};

use comfy_table::{presets, CellAlignment, Table};
use serde::Serialize;

use super::comparable::{shown, Comparability, Difference};
use super::gate::Verdict;
use super::metric::Unit;
use super::rows::{Cell, Row};

/// Shown for a figure a run does not have.
const NONE: &str = "–";

/// The runs and the resampling behind a comparison.
#[derive(Debug, Serialize)]
pub struct Header {
    pub base: String,
    pub new: Vec<String>,
    pub seed: u64,
    pub resamples: u32,
    pub confidence: f64,
}

fn decimals(unit: Unit) -> usize {
    match unit {
        Unit::Ms | Unit::RequestsPerS => 3,
        Unit::Percent => 2,
        Unit::TokensPerS => 1,
        Unit::Count => 0,
    }
}

fn value(unit: Unit, v: Option<f64>) -> String {
    v.map_or(NONE.into(), |v| format!("{v:.*}", decimals(unit)))
}

/// With its sign; a value that rounds to zero shows as `+0`, never `-0`.
fn signed(unit: Unit, v: Option<f64>) -> String {
    v.map_or(NONE.into(), |v| {
        let text = format!("{v:+.*}", decimals(unit));
        match text.strip_prefix('-') {
            Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => format!("+{rest}"),
            _ => text,
        }
    })
}

fn relative(v: Option<f64>) -> String {
    v.map_or(NONE.into(), |v| format!("{v:+.1}%"))
}

fn interval(unit: Unit, ci: Option<(f64, f64)>) -> String {
    ci.map_or(String::new(), |(lo, hi)| {
        format!("[{}, {}]", signed(unit, Some(lo)), signed(unit, Some(hi)))
    })
}

/// The table and the thresholds, for people.
pub fn human(
    out: &mut dyn Write,
    header: &Header,
    comparability: &Comparability,
    rows: &[Row],
    verdicts: &[Verdict],
) -> io::Result<()> {
    let mismatches = comparability.describe(&header.base);
    if !mismatches.is_empty() {
        writeln!(
            out,
            "NOT COMPARABLE (compared anyway: --allow-different): the figures below do not measure the same thing"
        )?;
        for line in &mismatches {
            writeln!(out, "  {line}")?;
        }
        writeln!(out)?;
    }
    writeln!(out, "arbor compare: BASE {}", header.base)?;
    let several = header.new.len() > 1;
    let label = |i: usize| {
        if several {
            format!("NEW {}", i + 1)
        } else {
            "NEW".into()
        }
    };
    for (i, name) in header.new.iter().enumerate() {
        writeln!(out, "  {:<5} {name}", label(i))?;
    }
    writeln!(
        out,
        "  delta = NEW - BASE; 95% CI of the delta for percentiles: {} bootstrap resamples, seed {}",
        header.resamples, header.seed
    )?;
    writeln!(out)?;

    let differences = &comparability.differences;
    if differences.is_empty() {
        writeln!(out, "configuration: the same")?;
    } else {
        writeln!(out, "configuration differences (BASE -> NEW)")?;
        for (i, name) in header.new.iter().enumerate() {
            let of_run: Vec<&Difference> = differences.iter().filter(|d| &d.run == name).collect();
            if of_run.is_empty() {
                continue;
            }
            if several {
                writeln!(out, "  {} {name}", label(i))?;
            }
            let width = of_run.iter().map(|d| d.setting.len()).max().unwrap_or(0);
            for d in of_run {
                writeln!(
                    out,
                    "  {}{:<width$}  {} -> {}",
                    if several { "  " } else { "" },
                    d.setting,
                    shown(&d.base),
                    shown(&d.new)
                )?;
            }
        }
    }
    writeln!(out)?;

    let mut table = Table::new();
    let mut head = vec!["metric".to_string(), "unit".into(), "BASE".into()];
    for i in 1..=header.new.len() {
        let n = if several {
            format!(" {i}")
        } else {
            String::new()
        };
        head.extend([
            format!("NEW{n}"),
            format!("delta{n}"),
            format!("rel{n}"),
            format!("95% CI{n}"),
        ]);
    }
    let columns = head.len();
    table.load_preset(presets::ASCII_MARKDOWN).set_header(head);
    for row in rows {
        let unit = row.metric.unit();
        let mut cells = vec![
            row.metric.to_string(),
            unit.name().to_string(),
            value(unit, row.base),
        ];
        for c in &row.new {
            cells.extend([
                value(unit, c.value),
                signed(unit, c.delta),
                relative(c.relative_pct),
                interval(unit, c.ci),
            ]);
        }
        table.add_row(cells);
    }
    for index in 2..columns {
        if let Some(column) = table.column_mut(index) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    writeln!(out, "{table}")?;

    if !verdicts.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "thresholds (crossed when the delta is worse than allowed)"
        )?;
        for v in verdicts {
            let state = match v.crossed {
                Some(true) => "CROSSED",
                Some(false) => "ok",
                None => "not judged (missing in a run)",
            };
            writeln!(out, "  {:<8} {}", state, describe(v))?;
        }
    }
    Ok(())
}

/// `ttft_p50=+10% run40: 11.447 -> 41.512 ms, +30.065 ms (+262.6%), 95% CI [..] ms`.
pub fn describe(v: &Verdict) -> String {
    let unit = v.metric.unit();
    let c: &Cell = &v.cell;
    let ci = match c.ci {
        Some(_) => format!(", 95% CI {} {}", interval(unit, c.ci), unit.name()),
        None => String::new(),
    };
    format!(
        "{} {}: {} -> {} {}, {} {} ({}){}",
        v.threshold,
        v.run,
        value(unit, v.base),
        value(unit, c.value),
        unit.name(),
        signed(unit, c.delta),
        unit.name(),
        relative(c.relative_pct),
        ci
    )
}

#[derive(Serialize)]
struct JsonRun<'a> {
    run: &'a str,
    #[serde(flatten)]
    cell: &'a Cell,
}

#[derive(Serialize)]
struct JsonRow<'a> {
    metric: String,
    unit: &'static str,
    base: Option<f64>,
    new: Vec<JsonRun<'a>>,
}

#[derive(Serialize)]
struct Json<'a> {
    /// False only under `--allow-different`, with the mismatches.
    comparable: bool,
    #[serde(flatten)]
    comparability: &'a Comparability,
    #[serde(flatten)]
    header: &'a Header,
    metrics: Vec<JsonRow<'a>>,
    thresholds: &'a [Verdict],
    crossed: usize,
}

/// The same figures as one JSON object.
pub fn json(
    out: &mut dyn Write,
    header: &Header,
    comparability: &Comparability,
    rows: &[Row],
    verdicts: &[Verdict],
) -> io::Result<()> {
    let metrics = rows
        .iter()
        .map(|row| JsonRow {
            metric: row.metric.to_string(),
            unit: row.metric.unit().name(),
            base: row.base,
            new: header
                .new
                .iter()
                .zip(&row.new)
                .map(|(run, cell)| JsonRun { run, cell })
                .collect(),
        })
        .collect();
    let value = Json {
        comparable: comparability.comparable(),
        comparability,
        header,
        metrics,
        thresholds: verdicts,
        crossed: verdicts.iter().filter(|v| v.crossed == Some(true)).count(),
    };
    serde_json::to_writer_pretty(&mut *out, &value).map_err(io::Error::from)?;
    writeln!(out)
}
