//! What one dashboard frame says, as lines that fit a width and a height:
//! the clock and its ETA, a bar, requests in flight against the planned
//! peak, the live rates, TTFT/ITL/E2E percentiles, errors by class with
//! the latest message, and each tree's plays.
//!
//! Owns the layout and what is left out when room is short (columns of
//! the latency table, parts of a line, tree rows, blank lines), never a
//! number cut ([`crate::fit`]). Pure: a [`View`] and a size in, lines out;
//! no terminal.

use arbor::runs::collector::Latency;
use arbor::runs::watch::{TreeProgress, Watched};

use super::rates::Rates;
use crate::fit;
use crate::progress::{clock, Frame, Span};

/// Everything one frame shows.
pub struct View<'a> {
    pub frame: &'a Frame,
    pub span: Span,
    /// The plan's peak of requests in flight (virtual clock).
    pub planned_peak: u64,
    /// Trees in the workload (one copy).
    pub trees: u64,
    pub rates: Option<Rates>,
    pub watched: &'a Watched,
}

/// The latency table's columns in the order they are shown (they are
/// kept, when room is short, in the order of `latency`'s list).
const SHOWN_ORDER: [&str; 6] = ["p50", "p90", "p99", "mean", "max", "count"];

/// Error classes listed one a line; the rest are counted.
const ERROR_ROWS: usize = 3;

/// Where a section's figures start.
const LABEL: usize = 12;

/// The narrowest a tree's cell gets: trees go side by side on a line of
/// twice this or more.
const TREE_CELL: usize = 64;

/// A tree's id is cut to this.
const TREE_NAME: usize = 20;

/// The frame as at most `height` lines of at most `width` columns.
pub fn lines(view: &View, width: usize, height: usize) -> Vec<String> {
    let mut lines = vec![
        header(view.frame, width),
        bar(view.frame, view.span, width),
        in_flight(view, width),
        rates(view.rates, width),
        String::new(),
    ];
    lines.extend(latency(view.watched, view.frame.counts.done, width));
    lines.push(String::new());
    lines.extend(errors(view, width));
    lines.push(String::new());
    let room = height.saturating_sub(lines.len());
    lines.extend(trees(view, width, room));
    if lines.len() > height {
        lines.retain(|l| !l.is_empty());
        lines.truncate(height);
    }
    lines.into_iter().map(|l| fit::cut(&l, width)).collect()
}

/// `label` padded to the figures' column.
fn labelled(label: &str, rest: &str) -> String {
    format!("{label:<LABEL$}{rest}")
}

/// `arbor run · 12.3 s elapsed of 1:00 planned · ETA 47.7 s`.
fn header(f: &Frame, width: usize) -> String {
    let (elapsed, planned) = (clock(f.elapsed), clock(f.planned));
    let (eta, short) = (f.eta_words(false), f.eta_words(true));
    fit::first_fitting(
        &[
            format!("arbor run · {elapsed} elapsed of {planned} planned · {eta}"),
            format!("{elapsed} elapsed of {planned} planned · {eta}"),
            format!("{elapsed} of {planned} · {short}"),
            format!("{elapsed} · {short}"),
        ],
        width,
    )
}

/// `[=====>     ] 45 of 91 requests done`, or of the duration.
fn bar(f: &Frame, span: Span, width: usize) -> String {
    let forms = match span {
        Span::Requests { total } => vec![
            format!("{} of {total} requests done", f.position),
            format!("{}/{total}", f.position),
        ],
        Span::Time { duration } => vec![
            format!(
                "{} of {} (--duration)",
                clock(f.elapsed.min(duration)),
                clock(duration)
            ),
            format!("{} of {}", clock(f.elapsed.min(duration)), clock(duration)),
        ],
    };
    let text = fit::first_fitting(&forms, width);
    let cells = width.saturating_sub(fit::width(&text) + 3).min(60);
    if cells < 10 {
        return text;
    }
    format!("[{}] {text}", drawn(f.position, f.length, cells))
}

