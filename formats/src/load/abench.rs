//! agentic-bench (`AlibabaResearch/abench`) session JSONL v1, plain or
//! zstd-compressed (formats.md section 3, `docs/formats/abench.md`).
//!
//! Owns reading those files into [`Tree`]s: one session per line, one tree
//! with one root agent per session. Turn `k` starts at turn `k-1`'s start
//! plus turn `k`'s `pre_gap_ms` (turn 0 at 0); abench records no per-turn
//! service time, so durations are unknown and the recorded gap (which
//! includes the recorder's generation time) replays start to start. Text is
//! kept as deltas: turn 0 holds the system prompt and its `input_delta`,
//! turn `k > 0` extends the previous prompt with the previous
//! `assistant_text` and its own `input_delta`.
//! zstd files are decoded on the fly (`sniff.rs`).

use std::collections::BTreeSet;

use serde::de::IgnoredAny;
use serde::Deserialize;

use arbor_engine::error::InputError;
use arbor_engine::model::{Agent, AgentKind, InputKind, Message, Role, Tree, Turn, TurnText};
use arbor_engine::time::{Nanos, MAX_SECONDS};

use super::fields::{show_number, tokens_for_bytes, Count, Millis, RawMessage, MAX_NANOS};
use super::json::Lines;
use super::sniff::{first_row, has_key, Codec, TopKeys};
use super::source::Source;
use super::tally::Tally;
use crate::input::{Loaded, Problem};

/// What an abench session is, in messages.
const SESSION: &str = "an abench session (a JSON object with `session_id` and `turns`)";

// ---------------------------------------------------------------------------
// Schema

#[derive(Deserialize)]
#[serde(expecting = "an abench session (a JSON object with `session_id` and `turns`)")]
struct RawSession {
    session_id: String,
    #[serde(default)]
    source: Option<RawSource>,
    #[serde(default)]
    system_prompt: Option<String>,
    turns: Vec<RawTurn>,
}

#[derive(Deserialize)]
#[serde(expecting = "a `source` object (`dataset`, `agent`, `model`, `trial`)")]
struct RawSource {
    #[serde(default)]
    model: Option<String>,
}

#[derive(Deserialize)]
#[serde(expecting = "a turn object")]
struct RawTurn {
    #[serde(default)]
    index: Option<Count>,
    #[serde(default)]
    input_delta: Option<Vec<RawMessage>>,
    #[serde(default)]
    assistant_text: Option<String>,
    #[serde(default)]
    input_tokens: Option<Count>,
    #[serde(default)]
    output_tokens: Option<Count>,
    #[serde(default)]
    #[allow(dead_code)] // read to check its type; arbor has no use for it
    cached_tokens: Option<Count>,
    #[serde(default)]
    pre_gap_ms: Option<Millis>,
    #[serde(default)]
    #[allow(dead_code)]
    tool_calls: Option<IgnoredAny>,
}

// ---------------------------------------------------------------------------
// Reading

/// Does this start of a file look like abench session JSONL? (zstd files
/// are recognised by their magic bytes before this is asked.) AIPerf's
/// `dag_jsonl` conversations also have `session_id` and `turns`; their
/// turns carry `messages`, abench's `input_delta`.
pub fn looks_like(text_prefix: &str) -> bool {
    let keys = TopKeys::of(text_prefix);
    keys.has("session_id")
        && keys.has_any(&["turns", "system_prompt", "source"])
        && !keys.has_any(&["request", "arbor"])
        && !first_row(text_prefix).is_some_and(|row| {
            !has_key(row, "input_delta")
                && ["messages", "spawns", "forks"]
                    .iter()
                    .any(|k| has_key(row, k))
        })
}

/// Reads one abench file (plain JSONL, or zstd-compressed JSONL recognised
/// by its magic bytes).
pub fn load(input: impl Into<Source>) -> Result<Loaded, InputError> {
    let mut lines = Lines::open(input.into(), SESSION)?;
    let file = lines.file().to_string();
    let mut counts = Counts::default();
    let mut loaded = Loaded::default();
    let mut ids = BTreeSet::new();
    let mut duplicate_ids = Vec::new();
    while let Some(raw) = lines.next::<RawSession>()? {
        let line = lines.line();
        let tree = into_tree(raw, &file, line, &mut counts)?;
        if !ids.insert(tree.id.clone()) {
            duplicate_ids.push(Problem {
                place: format!("{file}:line {line}"),
                message: "session_id repeats an earlier line's".to_string(),
            });
        }
        loaded.trees.push(tree);
    }
    if loaded.trees.is_empty() {
        return Err(lines.empty("one abench session (a JSON object) per line"));
    }
    loaded.conventions = conventions(lines.compressed());
    loaded.problems = counts.problems(&file);
    loaded.problems.extend(duplicate_ids);
    Ok(loaded)
}

