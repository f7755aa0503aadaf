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
    assert!((5.0..60.0).contains(&ttft_ms), "{ttft_ms}");

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

#[test]
fn a_missing_or_bad_run_directory_exits_2() {
    let dir = scratch("report-bad");
    let missing = dir.join("missing");
    expect_exit_2(
        &["report", missing.to_str().unwrap()],
        &["missing", "no such run directory"],
    );

    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    expect_exit_2(
        &["report", empty.to_str().unwrap()],
        &["not a finished run directory", "summary.json"],
    );

    let bad = dir.join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("summary.json"), "{}").unwrap();
    std::fs::write(bad.join("records.jsonl"), "{\"request\":1}\nnot json\n").unwrap();
    expect_exit_2(
        &["report", bad.to_str().unwrap()],
        &["records.jsonl line 1:", "expected a record of `arbor run`"],
    );
    assert!(!bad.join("report.html").exists(), "nothing written");

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