/// A bar of `cells` filled to `position` of `length`: `=====>    `.
fn drawn(position: u64, length: u64, cells: usize) -> String {
    let filled = if length == 0 {
        0
    } else {
        (position.min(length) as u128 * cells as u128 / length as u128) as usize
    };
    let mut bar = "=".repeat(filled);
    if filled < cells {
        bar.push(if filled > 0 { '>' } else { ' ' });
        bar.push_str(&" ".repeat(cells - filled - 1));
    }
    bar
}

/// `in flight   3 now · planned peak 5 · 48 sent · 45 done · 0 errors`.
fn in_flight(view: &View, width: usize) -> String {
    let c = &view.frame.counts;
    let parts = [
        format!("{} now", c.in_flight()),
        format!("planned peak {}", view.planned_peak),
        format!("{} sent", c.sent),
        format!("{} done", c.done),
        format!("{} errors", c.errors),
    ];
    labelled(
        "in flight",
        &fit::parts(&parts, " · ", width.saturating_sub(LABEL)),
    )
}

/// `rate        8.1 requests/s · 4692 output tokens/s · last 5.0 s`.
fn rates(rates: Option<Rates>, width: usize) -> String {
    let Some(r) = rates else {
        return labelled("rate", "-");
    };
    let about = if r.estimated { "~" } else { "" };
    let parts = [
        format!("{:.1} requests/s", r.requests_per_s),
        format!("{about}{:.0} output tokens/s", r.output_tokens_per_s),
        format!("last {}", clock(r.over)),
    ];
    labelled(
        "rate",
        &fit::parts(&parts, " · ", width.saturating_sub(LABEL)),
    )
}

