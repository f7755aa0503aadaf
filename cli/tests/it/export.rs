//! `arbor export`: a real run against the built-in emulator, exported to a
//! Perfetto trace and a CSV, checked against its own records.
//!
//! The trace is checked the way the Perfetto UI reads it (docs/export.md):
//! a flow start binds to the slice open on its thread at its time, a flow
//! end (no `bp`) to the next slice that begins on its thread.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::util::{
    arbor, expect_exit_2, fixture, jsonl, run_into, scratch, stderr, stdout, AGENTX_SHORT, FAST,
};

/// A short run of two copies of a Weka trace with four subagents
/// (spawned from the root, joined back), two requests at most in flight
/// so that some turns wait in the queue.
fn short_run(name: &str) -> (PathBuf, PathBuf) {
    let dir = scratch(name);
    let run_dir = dir.join("run");
    let trace = fixture("trace_0277.json");
    let mut args = vec![
        trace.to_str().unwrap(),
        "--max-inflight",
        "2",
        "--copies",
        "2",
    ];
    args.extend(FAST);
    run_into(&run_dir, &args);
    (dir, run_dir)
}

/// `arbor export RUN_DIR FLAG FILE`, which must succeed.
fn export(run_dir: &Path, flag: &str, file: &Path) -> Output {
    let out = arbor(&[
        "export",
        run_dir.to_str().unwrap(),
        flag,
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    out
}

fn gunzip_json(path: &Path) -> Value {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).expect("trace written"))
        .read_to_string(&mut text)
        .expect("gzip");
    serde_json::from_str(&text).expect("one JSON object")
}

/// Microseconds of a record's time in seconds, to the microsecond.
fn us(v: &Value) -> f64 {
    (v.as_f64().expect("a time") * 1e6).round()
}

fn num(v: &Value) -> f64 {
    v.as_f64().expect("a number")
}

/// Every event has the fields the trace-event format documents for its
/// phase (and nothing Perfetto would drop it for).
fn check_format(events: &[Value]) {
    // A tid names one thread: never under two processes, and never the
    // main thread (tid = pid) of another process.
    let mut process_of: BTreeMap<u64, u64> = BTreeMap::new();
    for e in events {
        let (pid, tid) = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        assert_eq!(*process_of.entry(tid).or_insert(pid), pid, "tid {tid}: {e}");
    }
    for (&tid, &pid) in &process_of {
        if tid != pid {
            assert!(
                !process_of.values().any(|&p| p == tid),
                "tid {tid} of process {pid} is another process's pid"
            );
        }
    }
    for e in events {
        assert!(e["name"].is_string(), "{e}");
        assert!(e["pid"].is_u64() && e["tid"].is_u64(), "{e}");
        match e["ph"].as_str().expect("ph") {
            "M" => {
                let name = e["name"].as_str().unwrap();
                assert!(
                    [
                        "process_name",
                        "process_sort_index",
                        "thread_name",
                        "thread_sort_index"
                    ]
                    .contains(&name),
                    "{e}"
                );
                assert!(e["args"].is_object(), "{e}");
            }
            "X" => {
                assert!(num(&e["ts"]) >= 0.0 && num(&e["dur"]) >= 0.0, "{e}");
                assert!(e["cat"].is_string() && e["args"].is_object(), "{e}");
            }
            "s" | "f" => {
                assert!(e["id"].is_u64() && num(&e["ts"]) >= 0.0, "{e}");
                assert_eq!(e["cat"], "flow");
                assert!(e.get("bp").is_none(), "the end binds to the next slice");
            }
            "C" => {
                assert!(num(&e["ts"]) >= 0.0, "{e}");
                let args = e["args"].as_object().expect("counter args");
                assert!(
                    !args.is_empty() && args.values().all(Value::is_number),
                    "{e}"
                );
            }
            other => panic!("unexpected phase {other}: {e}"),
        }
    }
}

