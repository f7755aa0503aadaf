//! The console: one row per probed point (load, requests, goodput, each
//! bound's value, pass or fail; a value over its bound is marked `*`),
//! sorted by load, then the answer line and the answer in agents and
//! jobs per hour. Owns wording only.

use std::io::{self, Write};

use arbor::capacity_search::{output, Answer, Knob, Point, Reading};

/// `80.0 ms`, `1.250 s`.
fn show(ns: u64) -> String {
    if ns < 1_000_000_000 {
        format!("{:.1} ms", ns as f64 / 1e6)
    } else {
        format!("{:.3} s", ns as f64 / 1e9)
    }
}

fn percent(share: Option<f64>) -> String {
    share.map_or_else(|| "-".to_string(), |g| format!("{:.1} %", g * 100.0))
}

/// Prints the table of `probes` and the answer.
pub fn print(
    out: &mut impl Write,
    knob: Knob,
    probes: &[Point],
    answer: &Answer,
    slo_text: &str,
) -> io::Result<()> {
    let mut rows: Vec<&Point> = probes.iter().collect();
    rows.sort_by(|a, b| a.load.total_cmp(&b.load).then(a.probe.cmp(&b.probe)));
    let names: Vec<String> = probes
        .first()
        .map(|p| p.verdict.bounds.iter().map(|b| b.metric.clone()).collect())
        .unwrap_or_default();
    let mut header = vec![
        "probe".to_string(),
        knob.name().to_string(),
        "requests".to_string(),
        "goodput req".to_string(),
        "goodput trees".to_string(),
    ];
    header.extend(names.iter().cloned());
    header.push("result".to_string());
    let mut table = vec![header];
    for p in rows {
        let mut row = vec![
            p.probe.to_string(),
            knob.show_number(p.load),
            p.verdict.requests.to_string(),
            percent(p.verdict.request_goodput),
            percent(p.verdict.job_goodput),
        ];
        for b in &p.verdict.bounds {
            let value = match b.reading {
                Reading::Value(v) => show(v),
                Reading::Failed => "failed".to_string(),
                Reading::Missing => "-".to_string(),
            };
            row.push(if b.pass { value } else { format!("{value} *") });
        }
        row.push(if p.verdict.pass { "pass" } else { "FAIL" }.to_string());
        table.push(row);
    }
    let widths: Vec<usize> = (0..table[0].len())
        .map(|c| table.iter().map(|r| r[c].len()).max().unwrap_or(0))
        .collect();
    for row in &table {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:>w$}"))
            .collect();
        writeln!(out, "{}", cells.join("  ").trim_end())?;
    }
    writeln!(out, "{}", answer.sentence(knob, slo_text))?;
    if let Some(held) = output::held(probes, answer.passing) {
        writeln!(out, "in agents: {}", held.sentence(knob))?;
    }
    Ok(())
}