/// The latency table: as many columns as fit, p50 and p99 first.
fn latency(watched: &Watched, done: u64, width: usize) -> Vec<String> {
    let s = &watched.so_far;
    let rows: [(&str, &Latency); 3] = [("TTFT", &s.ttft), ("ITL", &s.itl), ("E2E", &s.e2e)];
    let ms = |seconds: f64| format!("{:.2}", seconds * 1e3);
    type Column = (&'static str, fn(&Latency) -> f64);
    let columns: [Column; 5] = [
        ("p50", |l| l.p50_s),
        ("p99", |l| l.p99_s),
        ("p90", |l| l.p90_s),
        ("mean", |l| l.mean_s),
        ("max", |l| l.max_s),
    ];
    // Each column: its header and one cell a row; the count last.
    let mut table: Vec<(String, Vec<String>)> = Vec::new();
    let mut used = LABEL;
    let mut add = |header: &str, cells: Vec<String>, table: &mut Vec<(String, Vec<String>)>| {
        let cell = cells
            .iter()
            .map(|c| fit::width(c))
            .chain([header.len()])
            .max();
        let cell = cell.unwrap_or(0) + 2;
        if used + cell <= width {
            used += cell;
            table.push((
                format!("{header:>cell$}"),
                cells.iter().map(|c| format!("{c:>cell$}")).collect(),
            ));
        }
    };
    for (header, value) in columns {
        let cells = rows
            .iter()
            .map(|(_, l)| {
                if l.count == 0 {
                    "-".to_string()
                } else {
                    ms(value(l))
                }
            })
            .collect();
        add(header, cells, &mut table);
    }
    let counts = rows.iter().map(|(_, l)| l.count.to_string()).collect();
    add("count", counts, &mut table);
    // Chosen by priority, shown in the order of the percentiles.
    table.sort_by_key(|(header, _)| SHOWN_ORDER.iter().position(|h| header.trim() == *h));
    let headers: String = table.iter().map(|(h, _)| h.as_str()).collect();
    let mut lines = vec![format!("{:<LABEL$}{headers}", "latency ms")];
    for (i, (name, _)) in rows.iter().enumerate() {
        let cells: String = table.iter().map(|(_, c)| c[i].as_str()).collect();
        lines.push(format!("  {name:<w$}{cells}", w = LABEL - 2));
    }
    if watched.sampled {
        let parts = [
            format!("a sample: {} of {done} requests read", watched.records),
            "(the display reads a bounded share of records.jsonl)".to_string(),
        ];
        lines.push(format!("  {}", fit::parts(&parts, " ", width - 2)));
    }
    lines
}

/// `errors      12 · http_status 11 · timeout 1`, then each class's
/// latest message.
fn errors(view: &View, width: usize) -> Vec<String> {
    let total = view.frame.counts.errors;
    let by_class = &view.watched.so_far.errors;
    if total == 0 && by_class.is_empty() {
        return vec![labelled("errors", "none")];
    }
    let mut classes: Vec<(&String, &u64)> = by_class.iter().collect();
    classes.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let mut parts = vec![format!("{total}")];
    parts.extend(classes.iter().map(|(class, n)| format!("{class} {n}")));
    let mut lines = vec![labelled(
        "errors",
        &fit::parts(&parts, " · ", width.saturating_sub(LABEL)),
    )];
    let name_width = classes.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
    for (class, _) in classes.iter().take(ERROR_ROWS) {
        let message = view
            .watched
            .latest_errors
            .get(*class)
            .map_or(String::new(), |m| fit::printable(m));
        let start = format!("  {class:<name_width$}  latest: ");
        let room = width.saturating_sub(fit::width(&start));
        lines.push(format!("{start}{}", fit::cut(&message, room)));
    }
    if classes.len() > ERROR_ROWS {
        lines.push(format!("  and {} more classes", classes.len() - ERROR_ROWS));
    }
    lines
}

/// `trees       3 of 4 started · plays 1 done, 2 running`, then one cell
/// a tree (running ones first) in as many columns as the width holds, in
/// at most `room` lines.
fn trees(view: &View, width: usize, room: usize) -> Vec<String> {
    let rows = &view.watched.trees;
    let done: u64 = rows.iter().map(|t| t.plays_done).sum();
    let running: u64 = rows.iter().map(|t| t.plays_running).sum();
    let parts = [
        format!("{} of {} started", rows.len(), view.trees),
        format!("plays {done} done, {running} running"),
    ];
    let mut lines = vec![labelled(
        "trees",
        &fit::parts(&parts, " · ", width.saturating_sub(LABEL)),
    )];
    let mut order: Vec<&TreeProgress> = rows.iter().collect();
    order.sort_by_key(|t| (t.plays_running == 0, t.index));
    let names = order
        .iter()
        .map(|t| fit::width(&t.name))
        .max()
        .unwrap_or(0)
        .min(TREE_NAME);
    let per_line = (width.saturating_sub(2) / TREE_CELL).max(1);
    let cell = width.saturating_sub(2) / per_line;
    // Below the section's own line: every tree, or as many as leave a
    // line to count the others.
    let lines_left = room.saturating_sub(1);
    let shown = if order.len() <= lines_left * per_line {
        order.len()
    } else {
        lines_left.saturating_sub(1) * per_line
    };
    for chunk in order[..shown].chunks(per_line) {
        let cells: Vec<String> = chunk
            .iter()
            .map(|t| tree_cell(t, names, cell.saturating_sub(2)))
            .collect();
        let line: String = cells
            .iter()
            .map(|c| format!("{c:<cell$}"))
            .collect::<String>();
        lines.push(format!("  {}", line.trim_end()));
    }
    if shown < order.len() {
        lines.push(format!("  and {} more trees", order.len() - shown));
    }
    lines
}

/// One tree in `width` columns, its name in `names`: `t0  [===>   ]
/// 3/6 turns · 1 running · 0 done`.
fn tree_cell(t: &TreeProgress, names: usize, width: usize) -> String {
    let name = fit::cut(&fit::printable(&t.name), names);
    let (position, length) = if t.plays_running > 0 {
        (t.turns_done_running, t.plays_running * u64::from(t.turns))
    } else {
        (1, 1)
    };
    let turns = if t.plays_running > 0 {
        format!("{position}/{length} turns")
    } else {
        format!("{} turns", t.turns)
    };
    let parts = [
        turns,
        format!("{} running", t.plays_running),
        format!("{} done", t.plays_done),
    ];
    let start = format!("{name:<names$} [{}] ", drawn(position, length, 10));
    let rest = fit::parts(&parts, " · ", width.saturating_sub(fit::width(&start)));
    format!("{start}{rest}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::{frame, Counts};
    use arbor::engine::time::{Nanos, NANOS_PER_SEC};
    use arbor::runs::collector::SoFar;
    use std::collections::BTreeMap;

    const S: Nanos = NANOS_PER_SEC;

    /// Milliseconds as the table shows them.
    fn in_ms(seconds: f64) -> String {
        format!("{:.2}", seconds * 1e3)
    }

    fn latency(count: u64, p50_ms: f64, p99_ms: f64) -> Latency {
        Latency {
            count,
            mean_s: p50_ms * 1.1e-3,
            p50_s: p50_ms * 1e-3,
            p90_s: p99_ms * 0.9e-3,
            p95_s: p99_ms * 0.95e-3,
            p99_s: p99_ms * 1e-3,
            max_s: p99_ms * 1.5e-3,
        }
    }

    fn tree(index: u32, name: &str, running: u64, done: u64) -> TreeProgress {
        TreeProgress {
            index,
            name: name.to_string(),
            turns: 53,
            plays_done: done,
            plays_running: running,
            turns_done_running: 38 * running,
        }
    }

    /// A run 30 s into 60 s planned with 2 error classes and `n` trees.
    fn watched(n: u32, sampled: bool) -> Watched {
        let requests = arbor::runs::collector::RequestCounts {
            ok: 1234,
            ..Default::default()
        };
        let mut errors = BTreeMap::new();
        errors.insert("http_status".to_string(), 11);
        errors.insert("timeout".to_string(), 1);
        let mut latest = BTreeMap::new();
        latest.insert(
            "http_status".to_string(),
            format!(
                "HTTP 503: {}",
                "the server is overloaded, try again later; ".repeat(8)
            ),
        );
        latest.insert("timeout".to_string(), "no answer within 600 s".to_string());
        Watched {
            so_far: SoFar {
                requests,
                ttft: latency(1234, 10.48, 13.04),
                itl: latency(52400, 0.2, 0.34),
                e2e: latency(1234, 59.88, 12969.64),
                output_tokens: 52491,
                errors,
            },
            latest_errors: latest,
            trees: (0..n)
                .map(|i| {
                    tree(
                        i,
                        &format!("trace_{i:04}"),
                        u64::from(i % 3 == 0),
                        u64::from(i % 2),
                    )
                })
                .collect(),
            records: 1246,
            unreadable: 0,
            sampled,
        }
    }

    fn frame_at(last: bool) -> Frame {
        frame(
            Span::Requests { total: 5000 },
            60 * S,
            30 * S,
            Counts::consistent(1300, 1246, 12),
            last,
        )
    }

    fn rates() -> Option<Rates> {
        Some(Rates {
            requests_per_s: 41.5,
            output_tokens_per_s: 4692.0,
            over: 5 * S,
            estimated: false,
        })
    }

    fn render(watched: &Watched, width: usize, height: usize) -> Vec<String> {
        let f = frame_at(false);
        let view = View {
            frame: &f,
            span: Span::Requests { total: 5000 },
            planned_peak: 64,
            trees: 120,
            rates: rates(),
            watched,
        };
        lines(&view, width, height)
    }

    #[test]
    fn every_line_fits_at_80_and_200_columns_and_the_block_fits_the_rows() {
        for (n, sampled) in [(0, false), (4, false), (120, true)] {
            let w = watched(n, sampled);
            for (width, height) in [(79, 23), (199, 49), (60, 12)] {
                let lines = render(&w, width, height);
                assert!(
                    lines.len() <= height,
                    "{width}x{height}: {} lines",
                    lines.len()
                );
                for line in &lines {
                    assert!(fit::width(line) <= width, "{width}: {line:?}");
                }
            }
        }
    }

    #[test]
    fn the_figures_are_there_at_80_columns() {
        let w = watched(4, false);
        let text = render(&w, 79, 23).join("\n");
        for figure in [
            "30.0 s",
            "1:00",
            "ETA 30.0 s",
            "1246 of 5000 requests done",
            "54 now",
            "planned peak 64",
            "41.5 requests/s",
            "4692 output tokens/s",
            &in_ms(10.48e-3),
            &in_ms(13.04e-3),
            &in_ms(0.34e-3),
            &in_ms(12969.64e-3),
            "http_status 11",
            "timeout 1",
            "HTTP 503: the server",
            "no answer within 600 s",
            "4 of 120 started",
            "trace_0000",
            "trace_0003",
            "38/53 turns",
        ] {
            assert!(text.contains(figure), "no {figure:?} in\n{text}");
        }
        // The long message is cut with an ellipsis, not wrapped.
        assert!(text.contains('…'), "{text}");
    }

    #[test]
    fn a_wide_terminal_shows_more_columns_and_trees_side_by_side() {
        let w = watched(12, false);
        let narrow = render(&w, 79, 40);
        let wide = render(&w, 199, 40);
        let header = |lines: &[String]| {
            lines
                .iter()
                .find(|l| l.starts_with("latency"))
                .cloned()
                .unwrap()
        };
        for column in ["p50", "p99", "p90", "mean", "max", "count"] {
            assert!(header(&narrow).contains(column), "{}", header(&narrow));
        }
        // Short of room, the table keeps p50 and p99 and drops the rest.
        let tight = header(&render(&w, 40, 40));
        assert!(tight.contains("p50") && tight.contains("p99"), "{tight}");
        assert!(
            !tight.contains("max") && !tight.contains("count"),
            "{tight}"
        );
        let tree_lines = |lines: &[String]| lines.iter().filter(|l| l.contains("trace_")).count();
        assert_eq!(tree_lines(&narrow), 12);
        assert_eq!(tree_lines(&wide), 4, "three trees a line at 200 columns");
    }

    #[test]
    fn trees_that_do_not_fit_are_counted_and_running_ones_come_first() {
        let w = watched(120, false);
        let lines = render(&w, 79, 23);
        let last = lines.last().unwrap();
        assert!(
            last.starts_with("  and ") && last.ends_with(" more trees"),
            "{lines:#?}"
        );
        let first = lines.iter().find(|l| l.contains("trace_")).unwrap();
        assert!(
            first.contains("trace_0000") && first.contains("1 running"),
            "{first}"
        );
        let second = lines
            .iter()
            .filter(|l| l.contains("trace_"))
            .nth(1)
            .unwrap();
        assert!(second.contains("trace_0003"), "{second}");
    }

    #[test]
    fn a_sample_says_so_and_estimated_tokens_are_marked() {
        let w = watched(0, true);
        let f = frame_at(false);
        let view = View {
            frame: &f,
            span: Span::Requests { total: 5000 },
            planned_peak: 64,
            trees: 1,
            rates: rates().map(|r| Rates {
                estimated: true,
                ..r
            }),
            watched: &w,
        };
        let text = lines(&view, 79, 23).join("\n");
        assert!(
            text.contains("a sample: 1246 of 1246 requests read"),
            "{text}"
        );
        assert!(text.contains("~4692 output tokens/s"), "{text}");
    }

    #[test]
    fn the_final_frame_says_finished_and_a_drain_says_what_it_waits_for() {
        let w = watched(1, false);
        let f = frame_at(true);
        let view = View {
            frame: &f,
            span: Span::Requests { total: 5000 },
            planned_peak: 64,
            trees: 1,
            rates: None,
            watched: &w,
        };
        assert!(lines(&view, 79, 23)[0].ends_with("finished"));
        let f = frame(
            Span::Time { duration: 60 * S },
            60 * S,
            70 * S,
            Counts::consistent(10, 7, 0),
            false,
        );
        let view = View {
            frame: &f,
            span: Span::Time { duration: 60 * S },
            ..view
        };
        let text = lines(&view, 79, 23).join("\n");
        assert!(
            text.contains("duration reached, waiting for 3 in flight"),
            "{text}"
        );
        assert!(text.contains("1:00 of 1:00 (--duration)"), "{text}");
    }
}
