//! Loaders: invariant 11 (the native format round-trips every workload,
//! and so its plan) and robustness (no loader panics, whatever it is fed:
//! arbitrary bytes, arbitrary JSON, and JSON built from every format's
//! field names with values of any type; each input is written to a file and
//! read with every `--format`, exactly as the CLI does).

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use arbor_engine::{Tree, Workload};
use arbor_formats::input::Format;
use arbor_formats::load::arbor::{parse_line, write_tree};
use arbor_formats::load::load_path;
use arbor_proptests::gen::{self, MEDIUM};
use arbor_proptests::{run, show};
use proptest::prelude::*;
use serde_json::{Map, Number, Value};

/// Field names of every format, so generated objects reach past the first
/// "missing field" check.
const KEYS: &[&str] = &[
    "arbor",
    "id",
    "agents",
    "turns",
    "edges",
    "from",
    "to",
    "anchor",
    "gap_ns",
    "start_ns",
    "duration_ns",
    "isl",
    "osl",
    "kind",
    "parent",
    "requests",
    "t",
    "type",
    "in",
    "out",
    "hash_ids",
    "api_time",
    "ttft",
    "duration_ms",
    "status",
    "agent_id",
    "block_size",
    "input_types",
    "timestamp",
    "input_length",
    "output_length",
    "session_id",
    "delay",
    "request_id",
    "wait_for",
    "tool_wait_ms",
    "input",
    "output",
    "input_delta",
    "role",
    "content",
    "assistant_text",
    "input_tokens",
    "output_tokens",
    "pre_gap_ms",
    "system_prompt",
    "start",
    "end",
    "request",
    "response",
    "messages",
    "parent_agent_id",
    "usage",
];

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| Value::Number(n.into())),
        (-1e6..1e12f64).prop_map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number)),
        Just(Value::Number(Number::from_f64(1e300).unwrap())),
        "[a-z_ ]{0,12}".prop_map(Value::String),
        prop::sample::select(KEYS).prop_map(|k| Value::String(k.to_string())),
    ];
    leaf.prop_recursive(4, 48, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..8).prop_map(|pairs| {
                Value::Object(
                    pairs
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v))
                        .collect::<Map<_, _>>(),
                )
            }),
        ]
    })
}

fn scratch_file(bytes: &[u8]) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("arbor-prop-{}-{n}.jsonl", std::process::id()));
    let mut file = std::fs::File::create(&path).expect("temp file");
    file.write_all(bytes).expect("temp write");
    path
}

fn feed_every_format(bytes: &[u8]) {
    let path = scratch_file(bytes);
    for format in Format::ALL {
        // Ok or Err are both fine; a panic fails the property.
        let _ = load_path(&path, Some(format));
    }
    let _ = load_path(&path, None);
    let _ = std::fs::remove_file(&path);
}

/// Writes every tree with `write_tree` and reads it back with
/// `parse_line` (sources are set to what the reader names them).
fn round_trip(w: &Workload) -> Result<Workload, String> {
    let mut trees = Vec::new();
    for (i, tree) in w.trees.iter().enumerate() {
        let mut line = Vec::new();
        write_tree(tree, &mut line).map_err(|e| e.to_string())?;
        let text = String::from_utf8(line).map_err(|e| e.to_string())?;
        let back = parse_line(text.trim_end(), "rt.jsonl", i + 1)
            .map_err(|e| format!("{e}\nline: {text}"))?;
        trees.push(back);
    }
    Ok(Workload { trees })
}

/// The trees without their sources, nor their provenance (how a reader
/// came by a parent link: the native format states every link, so what it
/// reads back is from the file).
fn without_sources(w: &Workload) -> Vec<Tree> {
    w.trees
        .iter()
        .map(|t| Tree {
            source: String::new(),
            provenance: Default::default(),
            ..t.clone()
        })
        .collect()
}

/// The round trip on every fixture trace in `testdata/` (text, hash ids,
/// models and all): same trees, same plan.
#[test]
fn native_format_round_trips_every_fixture() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata");
    let mut checked = 0;
    for dir in std::fs::read_dir(&root).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() || dir.ends_with("bad") {
            continue;
        }
        for file in std::fs::read_dir(&dir).unwrap() {
            let file = file.unwrap().path();
            if !matches!(
                file.extension().and_then(|e| e.to_str()),
                Some("json" | "jsonl" | "zst")
            ) {
                continue;
            }
            let w = Workload {
                trees: load_path(&file, None).unwrap().trees,
            };
            let back = round_trip(&w).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            assert_eq!(
                without_sources(&w),
                without_sources(&back),
                "{}",
                file.display()
            );
            checked += 1;
        }
    }
    assert!(checked >= 8);
}

proptest! {
    #![proptest_config(arbor_proptests::config(400, "loaders"))]

    /// **The native format loses nothing.** Any workload (derived or
    /// explicit edges, unknown durations, recorded agent ends, every input
    /// kind) written with `arbor::write_tree` and read back with
    /// `parse_line` is the same workload, and so gives the same plan under
    /// any policy and service model, byte for byte.
    #[test]
    fn native_format_round_trip_keeps_the_plan(
        w in gen::any_workload(MEDIUM),
        p in prop_oneof![gen::policy(), gen::timed_policy()],
        svc in gen::service(),
    ) {
        let ctx = show::case(&w, &p, &svc);
        let back = match round_trip(&w) {
            Ok(b) => b,
            Err(e) => { prop_assert!(false, "round trip failed: {}{}", e, ctx); unreachable!() }
        };
        prop_assert_eq!(without_sources(&w), without_sources(&back), "{}", ctx);
        let (a, _) = run(&w, &p, &svc);
        let (b, _) = run(&back, &p, &svc);
        prop_assert_eq!(show::timeline(&a), show::timeline(&b), "{}", ctx);
    }

    /// Arbitrary bytes never panic a loader.
    #[test]
    fn loaders_survive_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        feed_every_format(&bytes);
    }

    /// Arbitrary JSON documents, one or several per line, never panic a
    /// loader.
    #[test]
    fn loaders_survive_arbitrary_json(lines in prop::collection::vec(json(), 1..4)) {
        let text: String = lines.iter().map(|v| format!("{v}\n")).collect();
        feed_every_format(text.as_bytes());
        // The same documents as one pretty-printed file (Weka's layout).
        feed_every_format(serde_json::to_string_pretty(&lines[0]).unwrap_or_default().as_bytes());
    }
}
