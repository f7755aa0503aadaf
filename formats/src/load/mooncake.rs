//! Mooncake request traces: the FAST'25 files (`timestamp`, `input_length`,
//! `output_length`, `hash_ids`) and AIPerf's extension (`session_id`,
//! `delay`, `text_input`). See `docs/formats/mooncake.md`.
//!
//! Owns reading those rows into [`Tree`]s, and the row-level pieces the
//! agentic Mooncake reader shares (the row sniff, the prompt and hash-id
//! checks, the tree settings). Rows are read line by line into typed
//! structs (`json.rs`); the file never sits in memory whole.
//!
//! Mapping:
//! - a row without `session_id` is a tree of one agent and one turn, arriving
//!   at its `timestamp`;
//! - rows sharing a `session_id` (in file order) are one tree: turn 0 at the
//!   session's first `timestamp`, later turns at their own `timestamp`, else
//!   at the previous turn's start plus `delay`.
//!
//! Durations are unknown (`None`), so derived edges are start-to-start.

use std::collections::HashMap;

use arbor_engine::error::InputError;
use arbor_engine::model::{
    Agent, AgentKind, BlockIds, HashScope, InputKind, Message, Role, Tree, Turn, TurnText,
};
use arbor_engine::time::{Nanos, MAX_SECONDS, NANOS_PER_MS};

use super::fields::{estimate_tokens, show_number, Count, HashIds, Id, Millis, MAX_NANOS};
use super::json::Lines;
use super::sniff::{first_row, has_key};
use super::source::Source;
use super::tally::Tally;
use crate::input::{Loaded, Problem};

/// Tokens per hash block: Mooncake's, not stated in the files.
pub const BLOCK_SIZE: u32 = 512;

// ---------------------------------------------------------------------------
// Sniffing

/// Does this line look like a Mooncake row (plain or agentic)? Rejects the
/// other formats' marks: Weka `requests`, native `arbor`, abench `turns`;
/// LMCache rows have no `input_length`.
pub(super) fn is_mooncake_row(row: &str) -> bool {
    if ["requests", "arbor", "turns"]
        .iter()
        .any(|k| has_key(row, k))
    {
        return false;
    }
    let input = has_key(row, "input_length") || has_key(row, "text_input");
    let other = [
        "timestamp",
        "output_length",
        "hash_ids",
        "session_id",
        "delay",
    ]
    .iter()
    .any(|k| has_key(row, k));
    input && other
}

/// Does this start of a file look like a Mooncake trace (not the agentic
/// kind, whose rows have `request_id` / `wait_for`)?
pub fn looks_like(text_prefix: &str) -> bool {
    first_row(text_prefix).is_some_and(|row| {
        is_mooncake_row(row) && !has_key(row, "request_id") && !has_key(row, "wait_for")
    })
}

// ---------------------------------------------------------------------------
// Shared row handling

/// The prompt of a row: its token count, hash ids and recorded text, with
/// the checks every Mooncake reader makes.
pub(super) struct Prompt {
    pub(super) isl: u32,
    pub(super) hash_ids: BlockIds,
    pub(super) text: Option<Box<TurnText>>,
    pub(super) estimated: bool,
}

/// Tallies of the prompt checks, reported as conventions and problems.
pub(super) struct PromptChecks {
    pub(super) rows_with_ids: usize,
    pub(super) ceil_mismatch: Tally,
    pub(super) estimated: Tally,
}

impl PromptChecks {
    pub(super) fn new() -> Self {
        PromptChecks {
            rows_with_ids: 0,
            ceil_mismatch: Tally::default(),
            estimated: Tally::default(),
        }
    }

