//! The capacity page of a capacity directory, built here by hand: what
//! it reads into the page's data (the answer, each probe's verdict and
//! readings by load, a live search's prediction beside it), that `arbor
//! report` of the directory writes it, and that a bad or partial
//! directory is an input error naming the file, with no page written.

use std::path::Path;

use arbor_error::Kind;
use arbor_report::page::capacity::data::{self, CapacityPage};
use arbor_report::page::capacity::words::Verdict;
use arbor_report::page::{report, ReportOptions};
use serde_json::{json, Value};

use crate::util::{scratch, write};

/// A probe of `capacity.json` at `load` sessions with a TTFT p99 of
/// `ttft_ms` against a 100 ms limit.
fn probe(k: usize, load: f64, ttft_ms: u64) -> Value {
    let pass = ttft_ms <= 100;
    json!({
        "probe": k, "load": load, "dir": format!("probe-{k}-sessions-{load}"),
        "bounds": [{"metric": "ttft_p99", "limit_ns": 100_000_000u64,
                    "reading": {"kind": "value", "ns": ttft_ms * 1_000_000}, "pass": pass}],
        "request_goodput": if pass { 1.0 } else { 0.8 }, "job_goodput": null,
        "requests": 40, "failed": 0, "measured": 40, "jobs": 4, "too_small": false, "pass": pass
    })
}

fn search(mode: &str, probes: Vec<Value>, passing: f64, failing: f64) -> Value {
    json!({
        "schema_version": "arbor.capacity/1", "arbor_version": "0.1.0", "mode": mode,
        "complete": true, "stopped": null, "slo": "ttft_p99<=100ms", "goodput_threshold": null,
        "knob": "sessions", "range": [1.0, 16.0], "step": 1.0, "service": "fixed:50:1",
        "predicted": null, "answer": {"passing": passing, "failing": failing}, "probes": probes
    })
}

/// A virtual search of four probes (probed in the order 1, 2, 4, 3) with
/// its knee between 2 and 3 sessions; probe 1's summary gives 500 tok/s.
fn virtual_dir(dir: &Path) {
    let probes = vec![
        probe(1, 1.0, 40),
        probe(2, 2.0, 80),
        probe(3, 4.0, 300),
        probe(4, 3.0, 150),
    ];
    write(
        dir,
        "capacity.json",
        &search("virtual", probes, 2.0, 3.0).to_string(),
    );
    write(
        &dir.join("probe-1-sessions-1"),
        "summary.json",
        r#"{"throughput":{"output_tokens_per_s":500.0}}"#,
    );
}

fn page_of(dir: &Path) -> CapacityPage {
    data::read(dir).expect("the page's data")
}

#[test]
fn a_capacity_directory_reads_into_the_answer_and_the_probes_by_load() {
    let dir = scratch("capacity-virtual");
    virtual_dir(&dir);
    let page = page_of(&dir);
    assert_eq!(
        page.headline,
        "Holds 2 sessions within ttft_p99<=100ms; 3 sessions fail"
    );
    assert_eq!(page.axis, "sessions");
    assert_eq!(page.bounds.len(), 1);
    assert_eq!(page.bounds[0].metric, "ttft_p99");
    assert!((page.bounds[0].limit_s - 0.1).abs() < 1e-12);
    let loads: Vec<f64> = page.curve.points.iter().map(|p| p.load).collect();
    assert_eq!(
        loads,
        [1.0, 2.0, 3.0, 4.0],
        "by load, not in the order probed"
    );
    let third = &page.curve.points[2];
    assert_eq!(third.probe, 4);
    assert_eq!(third.verdict, Verdict::Fail);
    assert_eq!(third.reason, "ttft_p99 150.0 ms > 100.0 ms");
    assert_eq!(third.readings[0].s, Some(0.15));
    assert!(!third.readings[0].pass);
    assert_eq!(page.curve.points[0].output_tokens_per_s, Some(500.0));
    assert_eq!(page.curve.points[1].output_tokens_per_s, None, "no summary");
    assert!(page.predicted.is_none());
    assert!(page.above_knee_line.is_none());
}

