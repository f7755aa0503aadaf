//! The end of a run's console output, the answer first: one verdict line
//! (how the run went, in words), the headline figures, the `--slo`
//! verdict bound by bound, errors by class with the server's own words,
//! and where the run's time went beside its plan's. Every line fits 80
//! columns (a server's message is cut to fit; the whole of it is in the
//! warnings above and in `summary.json`).

use std::io::{self, Write};

use arbor::capacity_search::Reading;
use arbor::runs::output::Summary;
use arbor::runs::time_breakdown::{TimeBreakdown, IDLE_SKIPPED};
use arbor::slo::SloReport;

use crate::fit;

/// The widest line this prints.
pub const WIDTH: usize = 80;

/// Prints the verdict of a finished run.
pub fn print(out: &mut impl Write, summary: &Summary, slo: Option<&SloReport>) -> io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "{}",
        shown(&format!("verdict: {}", status(summary, slo)))
    )?;
    let l = &summary.latency;
    let pair = |d: &arbor::runs::collector::Latency| {
        if d.count == 0 {
            "-".to_string()
        } else {
            format!("p50 {} p99 {}", latency(d.p50_s), latency(d.p99_s))
        }
    };
    writeln!(out, "  TTFT {:<26} ITL {}", pair(&l.ttft), pair(&l.itl))?;
    writeln!(
        out,
        "  E2E  {:<26} {:.2} req/s, {:.0} output tok/s",
        pair(&l.e2e),
        summary.throughput.work.requests_per_s,
        summary.throughput.work.output_tokens_per_s
    )?;
    if l.job_time.count > 0 {
        writeln!(
            out,
            "  job time p50 {} p90 {} ({} complete plays)",
            latency(l.job_time.p50_s),
            latency(l.job_time.p90_s),
            l.job_time.count
        )?;
    }
    if let Some(slo) = slo {
        print_slo(out, slo)?;
    }
    for (class, count) in errors_by_count(summary) {
        let words = summary
            .error_samples
            .get(class)
            .map(|e| arbor::runs::record::in_words(e.http_status, &e.message))
            .unwrap_or_default();
        writeln!(
            out,
            "{}",
            shown(&format!("  error {class} x{count}: {words}"))
        )?;
    }
    if let Some(r) = &summary.replicas {
        print_replicas(out, r)?;
    }
    if let Some(b) = &summary.time_breakdown {
        print_breakdown(out, &b.observed, b.planned.as_ref())?;
    }
    Ok(())
}

/// One line per replica (docs/routing.md): its requests and share, its
/// latencies, its cache-hit ratio and failures; then the imbalance.
fn print_replicas(
    out: &mut impl Write,
    r: &arbor::runs::replicas::ReplicaReport,
) -> io::Result<()> {
    writeln!(
        out,
        "  replica  requests  share  TTFT p50  E2E p50   tok/s  cache hit  failed"
    )?;
    let hit = |h: Option<f64>| h.map_or("-".to_string(), |h| format!("{:.1}%", h * 100.0));
    let p50 = |d: &arbor::runs::collector::Latency| {
        if d.count == 0 {
            "-".to_string()
        } else {
            latency(d.p50_s)
        }
    };
    for f in &r.replicas {
        writeln!(
            out,
            "{}",
            shown(&format!(
                "  {:>7}  {:>8}  {:>4.0}%  {:>8}  {:>7}  {:>6.0}  {:>9}  {:>6}",
                f.replica,
                f.requests,
                f.share * 100.0,
                p50(&f.ttft),
                p50(&f.e2e),
                f.throughput.work.output_tokens_per_s,
                hit(f.cache.hit_ratio),
                f.failed + f.cancelled,
            ))
        )?;
    }
    let i = &r.imbalance;
    let spread = i.hit_ratio_spread.map_or(String::new(), |s| {
        format!(", hit ratios {:.1} points apart", s * 100.0)
    });
    writeln!(
        out,
        "{}",
        shown(&format!(
            "  imbalance: replica {} has {:.2}x the mean requests{spread}",
            i.busiest, i.requests_max_over_mean
        ))
    )
}

