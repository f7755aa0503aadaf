//! `arbor plan --shard I/N` and `arbor merge`: the shards' timelines
//! merge into the unsharded timeline, byte for byte; shards that do not
//! belong together and policies that cannot be split are refused. Live:
//! three `arbor run --shard I/3` processes against one emulator, started
//! by the barrier, merge into a run directory whose summary is the union
//! of their records.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::util::*;

fn plan(dir: &Path, name: &str, args: &[&str]) -> std::path::PathBuf {
    let path = dir.join(name);
    let mut all: Vec<&str> = vec!["plan"];
    all.extend_from_slice(args);
    let p = path.to_str().unwrap().to_string();
    all.extend_from_slice(&["--timeline", &p]);
    let out = arbor(&all);
    assert!(out.status.success(), "{all:?}: {}", stderr(&out));
    path
}

#[test]
fn merged_shard_timelines_are_the_unsharded_timeline() {
    let dir = scratch("shard-merge");
    let cases: [&[&str]; 3] = [
        &["--sessions", "3", "--copies", "4"],
        &[
            "--arrival",
            "poisson:5",
            "--copies",
            "3",
            "--stagger",
            "random:2s",
        ],
        &[
            "--arrival",
            "rate:2",
            "--copies",
            "2",
            "--stagger",
            "even:3s",
        ],
    ];
    for (c, args) in cases.iter().enumerate() {
        let whole = plan(&dir, &format!("whole-{c}.jsonl"), args);
        for n in [2u32, 3, 7] {
            let mut files = Vec::new();
            for i in (0..n).rev() {
                let shard = format!("{i}/{n}");
                let mut a = args.to_vec();
                a.extend_from_slice(&["--shard", &shard]);
                let f = plan(&dir, &format!("s{c}-{i}-of-{n}.jsonl"), &a);
                files.push(f.to_str().unwrap().to_string());
            }
            let merged = dir.join(format!("merged-{c}-{n}.jsonl"));
            let mut m: Vec<&str> = vec!["merge"];
            m.extend(files.iter().map(String::as_str));
            m.extend_from_slice(&["-o", merged.to_str().unwrap()]);
            let out = arbor(&m);
            assert!(out.status.success(), "{}", stderr(&out));
            assert_eq!(
                std::fs::read(&merged).unwrap(),
                std::fs::read(&whole).unwrap(),
                "case {c} N = {n}"
            );
        }
    }
}

#[test]
fn shards_that_do_not_belong_together_are_refused() {
    let dir = scratch("shard-refuse");
    let a = plan(&dir, "a.jsonl", &["--copies", "2", "--shard", "0/2"]);
    let b = plan(
        &dir,
        "b.jsonl",
        &["--copies", "2", "--shard", "1/2", "--seed", "9"],
    );
    let c = plan(&dir, "c.jsonl", &["--copies", "2", "--shard", "0/2"]);
    let out = dir.join("m.jsonl");
    let o = out.to_str().unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    expect_exit_2(&["merge", &s(&a), &s(&b), "-o", o], &["seed 9"]);
    expect_exit_2(&["merge", &s(&a), &s(&c), "-o", o], &["both are shard 0/2"]);
    expect_exit_2(&["merge", &s(&a), "-o", o], &["missing shard 1/2"]);
}

#[test]
fn policies_that_cannot_be_split_are_refused() {
    expect_exit_2(
        &["plan", "--idle-gap-cap", "1s", "--shard", "0/2"],
        &["--idle-gap-cap with --shard"],
    );
    expect_exit_2(
        &[
            "plan",
            "--sessions",
            "2",
            "--start-window",
            "0.2:0.8",
            "--shard",
            "1/2",
        ],
        &["--start-window with --shard"],
    );
    expect_exit_2(&["plan", "--shard", "2/2"], &["expected I/N"]);
}

/// A child process killed when dropped (a failed assertion included).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `arbor emulate` on a free port, and its base URL.
fn emulator() -> (Killed, String) {
    let (child, url) = emulator_with(&["--ttft-ms", "5", "--itl-ms", "1"]);
    (Killed(child), url)
}

/// An open-loop workload: every request is one (play, turn) of the plan.
const LIVE: [&str; 10] = [
    "--synthetic",
    "trees=10,turns=4,depth=1,spawn=0.3,fanout=2,seed=3",
    "--arrival",
    "poisson:40",
    "--copies",
    "2",
    "--tool-time",
    "zero",
    "--think-time-pct",
    "0",
];