fn conventions(compressed: Option<Codec>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(codec) = compressed {
        out.push(format!("{}-compressed JSONL", codec.name()));
    }
    out.push(
        "turn k starts at turn k-1's start + pre_gap_ms of turn k (turn 0 at 0, tree arrival 0)"
            .to_string(),
    );
    out.push(
        "text deltas: turn 0 = system_prompt + input_delta; turn k > 0 extends the previous \
         prompt with its assistant_text and input_delta; tool messages kept as role tool"
            .to_string(),
    );
    out
}

/// What one file needed adjusting or estimating, counted for reports.
#[derive(Default)]
struct Counts {
    turns: usize,
    first_gap_ignored: Tally,
    missing_gap: Tally,
    estimated: Tally,
}

impl Counts {
    fn problems(&self, file: &str) -> Vec<Problem> {
        let mut out = vec![Problem {
            place: file.to_string(),
            message: format!(
                "durations unknown for all {} turns (abench records no service time): \
                 pre_gap_ms includes the recorder's generation time and is replayed as the \
                 start-to-start gap",
                self.turns
            ),
        }];
        self.first_gap_ignored.report(&mut out, file, |n| {
            format!(
                "{n} sessions have a nonzero pre_gap_ms on turn 0: ignored (turn 0 starts at \
                 the tree's arrival)"
            )
        });
        self.missing_gap.report(&mut out, file, |n| {
            format!("{n} turns after the first have no pre_gap_ms: treated as 0")
        });
        self.estimated.report(&mut out, file, |n| {
            format!(
                "{n} turns lack input_tokens or output_tokens: estimated from text length (1 \
                 token per 4 bytes)"
            )
        });
        out
    }
}

fn into_tree(
    raw: RawSession,
    file: &str,
    line: usize,
    counts: &mut Counts,
) -> Result<Tree, InputError> {
    let at = |path: String, message: String| {
        InputError::at(file, format!("line {line}, {path}"), message)
    };
    let system = raw.system_prompt.unwrap_or_default();
    let mut prompt_bytes = system.len();
    let mut previous_answer_bytes = 0usize;
    let mut start: Nanos = 0;
    let mut turns = Vec::with_capacity(raw.turns.len());
    let models: Vec<String> = raw
        .source
        .and_then(|s| s.model)
        .filter(|m| !m.is_empty())
        .into_iter()
        .collect();
    for (k, turn) in raw.turns.into_iter().enumerate() {
        if let Some(Count(index)) = turn.index {
            if index as usize != k {
                return Err(at(
                    format!("$.turns[{k}].index"),
                    format!("expected turns in order, turn {k} to have index {k}, got {index}"),
                ));
            }
        }
        match (k, turn.pre_gap_ms) {
            (0, Some(Millis(gap))) if gap != 0 => counts.first_gap_ignored.add(1),
            (0, _) => {}
            (_, None) => counts.missing_gap.add(1),
            (_, Some(Millis(gap))) => {
                start = start
                    .checked_add(gap)
                    .filter(|s| *s <= MAX_NANOS)
                    .ok_or_else(|| {
                        at(
                            format!("$.turns[{k}].pre_gap_ms"),
                            format!(
                                "turn {k} would start more than {} s after the session's \
                                 start: expected a plausible gap",
                                show_number(MAX_SECONDS)
                            ),
                        )
                    })?;
            }
        }
        let mut delta: Vec<Message> = Vec::new();
        for m in turn.input_delta.unwrap_or_default() {
            m.into_messages(&mut delta);
        }
        let input_kind = input_kind_of_delta(&delta);
        prompt_bytes = prompt_bytes
            .saturating_add(previous_answer_bytes)
            .saturating_add(delta.iter().map(|m| m.content.len()).sum::<usize>());
        let answer = turn.assistant_text;
        let answer_bytes = answer.as_ref().map_or(0, String::len);
        previous_answer_bytes = answer_bytes;
        let (isl, osl, estimated) = match (turn.input_tokens, turn.output_tokens) {
            (Some(Count(i)), Some(Count(o))) => (i, o, false),
            (i, o) => {
                counts.estimated.add(1);
                (
                    i.map_or_else(|| tokens_for_bytes(prompt_bytes).max(1), |c| c.0),
                    o.map_or_else(|| tokens_for_bytes(answer_bytes).max(1), |c| c.0),
                    true,
                )
            }
        };
        let mut messages = Vec::with_capacity(delta.len() + 1);
        if k == 0 && !system.is_empty() {
            messages.push(Message::text(Role::System, system.clone()));
        }
        messages.extend(delta);
        turns.push(Turn {
            start,
            duration: None,
            isl,
            osl,
            ttft: None,
            model: (!models.is_empty()).then_some(0),
            input_kind,
            hash_ids: Default::default(),
            text: Some(Box::new(TurnText {
                extends_previous: k > 0,
                messages,
                response: answer,
                ..Default::default()
            })),
            tokens_estimated: estimated,
        });
    }
    counts.turns += turns.len();
    Ok(Tree {
        id: raw.session_id.clone(),
        source: format!("{file}:line {line}"),
        arrival: 0,
        agents: vec![Agent {
            id: raw.session_id,
            parent: None,
            kind: AgentKind::Root,
            recorded_end: None,
            turns,
        }],
        explicit_edges: None,
        models,
        ..Tree::default()
    })
}