    /// Builds the prompt of the current row. `input_length` is required
    /// unless `text_input` is given (then it is estimated).
    pub(super) fn prompt(
        &mut self,
        rows: &Lines,
        problems: &mut Vec<Problem>,
        input_length: Option<Count>,
        hash_ids: Option<HashIds>,
        text_input: Option<String>,
    ) -> Result<Prompt, InputError> {
        let (isl, estimated) = match (input_length, &text_input) {
            (Some(Count(n)), _) => (n, false),
            (None, Some(text)) => {
                let n = estimate_tokens(text);
                self.estimated.note(
                    problems,
                    rows.problem_place("$.input_length"),
                    format!("no input_length: estimated {n} tokens from text_input"),
                );
                (n, true)
            }
            (None, None) => {
                return Err(rows.error(
                    "",
                    format!(
                        "missing field `input_length` (or `text_input`): expected it in {}",
                        rows.what()
                    ),
                ))
            }
        };
        let ids = match hash_ids {
            Some(HashIds { ids, .. }) => {
                self.rows_with_ids += 1;
                let expected = isl.div_ceil(BLOCK_SIZE) as usize;
                if !estimated && ids.len() != expected {
                    self.ceil_mismatch.note(
                        problems,
                        rows.problem_place("$.hash_ids"),
                        format!(
                            "{} hash ids for input_length {isl}: expected ceil({isl}/{BLOCK_SIZE}) = {expected}",
                            ids.len()
                        ),
                    );
                }
                ids
            }
            None => BlockIds::default(),
        };
        let text = text_input.map(|content| {
            Box::new(TurnText {
                extends_previous: false,
                messages: vec![Message::text(Role::User, content)],
                response: None,
                ..Default::default()
            })
        });
        Ok(Prompt {
            isl,
            hash_ids: ids,
            text,
            estimated,
        })
    }

    /// Conventions in words, and the summary problems.
    pub(super) fn report(&self, loaded: &mut Loaded, file: &str) {
        loaded.conventions.push(format!(
            "block size {BLOCK_SIZE} tokens (Mooncake's; not stated in the file); hash ids global to the file"
        ));
        let words = if self.rows_with_ids == 0 {
            "no hash_ids".to_string()
        } else if self.ceil_mismatch.count() == 0 {
            format!(
                "len(hash_ids) == ceil(input_length/{BLOCK_SIZE}) on all {} rows with hash_ids",
                self.rows_with_ids
            )
        } else {
            format!(
                "len(hash_ids) != ceil(input_length/{BLOCK_SIZE}) on {} of {} rows with hash_ids",
                self.ceil_mismatch.count(),
                self.rows_with_ids
            )
        };
        loaded.conventions.push(words);
        loaded
            .conventions
            .push("durations unknown (not recorded): treated as 0".to_string());
        self.ceil_mismatch.report_unlisted(
            &mut loaded.problems,
            file,
            "whose hash_ids count is not ceil(input_length/512)",
        );
        self.estimated.report_unlisted(
            &mut loaded.problems,
            file,
            "whose input_length was estimated from text_input",
        );
    }
}

/// A tree with the settings every Mooncake tree shares.
pub(super) fn new_tree(id: String, source: String, arrival: Nanos, agents: Vec<Agent>) -> Tree {
    Tree {
        id,
        source,
        arrival,
        agents,
        explicit_edges: None,
        models: vec![],
        block_size: BLOCK_SIZE,
        hash_scope: HashScope::Global,
        tool_tokens: 0,
        system_tokens: 0,
        provenance: Default::default(),
        shapes: Vec::new(),
    }
}

// ---------------------------------------------------------------------------
// The plain reader

/// A tree of one root agent (named as the tree) holding its first turn.
fn first_turn(id: String, source: String, arrival: Nanos, turn: Turn) -> Tree {
    let agent = Agent {
        id: id.clone(),
        parent: None,
        kind: AgentKind::Root,
        recorded_end: None,
        turns: vec![turn],
    };
    new_tree(id, source, arrival, vec![agent])
}

/// What a Mooncake row is, in messages.
const ROW: &str =
    "a Mooncake row (a JSON object with `timestamp`, `input_length`, `output_length`, `hash_ids`)";

#[derive(serde::Deserialize)]
#[serde(
    expecting = "a Mooncake row (a JSON object with `timestamp`, `input_length`, `output_length`, `hash_ids`)"
)]
struct Row {
    timestamp: Option<Millis>,
    input_length: Option<Count>,
    output_length: Count,
    hash_ids: Option<HashIds>,
    session_id: Option<Id>,
    delay: Option<Millis>,
    text_input: Option<String>,
}

/// A session being built: its tree's index and its last turn.
struct Session {
    tree: usize,
    /// Absolute start of the last turn (ns since trace start) and its line.
    last_start: Nanos,
    last_line: usize,
}

