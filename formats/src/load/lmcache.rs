//! LMCache agent traces (`LMCache/lmcache-agent-trace`, formats.md section
//! 5, `docs/formats/lmcache.md`): JSONL rows `{timestamp, input, output,
//! session_id}` with unix-microsecond request times and flattened text.
//!
//! Owns reading one such file into [`Tree`]s: one tree per `session_id`
//! (ordered by first timestamp), one root agent, turns sorted by timestamp
//! (files are not in time order). Unix microseconds exceed the engine's time
//! range, so a tree's arrival is its first timestamp minus the file's
//! earliest; turn starts are exact (µs × 1000). No end times and no token
//! counts are recorded: durations are unknown and tokens are estimated from
//! the text, and both are reported.

use std::collections::BTreeMap;

use serde::Deserialize;

use arbor_engine::error::InputError;
use arbor_engine::model::{Agent, AgentKind, InputKind, Message, Role, Tree, Turn, TurnText};
use arbor_engine::time::{Nanos, MAX_SECONDS};

use super::fields::{estimate_tokens, show_number, NonEmpty, UnixMicros};
use super::json::Lines;
use super::sniff::TopKeys;
use super::source::Source;
use crate::input::{Loaded, Problem};

/// The longest span a file may cover, in microseconds (the engine's limit).
const MAX_SPAN_MICROS: u64 = (MAX_SECONDS as u64) * 1_000_000;

/// What an LMCache row is, in messages.
const ROW: &str =
    "an LMCache trace row (a JSON object with `timestamp`, `input`, `output` and `session_id`)";

#[derive(Deserialize)]
#[serde(
    expecting = "an LMCache trace row (a JSON object with `timestamp`, `input`, `output` and \
                 `session_id`)"
)]
struct RawRow {
    timestamp: UnixMicros,
    input: String,
    output: String,
    session_id: NonEmpty,
}

/// One row, kept until its session is assembled.
struct Row {
    line: usize,
    micros: u64,
    input: String,
    output: String,
}

struct Session {
    id: String,
    first_line: usize,
    rows: Vec<Row>,
}

/// Does this start of a file look like an LMCache trace? (A first row with
/// `timestamp` and a text `input`; Mooncake rows have `input_length`.)
pub fn looks_like(text_prefix: &str) -> bool {
    let keys = TopKeys::of(text_prefix);
    keys.has("timestamp")
        && keys.has("input")
        && !keys.has_any(&["input_length", "hash_ids", "request", "turns"])
}