fn run_child(url: &str, out: &Path, extra: &[String]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_arbor"))
        .arg("run")
        .args(LIVE)
        .args(["--endpoint", url, "--no-progress", "--out"])
        .arg(out)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("arbor run starts")
}

fn succeeded(child: Child) {
    let out = child.wait_with_output().expect("arbor run ends");
    assert!(out.status.success(), "{}", stderr(&out));
}

fn summary(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).expect("summary.json");
    serde_json::from_str(&text).expect("json")
}

/// A request's identity: its tree, copy, agent and turn. Not its play's
/// number: a live run numbers a play when its first turn is dispatched,
/// and with more than one client thread which thread gets there first
/// is a matter of timing (under a parallel build, t1's second copy was
/// numbered before t0's).
fn identity(r: &Value) -> (u64, u64, String, u64) {
    (
        r["tree_index"].as_u64().expect("tree_index"),
        r["copy"].as_u64().expect("copy"),
        r["agent"].as_str().expect("agent").to_string(),
        r["turn"].as_u64().expect("turn"),
    )
}

#[test]
fn merged_shard_runs_are_the_union_of_their_records() {
    let (_emulator, url) = emulator();
    let dir = scratch("shard-live");
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let shards: Vec<PathBuf> = (0..3).map(|i| dir.join(format!("shard-{i}"))).collect();
    let children: Vec<Child> = shards
        .iter()
        .enumerate()
        .map(|(i, out)| {
            let mut extra = vec!["--shard".to_string(), format!("{i}/3")];
            extra.extend(if i == 0 {
                ["--barrier-listen", &addr, "--barrier-size", "3"]
                    .map(String::from)
                    .to_vec()
            } else {
                ["--barrier", addr.as_str()].map(String::from).to_vec()
            });
            run_child(&url, out, &extra)
        })
        .collect();
    children.into_iter().for_each(succeeded);
    let whole = dir.join("whole");
    succeeded(run_child(&url, &whole, &[]));

    // Out of order: the merge sorts the shards by index.
    let merged = dir.join("merged");
    let s = |p: &Path| p.to_str().expect("UTF-8").to_string();
    let out = arbor(&[
        "merge",
        &s(&shards[2]),
        &s(&shards[0]),
        &s(&shards[1]),
        "-o",
        &s(&merged),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(merged.join("report.html").is_file());

    // The merged counts are the sum of the shards'.
    let m = summary(&merged);
    let parts: Vec<Value> = shards.iter().map(|d| summary(d)).collect();
    for key in [
        "dispatched",
        "ok",
        "failed",
        "cancelled",
        "skipped",
        "plays",
        "plays_done",
    ] {
        let sum: u64 = parts
            .iter()
            .map(|p| p["counts"][key].as_u64().unwrap())
            .sum();
        assert_eq!(m["counts"][key].as_u64(), Some(sum), "counts.{key}");
    }
    assert_eq!(m["complete"], true);
    assert_eq!(m["config"]["shard"]["count"], 3);
    assert_eq!(m["config"]["shard"]["index"], Value::Null);
    let kept = m["config"]["shard"]["shards"].as_array().expect("shards");
    assert_eq!(kept.len(), 3);
    assert_eq!(kept[0]["barrier"]["role"], "rank0");
    assert_eq!(kept[1]["barrier"]["role"], "peer");
    assert_eq!(parts[1]["config"]["shard"]["index"], 1);
    assert_eq!(
        parts[1]["config"]["shard"]["max_inflight"]["rule"],
        "per_shard"
    );

    // Every request once: the union of the shards' records, with unique
    // ids, and the same requests (the same plays of the plan) as the
    // unsharded run's.
    let records = jsonl(&merged.join("records.jsonl"));
    let union: Vec<Value> = shards
        .iter()
        .flat_map(|d| jsonl(&d.join("records.jsonl")))
        .collect();
    assert_eq!(records.len(), union.len());
    let mut ids: Vec<u64> = records
        .iter()
        .map(|r| r["request"].as_u64().unwrap())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), records.len(), "request ids are unique");
    let mut merged_set: Vec<_> = records.iter().map(identity).collect();
    merged_set.sort();
    let mut whole_set: Vec<_> = jsonl(&whole.join("records.jsonl"))
        .iter()
        .map(identity)
        .collect();
    whole_set.sort();
    assert_eq!(
        merged_set, whole_set,
        "the unsharded run's requests, each once"
    );
    assert!(merged_set.windows(2).all(|w| w[0] != w[1]));
    // Merged by the time each request ended: the k-way merge of the
    // shards' files, each in its shard's completion order (by `done_s`,
    // but two ends microseconds apart on different connections can be
    // handled in either order, so a file need not be sorted).
    let ended = |r: &Value| r["done_s"].as_f64().expect("done_s");
    let files: Vec<Vec<Value>> = shards
        .iter()
        .map(|d| jsonl(&d.join("records.jsonl")))
        .collect();
    let mut heads = vec![0usize; files.len()];
    let mut expected = Vec::new();
    while let Some(shard) = (0..files.len())
        .filter(|&i| heads[i] < files[i].len())
        .min_by(|&a, &b| ended(&files[a][heads[a]]).total_cmp(&ended(&files[b][heads[b]])))
    {
        let local = files[shard][heads[shard]]["request"]
            .as_u64()
            .expect("request");
        expected.push(local * files.len() as u64 + shard as u64);
        heads[shard] += 1;
    }
    let merged_order: Vec<u64> = records
        .iter()
        .map(|r| r["request"].as_u64().unwrap())
        .collect();
    assert_eq!(
        merged_order, expected,
        "merged by the time each request ended"
    );

    // The merged percentiles are those of the union of the records,
    // recomputed here (nearest rank over the ok requests).
    let mut by_metric: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for r in union
        .iter()
        .filter(|r| r["status"] == "ok" && r["warmup"] == false)
    {
        for (metric, field) in [("ttft", "ttft_s"), ("e2e", "e2e_s")] {
            if let Some(v) = r[field].as_f64() {
                by_metric.entry(metric).or_default().push(v);
            }
        }
    }
    for (metric, mut values) in by_metric {
        values.sort_by(f64::total_cmp);
        let shown = &m["latency"][metric];
        assert_eq!(
            shown["count"].as_u64(),
            Some(values.len() as u64),
            "{metric}"
        );
        for (key, p) in [
            ("p50_s", 0.50),
            ("p90_s", 0.90),
            ("p95_s", 0.95),
            ("p99_s", 0.99),
        ] {
            let got = shown[key].as_f64().expect("a percentile");
            let want = nearest_rank(&values, p);
            assert!((got - want).abs() < 1e-9, "{metric}.{key}: {got} vs {want}");
        }
        let max = values.last().copied().unwrap_or(0.0);
        assert!(
            (shown["max_s"].as_f64().unwrap() - max).abs() < 1e-9,
            "{metric}.max_s"
        );
    }

    // `arbor summarize` of the merged directory rebuilds the same summary.
    let before = std::fs::read(merged.join("summary.json")).expect("summary.json");
    let out = arbor(&["summarize", &s(&merged)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read(merged.join("summary.json")).unwrap(), before);

    // Shards that do not belong together are refused, naming the input.
    let to = s(&dir.join("refused"));
    let all = [s(&shards[0]), s(&shards[1]), s(&shards[2])];
    // `merge INPUTS -o OUT`.
    let merge = |inputs: &[&str], out: &str| -> Vec<String> {
        let mut args = vec!["merge".to_string()];
        args.extend(inputs.iter().map(|i| i.to_string()));
        args.extend(["-o".to_string(), out.to_string()]);
        args
    };
    let refused = [
        (merge(&[&all[0], &all[1]], &to), "missing shard 2/3"),
        (merge(&[&all[0], &s(&whole)], &to), "whole: not a shard"),
        (
            merge(&[&all[0], &all[0], &all[1]], &to),
            "both are shard 0/3",
        ),
        (
            merge(&[&all[0], &all[1], &all[2]], &s(&merged)),
            "not empty",
        ),
        (
            merge(&[&all[0], &all[1], &all[2]], &all[0]),
            "one of the shards",
        ),
    ];
    for (args, needle) in &refused {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        expect_exit_2(&args, &[needle]);
    }
    // --force merges again over the merged directory: the same summary.
    let mut again = merge(&[&all[0], &all[1], &all[2]], &s(&merged));
    again.push("--force".to_string());
    let out = arbor(&again.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read(merged.join("summary.json")).unwrap(), before);
}