/// Reads one Mooncake JSONL file.
pub fn load(input: impl Into<Source>) -> Result<Loaded, InputError> {
    let mut rows = Lines::open(input.into(), ROW)?;
    let file = rows.file().to_string();
    let mut loaded = Loaded::default();
    let mut checks = PromptChecks::new();
    let mut sessions: HashMap<String, Session> = HashMap::new();
    let mut sessionless = 0usize;
    let mut no_delay = Tally::default();
    let mut row_count = 0usize;

    while let Some(row) = rows.next::<Row>()? {
        row_count += 1;
        let prompt = checks.prompt(
            &rows,
            &mut loaded.problems,
            row.input_length,
            row.hash_ids,
            row.text_input,
        )?;
        let line = rows.line();
        let mut turn = Turn {
            start: 0,
            duration: None,
            isl: prompt.isl,
            osl: row.output_length.0,
            ttft: None,
            model: None,
            input_kind: InputKind::Unknown,
            hash_ids: prompt.hash_ids,
            text: prompt.text,
            tokens_estimated: prompt.estimated,
        };
        let Some(Id(session_id)) = row.session_id else {
            let Some(Millis(arrival)) = row.timestamp else {
                return Err(rows.error(
                    "",
                    "missing field `timestamp`: expected it in a row without session_id (its arrival in milliseconds)",
                ));
            };
            sessionless += 1;
            let source = format!("{file}:line {line}");
            loaded
                .trees
                .push(first_turn(format!("row{line}"), source, arrival, turn));
            continue;
        };
        match sessions.get_mut(&session_id) {
            None => {
                let Some(Millis(arrival)) = row.timestamp else {
                    return Err(rows.error(
                        "",
                        format!(
                            "missing field `timestamp`: expected it in the first row of session \"{session_id}\" (its arrival in milliseconds)"
                        ),
                    ));
                };
                sessions.insert(
                    session_id.clone(),
                    Session {
                        tree: loaded.trees.len(),
                        last_start: arrival,
                        last_line: line,
                    },
                );
                let source = format!("{file}:line {line}");
                loaded
                    .trees
                    .push(first_turn(session_id, source, arrival, turn));
            }
            Some(session) => {
                let start = match (row.timestamp, row.delay) {
                    (Some(Millis(t)), _) => {
                        if t < session.last_start {
                            return Err(rows.error(
                                "$.timestamp",
                                format!(
                                    "expected timestamps that do not decrease within session \"{session_id}\": {} ms is before its previous turn at {} ms (line {})",
                                    show_number(t as f64 / NANOS_PER_MS as f64),
                                    show_number(session.last_start as f64 / NANOS_PER_MS as f64),
                                    session.last_line
                                ),
                            ));
                        }
                        t
                    }
                    (None, Some(Millis(d))) => {
                        let start = session.last_start.saturating_add(d);
                        if start > MAX_NANOS {
                            return Err(rows.error(
                                "$.delay",
                                format!(
                                    "the turn would start after the largest time a trace may state ({MAX_SECONDS:e} s): expected a smaller delay"
                                ),
                            ));
                        }
                        start
                    }
                    (None, None) => {
                        no_delay.note(
                            &mut loaded.problems,
                            rows.problem_place(""),
                            format!(
                                "row of session \"{session_id}\" has neither timestamp nor delay: sent with its previous turn (delay 0)"
                            ),
                        );
                        session.last_start
                    }
                };
                session.last_start = start;
                session.last_line = line;
                let tree = &mut loaded.trees[session.tree];
                turn.start = start - tree.arrival;
                tree.agents[0].turns.push(turn);
            }
        }
    }
    if row_count == 0 {
        return Err(rows.empty(
            "Mooncake rows (one JSON object per line with `timestamp`, `input_length`, `output_length`, `hash_ids`)",
        ));
    }
    checks.report(&mut loaded, &file);
    let words = if sessions.is_empty() {
        "no sessions: each row is its own tree of one turn".to_string()
    } else {
        format!(
            "sessions: {} (session_id; later turns at their timestamp, else previous start + delay ms); {sessionless} rows without session_id",
            sessions.len()
        )
    };
    loaded.conventions.push(words);
    no_delay.report_unlisted(
        &mut loaded.problems,
        &file,
        "in a session with neither timestamp nor delay",
    );
    Ok(loaded)
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::tally::PROBLEM_CAP;
    use super::*;
    use arbor_engine::dag::compile;
    use arbor_engine::derive::DeriveOptions;
    use arbor_engine::model::Workload;
    use arbor_engine::policy::Policy;
    use arbor_engine::scheduler::{Command, Outcome, Scheduler};
    use arbor_engine::time::NANOS_PER_MS;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    use std::path::Path;
    use std::path::PathBuf;

    const CONVERSATION: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/mooncake-fast25/conversation_trace.head400.jsonl"
    );
    const SYNTHETIC: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/mooncake-fast25/synthetic_trace.head300.jsonl"
    );
    /// Writes `text` to a fresh file under the temp dir.
    pub(in crate::load) fn temp_file(tag: &str, text: &str) -> PathBuf {
        use std::sync::atomic::{AtomicU32, Ordering};
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("arbor-{tag}-{}-{n}.jsonl", std::process::id()));
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Replays trees on a virtual clock with the recorded service model and
    /// no transforms; returns, per tree, each flat turn's send time minus
    /// the tree's arrival.
    pub(in crate::load) fn replay(trees: Vec<Tree>) -> Vec<Vec<Nanos>> {
        let workload = Workload { trees };
        let policy = Policy::default();
        let compiled = compile(&workload, &policy, &DeriveOptions::default()).unwrap();
        let mut s = Scheduler::new(compiled, policy).unwrap();
        let mut completions: BinaryHeap<Reverse<(Nanos, u64)>> = BinaryHeap::new();
        let mut now = 0;
        let mut steps = 0;
        loop {
            steps += 1;
            assert!(steps < 1_000_000, "the replay does not end");
            while let Some(command) = s.poll_command() {
                let Command::Dispatch(id) = command else {
                    panic!("unexpected {command:?}");
                };
                s.handle_sent(now, id).unwrap();
                let (tree, _, turn) = s.request_tree(id).unwrap();
                completions.push(Reverse((now + tree.duration[turn as usize], id)));
            }
            let completion = completions.peek().map(|Reverse((t, _))| *t);
            // A completion due with a timer is reported first.
            let timeout = s.poll_timeout();
            if let Some(c) = completion.filter(|&c| timeout.is_none_or(|t| c <= t)) {
                let Reverse((_, id)) = completions.pop().unwrap();
                now = c;
                s.handle_completion(now, id, Outcome::Ok).unwrap();
            } else if let Some(t) = timeout {
                now = t;
                s.handle_timeout(now).unwrap();
            } else {
                break;
            }
        }
        assert!(s.is_finished());
        let mut sent: Vec<Vec<Nanos>> = s
            .trees()
            .iter()
            .map(|t| vec![Nanos::MAX; t.turn_count() as usize])
            .collect();
        for play in s.plays() {
            let tree = &s.trees()[play.tree as usize];
            for turn in 0..tree.turn_count() {
                let slot = s.slot(play.request(turn).unwrap()).unwrap();
                sent[play.tree as usize][turn as usize] = slot.sent - tree.arrival;
            }
        }
        sent
    }

    /// Recorded starts of a tree, by flat turn id.
    pub(in crate::load) fn recorded_starts(tree: &Tree) -> Vec<Nanos> {
        tree.agents
            .iter()
            .flat_map(|a| a.turns.iter().map(|t| t.start))
            .collect()
    }

    #[test]
    fn conversation_fixture_is_one_tree_per_row() {
        let loaded = load(Path::new(CONVERSATION)).unwrap();
        assert_eq!(loaded.trees.len(), 400);
        assert_eq!(loaded.trees[0].arrival, 0);
        let text = std::fs::read_to_string(CONVERSATION).unwrap();
        for (tree, line) in loaded.trees.iter().zip(text.lines()) {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            let ms = row["timestamp"].as_u64().unwrap();
            assert_eq!(tree.arrival, ms * NANOS_PER_MS);
            assert_eq!(tree.agents.len(), 1);
            let turn = &tree.agents[0].turns[..];
            assert_eq!(turn.len(), 1);
            assert_eq!(turn[0].start, 0);
            assert_eq!(turn[0].duration, None);
            assert_eq!(turn[0].isl as u64, row["input_length"].as_u64().unwrap());
            assert_eq!(turn[0].osl as u64, row["output_length"].as_u64().unwrap());
            assert_eq!(
                turn[0].hash_ids.len(),
                row["hash_ids"].as_array().unwrap().len()
            );
            assert_eq!(turn[0].input_kind, InputKind::Unknown);
            assert_eq!(tree.block_size, 512);
            assert_eq!(tree.hash_scope, HashScope::Global);
            assert!(tree.explicit_edges.is_none());
        }
        assert_eq!(loaded.trees[1].id, "row2");
        assert!(loaded.trees.last().unwrap().arrival > 0);
        assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
        assert!(
            loaded
                .conventions
                .iter()
                .any(|c| c.contains("on all 400 rows")),
            "{:?}",
            loaded.conventions
        );
        assert!(loaded.conventions.iter().any(|c| c.contains("no sessions")));
    }

    #[test]
    fn synthetic_fixture_is_one_tree_per_row() {
        let loaded = load(Path::new(SYNTHETIC)).unwrap();
        assert_eq!(loaded.trees.len(), 300);
        assert!(loaded.trees.iter().all(|t| t.turn_count() == 1
            && t.block_size == 512
            && t.hash_scope == HashScope::Global));
        assert_eq!(loaded.trees[0].arrival, 0);
        assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    }

    #[test]
    fn fixtures_replay_at_their_recorded_arrivals() {
        let loaded = load(Path::new(SYNTHETIC)).unwrap();
        let sent = replay(loaded.trees);
        assert!(sent.iter().all(|t| t == &[0]));
    }

    const SESSIONS: &str = r#"{"session_id": "a", "timestamp": 1000, "input_length": 600, "output_length": 5, "hash_ids": [1, 2], "text_input": "hello"}
{"timestamp": 1500, "input_length": 10, "output_length": 3, "hash_ids": [9]}
{"session_id": "a", "delay": 2500, "input_length": 1100, "output_length": 5, "hash_ids": [1, 2, 3]}
{"session_id": 7, "timestamp": 1200.5, "input_length": 512, "output_length": 1, "hash_ids": [4]}