#[test]
fn agents_jobs_and_the_pareto_reach_the_page() {
    let dir = scratch("capacity-agents");
    let figures = |trees: f64, per_hour: f64| {
        json!({"window_s": 10.0, "trees_mean": trees, "trees_peak": 2, "agents_mean": trees * 1.5,
               "agents_peak": 3, "jobs": 4, "jobs_per_hour": per_hour, "good_jobs_per_hour": per_hour / 2.0,
               "job_time_mean_s": 2.0, "jobs_per_hour_per_user": 1800.0})
    };
    let mut probes = vec![probe(1, 1.0, 40), probe(2, 2.0, 80), probe(3, 3.0, 150)];
    for (p, (trees, per_hour)) in
        probes
            .iter_mut()
            .zip([(1.0, 900.0), (2.0, 1800.0), (2.5, 1700.0)])
    {
        p["agents"] = figures(trees, per_hour);
    }
    let mut capacity = search("virtual", probes, 2.0, 3.0);
    let mut held = figures(2.0, 1800.0);
    held["load"] = json!(2.0);
    capacity["answer_in_agents"] = held;
    capacity["pareto"] = json!({"replicas": 1, "points": [
        {"probe": 2, "load": 2.0, "jobs_per_hour_per_replica": 1800.0,
         "jobs_per_hour_per_user": 1800.0, "pass": true, "dominated": false}]});
    write(&dir, "capacity.json", &capacity.to_string());
    let page = page_of(&dir);
    assert_eq!(
        page.agents_line.as_deref(),
        Some(
            "2.0 concurrent agents (peak 2; 3.0 counting subagents) and 1,800 jobs/h \
             (4 jobs in 10.0 s; 900 jobs/h within the job SLOs) at 2 sessions"
        )
    );
    let agents = page.curve.points[2].agents.as_ref().expect("its agents");
    assert_eq!(
        (agents.trees_mean, agents.jobs_per_hour),
        (2.5, Some(1700.0))
    );
    let pareto = page.pareto.expect("the Pareto");
    assert_eq!(pareto.points.len(), 1);
    assert!(!pareto.points[0].dominated);

    // A file from before them: no line, no Pareto, no figures.
    let old = scratch("capacity-agents-old");
    virtual_dir(&old);
    let page = page_of(&old);
    assert_eq!((page.agents_line, page.pareto), (None, None));
    assert!(page.curve.points.iter().all(|p| p.agents.is_none()));
}

#[test]
fn a_live_search_has_its_prediction_beside_it_and_its_failed_probe_unresolved() {
    let dir = scratch("capacity-live");
    let mut live = search("live", vec![probe(1, 3.0, 90)], 3.0, 4.0);
    live["complete"] = false.into();
    live["answer"] = json!({"passing": null, "failing": null});
    live["predicted"] = json!({"passing": 3.0, "failing": 4.0});
    live["stopped"] = json!({"probe": 2, "load": 4.0, "cause": "failed",
                             "message": "the server failed 40 of 40 requests"});
    write(&dir, "capacity.json", &live.to_string());
    let predicted = search(
        "virtual",
        vec![probe(1, 3.0, 95), probe(2, 4.0, 120)],
        3.0,
        4.0,
    );
    write(
        &dir.join("predicted"),
        "capacity.json",
        &predicted.to_string(),
    );
    let page = page_of(&dir);
    assert_eq!(
        page.headline,
        "No answer: the search stopped at probe 2 (4 sessions), whose run failed"
    );
    assert_eq!(
        page.predicted_line.as_deref(),
        Some("holds 3 sessions (4 fail) on the virtual clock under fixed:50:1")
    );
    let points = &page.curve.points;
    assert_eq!(points.len(), 2);
    assert_eq!(points[1].verdict, Verdict::Unresolved);
    assert_eq!(
        points[1].reason,
        "its run failed: the server failed 40 of 40 requests"
    );
    assert_eq!(points[1].readings[0].s, None);
    let predicted = page.predicted.expect("the prediction");
    assert_eq!(predicted.name, "predicted");
    assert_eq!(predicted.points.len(), 2);
    assert_eq!(predicted.points[1].verdict, Verdict::Fail);
}

