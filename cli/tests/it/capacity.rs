//! `arbor capacity`: SLO errors, a virtual search whose knee is known by
//! hand, its determinism, and a short live search against the built-in
//! emulator.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::*;

/// Twelve identical trees (testdata/trees/identical-12.jsonl): one agent,
/// three 200 ms turns back to back (gap 0), 100 tokens in and 10 out each.
fn identical_trees() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/trees/identical-12.jsonl")
}

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn text(path: &Path) -> &str {
    path.to_str().expect("UTF-8")
}

#[test]
fn slo_and_search_errors_name_the_clause() {
    for (slo, needle) in [
        (
            "ttft_p99<2s",
            "--slo `ttft_p99<2s`: expected METRIC_pNN<=DURATION",
        ),
        ("latency_p99<=2s", "unknown metric `latency`"),
        ("ttft_p100<=2s", "unknown percentile `p100`"),
        ("ttft_p99<=soon", "`ttft_p99<=soon`"),
        ("goodput>=2", "SHARE from 0 to 1"),
    ] {
        expect_exit_2(&["capacity", "--slo", slo], &[needle]);
    }
    expect_exit_2(
        &["capacity", "--slo", "ttft_p99<=2s"],
        &["--service recorded predicts no first token"],
    );
    expect_exit_2(
        &["capacity", "--slo", "e2e_p99<=2s", "--search", "lanes:1..4"],
        &["unknown knob `lanes`"],
    );
    expect_exit_2(
        &["capacity", "--slo", "e2e_p99<=2s", "--live"],
        &["--duration: a live search needs it"],
    );
}

/// Identical trees, a cap of 4 requests in flight and `fixed:100:10`
/// (200 ms a turn): up to 4 sessions no request waits and every job takes
/// exactly 600 ms; at 5 one waits, so the largest job exceeds 600 ms.
/// The knee is 4. The flags of that capacity run over `search`.
fn by_hand(trees: &Path, search: &str, out: &Path) -> Vec<String> {
    [
        "capacity",
        text(trees),
        "--service",
        "fixed:100:10",
        "--max-inflight",
        "4",
        "--arrival",
        "immediate",
        "--slo",
        "ttft_p99<=100ms,itl_p50<=10ms,job_p99<=600ms",
        "--search",
        search,
        "-o",
        text(out),
    ]
    .map(String::from)
    .to_vec()
}

