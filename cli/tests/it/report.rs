//! `arbor report` and the report.html `arbor run` writes: one
//! self-contained file holding the run's data; several runs in one page;
//! bad run directories exit 2. (The page is rendered in a real browser by
//! scripts/check-report.sh.)

use std::path::{Path, PathBuf};

use crate::util::{arbor, expect_exit_2, fixture, run_into, scratch, stderr, stdout, FAST};

/// A short run of one fixture tree (3 requests) against the built-in
/// emulator, into `out`; `ttft_ms` sets the emulator's TTFT.
fn emulator_run(out: &Path, ttft_ms: &str) {
    let result = arbor(&[
        "run",
        fixture("trace_0187.json").to_str().unwrap(),
        "--tool-time",
        "zero",
        "--think-time-pct",
        "0",
        "--ttft-ms",
        ttft_ms,
        "--itl-ms",
        "0.5",
        "--out",
        out.to_str().unwrap(),
        "--no-progress",
    ]);
    assert!(result.status.success(), "{}", stderr(&result));
    let last = stdout(&result)
        .lines()
        .last()
        .unwrap_or_default()
        .to_string();
    let page = out.join("report.html");
    assert_eq!(
        last,
        format!("report in {}", page.display()),
        "the last line names the report"
    );
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The JSON blob the page draws from.
fn page_data(html: &str) -> serde_json::Value {
    let open = "<script id=\"arbor-data\" type=\"application/json\">";
    let start = html.find(open).expect("a data blob") + open.len();
    let end = start + html[start..].find("</script>").expect("the blob ends");
    serde_json::from_str(&html[start..end]).expect("the blob is JSON")
}

/// No external reference: nothing loaded from the network.
fn assert_self_contained(html: &str) {
    let lower = html.to_ascii_lowercase();
    for needle in [
        "src=\"http",
        "src='http",
        "href=\"http",
        "href='http",
        "url(http",
        "@import",
        "<link",
        "<script src",
    ] {
        assert!(!lower.contains(needle), "external reference `{needle}`");
    }
}

#[test]
fn a_run_writes_a_self_contained_report_of_its_data() {
    let dir = scratch("report-run");
    let run = dir.join("run");
    emulator_run(&run, "5");
    let files: Vec<PathBuf> = std::fs::read_dir(&run)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(files.contains(&run.join("report.html")), "{files:?}");
    let html = read(&run.join("report.html"));
    assert!(html.starts_with("<!doctype html>"));
    assert_self_contained(&html);
    let data = page_data(&html);
    let r = &data["runs"][0];
    assert_eq!(r["records"], 3);
    assert_eq!(r["summary"]["config"]["model"], "arbor-emulator");
    assert_eq!(r["cdf"]["ttft"]["n"], 3);
    assert_eq!(r["lanes"]["request"].as_array().map(Vec::len), Some(3));
    assert_eq!(r["lanes"]["rows"][0]["tree"], "trace_0187");
    assert!(r["series"]["t_s"].as_array().is_some_and(|t| !t.is_empty()));
    // The TTFT the records hold is the one the page shows.
    let ttft_ms = r["cdf"]["ttft"]["x"][0].as_f64().unwrap() * 1e3;
    // At least the emulator's TTFT; the upper bound is generous (what a
    // loaded machine adds), since what is checked is that the page shows
    // the records' figure, not the emulator's timing.
    assert!((5.0..500.0).contains(&ttft_ms), "{ttft_ms}");

    // `arbor report` of the same directory writes the same data.
    let again = dir.join("again.html");
    let out = arbor(&[
        "report",
        run.to_str().unwrap(),
        "-o",
        again.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("again.html"), "{}", stdout(&out));
    assert_eq!(page_data(&read(&again)), data);
}

#[test]
fn a_report_of_two_runs_holds_both() {
    let dir = scratch("report-two");
    let (fast, slow) = (dir.join("fast"), dir.join("slow"));
    emulator_run(&fast, "5");
    emulator_run(&slow, "40");
    let page = dir.join("both.html");
    let out = arbor(&[
        "report",
        fast.to_str().unwrap(),
        slow.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = read(&page);
    assert_self_contained(&html);
    let data = page_data(&html);
    let names: Vec<&str> = data["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["fast", "slow"]);
    let p50 = |i: usize| {
        data["runs"][i]["summary"]["latency"]["ttft"]["p50_s"]
            .as_f64()
            .unwrap()
    };
    assert!(
        p50(1) > p50(0) + 0.02,
        "the slower emulator shows: {} vs {}",
        p50(1),
        p50(0)
    );
}

/// The process's side (the faults' words and that no page is written are
/// `report/tests/it/page.rs`'): a missing run directory exits 2, and so
/// does none (clap).
#[test]
fn a_missing_run_directory_exits_2() {
    let dir = scratch("report-bad");
    let missing = dir.join("missing");
    expect_exit_2(
        &["report", missing.to_str().unwrap()],
        &["missing", "no such run directory"],
    );
    expect_exit_2(&["report"], &["RUN_DIR"]);
}

#[test]
fn spawn_and_join_arrows_connect_the_agents_turns() {
    // trace_0277: a root and 4 blocking subagents (three spawned together).
    let dir = scratch("report-arrows");
    let run = dir.join("run");
    let trace = fixture("trace_0277.json");
    let mut args = vec![trace.to_str().unwrap()];
    args.extend(FAST);
    run_into(&run, &args);
    let data = page_data(&read(&run.join("report.html")));
    let r = &data["runs"][0];
    let lanes = &r["lanes"];
    let starts: Vec<u64> = lanes["row_start"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let row_of = |turn: u64| starts.iter().rposition(|&s| s <= turn).unwrap();
    let turn_no = |turn: u64| lanes["turn"][turn as usize].as_u64().unwrap();
    let arrows = r["edges"].as_array().expect("trees.jsonl gives arrows");
    let (mut spawns, mut joins) = (0, 0);
    for arrow in arrows {
        let (from, to, role) = (
            arrow[0].as_u64().unwrap(),
            arrow[1].as_u64().unwrap(),
            arrow[2].as_u64().unwrap(),
        );
        assert_ne!(row_of(from), row_of(to), "an arrow joins two agents");
        match role {
            0 => {
                spawns += 1;
                assert_eq!(turn_no(to), 0, "a spawn leads to the child's first turn");
            }
            1 => {
                joins += 1;
                let row = row_of(from);
                assert_eq!(
                    from + 1,
                    starts[row + 1],
                    "a join leaves the child's last turn"
                );
            }
            other => panic!("role {other}"),
        }
    }
    assert_eq!((spawns, joins), (4, 4));
}

/// The largest number of an array of the page data.
fn max_of(values: &serde_json::Value) -> u64 {
    values
        .as_array()
        .expect("an array")
        .iter()
        .map(|v| v.as_u64().expect("a count"))
        .max()
        .expect("not empty")
}

#[test]
fn a_plan_report_draws_the_plan_peak_and_all() {
    let dir = scratch("report-plan");
    let page = dir.join("plan.html");
    let fixtures = fixture("trace_0187.json")
        .parent()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let out = arbor(&[
        "plan",
        &fixtures,
        "--sessions",
        "2",
        "--json",
        "--report",
        page.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("plan.html"), "{}", stderr(&out));
    let plan: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("plan --json");
    let html = read(&page);
    assert!(html.starts_with("<!doctype html>"));
    assert_self_contained(&html);
    let data = page_data(&html);
    let p = &data["runs"][0];
    assert_eq!(p["source"], "plan");
    // The page's plan is `plan --json`'s, and its series peaks at the peak.
    assert_eq!(p["summary"], plan);
    let peak = plan["peak_inflight"].as_u64().unwrap();
    assert!(peak >= 2, "two lanes overlap: {peak}");
    assert_eq!(p["summary"]["peak_inflight"].as_u64(), Some(peak));
    assert_eq!(max_of(&p["series"]["inflight_max"]), peak);
    // Demand: the tokens over the bins add up to the plan's.
    let bin_s = p["series"]["bin_s"].as_f64().unwrap();
    let sum = |key: &str| -> f64 {
        p["series"][key]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() * bin_s)
            .sum()
    };
    for (key, total) in [
        ("input_tok_s", "input_tokens"),
        ("output_tok_s", "output_tokens"),
    ] {
        let want = plan["demand"][total].as_f64().unwrap();
        assert!(
            (sum(key) - want).abs() <= want * 0.001 + 1.0,
            "{key}: {} vs {want}",
            sum(key)
        );
    }
    // Lanes, swim lanes with arrows, one bar per planned request.
    assert_eq!(p["summary"]["lanes"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        p["lanes"]["request"].as_array().map(Vec::len),
        plan["dispatched"].as_u64().map(|n| n as usize)
    );
    assert_eq!(p["records"], plan["dispatched"]);
    assert!(p["edges"].as_array().is_some_and(|e| !e.is_empty()));
    // What a plan does not have is absent, not zeros.
    for key in ["ttft_p50_s", "ttft_p99_s", "errors", "cache_hit"] {
        assert!(p["series"].get(key).is_none(), "{key}");
    }
    assert_eq!(p["cdf"], serde_json::json!({}), "no distributions");
    assert!(p["planned"].is_null());
}

#[test]
fn a_plan_report_under_a_cap_has_the_queue_wait_distribution_only() {
    let dir = scratch("report-plan-cap");
    let page = dir.join("plan.html");
    let trace = fixture("trace_0277.json");
    let out = arbor(&[
        "plan",
        trace.to_str().unwrap(),
        "--max-inflight",
        "1",
        "--report",
        page.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let data = page_data(&read(&page));
    let cdf = data["runs"][0]["cdf"].as_object().unwrap();
    assert_eq!(cdf.keys().collect::<Vec<_>>(), ["queue_wait"]);
    assert_eq!(max_of(&data["runs"][0]["series"]["inflight_max"]), 1);
}

#[test]
fn a_runs_report_carries_the_planned_series() {
    let dir = scratch("report-planned");
    let run = dir.join("run");
    emulator_run(&run, "5");
    assert!(
        run.join("planned.json").is_file(),
        "written beside run.json"
    );
    let data = page_data(&read(&run.join("report.html")));
    let r = &data["runs"][0];
    let planned = &r["planned"];
    let peak = r["summary"]["concurrency"]["planned_peak"]
        .as_u64()
        .expect("a planned peak");
    assert_eq!(planned["peak_inflight"].as_u64(), Some(peak));
    assert_eq!(max_of(&planned["inflight_max"]), peak);
    assert_eq!(
        planned["t_s"].as_array().map(Vec::len),
        planned["inflight_max"].as_array().map(Vec::len)
    );

    // `arbor summarize` redraws it from the directory alone.
    std::fs::remove_file(run.join("report.html")).unwrap();
    let out = arbor(&["summarize", run.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let again = page_data(&read(&run.join("report.html")));
    assert_eq!(again["runs"][0]["planned"], *planned);

    // A bad planned.json is named; a missing one (an older arbor) is no
    // planned series.
    std::fs::write(run.join("planned.json"), "{}").unwrap();
    expect_exit_2(&["report", run.to_str().unwrap()], &["planned.json"]);
    std::fs::remove_file(run.join("planned.json")).unwrap();
    let out = arbor(&["report", run.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(page_data(&read(&run.join("report.html")))["runs"][0]["planned"].is_null());
}

#[test]
fn a_bad_plan_report_path_exits_2_naming_it() {
    let dir = scratch("report-plan-bad");
    let trace = fixture("trace_0187.json");
    let nowhere = dir.join("no-such-dir").join("plan.html");
    expect_exit_2(
        &[
            "plan",
            trace.to_str().unwrap(),
            "--report",
            nowhere.to_str().unwrap(),
        ],
        &["--report", nowhere.to_str().unwrap(), "no such directory"],
    );
    expect_exit_2(
        &[
            "plan",
            trace.to_str().unwrap(),
            "--report",
            dir.to_str().unwrap(),
        ],
        &["--report", dir.to_str().unwrap(), "is a directory"],
    );
    assert!(!nowhere.exists());
}
