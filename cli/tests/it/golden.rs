//! Byte-identical outputs on every fixture: the guard of any reshaping.
//!
//! Each case runs `arbor plan --json --timeline` (or `arbor inspect
//! --json`) on a bundled fixture with a set of policies, and compares what
//! it printed and wrote with the files under `testdata/golden/`, byte for
//! byte. The cases cover every format, every arrival, stagger, gap and
//! admission policy, lanes, the start window, the AgentX scenario, the
//! three service models and a conversion round trip.
//!
//! A change that moves a plan on purpose re-blesses the files with
//! `ARBOR_BLESS_GOLDEN=1 cargo test -p arbor-cli --test it golden` and says
//! why in its commit.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{scratch, stderr};

/// The repository root: cases name inputs relative to it so that outputs
/// (which echo input paths) do not depend on where the clone lives.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn golden_dir() -> PathBuf {
    root().join("testdata/golden/plan")
}

/// `(case name, arguments of arbor plan)`.
const PLAN_CASES: &[(&str, &[&str])] = &[
    ("sample-default", &[]),
    ("weka-default", &["testdata/weka-kv-cache-tester"]),
    (
        "weka-identity",
        &[
            "testdata/weka-kv-cache-tester",
            "--service",
            "recorded",
            "--arrival",
            "recorded",
            "--overlap-tolerance",
            "0",
        ],
    ),
    (
        "weka-cap-stagger-even",
        &[
            "testdata/weka-kv-cache-tester",
            "--tool-time",
            "zero",
            "--idle-gap-cap",
            "10",
            "--max-inflight",
            "2",
            "--copies",
            "3",
            "--stagger",
            "even:30",
        ],
    ),
    (
        "weka-poisson-random",
        &[
            "testdata/weka-kv-cache-tester",
            "--arrival",
            "poisson:0.5",
            "--copies",
            "4",
            "--stagger",
            "random:20",
            "--seed",
            "11",
            "--service",
            "fixed:20:1",
        ],
    ),
    (
        "weka-rate-gaps-throughput",
        &[
            "testdata/weka-kv-cache-tester",
            "--tool-time",
            "pct:50",
            "--think-time-pct",
            "200",
            "--arrival",
            "rate:0.2",
            "--tree-idle-cap",
            "30",
            "--service",
            "throughput:5000:50",
        ],
    ),
    (
        "weka-tool-max-fixed-immediate",
        &[
            "testdata/weka-kv-cache-tester",
            "--tool-time",
            "max:200",
            "--arrival",
            "immediate",
            "--max-inflight",
            "3",
        ],
    ),
    (
        "weka-tool-fixed-duration",
        &[
            "testdata/weka-kv-cache-tester",
            "--tool-time",
            "fixed:500",
            "--duration",
            "300",
            "--grace",
            "5",
            "--copies",
            "2",
        ],
    ),
    (
        "weka-sessions-loop",
        &[
            "testdata/weka-kv-cache-tester",
            "--sessions",
            "3",
            "--copies",
            "2",
            "--loop",
            "--duration",
            "1500",
            "--seed",
            "7",
            "--service",
            "fixed:30:2",
        ],
    ),
    (
        "weka-start-window",
        &[
            "testdata/weka-kv-cache-tester",
            "--sessions",
            "2",
            "--start-window",
            "0.25:0.75",
            "--warmup-spread",
            "5",
            "--seed",
            "5",
            "--duration",
            "600",
        ],
    ),
    (
        "weka-agentx",
        &[
            "testdata/weka-kv-cache-tester",
            "--scenario",
            "agentx-mvp",
            "--sessions",
            "2",
            "--seed",
            "42",
            "--service",
            "fixed:20:1",
        ],
    ),
    (
        "mooncake-conversation",
        &["testdata/mooncake-fast25/conversation_trace.head400.jsonl"],
    ),
    (
        "mooncake-synthetic",
        &[
            "testdata/mooncake-fast25/synthetic_trace.head300.jsonl",
            "--max-inflight",
            "16",
            "--service",
            "throughput:20000:200",
        ],
    ),
    (
        "agentic-mooncake",
        &[
            "testdata/golden/agentic_mooncake.jsonl",
            "--service",
            "fixed:40:2",
        ],
    ),
    (
        "lmcache",
        &[
            "testdata/lmcache-agent-trace/magagent",
            "testdata/lmcache-agent-trace/miniswe",
            "testdata/lmcache-agent-trace/taubench",
        ],
    ),
    (
        "lmcache-tokenizer",
        &[
            "testdata/lmcache-agent-trace/miniswe",
            "--tokenizer",
            "testdata/tokenizers/smollm2-135m/tokenizer.json",
        ],
    ),
    ("abench", &["testdata/abench/sample.jsonl"]),
    ("abench-zst", &["testdata/abench/sample.jsonl.zst"]),
    ("openai-log", &["testdata/openai-log/sample.jsonl"]),
    (
        "synthetic",
        &[
            "--synthetic",
            "trees=6,turns=20,depth=2,spawn=0.2,overlap=0.05,seed=3",
            "--arrival",
            "poisson:1",
            "--max-inflight",
            "8",
            "--idle-gap-cap",
            "5",
        ],
    ),
];