/// Reads one LMCache trace file.
pub fn load(input: impl Into<Source>) -> Result<Loaded, InputError> {
    let mut lines = Lines::open(input.into(), ROW)?;
    let file = lines.file().to_string();
    let mut sessions: Vec<Session> = Vec::new();
    let mut by_id: BTreeMap<String, usize> = BTreeMap::new();
    let mut in_order = true;
    let mut last = 0u64;
    let mut earliest: Option<(u64, usize)> = None;
    while let Some(raw) = lines.next::<RawRow>()? {
        let line = lines.line();
        let micros = raw.timestamp.0;
        in_order &= micros >= last;
        last = micros;
        if earliest.is_none_or(|(e, _)| micros < e) {
            earliest = Some((micros, line));
        }
        let index = *by_id.entry(raw.session_id.0.clone()).or_insert_with(|| {
            sessions.push(Session {
                id: raw.session_id.0,
                first_line: line,
                rows: Vec::new(),
            });
            sessions.len() - 1
        });
        if let Some(session) = sessions.get_mut(index) {
            session.rows.push(Row {
                line,
                micros,
                input: raw.input,
                output: raw.output,
            });
        }
    }
    let Some((earliest, earliest_line)) = earliest else {
        return Err(lines.empty(
            "LMCache trace rows (one JSON object per line with \
             `timestamp`, `input`, `output`, `session_id`)",
        ));
    };

    let mut turn_count = 0usize;
    let mut empty_outputs = 0usize;
    let mut trees = Vec::with_capacity(sessions.len());
    for mut session in sessions {
        // Stable: equal timestamps keep file order.
        session.rows.sort_by_key(|r| r.micros);
        let first = session.rows.first().map_or(earliest, |r| r.micros);
        let mut turns = Vec::with_capacity(session.rows.len());
        for row in session.rows {
            let span = row.micros - earliest;
            if span > MAX_SPAN_MICROS {
                return Err(InputError::at(
                    &file,
                    format!("line {}, $.timestamp", row.line),
                    format!(
                        "timestamp {} is {} s after the file's earliest ({earliest}, line \
                         {earliest_line}): expected rows within {} s of each other",
                        row.micros,
                        show_number(span as f64 / 1e6),
                        show_number(MAX_SECONDS)
                    ),
                ));
            }
            if row.output.is_empty() {
                empty_outputs += 1;
            }
            turns.push(Turn {
                start: (row.micros - first) * 1000,
                duration: None,
                isl: estimate_tokens(&row.input).max(1),
                osl: estimate_tokens(&row.output).max(1),
                ttft: None,
                model: None,
                input_kind: InputKind::Unknown,
                hash_ids: Default::default(),
                text: Some(Box::new(TurnText {
                    extends_previous: false,
                    messages: vec![Message::text(Role::User, row.input)],
                    response: Some(row.output),
                    ..Default::default()
                })),
                tokens_estimated: true,
            });
        }
        turn_count += turns.len();
        let arrival: Nanos = (first - earliest) * 1000;
        trees.push(Tree {
            id: session.id.clone(),
            source: format!("{file}:line {}", session.first_line),
            arrival,
            agents: vec![Agent {
                id: session.id,
                parent: None,
                kind: AgentKind::Root,
                recorded_end: None,
                turns,
            }],
            explicit_edges: None,
            ..Tree::default()
        });
    }
    // Stable: sessions starting together keep their order of appearance.
    trees.sort_by_key(|t| t.arrival);

    let mut conventions = vec![
        "timestamps: unix microseconds; tree arrival = session's first timestamp minus the \
         file's earliest (unix times exceed the engine's time range)"
            .to_string(),
        "text: `input` (a flattened context) sent as one user message, `output` as the \
         recorded response; no deltas"
            .to_string(),
    ];
    if !in_order {
        conventions.push("rows not in time order: sorted by timestamp".to_string());
    }
    let mut problems = vec![
        Problem {
            place: file.clone(),
            message: format!(
                "token counts estimated from text length (1 token per 4 bytes) for all \
                 {turn_count} turns"
            ),
        },
        Problem {
            place: file.clone(),
            message: format!(
                "durations unknown for all {turn_count} turns (no end time recorded): gaps \
                 replay start to start"
            ),
        },
    ];
    if empty_outputs > 0 {
        problems.push(Problem {
            place: file.clone(),
            message: format!("{empty_outputs} turns have an empty output (osl set to 1)"),
        });
    }
    Ok(Loaded {
        trees,
        conventions,
        problems,
        ..Loaded::default()
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{scratch_file, testdata};
    use super::*;
    use arbor_engine::time::NANOS_PER_SEC;
    use std::path::PathBuf;

    fn fixture(name: &str) -> PathBuf {
        testdata("lmcache-agent-trace").join(name)
    }

    const FIXTURES: [(&str, usize); 4] = [
        ("miniswe/189f0222310bd8eee310f204e91b9c84.jsonl", 6),
        ("miniswe/ae5bc34ffaf6e553cc320e6499db0d47.jsonl", 8),
        (
            "magagent/e58895aeb237c2865519206612cf0c6c.openai_chat.jsonl",
            11,
        ),
        ("taubench/22ffaaf33001ec7197ccd612e03d428e.jsonl", 6),
    ];

    /// The rows of a fixture, parsed independently: (timestamp, input, output).
    fn rows(name: &str) -> Vec<(u64, String, String)> {
        let text = std::fs::read_to_string(fixture(name)).expect("read");
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("json");
                (
                    v["timestamp"].as_u64().expect("timestamp"),
                    v["input"].as_str().expect("input").to_string(),
                    v["output"].as_str().expect("output").to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn fixtures_give_one_tree_each_in_time_order() {
        for (name, count) in FIXTURES {
            let loaded = load(&fixture(name)).expect("fixture loads");
            assert_eq!(loaded.trees.len(), 1, "{name}");
            let tree = &loaded.trees[0];
            assert_eq!(tree.arrival, 0);
            assert_eq!(tree.agents.len(), 1);
            let root = &tree.agents[0];
            assert_eq!((root.kind, root.parent), (AgentKind::Root, None));
            assert_eq!(root.turns.len(), count, "{name}");
            let stem = name.rsplit('/').next().expect("name");
            assert!(stem.starts_with(&tree.id), "{} vs {name}", tree.id);
            assert_eq!(root.id, tree.id);

            // Expected: rows sorted by timestamp (stable), starts in exact ns.
            let mut expected = rows(name);
            expected.sort_by_key(|r| r.0);
            let first = expected[0].0;
            for (turn, (micros, input, output)) in root.turns.iter().zip(&expected) {
                assert_eq!(turn.start, (micros - first) * 1000, "{name}");
                assert!(turn.tokens_estimated);
                assert_eq!(turn.duration, None);
                assert_eq!(turn.input_kind, InputKind::Unknown);
                assert_eq!(turn.isl, estimate_tokens(input).max(1));
                assert_eq!(turn.osl, estimate_tokens(output).max(1));
                let text = turn.text.as_deref().expect("text");
                assert!(!text.extends_previous);
                assert_eq!(text.messages.len(), 1);
                assert_eq!(text.messages[0].role, Role::User);
                assert_eq!(text.messages[0].content.as_bytes(), input.as_bytes());
                assert_eq!(text.response.as_deref(), Some(output.as_str()));
            }
            assert!(root.turns.windows(2).all(|w| w[0].start <= w[1].start));
        }
    }

    #[test]
    fn fixture_starts_and_reports() {
        // taubench: rows out of order, 5 empty outputs, 1.72485 s span.
        let loaded = load(&fixture(FIXTURES[3].0)).expect("loads");
        let starts: Vec<Nanos> = loaded.trees[0].agents[0]
            .turns
            .iter()
            .map(|t| t.start)
            .collect();
        assert_eq!(
            starts,
            [
                0,
                378_040_000,
                896_842_000,
                1_142_805_000,
                1_481_162_000,
                1_724_850_000
            ]
        );
        assert!(loaded
            .conventions
            .iter()
            .any(|c| c.contains("not in time order")));
        assert!(loaded.conventions.iter().any(|c| c.contains("unix")));
        let problems: Vec<&str> = loaded.problems.iter().map(|p| p.message.as_str()).collect();
        assert!(problems
            .iter()
            .any(|p| p.contains("5 turns have an empty output")));
        assert!(problems
            .iter()
            .any(|p| p.contains("estimated") && p.contains("all 6 turns")));
        assert!(problems.iter().any(|p| p.contains("durations unknown")));
        // magagent spans 79.9 s.
        let loaded = load(&fixture(FIXTURES[2].0)).expect("loads");
        let last = loaded.trees[0].agents[0].turns.last().expect("turn").start;
        assert_eq!(last, 79_878_745_000);
        assert!(last > 79 * NANOS_PER_SEC);
    }

    #[test]
    fn several_sessions_in_one_file() {
        let text = "\
{\"timestamp\": 1000005000000, \"input\": \"b1\", \"output\": \"x\", \"session_id\": \"b\"}
{\"timestamp\": 1000002000000, \"input\": \"a1\", \"output\": \"y\", \"session_id\": \"a\"}

{\"timestamp\": 1000003500000, \"input\": \"a2\", \"output\": \"\", \"session_id\": \"a\"}
{\"timestamp\": 1000005000000, \"input\": \"b0\", \"output\": \"z\", \"session_id\": \"b\"}
";
        let path = scratch_file("multi", text.as_bytes());
        let loaded = load(&path).expect("loads");
        std::fs::remove_file(&path).ok();
        let ids: Vec<&str> = loaded.trees.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(loaded.trees[0].arrival, 0);
        assert_eq!(loaded.trees[1].arrival, 3 * NANOS_PER_SEC);
        assert!(loaded.trees[0].source.ends_with(":line 2"));
        let a: Vec<(Nanos, &str)> = loaded.trees[0].agents[0]
            .turns
            .iter()
            .map(|t| {
                (
                    t.start,
                    t.text.as_deref().expect("t").messages[0].content.as_str(),
                )
            })
            .collect();
        assert_eq!(a, [(0, "a1"), (1_500_000_000, "a2")]);
        // Equal timestamps keep file order.
        let b: Vec<&str> = loaded.trees[1].agents[0]
            .turns
            .iter()
            .map(|t| t.text.as_deref().expect("t").messages[0].content.as_str())
            .collect();
        assert_eq!(b, ["b1", "b0"]);
    }

    #[test]
    fn looks_like_accepts_lmcache_only() {
        for (name, _) in FIXTURES {
            let bytes = std::fs::read(fixture(name)).expect("read");
            let end = bytes.len().min(super::super::SNIFF_BYTES as usize);
            let prefix = String::from_utf8_lossy(bytes.get(..end).expect("prefix"));
            assert!(looks_like(&prefix), "{name}");
            assert!(looks_like(prefix.get(..40).expect("short")), "{name}");
            assert_eq!(
                super::super::detect(&fixture(name)).expect("detects"),
                super::super::Format::Lmcache
            );
        }
        let others = [
            r#"{"id":"t","requests":[{"t":0,"in":1,"out":1}]}"#,
            r#"{"arbor": 1, "id": "t1", "agents": []}"#,
            r#"{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}"#,
            r#"{"session_id": "s", "system_prompt": "x", "turns": []}"#,
            r#"{"start": 1.5, "session_id": "s", "request": {"messages": []}}"#,
            r#"{"start": 1.5, "request": {"timestamp": 1, "input": "x"}}"#,
            "",
            "not json",
        ];
        for text in others {
            assert!(!looks_like(text), "{text}");
        }
    }

    // ----- errors -----
}
