//! No loader panics, whatever it is fed: arbitrary bytes, arbitrary JSON,
//! and JSON built from every format's field names with values of any type.
//! Each input is written to a file and read with every `--format`, exactly
//! as the CLI does.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use arbor_engine::load::{load_path, Format};
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

proptest! {
    #![proptest_config(ProptestConfig { cases: arbor_proptests::cases(64), ..ProptestConfig::default() })]

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