/// `(case name, arguments of arbor inspect)`: every format's reader, with
/// its conventions and problems.
const INSPECT_CASES: &[(&str, &[&str])] = &[
    ("inspect-weka", &["testdata/weka-kv-cache-tester"]),
    (
        "inspect-mooncake",
        &[
            "testdata/mooncake-fast25/conversation_trace.head400.jsonl",
            "testdata/mooncake-fast25/synthetic_trace.head300.jsonl",
        ],
    ),
    (
        "inspect-agentic-mooncake",
        &["testdata/golden/agentic_mooncake.jsonl"],
    ),
    (
        "inspect-lmcache",
        &[
            "testdata/lmcache-agent-trace/magagent",
            "testdata/lmcache-agent-trace/miniswe",
            "testdata/lmcache-agent-trace/taubench",
        ],
    ),
    (
        "inspect-abench",
        &[
            "testdata/abench/sample.jsonl",
            "testdata/abench/sample.jsonl.zst",
        ],
    ),
    ("inspect-openai-log", &["testdata/openai-log/sample.jsonl"]),
];

fn bless() -> bool {
    std::env::var_os("ARBOR_BLESS_GOLDEN").is_some()
}

/// Compares `actual` with the golden file `name`, or writes it when
/// blessing. Returns a description of the difference, if any.
fn check(name: &str, actual: &[u8]) -> Option<String> {
    let path = golden_dir().join(name);
    if bless() {
        std::fs::create_dir_all(golden_dir()).expect("golden dir");
        std::fs::write(&path, actual).expect("golden file written");
        return None;
    }
    let expected = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) => return Some(format!("{}: cannot read golden file: {e}", path.display())),
    };
    if expected == actual {
        return None;
    }
    let exp = String::from_utf8_lossy(&expected);
    let act = String::from_utf8_lossy(actual);
    let (line, (e, a)) = exp
        .lines()
        .zip(act.lines())
        .enumerate()
        .find(|(_, (e, a))| e != a)
        .unwrap_or((
            exp.lines().count().min(act.lines().count()),
            ("<end>", "<end>"),
        ));
    Some(format!(
        "{name}: differs from {} at line {}:\n  expected: {e}\n  actual:   {a}",
        path.display(),
        line + 1
    ))
}

fn arbor_in_root(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_arbor"))
        .current_dir(root())
        .args(args)
        .output()
        .expect("the arbor binary runs")
}

#[test]
fn plans_and_timelines_are_byte_identical_on_every_fixture() {
    let dir = scratch("golden-plan");
    let mut differences = Vec::new();
    for (name, case) in PLAN_CASES {
        let timeline = dir.join(format!("{name}.timeline.jsonl"));
        let mut args = vec!["plan", "--json", "--timeline", timeline.to_str().unwrap()];
        args.extend_from_slice(case);
        let out = arbor_in_root(&args);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        differences.extend(check(&format!("{name}.json"), &out.stdout));
        let written = std::fs::read(&timeline).expect("timeline written");
        differences.extend(check(&format!("{name}.timeline.jsonl"), &written));
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

#[test]
fn inspect_reports_are_byte_identical_on_every_format() {
    let mut differences = Vec::new();
    for (name, case) in INSPECT_CASES {
        let mut args = vec!["inspect", "--json"];
        args.extend_from_slice(case);
        let out = arbor_in_root(&args);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        differences.extend(check(&format!("{name}.json"), &out.stdout));
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

#[test]
fn a_converted_corpus_plans_like_its_source() {
    let dir = scratch("golden-convert");
    let converted = dir.join("weka.arbor.jsonl");
    let out = arbor_in_root(&[
        "convert",
        "testdata/weka-kv-cache-tester",
        "--to",
        "arbor",
        "-o",
        converted.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut differences = Vec::new();
    differences.extend(check(
        "convert-weka.arbor.jsonl",
        &std::fs::read(&converted).expect("converted file"),
    ));
    let timeline = dir.join("timeline.jsonl");
    let out = arbor_in_root(&[
        "plan",
        "--timeline",
        timeline.to_str().unwrap(),
        converted.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The same trees in arbor's own form plan to the same bytes.
    differences.extend(check(
        "weka-default.timeline.jsonl",
        &std::fs::read(&timeline).expect("timeline written"),
    ));
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}