#[test]
fn a_real_run_exports_to_a_trace_whose_slices_and_flows_match_the_records() {
    let (dir, run_dir) = short_run("export-perfetto");
    let trace_path = dir.join("trace.json.gz");
    let out = export(&run_dir, "--perfetto", &trace_path);
    assert!(stdout(&out).contains("trace.json.gz"), "{}", stdout(&out));
    let trace = gunzip_json(&trace_path);
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    check_format(events);

    let records = jsonl(&run_dir.join("records.jsonl"));
    let trees = jsonl(&run_dir.join("trees.jsonl"));
    assert_eq!(trees.len(), 1);
    let agents = trees[0]["agents"].as_array().unwrap();
    let parent_of = |agent: &str| -> Option<String> {
        let a = agents.iter().find(|a| a["agent"] == agent)?;
        let p = a["parent"].as_u64()? as usize;
        agents[p]["agent"].as_str().map(str::to_string)
    };
    assert!(agents.len() >= 3, "a tree with subagents");

    // Names of processes and threads.
    let mut names: BTreeMap<(u64, u64, &str), &str> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "M") {
        if let Some(n) = e["args"]["name"].as_str() {
            let key = (
                e["pid"].as_u64().unwrap(),
                e["tid"].as_u64().unwrap(),
                e["name"].as_str().unwrap(),
            );
            names.insert(key, n);
        }
    }

    // Every record has one turn slice, at its times to the microsecond,
    // on a thread named by its agent in a process named by its tree.
    let slices: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    let turn_of = |request: u64| -> &Value {
        let found: Vec<&&Value> = slices
            .iter()
            .filter(|e| {
                e["cat"].as_str().unwrap().starts_with("turn") && e["args"]["request"] == request
            })
            .collect();
        assert_eq!(found.len(), 1, "request {request}: one turn slice");
        found[0]
    };
    let mut queued = 0;
    for r in &records {
        let request = r["request"].as_u64().unwrap();
        let s = turn_of(request);
        assert_eq!(num(&s["ts"]), us(&r["eligible_s"]), "{r}");
        assert_eq!(num(&s["ts"]) + num(&s["dur"]), us(&r["done_s"]), "{r}");
        assert_eq!(s["args"]["ttft_s"], r["ttft_s"]);
        assert_eq!(s["args"]["output_tokens"], r["output_tokens"]);
        assert_eq!(s["args"]["status"], r["status"]);
        let (pid, tid) = (s["pid"].as_u64().unwrap(), s["tid"].as_u64().unwrap());
        let thread = names[&(pid, tid, "thread_name")];
        assert!(thread.starts_with(r["agent"].as_str().unwrap()), "{thread}");
        let process = names[&(pid, pid, "process_name")];
        assert!(
            process.starts_with(r["tree"].as_str().unwrap()),
            "{process}"
        );
        // Its phases nest inside it, at the record's times.
        let phases: BTreeMap<&str, &Value> = slices
            .iter()
            .filter(|e| e["cat"] == "phase" && e["args"]["request"] == request)
            .map(|e| (e["name"].as_str().unwrap(), *e))
            .collect();
        for p in phases.values() {
            assert_eq!(
                (p["pid"].as_u64(), p["tid"].as_u64()),
                (Some(pid), Some(tid))
            );
            assert!(num(&p["ts"]) >= num(&s["ts"]), "{p}");
            assert!(
                num(&p["ts"]) + num(&p["dur"]) <= num(&s["ts"]) + num(&s["dur"]),
                "{p}"
            );
        }
        let wait = phases["waiting for first token"];
        assert_eq!(num(&wait["ts"]), us(&r["sent_s"]));
        assert_eq!(
            num(&wait["ts"]) + num(&wait["dur"]),
            us(&r["first_content_s"])
        );
        if let Some(q) = phases.get("queue wait") {
            assert_eq!(num(&q["ts"]) + num(&q["dur"]), us(&r["dispatched_s"]));
            queued += 1;
        }
        if let Some(st) = phases.get("streaming") {
            assert_eq!(num(&st["ts"]), us(&r["first_content_s"]));
        }
    }
    assert!(queued > 0, "--max-inflight 2 queues some turns");
    let turn_slices: Vec<&&Value> = slices
        .iter()
        .filter(|e| e["cat"].as_str().unwrap().starts_with("turn"))
        .collect();
    assert_eq!(turn_slices.len(), records.len(), "one slice per record");

    // Turn slices of one thread never overlap (so they nest as Perfetto
    // requires).
    let mut by_thread: BTreeMap<(u64, u64), Vec<(f64, f64)>> = BTreeMap::new();
    for s in &turn_slices {
        let key = (s["pid"].as_u64().unwrap(), s["tid"].as_u64().unwrap());
        by_thread
            .entry(key)
            .or_default()
            .push((num(&s["ts"]), num(&s["ts"]) + num(&s["dur"])));
    }
    for spans in by_thread.values_mut() {
        spans.sort_by(|a, b| a.partial_cmp(b).unwrap());
        for w in spans.windows(2) {
            assert!(w[0].1 <= w[1].0, "overlap on one thread: {w:?}");
        }
    }

    // Flows: the record bound at each end, by Perfetto's rules.
    let record_of = |s: &Value| -> &Value {
        let request = s["args"]["request"].as_u64().unwrap();
        records.iter().find(|r| r["request"] == request).unwrap()
    };
    let source_of = |e: &Value| -> &Value {
        let t = num(&e["ts"]);
        let found: Vec<&Value> = on_thread(&turn_slices, e)
            .into_iter()
            .filter(|s| num(&s["ts"]) <= t && t <= num(&s["ts"]) + num(&s["dur"]))
            .collect();
        assert_eq!(found.len(), 1, "a flow start inside one turn: {e}");
        record_of(found[0])
    };
    let target_of = |e: &Value| -> &Value {
        let t = num(&e["ts"]);
        let next = on_thread(&turn_slices, e)
            .into_iter()
            .filter(|s| num(&s["ts"]) > t)
            .min_by(|a, b| num(&a["ts"]).partial_cmp(&num(&b["ts"])).unwrap())
            .expect("a slice after the flow end");
        // Nothing else begins on that thread in between.
        assert!(
            !slices.iter().any(|s| s["pid"] == e["pid"]
                && s["tid"] == e["tid"]
                && num(&s["ts"]) > t
                && num(&s["ts"]) < num(&next["ts"])),
            "{e}"
        );
        record_of(next)
    };
    let mut flows: BTreeMap<u64, Vec<&Value>> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "s" || e["ph"] == "f") {
        flows.entry(e["id"].as_u64().unwrap()).or_default().push(e);
    }
    let (mut spawns, mut joins) = (0, 0);
    for (id, pair) in &flows {
        assert_eq!(pair.len(), 2, "flow {id}: one start, one end");
        let start = pair.iter().find(|e| e["ph"] == "s").expect("a start");
        let end = pair.iter().find(|e| e["ph"] == "f").expect("an end");
        assert_eq!(start["name"], end["name"]);
        let (from, to) = (source_of(start), target_of(end));
        let from_agent = from["agent"].as_str().unwrap();
        let to_agent = to["agent"].as_str().unwrap();
        match start["name"].as_str().unwrap() {
            "spawn" => {
                spawns += 1;
                assert_eq!(to["turn"], 0, "a spawn ends at the child's first turn");
                assert_eq!(parent_of(to_agent).as_deref(), Some(from_agent));
                assert!(num(&to["eligible_s"]) >= num(&from["sent_s"]));
            }
            "join" => {
                joins += 1;
                let last = records
                    .iter()
                    .filter(|r| r["agent"] == from_agent && r["play"] == from["play"])
                    .map(|r| r["turn"].as_u64().unwrap())
                    .max();
                assert_eq!(
                    from["turn"].as_u64(),
                    last,
                    "a join starts at the child's last turn"
                );
                assert_eq!(parent_of(from_agent).as_deref(), Some(to_agent));
                assert!(num(&to["eligible_s"]) >= num(&from["done_s"]));
            }
            other => panic!("unexpected flow {other}"),
        }
    }
    let edges = trees[0]["edges"].as_array().unwrap();
    let count = |role: &str| edges.iter().filter(|e| e["role"] == role).count();
    let plays: std::collections::BTreeSet<u64> = records
        .iter()
        .map(|r| r["play"].as_u64().unwrap())
        .collect();
    assert_eq!(plays.len(), 2, "--copies 2");
    assert_eq!(
        (spawns, joins),
        (count("spawn") * plays.len(), count("join") * plays.len())
    );
    assert_eq!(spawns, (agents.len() - 1) * 2, "every subagent spawned");
    assert!(joins > 0);

    // The counter of requests in flight never goes negative and ends at 0.
    let mut counter: Vec<(f64, f64)> = events
        .iter()
        .filter(|e| e["ph"] == "C")
        .map(|e| (num(&e["ts"]), num(&e["args"]["requests"])))
        .collect();
    counter.sort_by(|a, b| a.partial_cmp(b).unwrap());
    assert!(counter.len() > 2);
    assert!(counter.iter().all(|&(_, v)| v >= 0.0), "{counter:?}");
    assert_eq!(counter.last().map(|c| c.1), Some(0.0));
    let peak = counter.iter().map(|c| c.1).fold(0.0, f64::max);
    assert!((1.0..=2.0).contains(&peak), "--max-inflight 2: {peak}");
}

