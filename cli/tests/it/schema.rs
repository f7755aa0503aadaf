//! The JSON Schemas of docs/schema/: current, and true of real outputs.
//!
//! - `arbor schema --out DIR` regenerates them byte for byte (with
//!   `ARBOR_BLESS_SCHEMA=1` the test rewrites docs/schema/ instead);
//! - the records and summary of short emulator runs, and `plan --json` of
//!   real fixtures, validate against them (boon, draft 2020-12), more
//!   strictly than the published schemas: here every object refuses keys
//!   its schema does not name, so a field written but missing from a
//!   schema fails;
//! - each schema's title is the version its output names.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::{arbor, fixture, jsonl, run_into, scratch, stderr, stdout, FAST};

const FILES: [&str; 4] = [
    "records.schema.json",
    "summary.schema.json",
    "plan.schema.json",
    "convert.schema.json",
];

fn committed_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/schema")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_committed_schemas_are_current() {
    let fresh = scratch("schema-fresh");
    let out = arbor(&["schema", "--out", fresh.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).lines().count(),
        FILES.len(),
        "{}",
        stdout(&out)
    );
    let bless = std::env::var_os("ARBOR_BLESS_SCHEMA").is_some();
    for name in FILES {
        let generated = std::fs::read(fresh.join(name)).expect("schema written");
        let committed_path = committed_dir().join(name);
        if bless {
            std::fs::write(&committed_path, &generated).expect("docs/schema writable");
            continue;
        }
        let committed = std::fs::read(&committed_path).unwrap_or_default();
        assert!(
            committed == generated,
            "docs/schema/{name} is stale: regenerate it with \
             `ARBOR_BLESS_SCHEMA=1 cargo test -p arbor-cli --test it schema` \
             (or `arbor schema --out docs/schema`), and bump the schema version \
             if a field was removed, renamed or changed type"
        );
    }
    // docs/schema/ holds no schema arbor does not write.
    let mut listed: Vec<String> = std::fs::read_dir(committed_dir())
        .expect("docs/schema")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".schema.json"))
        .collect();
    listed.sort();
    let mut expected: Vec<String> = FILES.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(listed, expected);
}

/// Every object schema that names its properties and says nothing of
/// others refuses others.
fn closed(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.contains_key("properties") && !map.contains_key("additionalProperties") {
                map.insert("additionalProperties".into(), Value::Bool(false));
            }
            map.values_mut().for_each(closed);
        }
        Value::Array(items) => items.iter_mut().for_each(closed),
        _ => {}
    }
}

/// A committed schema, closed, compiled; and its title.
struct Validator {
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
    title: String,
}

impl Validator {
    fn of(name: &str) -> Validator {
        let mut schema = read_json(&committed_dir().join(name));
        let title = schema["title"].as_str().expect("a title").to_string();
        closed(&mut schema);
        let url = format!("file:///arbor/{name}");
        let mut compiler = boon::Compiler::new();
        compiler
            .add_resource(&url, schema)
            .unwrap_or_else(|e| panic!("{name}: {e:#}"));
        let mut schemas = boon::Schemas::new();
        let index = compiler
            .compile(&url, &mut schemas)
            .unwrap_or_else(|e| panic!("{name}: {e:#}"));
        Validator {
            schemas,
            index,
            title,
        }
    }

    fn check(&self, what: &str, value: &Value) {
        if let Err(e) = self.schemas.validate(value, self.index) {
            panic!("{what} does not follow {}: {e:#}\n{value:#}", self.title);
        }
    }
}

/// The records and summary of a run in `dir` follow their schemas, and
/// name the schemas' versions.
fn check_run(dir: &Path) {
    let records = Validator::of("records.schema.json");
    let lines = jsonl(&dir.join("records.jsonl"));
    assert!(!lines.is_empty());
    for (i, line) in lines.iter().enumerate() {
        records.check(&format!("records.jsonl line {}", i + 1), line);
    }
    let run = read_json(&dir.join("run.json"));
    assert_eq!(run["records_schema_version"], records.title.as_str());

    let summary = Validator::of("summary.schema.json");
    let value = read_json(&dir.join("summary.json"));
    summary.check("summary.json", &value);
    assert_eq!(value["schema_version"], summary.title.as_str());
}

#[test]
fn a_runs_records_and_summary_follow_their_schemas() {
    let dir = scratch("schema-run");
    // Queued turns and failed requests (error objects with a status).
    let capped = dir.join("capped");
    let trace = fixture("trace_0277.json");
    let mut args = vec![
        trace.to_str().unwrap(),
        "--max-inflight",
        "2",
        "--fail-rate",
        "0.2",
    ];
    args.extend(FAST);
    run_into(&capped, &args);
    let failed = jsonl(&capped.join("records.jsonl"))
        .iter()
        .filter(|r| r["status"] == "error")
        .count();
    assert!(failed > 0, "no failed request to check");
    check_run(&capped);

    // Lanes of a closed loop (the summary's `lanes`).
    let lanes = dir.join("lanes");
    let small = fixture("trace_0187.json");
    let mut args = vec![small.to_str().unwrap(), "--sessions", "2"];
    args.extend(FAST);
    run_into(&lanes, &args);
    assert!(read_json(&lanes.join("summary.json"))["lanes"].is_array());
    check_run(&lanes);
}

#[test]
fn plan_json_follows_its_schema() {
    let plan = Validator::of("plan.schema.json");
    let big = fixture("trace_0277.json");
    let small = fixture("trace_0187.json");
    let cases: [Vec<&str>; 2] = [
        vec![big.to_str().unwrap()],
        // Lanes and a queue-wait distribution.
        vec![
            small.to_str().unwrap(),
            "--sessions",
            "3",
            "--max-inflight",
            "1",
        ],
    ];
    let mut last = Value::Null;
    for case in cases {
        let mut args = vec!["plan", "--json"];
        args.extend(&case);
        let out = arbor(&args);
        assert!(out.status.success(), "{case:?}: {}", stderr(&out));
        let value: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
        plan.check(&format!("plan --json {case:?}"), &value);
        assert_eq!(value["schema_version"], plan.title.as_str());
        last = value;
    }
    assert!(last["lanes"].is_array() && last["queue_wait"].is_object());

    // The check can fail: a key no schema names, a value of the wrong type.
    let mut extra = last.clone();
    extra["demand"]["requests_per_minute"] = Value::from(1);
    assert!(plan.schemas.validate(&extra, plan.index).is_err());
    let mut retyped = last;
    retyped["queue_wait"]["p99_s"] = Value::from("slow");
    assert!(plan.schemas.validate(&retyped, plan.index).is_err());
}

#[test]
fn convert_json_follows_its_schema() {
    let account = Validator::of("convert.schema.json");
    let dir = scratch("schema-convert");
    let dynamo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/dynamo/sample.jsonl");
    let mut last = Value::Null;
    for target in ["arbor", "mooncake", "aiperf-graph"] {
        let out_file = dir.join(format!("out.{target}"));
        let out = arbor(&[
            "convert",
            "--json",
            "--to",
            target,
            "-o",
            out_file.to_str().unwrap(),
            dynamo.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{target}: {}", stderr(&out));
        let value: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
        account.check(&format!("convert --json --to {target}"), &value);
        assert_eq!(value["schema_version"], account.title.as_str());
        assert_eq!(value["target"], target);
        last = value;
    }
    assert!(!last["lost"].as_array().unwrap().is_empty());
    let mut retyped = last;
    retyped["lost"][0]["turns"] = Value::from("many");
    assert!(account.schemas.validate(&retyped, account.index).is_err());
}
