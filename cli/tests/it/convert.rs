//! `arbor convert --to FORMAT` as a process: every target written and read
//! back by `arbor inspect`, the account on stdout (human, or `--json`),
//! Weka's directory, the subset flags for every target, and the refusals
//! (exit 2). What each writer keeps and loses is proved in-process
//! (`proptests/tests/properties/writers.rs`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::*;

const TARGETS: [&str; 6] = [
    "arbor",
    "weka",
    "mooncake",
    "agentic-mooncake",
    "dynamo",
    "aiperf-graph",
];

fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata")
        .join(rel)
}

fn convert(args: &[&str]) -> std::process::Output {
    let mut all = vec!["convert"];
    all.extend_from_slice(args);
    let out = arbor(&all);
    assert!(out.status.success(), "{all:?}: {}", stderr(&out));
    out
}

fn inspect_json(path: &Path, format: &str) -> Value {
    let out = arbor(&[
        "inspect",
        "--json",
        "--format",
        format,
        path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{format}: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

fn counts(v: &Value) -> (u64, u64, u64) {
    (
        v["trees"].as_u64().unwrap(),
        v["agents"].as_u64().unwrap(),
        v["turns"].as_u64().unwrap(),
    )
}

#[test]
fn every_target_is_written_and_read_back_by_inspect() {
    let dir = scratch("convert-targets");
    let dynamo = testdata("dynamo/sample.jsonl");
    let source = inspect_json(&dynamo, "dynamo");
    assert_eq!(counts(&source), (2, 4, 9));
    for target in TARGETS {
        let out = dir.join(format!("out.{target}"));
        let printed = convert(&[
            "--to",
            target,
            "-o",
            out.to_str().unwrap(),
            dynamo.to_str().unwrap(),
        ]);
        let human = stdout(&printed);
        assert!(
            human.starts_with(&format!(
                "arbor convert: 2 trees (4 agents, 9 turns) written as {target} to "
            )),
            "{human}"
        );
        assert!(human.contains("\n  kept      "), "{human}");
        let back = inspect_json(&out, target);
        // Mooncake has no subagents: each agent reads back as a tree.
        let expected = if target == "mooncake" {
            (4, 4, 9)
        } else {
            (2, 4, 9)
        };
        assert_eq!(counts(&back), expected, "{target}");
        assert_eq!(back["inputs"][0]["format"], target);
    }
}

#[test]
fn without_to_it_writes_arbor_as_before() {
    let dir = scratch("convert-default");
    let out = dir.join("default.jsonl");
    let input = testdata("weka-kv-cache-tester/trace_0187.json");
    convert(&["-o", out.to_str().unwrap(), input.to_str().unwrap()]);
    let explicit = dir.join("explicit.jsonl");
    convert(&[
        "--to",
        "arbor",
        "-o",
        explicit.to_str().unwrap(),
        input.to_str().unwrap(),
    ]);
    let a = std::fs::read(&out).unwrap();
    assert!(!a.is_empty());
    assert_eq!(a, std::fs::read(&explicit).unwrap());
    assert!(jsonl(&out).iter().all(|l| l["arbor"] == 1));
}

#[test]
fn json_prints_the_versioned_account() {
    let dir = scratch("convert-json");
    let out = dir.join("m.jsonl");
    let printed = convert(&[
        "--json",
        "--to",
        "mooncake",
        "-o",
        out.to_str().unwrap(),
        testdata("dynamo/sample.jsonl").to_str().unwrap(),
    ]);
    let account: Value = serde_json::from_slice(&printed.stdout).expect("one JSON object");
    assert_eq!(account["schema_version"], "arbor.convert/1");
    assert_eq!(account["target"], "mooncake");
    assert_eq!(account["files"], 1);
    assert_eq!(account["written"]["trees"], 2);
    let lost: Vec<&str> = account["lost"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        lost,
        ["subagents", "arrival", "durations", "ttft", "block_size"]
    );
    let subagents = &account["lost"][0];
    assert_eq!(
        (subagents["trees"].as_u64(), subagents["agents"].as_u64()),
        (Some(1), Some(2))
    );
}

#[test]
fn weka_writes_one_file_per_tree_into_a_new_or_empty_directory() {
    let dir = scratch("convert-weka-dir");
    let out = dir.join("traces");
    let input = testdata("weka-kv-cache-tester");
    let printed = convert(&[
        "--to",
        "weka",
        "-o",
        out.to_str().unwrap(),
        input.to_str().unwrap(),
    ]);
    assert!(
        stdout(&printed).contains("(4 files)"),
        "{}",
        stdout(&printed)
    );
    let mut files: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "00000000-trace_0187.json",
            "00000001-trace_0277.json",
            "00000002-trace_0291.json",
            "00000003-trace_0504.json"
        ]
    );
    // The directory reads back as the corpus did, tree for tree.
    assert_eq!(
        counts(&inspect_json(&out, "weka")),
        counts(&inspect_json(&input, "weka"))
    );
    // Not into a directory that holds files: exit 2, nothing written.
    expect_exit_2(
        &[
            "convert",
            "--to",
            "weka",
            "-o",
            out.to_str().unwrap(),
            input.to_str().unwrap(),
        ],
        &["traces", "the directory is not empty", "-o DIR"],
    );
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 4);
}