/// The turn slices on the thread of event `e`.
fn on_thread<'a>(slices: &[&&'a Value], e: &Value) -> Vec<&'a Value> {
    slices
        .iter()
        .filter(|s| s["pid"] == e["pid"] && s["tid"] == e["tid"])
        .map(|s| **s)
        .collect()
}

/// One CSV line into cells (RFC 4180 quoting; no line breaks in cells
/// here).
fn csv_cells(line: &str) -> Vec<String> {
    let mut cells = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                cells.last_mut().unwrap().push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => cells.push(String::new()),
            (c, _) => cells.last_mut().unwrap().push(c),
        }
    }
    cells
}

#[test]
fn csv_has_one_row_per_record_and_summarises_itl() {
    let (dir, run_dir) = short_run("export-csv");
    let csv = dir.join("requests.csv");
    export(&run_dir, "--csv", &csv);
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let header = csv_cells(lines.next().unwrap());
    let records = jsonl(&run_dir.join("records.jsonl"));
    let rows: Vec<Vec<String>> = lines.map(csv_cells).collect();
    assert_eq!(rows.len(), records.len());

    // Every field of the record is a column, except the ITL list.
    let first = records[0].as_object().unwrap();
    for key in first.keys() {
        if key == "itl_s" || key == "error" {
            continue;
        }
        assert!(header.contains(key), "{key} not in {header:?}");
    }
    for key in ["itl_count", "itl_mean_s", "itl_p99_s", "error_category"] {
        assert!(header.contains(&key.to_string()), "{key}");
    }
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();

    for (row, r) in rows.iter().zip(&records) {
        assert_eq!(row.len(), header.len());
        assert_eq!(row[col("request")], r["request"].to_string());
        assert_eq!(row[col("agent")], r["agent"].as_str().unwrap());
        assert_eq!(row[col("status")], r["status"].as_str().unwrap());
        let f = |name: &str| row[col(name)].parse::<f64>().unwrap();
        assert_eq!(f("ttft_s"), r["ttft_s"].as_f64().unwrap());
        assert_eq!(f("done_s"), r["done_s"].as_f64().unwrap());
        // ITL: count, mean and nearest-rank p99 of the record's list.
        let itl: Vec<f64> = r["itl_s"].as_array().unwrap().iter().map(num).collect();
        assert_eq!(f("itl_count") as usize, itl.len());
        if itl.is_empty() {
            assert_eq!(row[col("itl_mean_s")], "");
            continue;
        }
        let mean = itl.iter().sum::<f64>() / itl.len() as f64;
        assert!((f("itl_mean_s") - mean).abs() <= 1e-12 * mean.abs().max(1e-9));
        let mut sorted = itl.clone();
        sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let rank = ((0.99 * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        assert!((f("itl_p99_s") - sorted[rank - 1]).abs() < 1e-12);
    }
}

#[test]
fn a_run_dir_without_trees_jsonl_exports_without_flows() {
    let (dir, run_dir) = short_run("export-old");
    std::fs::remove_file(run_dir.join("trees.jsonl")).unwrap();
    let trace_path = dir.join("trace.json");
    let out = export(&run_dir, "--perfetto", &trace_path);
    assert!(stderr(&out).contains("trees.jsonl"), "{}", stderr(&out));
    // Not gzipped: the name does not end in .gz.
    let trace: Value =
        serde_json::from_str(&std::fs::read_to_string(&trace_path).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    assert!(events.iter().all(|e| e["ph"] != "s" && e["ph"] != "f"));
    let records = jsonl(&run_dir.join("records.jsonl"));
    let turns = events.iter().filter(|e| e["cat"] == "turn").count();
    assert_eq!(turns, records.len());
}

/// The process's side of a bad export (the faults' words and what is
/// left behind are `report/tests/it/export.rs`'): a bad run directory
/// exits 2, no format is clap's exit 2, an output that cannot be written
/// exits 1.
#[test]
fn bad_run_dirs_exit_2_and_unwritable_outputs_exit_1() {
    let dir = scratch("export-bad");
    let out_file = dir.join("t.json");
    let out = out_file.to_str().unwrap();

    let missing = dir.join("nowhere");
    expect_exit_2(
        &["export", missing.to_str().unwrap(), "--perfetto", out],
        &["nowhere", "not a run directory"],
    );
    let bad = dir.join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("records.jsonl"), "\nnot json\n").unwrap();
    expect_exit_2(
        &["export", bad.to_str().unwrap(), "--csv", out],
        &["records.jsonl line 2:"],
    );
    expect_exit_2(&["export", bad.to_str().unwrap()], &["--perfetto", "--csv"]);
    assert!(!out_file.exists(), "nothing written on a bad input");

    // An output that cannot be created: exit 1, named.
    let ok = dir.join("ok");
    std::fs::create_dir_all(&ok).unwrap();
    std::fs::write(ok.join("records.jsonl"), "").unwrap();
    let unwritable = dir.join("no/such/dir/t.csv");
    let out = arbor(&[
        "export",
        ok.to_str().unwrap(),
        "--csv",
        unwritable.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("t.csv"), "{}", stderr(&out));
}

#[test]
fn a_bad_line_after_rows_were_written_leaves_no_file() {
    // The CSV is written as the records are read: a bad line after good
    // ones must not leave the rows before it behind.
    let (dir, run_dir) = short_run("export-torn");
    let records = run_dir.join("records.jsonl");
    let mut text = std::fs::read_to_string(&records).unwrap();
    let good = text.lines().count();
    text.push_str("not json\n");
    std::fs::write(&records, text).unwrap();
    let csv = dir.join("r.csv");
    let trace = dir.join("t.json.gz");
    expect_exit_2(
        &[
            "export",
            run_dir.to_str().unwrap(),
            "--perfetto",
            trace.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
        ],
        &[&format!("records.jsonl line {}:", good + 1)],
    );
    assert!(!csv.exists(), "no half-written CSV");
    assert!(!trace.exists(), "no trace");
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("file written")).expect("JSON")
}

/// `a` and `b` agree to a part in 1e9 (a figure in seconds against the
/// same figure in ms: the unit change may round the last bit).
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

/// The statistics every AIPerf distribution block carries.
const AIPERF_STATS: [&str; 8] = ["avg", "min", "max", "p50", "p90", "p99", "std", "count"];

#[test]
fn aiperf_export_of_an_agentx_run_carries_the_stamp_and_the_summarys_numbers() {
    let dir = scratch("export-aiperf-agentx");
    let run_dir = dir.join("run");
    let fixtures = fixture("trace_0277.json")
        .parent()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let mut args = AGENTX_SHORT.to_vec();
    args.push(fixtures.as_str());
    run_into(&run_dir, &args);
    let out_dir = dir.join("aiperf");
    let out = export(&run_dir, "--aiperf", &out_dir);
    assert!(
        stdout(&out).contains("profile_export_aiperf.json"),
        "{}",
        stdout(&out)
    );

    let summary = read_json(&run_dir.join("summary.json"));
    let p = read_json(&out_dir.join("profile_export_aiperf.json"));
    assert_eq!(p["schema_version"], "1.4");
    assert_eq!(p["metadata"]["scenario"], "inferencex-agentx-mvp");
    assert_eq!(
        p["metadata"]["submission_valid"],
        summary["submission_valid"]
    );
    assert_eq!(
        p["metadata"]["submission_invalid_reasons"],
        summary["submission_invalid_reasons"]
    );
    assert_eq!(
        p["metadata"]["submission_invalid_reasons"][0],
        "unsafe_override"
    );
    assert_eq!(p["was_cancelled"], false);
    assert_eq!(p["arbor"]["scenario"], "agentx-mvp");
    assert_eq!(
        p["arbor"]["summary"], summary,
        "the whole summary rides along"
    );

    // Distributions: AIPerf's names, ms, and the summary's figures.
    for (tag, ours) in [
        ("time_to_first_token", "ttft"),
        ("request_latency", "e2e"),
        ("inter_token_latency", "tpot"),
    ] {
        let block = &p[tag];
        assert_eq!(block["unit"], "ms", "{tag}");
        for stat in AIPERF_STATS {
            assert!(block[stat].is_number(), "{tag}.{stat}: {block}");
        }
        let theirs = &summary["latency"][ours];
        assert_eq!(block["count"], theirs["count"], "{tag}");
        for (stat, s) in [
            ("avg", "mean_s"),
            ("p50", "p50_s"),
            ("p90", "p90_s"),
            ("p95", "p95_s"),
            ("p99", "p99_s"),
            ("max", "max_s"),
        ] {
            let (ms, secs) = (num(&block[stat]), num(&theirs[s]));
            assert!(
                close(ms, secs * 1e3),
                "{tag}.{stat} {ms} ms, summary {secs} s"
            );
        }
        assert!(num(&block["min"]) <= num(&block["p1"]), "{tag}");
        assert!(num(&block["std"]) >= 0.0, "{tag}");
    }
    let t = &summary["throughput"];
    for (tag, unit, value) in [
        (
            "output_token_throughput",
            "tokens/sec",
            &t["output_tokens_per_s"],
        ),
        ("request_throughput", "requests/sec", &t["requests_per_s"]),
        ("benchmark_duration", "sec", &t["window_s"]),
        ("request_count", "requests", &summary["counts"]["ok"]),
        ("total_osl", "tokens", &t["output_tokens"]),
    ] {
        assert_eq!(p[tag]["unit"], unit, "{tag}");
        assert!(
            close(num(&p[tag]["avg"]), num(value)),
            "{tag}: {} vs {value}",
            p[tag]
        );
    }
    assert_eq!(
        p["output_token_throughput_per_user"]["unit"],
        "tokens/sec/user"
    );
    assert_eq!(p["output_sequence_length"]["unit"], "tokens");
    assert_eq!(p["time_to_second_token"]["unit"], "ms");
    assert_eq!(
        p["time_to_second_token"]["count"],
        p["time_to_first_token"]["count"]
    );

    // One line per record, in AIPerf's per-request shape.
    let records = jsonl(&run_dir.join("records.jsonl"));
    let lines = jsonl(&out_dir.join("profile_export.jsonl"));
    assert_eq!(lines.len(), records.len());
    let warmups = lines
        .iter()
        .filter(|l| l["metadata"]["benchmark_phase"] == "warmup")
        .count();
    assert_eq!(
        warmups as u64,
        summary["counts"]["warmups"].as_u64().unwrap()
    );
    assert!(warmups > 0, "the recipe sends warmups");
    let epoch = p["arbor"]["epoch_unix_ns"].as_u64().expect("an epoch");
    for (line, record) in lines.iter().zip(&records) {
        let md = &line["metadata"];
        assert_eq!(md["x_request_id"], record["request"].to_string());
        let (start, end) = (
            md["request_start_ns"].as_u64().unwrap(),
            md["request_end_ns"].as_u64().unwrap(),
        );
        assert!(epoch <= start && start <= end, "{md}");
        assert_eq!(line["arbor"]["request"], record["request"]);
        if record["status"] == "ok" {
            let ttft = &line["metrics"]["time_to_first_token"];
            assert_eq!(ttft["unit"], "ms");
            assert!(close(num(&ttft["value"]), num(&record["ttft_s"]) * 1e3));
            if let Some(first_gap) = record["itl_s"].get(0) {
                let ttst = &line["metrics"]["time_to_second_token"];
                assert!(close(num(&ttst["value"]), num(first_gap) * 1e3), "{ttst}");
            }
            let isl = &line["metrics"]["input_sequence_length"];
            assert_eq!(isl["value"].as_f64(), record["input_tokens"].as_f64());
        }
    }
}

#[test]
fn aiperf_export_of_a_run_without_a_scenario_has_no_metadata_block() {
    let (dir, run_dir) = short_run("export-aiperf-plain");
    let out_dir = dir.join("aiperf");
    export(&run_dir, "--aiperf", &out_dir);
    let p = read_json(&out_dir.join("profile_export_aiperf.json"));
    assert!(
        p.get("metadata").is_none(),
        "AIPerf writes none: {}",
        p["metadata"]
    );
    assert_eq!(p["arbor"]["scenario"], Value::Null);
    let lines = jsonl(&out_dir.join("profile_export.jsonl"));
    assert!(lines
        .iter()
        .all(|l| l["metadata"]["benchmark_phase"] == "profiling"));
}
