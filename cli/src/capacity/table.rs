//! The console: one row per probed point (load, requests, goodput, each
//! bound's value, pass or fail; a value over its bound is marked `*`),
//! sorted by load, then the answer line (or, when the answer is only a
//! bound, the bound's sentence) and the answer in agents and jobs per
//! hour, the readings that decided it with their 95 % intervals, and the
//! confirmation. Owns wording only.

use std::io::{self, Write};

use arbor::capacity_search::{
    output, Answer, Conclusion, Deciding, Decision, Knob, Point, Reading,
};

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

/// Prints the table of `probes` and the answer (`bound`, when the answer
/// is only a bound, in its place).
pub fn print(
    out: &mut impl Write,
    knob: Knob,
    probes: &[Point],
    answer: &Answer,
    slo_text: &str,
    bound: Option<&str>,
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
        let mut result = p.verdict.decision.word().to_string();
        if !p.extensions.is_empty() {
            result.push_str(&format!(" (+{} ext)", p.extensions.len()));
        }
        if p.confirmation {
            result.push_str(" (confirm)");
        }
        row.push(result);
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
    match bound {
        Some(sentence) => writeln!(out, "{sentence}")?,
        None => writeln!(out, "{}", answer.sentence(knob, slo_text))?,
    }
    if let Some(held) = output::held(probes, answer.passing) {
        writeln!(out, "in agents: {}", held.sentence(knob))?;
    }
    Ok(())
}

/// The readings that decided the answer's ends, when they carry 95 %
/// intervals (a live search), and the confirmation run.
pub fn conclusion(out: &mut impl Write, knob: Knob, c: &Conclusion) -> io::Result<()> {
    for (end, by) in [("passes", &c.passing_by), ("fails", &c.failing_by)] {
        let Some(by) = by else { continue };
        if by.bounds.iter().all(|b| b.confidence.is_none()) && by.request_goodput_interval.is_none()
        {
            continue;
        }
        writeln!(
            out,
            "  {}={} {end}: probe {}, {} requests ({} succeeded){}",
            knob.name(),
            knob.show_number(by.load),
            by.probe,
            by.requests,
            by.measured,
            intervals(by)
        )?;
    }
    if let Some(confirm) = c.confirmation {
        writeln!(
            out,
            "confirmation: {}={} {} at probe {}{}",
            knob.name(),
            knob.show_number(confirm.load),
            match confirm.decision {
                Decision::Pass => "passed again",
                Decision::Fail => "FAILED",
                Decision::Unresolved => "was unresolved",
            },
            confirm.probe,
            if confirm.held {
                ""
            } else {
                ": the answer is downgraded to a bound"
            }
        )?;
    }
    Ok(())
}

/// `; ttft_p90 in [1.2 ms, 3.4 ms]`, each bound's 95 % interval.
fn intervals(by: &Deciding) -> String {
    let end = |r: Option<Reading>, unbounded: &str| match r {
        Some(Reading::Value(v)) => show(v),
        Some(Reading::Failed) => "failed".to_string(),
        Some(Reading::Missing) => "-".to_string(),
        None => unbounded.to_string(),
    };
    let mut said = String::new();
    for b in &by.bounds {
        if let Some(c) = b.confidence {
            said.push_str(&format!(
                "; {} in [{}, {}] (ranks {} and {} of {})",
                b.metric,
                end(c.lo, "0"),
                end(c.hi, "unbounded"),
                c.ranks[0],
                c.ranks[1],
                c.of
            ));
        }
    }
    for (kind, interval) in [
        ("requests", by.request_goodput_interval),
        ("trees", by.job_goodput_interval),
    ] {
        if let Some([lo, hi]) = interval {
            said.push_str(&format!(
                "; goodput {kind} in [{:.1} %, {:.1} %]",
                lo * 100.0,
                hi * 100.0
            ));
        }
    }
    said
}