/// How the run went, in a few words.
fn status(summary: &Summary, slo: Option<&SloReport>) -> String {
    let c = &summary.counts;
    let stop = match summary.stopped_by.as_deref() {
        Some("abort_after") => Some("stopped by --abort-after".to_string()),
        Some(signal) => Some(format!("stopped by {signal}")),
        None if summary.cancelled => Some("cancelled".to_string()),
        None => None,
    };
    let mut words = if c.dispatched == 0 {
        "NOTHING MEASURED: no request was sent".to_string()
    } else if c.ok == 0 {
        format!("FAILED: all {} requests failed", c.dispatched)
    } else if c.failed > 0 {
        format!("{} of {} requests failed", c.failed, c.ok + c.failed)
    } else {
        format!("all {} requests ok", c.ok)
    };
    if let Some(stop) = stop {
        words.push_str(&format!(", {stop}"));
    }
    words.push_str(&format!(" in {}", latency(summary.elapsed_s)));
    if let Some(slo) = slo {
        let v = &slo.verdict;
        words.push_str(if v.too_small {
            "; SLO UNDECIDED"
        } else if v.pass {
            "; SLO PASS"
        } else {
            "; SLO FAIL"
        });
    }
    words
}

fn print_slo(out: &mut impl Write, slo: &SloReport) -> io::Result<()> {
    writeln!(out, "{}", shown(&format!("  slo {}", slo.spec)))?;
    for b in &slo.verdict.bounds {
        let seen = match b.reading {
            Reading::Value(ns) => latency(ns as f64 / 1e9),
            Reading::Failed => "a failed request".to_string(),
            Reading::Missing => "nothing measured".to_string(),
        };
        writeln!(
            out,
            "    {:<12} {:<5} {} (limit {})",
            b.metric,
            if b.pass { "pass" } else { "FAIL" },
            seen,
            latency(b.limit_ns as f64 / 1e9)
        )?;
    }
    let share = |g: Option<f64>| g.map(|g| format!("{:.1} %", g * 100.0));
    if let Some(g) = share(slo.verdict.request_goodput) {
        writeln!(
            out,
            "    goodput      {g} of requests met every request bound"
        )?;
    }
    if let Some(g) = share(slo.verdict.job_goodput) {
        writeln!(out, "    goodput      {g} of trees met every job bound")?;
    }
    Ok(())
}

/// Where the time went: a row a class with time on either path, the
/// caps' cut on its own row.
fn print_breakdown(
    out: &mut impl Write,
    observed: &TimeBreakdown,
    planned: Option<&TimeBreakdown>,
) -> io::Result<()> {
    writeln!(
        out,
        "where the time went: critical path of {} requests, makespan {}",
        observed.path_requests,
        latency(observed.makespan_ns as f64 / 1e9)
    )?;
    writeln!(
        out,
        "  {:<18} {:>11} {:>7} {:>11} {:>7}",
        "class", "run", "share", "plan", "share"
    )?;
    let find = |b: Option<&TimeBreakdown>, class: &str| {
        b.and_then(|b| b.classes.iter().find(|c| c.class == class).cloned())
    };
    let cell = |c: Option<arbor::runs::time_breakdown::TimeShare>| match c {
        Some(c) => format!("{:>9.3} s {:>6.1}%", c.s, c.share * 100.0),
        None => format!("{:>11} {:>7}", "-", "-"),
    };
    for class in &observed.classes {
        if class.class == IDLE_SKIPPED {
            continue;
        }
        let plan = find(planned, &class.class);
        if class.ns == 0 && plan.as_ref().is_none_or(|p| p.ns == 0) {
            continue;
        }
        writeln!(
            out,
            "  {:<18} {} {}",
            class.class,
            cell(Some(class.clone())),
            cell(plan)
        )?;
    }
    let cut = find(Some(observed), IDLE_SKIPPED).filter(|c| c.ns != 0);
    let plan_cut = find(planned, IDLE_SKIPPED).filter(|c| c.ns != 0);
    if cut.is_some() || plan_cut.is_some() {
        writeln!(
            out,
            "  {:<18} {} {}",
            "cut by idle caps",
            cell(cut),
            cell(plan_cut)
        )?;
        writeln!(
            out,
            "  (shares are of the path as replayed; the idle caps then cut the row above)"
        )?;
    }
    Ok(())
}