fn arbor_owned(args: &[String]) -> std::process::Output {
    arbor(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// The search by hand over 12 trees and sessions 1..64.
fn virtual_search(out: &Path) -> std::process::Output {
    let trees = identical_trees();
    arbor_owned(&by_hand(&trees, "sessions:1..64", out))
}

#[test]
fn a_virtual_search_finds_the_knee_by_hand() {
    let dir = scratch("capacity-virtual");
    let out = dir.join("out");
    let ran = virtual_search(&out);
    let console = stdout(&ran);
    assert!(ran.status.success(), "{}{console}", stderr(&ran));
    assert!(
        console.contains("largest load meeting every SLO: sessions=4 (sessions=5 fails"),
        "{console}"
    );
    let report = read(&out.join("capacity.json"));
    assert_eq!(report["schema_version"], "arbor.capacity/1");
    assert_eq!(report["answer"]["passing"], 4.0);
    assert_eq!(report["answer"]["failing"], 5.0);
    let probes = report["probes"].as_array().expect("probes");
    let loads: Vec<f64> = probes.iter().map(|p| p["load"].as_f64().unwrap()).collect();
    assert_eq!(loads, [1.0, 2.0, 4.0, 8.0, 6.0, 5.0]);
    for p in probes {
        let pass = p["load"].as_f64().unwrap() <= 4.0;
        assert_eq!(p["pass"], pass, "{p}");
        // TTFT and ITL are the model's, at every load.
        assert_eq!(p["bounds"][0]["reading"]["ns"], 100_000_000u64);
        assert_eq!(p["bounds"][1]["reading"]["ns"], 10_000_000u64);
        if pass {
            assert_eq!(p["bounds"][2]["reading"]["ns"], 600_000_000u64);
            assert_eq!(p["job_goodput"], 1.0);
        }
        // Every probe is a directory the report reads.
        let probe = out.join(p["dir"].as_str().unwrap());
        assert_eq!(
            read(&probe.join("summary.json"))["latency"]["job_time"]["count"],
            12
        );
        assert_eq!(jsonl(&probe.join("records.jsonl")).len(), 36);
    }
    // The capacity page: written at the end, said in the last line, and
    // drawn again by `arbor report OUT`.
    let page_file = out.join("report.html");
    assert_eq!(
        console.lines().last(),
        Some(format!("report in {}", page_file.display()).as_str()),
        "{console}"
    );
    let written = std::fs::read_to_string(&page_file).expect("the capacity page");
    assert!(written.contains("<title>arbor capacity: "));
    std::fs::remove_file(&page_file).expect("removed");
    let redrawn = arbor(&["report", text(&out)]);
    assert!(redrawn.status.success(), "{}", stderr(&redrawn));
    assert!(
        stdout(&redrawn).contains("(capacity: Holds 4 sessions within "),
        "{}",
        stdout(&redrawn)
    );
    assert_eq!(std::fs::read_to_string(&page_file).ok(), Some(written));
    let page = arbor(&[
        "report",
        text(&out.join("probe-1-sessions-1")),
        text(&out.join("probe-6-sessions-5")),
        "-o",
        text(&dir.join("overlay.html")),
    ]);
    assert!(page.status.success(), "{}", stderr(&page));
}

/// The search by hand in agents: at 4 sessions each lane plays 3 of the
/// 12 one-agent trees back to back (1.8 s), so 4 agents are in flight
/// and 12 jobs of 600 ms take 1.8 s: 24,000 jobs/h, 6,000 for each user.
/// On the Pareto, lighter loads have the same interactivity and less
/// throughput, heavier ones wait for the 4 slots (no more jobs/h, slower
/// jobs): 4 sessions alone is not dominated.
#[test]
fn the_answer_in_agents_and_the_pareto_by_hand() {
    let dir = scratch("capacity-agents");
    let out = dir.join("out");
    let ran = virtual_search(&out);
    let console = stdout(&ran);
    assert!(ran.status.success(), "{}{console}", stderr(&ran));
    assert!(
        console.contains(
            "\nin agents: holds 4.0 concurrent agents (peak 4; 4.0 counting subagents) and \
             24,000 jobs/h (12 jobs in 1.8 s; 24,000 jobs/h within the job SLOs) within SLO at \
             sessions=4\n"
        ),
        "{console}"
    );
    let report = read(&out.join("capacity.json"));
    let held = &report["answer_in_agents"];
    assert_eq!(held["load"], 4.0);
    assert_eq!(
        (held["trees_mean"].as_f64(), held["trees_peak"].as_u64()),
        (Some(4.0), Some(4))
    );
    assert_eq!(held["jobs"], 12);
    assert_eq!(held["window_s"], 1.8);
    let close = |v: &Value, want: f64| (v.as_f64().expect("a number") - want).abs() < 1e-6;
    assert!(close(&held["jobs_per_hour"], 24_000.0), "{held}");
    assert!(close(&held["jobs_per_hour_per_user"], 6_000.0), "{held}");
    let pareto = &report["pareto"];
    assert_eq!(pareto["replicas"], 1);
    let points = pareto["points"].as_array().expect("points");
    let frontier: Vec<f64> = points
        .iter()
        .filter(|p| p["dominated"] == false)
        .map(|p| p["load"].as_f64().unwrap())
        .collect();
    assert_eq!(frontier, [4.0], "{pareto}");
    assert_eq!(points.len(), 6);
    // Each probe carries its own figures: one session plays all 12 trees.
    let one = &report["probes"][0]["agents"];
    assert_eq!(
        (one["trees_mean"].as_f64(), one["window_s"].as_f64()),
        (Some(1.0), Some(7.2))
    );
}

#[test]
fn the_same_flags_give_the_same_table() {
    let dir = scratch("capacity-determinism");
    let first = virtual_search(&dir.join("a"));
    let second = virtual_search(&dir.join("b"));
    let table = |o: &std::process::Output| {
        let s = stdout(o);
        s.lines()
            .filter(|l| !l.starts_with("capacity in") && !l.starts_with("report in"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(first.status.success());
    assert_eq!(table(&first), table(&second));
    let probes = |d: &str| read(&dir.join(d).join("capacity.json"))["probes"].clone();
    assert_eq!(probes("a"), probes("b"));
}

#[test]
fn a_sweep_plans_every_load_and_agrees_with_the_search() {
    let dir = scratch("capacity-sweep");
    let search_out = dir.join("search");
    assert!(virtual_search(&search_out).status.success());
    let trees = identical_trees();
    let sweep_out = dir.join("sweep");
    let flags = |search: &str, out: &Path| -> Vec<String> {
        let mut args = by_hand(&trees, search, out);
        args.push("--sweep".into());
        args
    };
    let ran = arbor_owned(&flags("sessions:1..8", &sweep_out));
    let console = stdout(&ran);
    assert!(ran.status.success(), "{}{console}", stderr(&ran));
    assert!(
        console.contains("largest load meeting every SLO: sessions=4 (sessions=5 fails"),
        "{console}"
    );
    let report = read(&sweep_out.join("capacity.json"));
    let probes = report["probes"].as_array().expect("probes");
    let loads: Vec<f64> = probes.iter().map(|p| p["load"].as_f64().unwrap()).collect();
    assert_eq!(loads, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
    for (k, p) in probes.iter().enumerate() {
        assert_eq!(p["probe"], k + 1);
        assert_eq!(p["pass"], k < 4, "{p}");
    }
    // A load both probed is the same prediction, file for file.
    for (searched, swept) in [
        ("probe-3-sessions-4", "probe-4-sessions-4"),
        ("probe-6-sessions-5", "probe-5-sessions-5"),
    ] {
        for file in ["summary.json", "records.jsonl"] {
            let a = std::fs::read(search_out.join(searched).join(file)).expect("search probe");
            let b = std::fs::read(sweep_out.join(swept).join(file)).expect("sweep probe");
            assert!(a == b, "{searched} and {swept} differ in {file}");
        }
    }
    // Live is refused, and so is a sweep of more than 10,000 loads.
    let mut live = flags("sessions:1..8", &dir.join("live"));
    live.extend(["--live", "--duration", "5"].map(String::from));
    let huge = flags("sessions:1..20000", &dir.join("huge"));
    for (args, needle) in [
        (live, "--sweep: virtual only"),
        (
            huge,
            "--sweep: 20000 loads from 1 to 20000 at 1; at most 10000",
        ),
    ] {
        expect_exit_2(
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
            &[needle],
        );
    }
}

/// The batching server model: a knee exists, the search closes on it to
/// one step, and the probes carry the model's prefix-cache hits.
#[test]
fn a_virtual_search_with_the_server_model() {
    let dir = scratch("capacity-server");
    let out = dir.join("out");
    let profile = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../profiles/example.toml");
    let service = format!("server:{}", text(&profile));
    let ran = arbor(&[
        "capacity",
        "--synthetic",
        "trees=40,turns=6,depth=0,isl=200,isl_growth=50,osl=50,hash_ids=true",
        "--tool-time",
        "zero",
        "--think-time-pct",
        "0",
        "--copies",
        "2",
        "--arrival",
        "immediate",
        "--service",
        &service,
        "--slo",
        "ttft_p90<=500ms,itl_p99<=10ms",
        "--search",
        "sessions:1..64",
        "-o",
        text(&out),
    ]);
    let console = stdout(&ran);
    assert!(ran.status.success(), "{}{console}", stderr(&ran));
    let report = read(&out.join("capacity.json"));
    let passing = report["answer"]["passing"]
        .as_f64()
        .expect("a passing load");
    let failing = report["answer"]["failing"]
        .as_f64()
        .expect("a failing load");
    assert_eq!(failing - passing, 1.0, "{report}");
    assert!(passing > 1.0 && passing < 64.0, "{report}");
    for p in report["probes"].as_array().expect("probes") {
        let load = p["load"].as_f64().unwrap();
        assert_eq!(p["pass"], load <= passing, "{p}");
    }
    let records = jsonl(&out.join("probe-1-sessions-1").join("records.jsonl"));
    let cached: u64 = records
        .iter()
        .map(|r| r["cached_tokens"].as_u64().expect("the model's cache hits"))
        .sum();
    assert!(cached > 0, "turns of one agent share their prefix");
}

/// The open loop: identical 600 ms trees arriving evenly, at most 3
/// requests (so 3 trees) in flight. A tree never waits while trees arrive
/// no faster than one every 200 ms: the knee is 3 / 0.6 s = 5 trees/s.
#[test]
fn a_virtual_rate_search_finds_the_knee_by_hand() {
    let dir = scratch("capacity-rate");
    let trees = identical_trees();
    let out = dir.join("out");
    let ran = arbor(&[
        "capacity",
        text(&trees),
        "--service",
        "fixed:100:10",
        "--max-inflight",
        "3",
        "--slo",
        "job_p99<=600ms",
        "--search",
        "rate:0.1..20",
        "-o",
        text(&out),
    ]);
    let console = stdout(&ran);
    assert!(ran.status.success(), "{}{console}", stderr(&ran));
    assert!(
        console.contains("largest load meeting every SLO: rate=5 (rate=5.1 fails"),
        "{console}"
    );
    assert!(out.join("probe-1-rate-0.1").join("summary.json").is_file());
}

/// A live search against a dead port stops at its first probe, in the
/// pre-flight (exit 1, before any measured request), naming the probe
/// and the pre-flight's words; not read as overload, so no advice to
/// move the range.
#[test]
fn a_live_search_against_a_dead_port_stops_at_its_first_probe() {
    let dir = scratch("capacity-dead-port");
    let out = dir.join("out");
    let url = dead_port();
    let started = std::time::Instant::now();
    let ran = arbor(&[
        "capacity",
        text(&identical_trees()),
        "--endpoint",
        &url,
        "--slo",
        "e2e_p99<=2s",
        "--duration",
        "30",
        "--ready-timeout",
        "1",
        "-o",
        text(&out),
    ]);
    let err = stderr(&ran);
    assert_eq!(ran.status.code(), Some(1), "{err}");
    for needle in [
        "probe 1 (sessions=1) failed, and the search stopped without an answer",
        "pre-flight: nothing listens at",
        "Connection refused",
    ] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
    assert!(!err.contains("--search"), "{err}");
    assert!(!stdout(&ran).contains("--search"), "{}", stdout(&ran));
    // Asked for about a second, then refused: not the probe's 30 s.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(25),
        "{:?}",
        started.elapsed()
    );
    let report = read(&out.join("capacity.json"));
    assert_eq!(report["complete"], false);
    assert_eq!(report["stopped"]["probe"], 1);
    assert_eq!(report["stopped"]["cause"], "failed");
    assert!(
        report["stopped"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("nothing listens at")),
        "{report}"
    );
    assert_eq!(report["probes"], serde_json::json!([]));
    // Its page says why, and the console where it is.
    assert!(
        err.contains(&format!("report in {}", out.join("report.html").display())),
        "{err}"
    );
    let page = std::fs::read_to_string(out.join("report.html")).expect("the page");
    assert!(
        page.contains("No answer: the search stopped at probe 1 (1 session), whose run failed"),
        "the headline"
    );
    // No measured request was sent: the probe's run never started.
    assert!(!out.join("probe-1-sessions-1").exists());
}

/// A server that lists its model but answers every request with a 503:
/// the first probe's breaker stops its run, the run failed too often
/// (exit 4), and the search stops there with the server's own words.
#[test]
fn a_live_search_whose_server_fails_every_request_stops_with_its_words() {
    let server = crate::scripted::Scripted::start(crate::scripted::Script::Status {
        code: 503,
        extra: "",
        body: r#"{"error":{"message":"the engine is overloaded"}}"#,
    });
    let dir = scratch("capacity-failing-server");
    let out = dir.join("out");
    let ran = arbor(&[
        "capacity",
        text(&identical_trees()),
        "--endpoint",
        &server.url(),
        "--slo",
        "e2e_p99<=2s",
        "--duration",
        "30",
        "--search",
        "sessions:4..64",
        "-o",
        text(&out),
    ]);
    let err = stderr(&ran);
    assert_eq!(ran.status.code(), Some(4), "{err}");
    for needle in [
        "probe 1 (sessions=4) failed, and the search stopped without an answer",
        "HTTP 503",
        "the engine is overloaded",
    ] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
    assert!(!err.contains("lower --search"), "{err}");
    let report = read(&out.join("capacity.json"));
    assert_eq!(report["stopped"]["probe"], 1);
    assert_eq!(report["stopped"]["load"], 4.0);
    assert!(
        report["stopped"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("the engine is overloaded")),
        "{report}"
    );
    // One probe only: its run directory, and no second.
    assert!(out
        .join("probe-1-sessions-4")
        .join("records.jsonl")
        .is_file());
    assert!(!out.join("probe-2-sessions-8").exists());
}

/// A live probe with fewer successful requests than --min-requests is too
/// small to decide: it is extended (--max-extensions 1: once more, twice
/// as long), and still short it leaves the answer unresolved: no point,
/// exit 5, saying what to lengthen; capacity.json marks the probe and
/// the answer's kind. Against the built-in emulator: the 12 trees of
/// three turns are 36 requests a run, 72 pooled.
#[test]
fn a_live_probe_with_too_few_requests_gives_no_point() {
    let dir = scratch("capacity-too-small");
    let out = dir.join("out");
    let ran = arbor(&[
        "capacity",
        text(&identical_trees()),
        "--live",
        "--ttft-ms",
        "5",
        "--itl-ms",
        "1",
        "--slo",
        "e2e_p99<=2s",
        "--duration",
        "20",
        "--min-requests",
        "100",
        "--max-extensions",
        "1",
        "-o",
        text(&out),
    ]);
    let err = stderr(&ran);
    let console = stdout(&ran);
    assert_eq!(ran.status.code(), Some(5), "{err}");
    for needle in [
        "probe 1 unresolved: extension 1 of 1",
        "error: arbor capacity: UNRESOLVED: no answer: no load was decided",
        "sessions=1 stayed unresolved",
        "--duration",
    ] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
    assert!(console.contains("unresolved (+1 ext)"), "{console}");
    assert!(console.contains("UNRESOLVED"), "{console}");
    assert!(!console.contains("largest load meeting"), "{console}");
    let report = read(&out.join("capacity.json"));
    assert_eq!(report["answer"]["kind"], "unresolved");
    let probes = report["probes"].as_array().expect("probes");
    assert_eq!(probes.len(), 1, "no probe after it, and nothing to confirm");
    assert_eq!(probes[0]["too_small"], true);
    assert_eq!(probes[0]["decision"], "unresolved");
    assert_eq!(probes[0]["measured"], 72);
    assert_eq!(probes[0]["pass"], false);
    assert!(out
        .join("probe-1-sessions-1-extension-1")
        .join("records.jsonl")
        .is_file());
    assert_eq!(report["answer"]["passing"], Value::Null);
}

/// Probes cut short by --duration give a bound or nothing, never a
/// point: a workload of 12 trees whose jobs take about 300 ms each, one
/// second a probe, no extension, a p50 bound with the default minimum of
/// 20 requests (a second measures about 10).
#[test]
fn short_live_probes_report_no_point() {
    let dir = scratch("capacity-short");
    let out = dir.join("out");
    let ran = arbor(&[
        "capacity",
        text(&identical_trees()),
        "--live",
        "--ttft-ms",
        "50",
        "--itl-ms",
        "5",
        "--slo",
        "e2e_p50<=2s",
        "--duration",
        "1",
        "--max-extensions",
        "0",
        "--search",
        "sessions:1..4",
        "-o",
        text(&out),
    ]);
    let err = stderr(&ran);
    assert_eq!(ran.status.code(), Some(5), "{err}");
    let report = read(&out.join("capacity.json"));
    assert_ne!(report["answer"]["kind"], "point", "{report}");
    assert!(err.contains("UNRESOLVED"), "{err}");
}

#[test]
fn extensions_and_confirmation_are_live_only() {
    expect_exit_2(
        &["capacity", "--slo", "e2e_p99<=2s", "--max-extensions", "1"],
        &["--max-extensions: live only"],
    );
    expect_exit_2(
        &["capacity", "--slo", "e2e_p99<=2s", "--no-confirm"],
        &["--no-confirm: live only"],
    );
}

#[test]
fn min_requests_is_live_only() {
    expect_exit_2(
        &["capacity", "--slo", "e2e_p99<=2s", "--min-requests", "5"],
        &["--min-requests: live only"],
    );
}