/// ToolResult if the delta holds a tool message, UserText if it holds only
/// user messages, else Unknown.
fn input_kind_of_delta(delta: &[Message]) -> InputKind {
    if delta.iter().any(|m| m.role == Role::Tool) {
        InputKind::ToolResult
    } else if !delta.is_empty() && delta.iter().all(|m| m.role == Role::User) {
        InputKind::UserText
    } else {
        InputKind::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{assert_contains, scratch_file, testdata};
    use super::*;
    use std::path::Path;
    use std::path::PathBuf;

    fn sample(name: &str) -> PathBuf {
        testdata("abench").join(name)
    }

    fn error_of(path: &Path) -> String {
        load(path).expect_err("input must be rejected").to_string()
    }

    fn prefix(path: &Path) -> String {
        let bytes = std::fs::read(path).expect("read");
        let end = bytes.len().min(super::super::SNIFF_BYTES as usize);
        String::from_utf8_lossy(bytes.get(..end).expect("prefix")).into_owned()
    }

    fn msg(role: Role, content: &str) -> Message {
        Message::text(role, content)
    }

    #[test]
    fn sample_sessions_and_turns() {
        let loaded = load(&sample("sample.jsonl")).expect("sample loads");
        let ids: Vec<&str> = loaded.trees.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "swe-astropy-12907",
                "swe-requests-2317",
                "lmc-taubench-0042"
            ]
        );
        let counts: Vec<usize> = loaded.trees.iter().map(Tree::turn_count).collect();
        assert_eq!(counts, [5, 4, 3]);
        for tree in &loaded.trees {
            assert_eq!(tree.arrival, 0);
            assert_eq!(tree.agents.len(), 1);
            assert_eq!(tree.agents[0].kind, AgentKind::Root);
            assert_eq!(tree.agents[0].id, tree.id);
            assert!(
                tree.source.contains("sample.jsonl:line "),
                "{}",
                tree.source
            );
            for turn in &tree.agents[0].turns {
                assert_eq!(turn.duration, None);
                assert!(!turn.tokens_estimated);
            }
        }
        assert_eq!(loaded.trees[0].models, ["anthropic/claude-sonnet-4-6"]);
        assert_eq!(loaded.trees[0].agents[0].turns[0].model, Some(0));
        // The third session has no source: no models.
        assert!(loaded.trees[2].models.is_empty());
        assert_eq!(loaded.trees[2].agents[0].turns[0].model, None);
        assert!(loaded
            .problems
            .iter()
            .any(|p| p.message.contains("durations unknown for all 12 turns")));
        assert!(loaded.problems.iter().any(|p| p
            .message
            .contains("1 sessions have a nonzero pre_gap_ms on turn 0")));
        assert!(loaded
            .conventions
            .iter()
            .any(|c| c.contains("pre_gap_ms of turn k")));
    }

    #[test]
    fn starts_are_cumulative_pre_gaps() {
        let loaded = load(&sample("sample.jsonl")).expect("sample loads");
        let starts = |i: usize| -> Vec<Nanos> {
            loaded.trees[i].agents[0]
                .turns
                .iter()
                .map(|t| t.start)
                .collect()
        };
        // pre_gap_ms: [0, 2841.5, 1920.25, 6402, 3310.125]
        assert_eq!(
            starts(0),
            [
                0,
                2_841_500_000,
                4_761_750_000,
                11_163_750_000,
                14_473_875_000
            ]
        );
        // Turn 0 has pre_gap_ms 850 (ignored): [850, 3120, 1402.75, 2250.5]
        assert_eq!(starts(1), [0, 3_120_000_000, 4_522_750_000, 6_773_250_000]);
        // [0, 5400, 4100]
        assert_eq!(starts(2), [0, 5_400_000_000, 9_500_000_000]);
        let tokens: Vec<(u32, u32)> = loaded.trees[0].agents[0]
            .turns
            .iter()
            .map(|t| (t.isl, t.osl))
            .collect();
        assert_eq!(
            tokens,
            [
                (1984, 212),
                (2431, 158),
                (3376, 241),
                (3905, 187),
                (4392, 96)
            ]
        );
    }

    #[test]
    fn text_deltas_and_input_kinds() {
        let loaded = load(&sample("sample.jsonl")).expect("sample loads");
        let turns = &loaded.trees[0].agents[0].turns;
        let t0 = turns[0].text.as_deref().expect("text");
        assert!(!t0.extends_previous);
        assert_eq!(t0.messages.len(), 2);
        assert_eq!(t0.messages[0].role, Role::System);
        assert!(t0.messages[0]
            .content
            .starts_with("You are a software engineering agent"));
        assert_eq!(t0.messages[1].role, Role::User);
        assert!(t0
            .response
            .as_deref()
            .expect("response")
            .starts_with("I'll start by locating"));
        assert_eq!(turns[0].input_kind, InputKind::UserText);
        let t1 = turns[1].text.as_deref().expect("text");
        assert!(t1.extends_previous);
        assert_eq!(t1.messages.len(), 1);
        assert_eq!(t1.messages[0].role, Role::Tool);
        assert!(t1.messages[0]
            .content
            .contains("astropy/modeling/separable.py"));
        assert_eq!(turns[1].input_kind, InputKind::ToolResult);
        for turn in turns.iter().skip(1) {
            assert!(turn.text.as_deref().expect("text").extends_previous);
        }
        // The third session: an empty system prompt gives no system message,
        // and a user-text turn later on.
        let turns = &loaded.trees[2].agents[0].turns;
        let t0 = turns[0].text.as_deref().expect("text");
        assert_eq!(t0.messages.len(), 1);
        assert_eq!(t0.messages[0].role, Role::User);
        assert_eq!(turns[2].input_kind, InputKind::UserText);
        assert_eq!(
            turns[2].text.as_deref().expect("text").messages,
            [msg(
                Role::User,
                "Yes, please cancel order #W2378156. Reason: ordered by mistake."
            )]
        );
    }

    #[test]
    fn zstd_sample_equals_plain() {
        let plain = load(&sample("sample.jsonl")).expect("plain loads");
        let packed = load(&sample("sample.jsonl.zst")).expect("zstd loads");
        assert_eq!(plain.trees.len(), 3);
        for (a, b) in plain.trees.iter().zip(&packed.trees) {
            assert_eq!(a.agents, b.agents);
            assert_eq!(a.models, b.models);
            assert_eq!(a.id, b.id);
        }
        assert_eq!(plain.trees.len(), packed.trees.len());
        assert!(packed.conventions.iter().any(|c| c.contains("zstd")));
        assert!(!plain.conventions.iter().any(|c| c.contains("zstd")));
        assert!(
            super::super::detect(&sample("sample.jsonl.zst")).expect("detects")
                == super::super::Format::Abench
        );
    }

    #[test]
    fn zstd_multi_frame_and_skippable_frames() {
        let one = std::fs::read(sample("sample.jsonl.zst")).expect("read");
        // Skippable frame (magic 0x184D2A50, 3 bytes), then the same frame twice.
        let mut bytes = one.clone();
        bytes.extend_from_slice(&[0x50, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 1, 2, 3]);
        bytes.extend_from_slice(&one);
        let path = scratch_file("frames", &bytes);
        let loaded = load(&path).expect("two frames load");
        std::fs::remove_file(&path).ok();
        assert_eq!(loaded.trees.len(), 6);
        assert_eq!(loaded.trees[0].agents, loaded.trees[3].agents);
        assert!(loaded
            .problems
            .iter()
            .any(|p| p.message.contains("repeats an earlier line's")));
    }

    #[test]
    fn missing_tokens_are_estimated() {
        let line = r#"{"session_id":"s","system_prompt":"abcd","turns":[
            {"index":0,"input_delta":[{"role":"user","content":"12345678"}],"assistant_text":"xyz","output_tokens":7},
            {"index":1,"input_delta":[{"role":"tool","content":"1234"}],"assistant_text":"","input_tokens":50,"output_tokens":2,"pre_gap_ms":1.5}]}"#
            .replace('\n', " ");
        let path = scratch_file("estimate", line.as_bytes());
        let loaded = load(&path).expect("loads");
        std::fs::remove_file(&path).ok();
        let turns = &loaded.trees[0].agents[0].turns;
        // 4 + 8 bytes of prompt = 3 tokens; output_tokens kept.
        assert_eq!((turns[0].isl, turns[0].osl), (3, 7));
        assert!(turns[0].tokens_estimated);
        assert_eq!((turns[1].isl, turns[1].osl), (50, 2));
        assert!(!turns[1].tokens_estimated);
        assert_eq!(turns[1].start, 1_500_000);
        assert!(loaded
            .problems
            .iter()
            .any(|p| p.message.contains("1 turns lack input_tokens")));
    }

    #[test]
    fn looks_like_accepts_abench_only() {
        assert!(looks_like(&prefix(&sample("sample.jsonl"))));
        let others = [
            r#"{"id":"t","requests":[{"t":0,"in":1,"out":1}]}"#,
            r#"{"arbor": 1, "id": "t1", "agents": []}"#,
            r#"{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}"#,
            r#"{"timestamp": 1760587801647311, "input": "hi", "output": "", "session_id": "22ff"}"#,
            r#"{"start": 1.5, "session_id": "s", "request": {"messages": []}}"#,
            r#"{"session_id": "s", "request": {"turns": []}}"#,
            "",
            "\u{0}\u{1}garbage",
        ];
        for text in others {
            assert!(!looks_like(text), "{text}");
        }
        // A long system prompt cut by the sniff window still counts.
        assert!(looks_like(
            r#"{"session_id": "s", "system_prompt": "You are"#
        ));
        // Keys inside strings do not count.
        assert!(!looks_like(r#"{"note": "\"session_id\": \"turns\":"}"#));
    }

    // ----- errors -----

    #[test]
    fn error_shapes_and_values() {
        let cases: [(&str, &[&str]); 7] = [
            ("[1,2]", &["line 1", "expected an abench session"]),
            (
                r#"{"session_id":"s","turns":{}}"#,
                &["line 1, $.turns", "invalid type: map"],
            ),
            (
                r#"{"session_id":"s","turns":[{"output_tokens":1.5}]}"#,
                &["$.turns[0].output_tokens", "got 1.5"],
            ),
            (
                r#"{"session_id":"s","turns":[{"input_tokens":-3}]}"#,
                &["$.turns[0].input_tokens", "got -3"],
            ),
            (
                r#"{"session_id":"s","turns":[{"input_tokens":5000000000}]}"#,
                &["$.turns[0].input_tokens", "of at most 4294967295"],
            ),
            (
                r#"{"session_id":"s","turns":[{"pre_gap_ms":1e400}]}"#,
                &["$.turns[0].pre_gap_ms", "number out of range"],
            ),
            (
                r#"{"session_id":"s","turns":[]} {"x":1}"#,
                &[
                    "line 1, column",
                    "trailing characters: expected one JSON object per line",
                ],
            ),
        ];
        for (text, parts) in cases {
            let path = scratch_file("shape", text.as_bytes());
            let msg = error_of(&path);
            std::fs::remove_file(&path).ok();
            assert_contains(&msg, parts);
        }
    }
}