#[test]
fn report_of_a_capacity_directory_writes_the_capacity_page() {
    let dir = scratch("capacity-report");
    virtual_dir(&dir);
    let line = report(&ReportOptions {
        run_dirs: vec![dir.clone()],
        out: None,
    })
    .expect("the page");
    let out = dir.join("report.html");
    assert!(
        line.starts_with(&format!("report in {}", out.display())),
        "{line}"
    );
    assert!(
        line.contains("capacity: Holds 2 sessions within ttft_p99<=100ms"),
        "{line}"
    );
    let html = std::fs::read_to_string(&out).expect("the page written");
    assert!(
        html.contains("<title>arbor capacity: "),
        "the capacity page's title"
    );
    assert!(
        html.contains("arbor capacity page: draws"),
        "its own script"
    );
    assert!(html.contains("\"headline\":\"Holds 2 sessions"), "its data");
    assert!(!html.contains("swim lanes"), "not the run page");
    assert!(html.len() < 200_000, "{} bytes", html.len());

    // -o puts it elsewhere.
    let elsewhere = dir.join("elsewhere.html");
    report(&ReportOptions {
        run_dirs: vec![dir.clone()],
        out: Some(elsewhere.clone()),
    })
    .expect("the page");
    assert!(elsewhere.is_file());
}

fn expect_input_error(dir: &Path, needles: &[&str]) {
    let e = report(&ReportOptions {
        run_dirs: vec![dir.to_path_buf()],
        out: None,
    })
    .expect_err("a fault");
    assert_eq!(e.kind, Kind::Input, "{}", e.message);
    for needle in needles {
        assert!(
            e.message.contains(needle),
            "expected `{needle}` in: {}",
            e.message
        );
    }
    assert!(!dir.join("report.html").exists(), "nothing written");
}

#[test]
fn a_bad_or_partial_capacity_directory_names_the_file() {
    let dir = scratch("capacity-bad");

    let partial = dir.join("partial");
    let mut short = search("virtual", vec![probe(1, 1.0, 40)], 1.0, 2.0);
    short.as_object_mut().unwrap().remove("answer");
    write(&partial, "capacity.json", &short.to_string());
    let file = partial.join("capacity.json").display().to_string();
    expect_input_error(&partial, &[&file, "missing field `answer`"]);

    let cut = dir.join("cut");
    write(&cut, "capacity.json", "{\"schema_version\": \"arbor.capa");
    expect_input_error(&cut, &["cut/capacity.json", "not JSON"]);

    let other = dir.join("other");
    write(
        &other,
        "capacity.json",
        "{\"schema_version\": \"arbor.capacity/2\"}",
    );
    expect_input_error(
        &other,
        &[
            "other/capacity.json",
            "schema_version \"arbor.capacity/2\": expected \"arbor.capacity/1\"",
        ],
    );

    let bad_probe = dir.join("bad-probe");
    virtual_dir(&bad_probe);
    write(
        &bad_probe.join("probe-2-sessions-2"),
        "summary.json",
        "not json",
    );
    expect_input_error(&bad_probe, &["probe-2-sessions-2/summary.json", "not JSON"]);

    let bad_prediction = dir.join("bad-prediction");
    virtual_dir(&bad_prediction);
    write(&bad_prediction.join("predicted"), "capacity.json", "[]");
    expect_input_error(&bad_prediction, &["predicted/capacity.json"]);
}

/// A capacity directory among others draws no run page (it has none): the
/// fault says to give it alone, or its probes.
#[test]
fn a_capacity_directory_among_others_is_refused_naming_it() {
    let dir = scratch("capacity-among-others");
    let search_dir = dir.join("search");
    virtual_dir(&search_dir);
    let e = report(&ReportOptions {
        run_dirs: vec![search_dir.clone(), dir.join("other")],
        out: Some(dir.join("page.html")),
    })
    .expect_err("a fault");
    assert_eq!(e.kind, Kind::Input, "{}", e.message);
    assert!(e.message.contains("has a page of its own"), "{}", e.message);
    assert!(
        e.message.starts_with(&search_dir.display().to_string()),
        "{}",
        e.message
    );
    assert!(!dir.join("page.html").exists());
}
