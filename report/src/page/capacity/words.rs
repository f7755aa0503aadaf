//! What the capacity page says in words: the answer sentence at the top
//! (how much load holds within the SLOs, or why there is no answer), a
//! prediction's answer, and each probe's verdict with its reason. Owns
//! wording only; reads the search as [`super::file`] gives it.

use super::file::{Answer, Bound, Cause, Held, Knob, Probe, Reading, Search, Stopped};

/// A probe's verdict, as the table shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Fail,
    /// Too few requests succeeded to decide: neither pass nor fail.
    TooSmall,
    /// The probe's run failed: no verdict.
    Unresolved,
}

/// `8 sessions`, `1 session`, `1.5 trees/s`.
pub fn load(knob: Knob, value: f64) -> String {
    match knob {
        Knob::Sessions => {
            let n = number(knob, value);
            format!("{n} session{}", if n == "1" { "" } else { "s" })
        }
        Knob::Rate => format!("{} trees/s", short(value)),
    }
}

/// A number without trailing zeros (`1.5`, `2`, `0.125`).
fn short(value: f64) -> String {
    let text = format!("{value:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_string()
}

/// `80.0 ms`, `1.250 s`, as the console's table shows a duration.
pub fn duration(ns: u64) -> String {
    if ns < 1_000_000_000 {
        format!("{:.1} ms", ns as f64 / 1e6)
    } else {
        format!("{:.3} s", ns as f64 / 1e9)
    }
}

fn percent(share: f64) -> String {
    format!("{:.1} %", share * 100.0)
}

/// The answer at the top of the page.
pub fn headline(search: &Search) -> String {
    let knob = search.knob;
    let slo = &search.slo;
    if let Some(stop) = search.stopped.as_ref().filter(|_| !search.complete) {
        return format!(
            "No answer: the search stopped at probe {} ({}), {}",
            stop.probe,
            load(knob, stop.load),
            match stop.cause {
                Cause::Failed => "whose run failed",
                Cause::TooSmall => "too small to decide",
            }
        );
    }
    if !search.complete {
        return "No answer: the search did not finish".to_string();
    }
    answer(knob, slo, search.answer, search.range[0])
}

/// "Holds 10 sessions within SLO (11 sessions fail)", and the other
/// answers a search can give.
fn answer(knob: Knob, slo: &str, answer: Answer, lowest: f64) -> String {
    match (answer.passing, answer.failing) {
        (Some(p), Some(f)) => format!(
            "Holds {} within {slo}; {} fail{}",
            load(knob, p),
            load(knob, f),
            if singular(knob, f) {
                "s"
            } else {
                ""
            }
        ),
        (Some(p), None) => format!(
            "Holds {} within {slo}, the top of the range searched: the knee is higher (raise --search's high end)",
            load(knob, p)
        ),
        (None, Some(f)) if f <= lowest => format!(
            "Holds no load within {slo}: even the least load searched, {}, fails",
            load(knob, f)
        ),
        (None, Some(f)) => format!(
            "Holds no load within {slo}: even {} fails (lower --search's low end)",
            load(knob, f)
        ),
        (None, None) => "No load was probed".to_string(),
    }
}

/// A live search's start, in words: what the virtual clock predicted.
pub fn predicted(search: &Search) -> Option<String> {
    let p = search.predicted?;
    let knob = search.knob;
    let answer = match (p.passing, p.failing) {
        (Some(pass), Some(fail)) => format!(
            "holds {} ({} fail{})",
            load(knob, pass),
            number(knob, fail),
            if singular(knob, fail) { "s" } else { "" }
        ),
        (Some(pass), None) => format!("holds {}, the top of the range", load(knob, pass)),
        (None, Some(fail)) => format!("holds no load ({} fails)", load(knob, fail)),
        (None, None) => "no load predicted".to_string(),
    };
    Some(format!(
        "{answer} on the virtual clock under {}",
        search.service
    ))
}

/// The answer in agents and jobs per hour: "3.0 concurrent agents (peak
/// 4; 4.7 counting subagents) and 156 jobs/h (60 jobs in 1386.2 s; 81
/// jobs/h within the job SLOs) at 4 sessions"; `None` when no load
/// passed.
pub fn in_agents(search: &Search) -> Option<String> {
    let Held { load: at, agents } = search.answer_in_agents.as_ref()?;
    let mut text = format!(
        "{:.1} concurrent agents (peak {}; {:.1} counting subagents)",
        agents.trees_mean, agents.trees_peak, agents.agents_mean
    );
    if let Some(per_hour) = agents.jobs_per_hour {
        text += &format!(
            " and {} jobs/h ({} job{} in {:.1} s",
            per_hour_text(per_hour),
            agents.jobs,
            if agents.jobs == 1 { "" } else { "s" },
            agents.window_s
        );
        if let Some(good) = agents.good_jobs_per_hour {
            text += &format!("; {} jobs/h within the job SLOs", per_hour_text(good));
        }
        text += ")";
    }
    Some(format!("{text} at {}", load(search.knob, *at)))
}

/// Jobs per hour as a count (`1,234`); below 10, one decimal.
pub fn per_hour_text(v: f64) -> String {
    if v < 10.0 {
        return format!("{v:.1}");
    }
    let digits = format!("{v:.0}");
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The loads that pass above the first failing one (a sweep's curve
/// that is not monotonic), in words; `None` when there are none.
pub fn above_knee(search: &Search) -> Option<String> {
    let failing = search.answer.failing?;
    let mut again: Vec<f64> = search
        .probes
        .iter()
        .filter(|p| p.pass && p.load > failing)
        .map(|p| p.load)
        .collect();
    again.sort_by(f64::total_cmp);
    let (last, rest) = again.split_last()?;
    let knob = search.knob;
    let listed = if rest.is_empty() {
        load(knob, *last)
    } else {
        let rest: Vec<String> = rest.iter().map(|&v| number(knob, v)).collect();
        format!(
            "{} and {}",
            rest.join(", "),
            match knob {
                Knob::Sessions => format!("{} sessions", number(knob, *last)),
                Knob::Rate => load(knob, *last),
            }
        )
    };
    Some(format!(
        "{listed} pass{} again past the first failing load, {}: the curve is not monotonic \
         there (noise, or the workload's shape); the answer is the largest load below the \
         first that fails",
        if rest.is_empty() && singular(knob, *last) {
            "es"
        } else {
            ""
        },
        load(knob, failing)
    ))
}

/// A load's number alone (`8`, `1.5`).
fn number(knob: Knob, value: f64) -> String {
    match knob {
        Knob::Sessions => format!("{value:.0}"),
        Knob::Rate => short(value),
    }
}

/// Whether a load takes a verb in the singular: one session, or a rate
/// (`1 session fails`, `1.5 trees/s fails`, `8 sessions fail`).
fn singular(knob: Knob, value: f64) -> bool {
    knob == Knob::Rate || number(knob, value) == "1"
}

/// A probe's verdict and its reason.
pub fn verdict(probe: &Probe, goodput_threshold: Option<f64>) -> (Verdict, String) {
    if probe.too_small {
        return (
            Verdict::TooSmall,
            format!(
                "too small to decide: {} of its {} requests succeeded (--min-requests)",
                probe.measured, probe.requests
            ),
        );
    }
    if probe.pass {
        return (
            Verdict::Pass,
            match goodput_threshold {
                None => "every bound met".to_string(),
                Some(t) => format!("goodput at least {}: {}", percent(t), goodputs(probe)),
            },
        );
    }
    if probe.requests == 0 {
        return (Verdict::Fail, "no request measured".to_string());
    }
    let reason = match goodput_threshold {
        Some(t) => format!("goodput below {}: {}", percent(t), goodputs(probe)),
        None => {
            let missed: Vec<String> = probe
                .bounds
                .iter()
                .filter(|b| !b.pass)
                .map(missed_bound)
                .collect();
            if missed.is_empty() {
                "not every bound met".to_string()
            } else {
                missed.join("; ")
            }
        }
    };
    (Verdict::Fail, reason)
}

/// The reason of a probe whose run failed and stopped the search.
pub fn unresolved(stop: &Stopped) -> String {
    format!("its run failed: {}", stop.message)
}

fn goodputs(probe: &Probe) -> String {
    let mut parts = Vec::new();
    if let Some(g) = probe.request_goodput {
        parts.push(format!("requests {}", percent(g)));
    }
    if let Some(g) = probe.job_goodput {
        parts.push(format!("trees {}", percent(g)));
    }
    if parts.is_empty() {
        "none measured".to_string()
    } else {
        parts.join(", ")
    }
}

fn missed_bound(b: &Bound) -> String {
    match b.reading {
        Reading::Value(v) => format!("{} {} > {}", b.metric, duration(v), duration(b.limit_ns)),
        Reading::Failed => format!("{} falls on a failed request", b.metric),
        Reading::Missing => format!("{}: nothing to measure", b.metric),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::capacity::file::Mode;

    fn search(passing: Option<f64>, failing: Option<f64>) -> Search {
        Search {
            arbor_version: None,
            mode: Mode::Virtual,
            complete: true,
            stopped: None,
            slo: "ttft_p99<=600ms".to_string(),
            goodput_threshold: None,
            knob: Knob::Sessions,
            range: [1.0, 20.0],
            step: 1.0,
            service: "server:p.toml".to_string(),
            predicted: None,
            answer: Answer { passing, failing },
            probes: Vec::new(),
            answer_in_agents: None,
            pareto: None,
        }
    }

    #[test]
    fn the_headline_is_the_answer() {
        assert_eq!(
            headline(&search(Some(10.0), Some(11.0))),
            "Holds 10 sessions within ttft_p99<=600ms; 11 sessions fail"
        );
        assert_eq!(
            headline(&search(None, Some(1.0))),
            "Holds no load within ttft_p99<=600ms: even the least load searched, 1 session, fails"
        );
        assert!(headline(&search(Some(20.0), None)).contains("raise --search's high end"));
        let mut rate = search(Some(1.5), Some(1.6));
        rate.knob = Knob::Rate;
        assert_eq!(
            headline(&rate),
            "Holds 1.5 trees/s within ttft_p99<=600ms; 1.6 trees/s fails"
        );
    }

    #[test]
    fn loads_passing_past_the_first_failure_are_named() {
        let mut s = search(Some(6.0), Some(7.0));
        let probe = |load: f64, pass: bool| Probe {
            probe: 1,
            load,
            dir: String::new(),
            bounds: Vec::new(),
            request_goodput: None,
            job_goodput: None,
            requests: 1,
            failed: 0,
            measured: 1,
            jobs: 0,
            too_small: false,
            pass,
            agents: None,
        };
        s.probes = vec![probe(6.0, true), probe(7.0, false), probe(9.0, true)];
        assert!(above_knee(&s)
            .unwrap()
            .starts_with("9 sessions pass again past the first failing load, 7 sessions"));
        s.probes.push(probe(8.0, true));
        assert!(above_knee(&s)
            .unwrap()
            .starts_with("8 and 9 sessions pass again"));
        s.probes.retain(|p| p.load <= 7.0);
        assert_eq!(above_knee(&s), None);
    }

    #[test]
    fn the_answer_in_agents_names_the_load() {
        let mut s = search(Some(4.0), Some(5.0));
        assert_eq!(in_agents(&s), None);
        s.answer_in_agents = Some(Held {
            load: 4.0,
            agents: crate::page::capacity::file::Agents {
                trees_mean: 3.0,
                trees_peak: 4,
                agents_mean: 4.69,
                jobs: 1,
                window_s: 2.31,
                jobs_per_hour: Some(1555.8),
                good_jobs_per_hour: Some(8.04),
                ..Default::default()
            },
        });
        assert_eq!(
            in_agents(&s).unwrap(),
            "3.0 concurrent agents (peak 4; 4.7 counting subagents) and 1,556 jobs/h \
             (1 job in 2.3 s; 8.0 jobs/h within the job SLOs) at 4 sessions"
        );
    }

    #[test]
    fn a_prediction_says_its_answer_and_service() {
        let mut s = search(Some(5.0), Some(6.0));
        assert_eq!(predicted(&s), None);
        s.predicted = Some(Answer {
            passing: Some(4.0),
            failing: Some(5.0),
        });
        assert_eq!(
            predicted(&s).unwrap(),
            "holds 4 sessions (5 fail) on the virtual clock under server:p.toml"
        );
    }

    #[test]
    fn a_stopped_search_has_no_answer() {
        let mut s = search(None, None);
        s.complete = false;
        s.stopped = Some(Stopped {
            probe: 2,
            load: 6.0,
            cause: Cause::TooSmall,
            message: "too small".to_string(),
        });
        assert_eq!(
            headline(&s),
            "No answer: the search stopped at probe 2 (6 sessions), too small to decide"
        );
    }

    #[test]
    fn a_failing_probe_names_the_bounds_it_missed() {
        let probe = Probe {
            probe: 3,
            load: 11.0,
            dir: "probe-3-sessions-11".to_string(),
            bounds: vec![
                Bound {
                    metric: "ttft_p99".to_string(),
                    limit_ns: 600_000_000,
                    reading: Reading::Value(642_700_000),
                    pass: false,
                    interval: None,
                },
                Bound {
                    metric: "e2e_p99".to_string(),
                    limit_ns: 9_000_000_000,
                    reading: Reading::Failed,
                    pass: false,
                    interval: None,
                },
                Bound {
                    metric: "itl_p99".to_string(),
                    limit_ns: 80_000_000,
                    reading: Reading::Value(1_000_000),
                    pass: true,
                    interval: None,
                },
            ],
            request_goodput: Some(0.9),
            job_goodput: None,
            requests: 10,
            failed: 1,
            measured: 9,
            jobs: 0,
            too_small: false,
            pass: false,
            agents: None,
        };
        assert_eq!(
            verdict(&probe, None),
            (
                Verdict::Fail,
                "ttft_p99 642.7 ms > 600.0 ms; e2e_p99 falls on a failed request".to_string()
            )
        );
        assert_eq!(
            verdict(&probe, Some(0.95)),
            (
                Verdict::Fail,
                "goodput below 95.0 %: requests 90.0 %".to_string()
            )
        );
        let small = Probe {
            too_small: true,
            ..probe
        };
        assert_eq!(verdict(&small, None).0, Verdict::TooSmall);
    }
}
