//! What the capacity page says in words: the answer sentence at the top
//! (how much load holds within the SLOs, or why there is no answer), a
//! prediction's answer, and each probe's verdict with its reason. Owns
//! wording only; reads the search as [`super::file`] gives it.

use super::file::{
    Answer, AnswerKind, Bound, Cause, Confidence, Decision, Held, Knob, Probe, Reading, Search,
    Stopped,
};

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
    /// A live probe whose 95 % interval straddles a limit, after its
    /// extensions: neither pass nor fail.
    Undecided,
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
                Cause::Unresolved => "unresolved on its 95 % intervals",
            }
        );
    }
    if !search.complete {
        return "No answer: the search did not finish".to_string();
    }
    if let Some(bound) = bound(search) {
        return bound;
    }
    answer(knob, slo, search.answer, search.range[0])
}

/// The headline of an answer that is only a bound (a live probe left
/// unresolved, or a confirmation that did not hold); `None` for a point.
pub fn bound(search: &Search) -> Option<String> {
    let knob = search.knob;
    let slo = &search.slo;
    let a = search.answer;
    let open = unresolved_loads(search);
    let said = match (a.kind, a.passing, a.failing) {
        (AnswerKind::Point, ..) => return None,
        (AnswerKind::Bracket, Some(p), Some(f)) => format!(
            "Only a bracket: {} pass and {} fail within {slo}, {open} between them unresolved",
            load(knob, p),
            load(knob, f)
        ),
        (AnswerKind::LowerBound, Some(p), _) => format!(
            "Only a lower bound: holds at least {} within {slo}; {open} above it unresolved, no \
             failing load decided",
            load(knob, p)
        ),
        (AnswerKind::UpperBound, _, Some(f)) => format!(
            "Only an upper bound: holds less than {} within {slo} (that load fails); {open} below \
             it unresolved, no passing load decided",
            load(knob, f)
        ),
        _ => format!("No answer: no load was decided within {slo}; {open} unresolved"),
    };
    Some(said)
}

/// The loads the answer left unresolved (between its ends), in words.
fn unresolved_loads(search: &Search) -> String {
    let a = search.answer;
    let mut loads: Vec<f64> = search
        .probes
        .iter()
        .filter(|p| {
            let mixed = search
                .probes
                .iter()
                .any(|q| q.load == p.load && q.decision != p.decision);
            (p.decision == Some(Decision::Unresolved) || mixed)
                && a.passing.is_none_or(|v| p.load > v)
                && a.failing.is_none_or(|v| p.load < v)
        })
        .map(|p| p.load)
        .collect();
    loads.sort_by(f64::total_cmp);
    loads.dedup();
    let listed: Vec<String> = loads.iter().map(|&v| load(search.knob, v)).collect();
    if listed.is_empty() {
        "no load".to_string()
    } else {
        listed.join(", ")
    }
}

/// The confirmation run, in words; `None` without one.
pub fn confirmation(search: &Search) -> Option<String> {
    let c = search.answer.confirmation?;
    let at = load(search.knob, c.load);
    Some(match (c.held, c.decision) {
        (true, _) => format!("{at} measured once more (probe {}): passed again", c.probe),
        (false, Decision::Fail) => format!(
            "{at} measured once more (probe {}) FAILED: the answer is downgraded to a bound",
            c.probe
        ),
        (false, _) => format!(
            "{at} measured once more (probe {}) was unresolved: the answer is downgraded to a \
             bound",
            c.probe
        ),
    })
}

/// `[301.2 ms, 402.0 ms]`: a 95 % interval, an unbounded end as `…`.
pub fn interval(c: &Confidence) -> String {
    let end = |r: Option<Reading>| match r {
        Some(Reading::Value(v)) => duration(v),
        Some(Reading::Failed) => "failed".to_string(),
        Some(Reading::Missing) | None => "…".to_string(),
    };
    format!("[{}, {}]", end(c.lo), end(c.hi))
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
    let (verdict, reason) = judged(probe, goodput_threshold);
    let mut said = Vec::new();
    if !probe.extensions.is_empty() {
        said.push(format!(
            "pooled with {} extension{}",
            probe.extensions.len(),
            if probe.extensions.len() == 1 { "" } else { "s" }
        ));
    }
    if probe.confirmation {
        said.push("the confirmation run".to_string());
    }
    if said.is_empty() {
        (verdict, reason)
    } else {
        (verdict, format!("{reason} ({})", said.join("; ")))
    }
}