{"session_id": "a", "timestamp": 6000, "delay": 99, "input_length": 1600, "output_length": 5, "hash_ids": [1, 2, 3, 5]}
{"session_id": "7", "delay": 0.25, "input_length": 513, "output_length": 1, "hash_ids": [4]}
"#;

    #[test]
    fn aiperf_sessions_become_multi_turn_trees() {
        let path = temp_file("mooncake-sessions", SESSIONS);
        let loaded = load(&path).unwrap();
        std::fs::remove_file(&path).ok();
        let ids: Vec<&str> = loaded.trees.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["a", "row2", "7"]);
        let a = &loaded.trees[0];
        assert_eq!(a.arrival, 1000 * NANOS_PER_MS);
        assert_eq!(a.agents.len(), 1);
        assert_eq!(a.agents[0].kind, AgentKind::Root);
        // Turn 0 at the first timestamp, turn 1 at turn 0 + delay, turn 2 at
        // its own timestamp (its delay is ignored).
        assert_eq!(
            recorded_starts(a),
            [0, 2500 * NANOS_PER_MS, 5000 * NANOS_PER_MS]
        );
        assert!(a.agents[0].turns.iter().all(|t| t.duration.is_none()));
        assert_eq!(a.agents[0].turns[2].isl, 1600);
        assert_eq!(a.agents[0].turns[2].hash_ids.to_vec(), vec![1, 2, 3, 5]);
        let text = a.agents[0].turns[0].text.as_deref().unwrap();
        assert_eq!(
            text,
            &TurnText {
                extends_previous: false,
                messages: vec![Message::text(Role::User, "hello")],
                response: None,
                ..Default::default()
            }
        );
        assert!(a.agents[0].turns[1].text.is_none());
        assert_eq!(loaded.trees[1].arrival, 1500 * NANOS_PER_MS);
        let seven = &loaded.trees[2];
        assert_eq!(seven.arrival, 1_200_500_000);
        assert_eq!(recorded_starts(seven), [0, 250_000]);
        // 513 tokens need 2 blocks, the row has 1: reported, not fatal.
        assert_eq!(loaded.problems.len(), 1, "{:?}", loaded.problems);
        assert_eq!(
            loaded.problems[0].place,
            format!("{}:line 7, $.hash_ids", path.display())
        );
        assert!(loaded
            .conventions
            .iter()
            .any(|c| c.contains("sessions: 2") && c.contains("1 rows without session_id")));
        assert!(loaded
            .conventions
            .iter()
            .any(|c| c.contains("!= ceil(input_length/512) on 1 of 6")));

        // Identity: each turn is sent at its recorded start.
        let expected: Vec<Vec<Nanos>> = loaded.trees.iter().map(recorded_starts).collect();
        assert_eq!(replay(loaded.trees), expected);
    }

    #[test]
    fn rows_with_text_only_get_estimated_tokens() {
        let path = temp_file(
            "mooncake-text",
            "{\"timestamp\": 0, \"text_input\": \"What is the capital of France?\", \"output_length\": 20}\n",
        );
        let loaded = load(&path).unwrap();
        std::fs::remove_file(&path).ok();
        let turn = &loaded.trees[0].agents[0].turns[0];
        assert_eq!(turn.isl, 8);
        assert!(turn.tokens_estimated);
        assert!(turn.hash_ids.is_empty());
        assert_eq!(loaded.problems.len(), 1);
        assert!(loaded.conventions.iter().any(|c| c == "no hash_ids"));
    }

    #[test]
    fn many_mismatches_are_capped() {
        let text: String = (0..30)
            .map(|i| format!("{{\"timestamp\": {i}, \"input_length\": 100, \"output_length\": 1, \"hash_ids\": []}}\n"))
            .collect();
        let path = temp_file("mooncake-capped", &text);
        let loaded = load(&path).unwrap();
        std::fs::remove_file(&path).ok();
        assert_eq!(loaded.problems.len(), PROBLEM_CAP + 1);
        assert!(loaded.problems[PROBLEM_CAP]
            .message
            .starts_with("10 more rows whose hash_ids count"));
        // Rows without sessions may come in any order.
        assert_eq!(loaded.trees.len(), 30);
    }

    #[test]
    fn missing_file_is_an_input_error() {
        let err = load(Path::new("/nonexistent/arbor/trace.jsonl")).unwrap_err();
        assert!(err.to_string().contains("cannot read"), "{err}");
    }

    #[test]
    fn looks_like_accepts_mooncake_and_rejects_other_formats() {
        let conversation = std::fs::read_to_string(CONVERSATION).unwrap();
        let synthetic = std::fs::read_to_string(SYNTHETIC).unwrap();
        assert!(looks_like(&conversation[..4000]));
        assert!(looks_like(&synthetic));
        assert!(looks_like(&format!("\u{feff}\n{SESSIONS}")));
        assert!(looks_like(
            r#"{"text_input": "What is the capital of France?", "output_length": 20}"#
        ));
        // Cut in the middle of the first row.
        assert!(looks_like(&conversation[..60]));
        for other in OTHER_FORMATS {
            assert!(!looks_like(other), "{other}");
        }
        for fixture in [CONVERSATION, SYNTHETIC] {
            let detected = crate::load::detect(Path::new(fixture)).unwrap();
            assert_eq!(detected, crate::load::Format::Mooncake);
        }
        assert!(!looks_like(
            r#"{"request_id": "r1", "session_id": "s", "timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1]}"#
        ));
    }

    /// First lines of the formats neither Mooncake reader may claim.
    pub(in crate::load) const OTHER_FORMATS: [&str; 6] = [
        r#"{"id": "trace_1", "block_size": 64, "requests": [{"t": 0, "in": 5, "out": 1, "hash_ids": [1]}]}"#,
        r#"{"requests": [{"t": 0, "input_length": 5, "output_length": 1, "hash_ids": [1]}], "id": "w"}"#,
        r#"{"session_id": "s1", "timestamp": 1718000000000000, "input": [{"role": "user", "content": "hi"}], "output": "hello"}"#,
        r#"{"arbor":1,"id":"t","agents":[{"id":"root","kind":"root","turns":[{"start_ns":0,"isl":1,"osl":1}]}]}"#,
        r#"{"session_id": "x", "turns": [{"input_length": 5, "output_length": 1, "timestamp": 0}]}"#,
        "",
    ];
}