/// Error classes, most requests first (then by name).
fn errors_by_count(summary: &Summary) -> Vec<(&str, u64)> {
    let mut classes: Vec<(&str, u64)> = summary
        .errors
        .iter()
        .map(|(class, n)| (class.as_str(), *n))
        .collect();
    classes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    classes
}

/// A latency in the unit it reads best in: `0.20 ms`, `15.7 ms`, `1.25 s`.
fn latency(s: f64) -> String {
    if !s.is_finite() {
        "-".to_string()
    } else if s >= 10.0 {
        format!("{s:.1} s")
    } else if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 0.1 {
        format!("{:.0} ms", s * 1e3)
    } else if s >= 0.01 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.2} ms", s * 1e3)
    }
}

/// `line` as printed: control characters shown as `?` (a server's
/// message cannot move the cursor), cut to [`WIDTH`] with an ellipsis.
fn shown(line: &str) -> String {
    fit::cut(&fit::printable(line), WIDTH)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn small() -> Summary {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/runs/small/summary.json");
        let bytes = std::fs::read(&path).expect("the fixture");
        Summary::parse(&bytes, &path).expect("a summary")
    }

    fn printed(summary: &Summary) -> String {
        let mut out = Vec::new();
        print(&mut out, summary, None).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_verdict_comes_in_words_and_fits_80_columns() {
        let text = printed(&small());
        assert!(text.contains("verdict: "), "{text}");
        assert!(text.contains("  TTFT p50 "), "{text}");
        for line in text.lines() {
            assert!(
                line.chars().count() <= WIDTH,
                "{} columns: {line}",
                line.chars().count()
            );
        }
    }

    #[test]
    fn an_all_failed_run_says_so_with_the_servers_words_cut_to_fit() {
        let mut s = small();
        s.counts.failed += s.counts.ok;
        s.counts.ok = 0;
        s.errors.insert("http_status".to_string(), s.counts.failed);
        let long =
            "The model `llama-3-8b` does not exist or you do not have access to it. ".repeat(3);
        s.error_samples.insert(
            "http_status".to_string(),
            arbor::runs::collector::ErrorSample {
                http_status: Some(404),
                message: long,
            },
        );
        let text = printed(&s);
        assert!(text.contains("verdict: FAILED: all "), "{text}");
        let error = text
            .lines()
            .find(|l| l.contains("error http_status"))
            .expect("{text}");
        assert!(
            error.contains("HTTP 404: The model `llama-3-8b` does not exist"),
            "{error}"
        );
        assert!(
            error.ends_with('…') && error.chars().count() == WIDTH,
            "{error}"
        );
    }

    #[test]
    fn a_run_over_replicas_prints_one_line_each_and_the_imbalance() {
        use arbor::runs::collector::Collector;
        use arbor::runs::replicas::ReplicaReport;
        let per_replica = (0..3u32).map(|i| (i, Collector::new().finish())).collect();
        let endpoints: Vec<String> = (0..3)
            .map(|i| format!("http://replica-{i}.example:8000"))
            .collect();
        let mut summary = small();
        summary.replicas = ReplicaReport::build(&per_replica, &endpoints);
        let text = printed(&summary);
        assert!(text.contains("  replica  requests  share"), "{text}");
        assert!(text.contains("  imbalance: replica 0 has 1.00x"), "{text}");
        let rows = text
            .lines()
            .filter(|l| l.trim_start().starts_with(['0', '1', '2']))
            .count();
        assert_eq!(rows, 3, "{text}");
        for line in text.lines() {
            assert!(line.chars().count() <= WIDTH, "{line}");
        }
    }
}