#[test]
fn subsets_work_for_every_target() {
    let dir = scratch("convert-subsets");
    let input = testdata("weka-kv-cache-tester");
    let input = input.to_str().unwrap();
    let mut capped_head = None;
    for target in TARGETS {
        // The trees plan --trees 2 --seed 3 plays, then one by name.
        let sample = dir.join(format!("sample.{target}"));
        let printed = convert(&[
            "--to",
            target,
            "--trees",
            "2",
            "--seed",
            "3",
            "-o",
            sample.to_str().unwrap(),
            input,
        ]);
        assert!(
            stdout(&printed).starts_with("arbor convert: 2 trees"),
            "{target}: {}",
            stdout(&printed)
        );
        assert!(
            stderr(&printed).contains("2 of 4 trees"),
            "{}",
            stderr(&printed)
        );
        let named = dir.join(format!("named.{target}"));
        convert(&[
            "--to",
            target,
            "--tree",
            "trace_0291",
            "-o",
            named.to_str().unwrap(),
            input,
        ]);
        let back = inspect_json(&named, target);
        let trees = if target == "mooncake" {
            back["agents"].as_u64()
        } else {
            back["trees"].as_u64()
        };
        assert_eq!(
            trees,
            Some(if target == "mooncake" { 3 } else { 1 }),
            "{target}"
        );
        let capped = dir.join(format!("capped.{target}"));
        let printed = convert(&[
            "--to",
            target,
            "--max-requests",
            "60",
            "-o",
            capped.to_str().unwrap(),
            input,
        ]);
        // Whole trees while their requests add up to 60: the same trees
        // whatever the target.
        let head: String = stdout(&printed)
            .split(" written as ")
            .next()
            .unwrap_or_default()
            .to_string();
        assert!(
            head.starts_with("arbor convert: 2 trees"),
            "{target}: {head}"
        );
        assert_eq!(
            capped_head.get_or_insert_with(|| head.clone()),
            &head,
            "{target}"
        );
    }
}

#[test]
fn an_unknown_target_or_an_input_overwritten_exits_2() {
    let dir = scratch("convert-refusals");
    let input = testdata("dynamo/sample.jsonl");
    let out = arbor(&[
        "convert",
        "--to",
        "abench",
        "-o",
        dir.join("x").to_str().unwrap(),
        input.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "expected one of arbor, weka, mooncake, agentic-mooncake, dynamo, aiperf-graph, got `abench`"
        ),
        "{}",
        stderr(&out)
    );
    let copy = dir.join("copy.jsonl");
    std::fs::copy(&input, &copy).unwrap();
    expect_exit_2(
        &[
            "convert",
            "--to",
            "dynamo",
            "-o",
            copy.to_str().unwrap(),
            copy.to_str().unwrap(),
        ],
        &["copy.jsonl", "the output would overwrite this input"],
    );
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        std::fs::read(&input).unwrap()
    );
}