fn judged(probe: &Probe, goodput_threshold: Option<f64>) -> (Verdict, String) {
    if probe.decision == Some(Decision::Unresolved) && !probe.too_small {
        let open: Vec<String> = probe
            .bounds
            .iter()
            .filter_map(|b| {
                let c = b.confidence?;
                let straddles = !matches!(c.hi, Some(Reading::Value(v)) if v <= b.limit_ns)
                    && !matches!(c.lo, Some(Reading::Failed))
                    && !matches!(c.lo, Some(Reading::Value(v)) if v > b.limit_ns);
                straddles.then(|| {
                    format!(
                        "{} {} across {}",
                        b.metric,
                        interval(&c),
                        duration(b.limit_ns)
                    )
                })
            })
            .collect();
        let reason = match goodput_threshold {
            Some(t) => format!(
                "unresolved: the 95 % interval of goodput reaches across {}: {}",
                percent(t),
                goodputs(probe)
            ),
            None if open.is_empty() => {
                "unresolved: a 95 % interval reaches across its limit".to_string()
            }
            None => format!("unresolved: 95 % interval {}", open.join("; ")),
        };
        return (Verdict::Undecided, reason);
    }
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
            answer: Answer {
                passing,
                failing,
                ..Answer::default()
            },
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
            decision: None,
            extensions: Vec::new(),
            confirmation: false,
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
            ..Answer::default()
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
                    confidence: None,
                },
                Bound {
                    metric: "e2e_p99".to_string(),
                    limit_ns: 9_000_000_000,
                    reading: Reading::Failed,
                    pass: false,
                    interval: None,
                    confidence: None,
                },
                Bound {
                    metric: "itl_p99".to_string(),
                    limit_ns: 80_000_000,
                    reading: Reading::Value(1_000_000),
                    pass: true,
                    interval: None,
                    confidence: None,
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
            decision: None,
            extensions: Vec::new(),
            confirmation: false,
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

    #[test]
    fn an_unresolved_probe_and_a_bound_say_so() {
        let mut s = search(Some(2.0), Some(4.0));
        let probe = |load: f64, decision: Decision| Probe {
            probe: 1,
            load,
            dir: String::new(),
            bounds: vec![Bound {
                metric: "job_p50".to_string(),
                limit_ns: 340_000_000,
                reading: Reading::Value(330_000_000),
                pass: true,
                confidence: Some(Confidence {
                    lo: Some(Reading::Value(300_000_000)),
                    hi: Some(Reading::Value(400_000_000)),
                    ranks: [3, 10],
                    of: 12,
                }),
                interval: None,
            }],
            request_goodput: None,
            job_goodput: Some(0.5),
            requests: 72,
            failed: 0,
            measured: 72,
            jobs: 24,
            too_small: false,
            pass: decision == Decision::Pass,
            decision: Some(decision),
            extensions: vec!["probe-1-sessions-3-extension-1".to_string()],
            confirmation: false,
            agents: None,
        };
        let open = probe(3.0, Decision::Unresolved);
        assert_eq!(
            verdict(&open, None),
            (
                Verdict::Undecided,
                "unresolved: 95 % interval job_p50 [300.0 ms, 400.0 ms] across 340.0 ms \
                 (pooled with 1 extension)"
                    .to_string()
            )
        );
        s.probes = vec![probe(2.0, Decision::Pass), open, probe(4.0, Decision::Fail)];
        assert_eq!(bound(&s), None, "a point until the answer says otherwise");
        s.answer.kind = AnswerKind::Bracket;
        assert_eq!(
            headline(&s),
            "Only a bracket: 2 sessions pass and 4 sessions fail within ttft_p99<=600ms, \
             3 sessions between them unresolved"
        );
        s.answer.kind = AnswerKind::LowerBound;
        s.answer.failing = None;
        s.probes.pop();
        assert!(headline(&s).starts_with("Only a lower bound: holds at least 2 sessions"));
    }
}
