//! `arbor record` end to end: a scripted agent (Rust, below) drives the
//! proxy in front of the in-process emulator; the capture must load as the
//! tree the agent made (a root with tool calls, two subagents spawned
//! while it waits on a tool result, a join) and replay at the recorded
//! times to the nanosecond. Then the proxy against hostile upstreams.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use arbor_engine::derive::{derive_edges, DeriveOptions};
use arbor_engine::model::{AgentKind, EdgeKind, Tree};
use arbor_formats::load::load_path;
use arbor_sim::emulator::{
    serve, serve_tls, EmulatorConfig, EmulatorHandle, EmulatorTls, TimingModel,
};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use crate::scripted::{Script, Scripted};
use crate::util::{arbor, jsonl, run_into, scratch, secs_to_ns, stderr, FAST};

/// How long any one step may take before the test fails.
const BOUND: Duration = Duration::from_secs(30);

/// The emulator on its own runtime, served until dropped.
struct Emulator {
    handle: EmulatorHandle,
    _runtime: tokio::runtime::Runtime,
}

impl Emulator {
    /// TTFT 100 ms: a turn takes long enough that subagents launched
    /// together all start before any of them waits on a tool.
    fn start() -> Emulator {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime for the emulator");
        let config = EmulatorConfig {
            timing: TimingModel {
                ttft: 100_000_000,
                itl: 1_000_000,
                prefill_mtok_s: None,
            },
            ..EmulatorConfig::default()
        };
        let handle = runtime
            .block_on(serve(config, "127.0.0.1:0".parse().expect("addr")))
            .expect("the emulator starts");
        Emulator {
            handle,
            _runtime: runtime,
        }
    }
}

/// `arbor record` running as a child process.
pub struct Recorder {
    child: Child,
    pub url: String,
}

impl Recorder {
    pub fn start(upstream: &str, capture: &Path, extra: &[&str]) -> Recorder {
        let mut child = Command::new(env!("CARGO_BIN_EXE_arbor"))
            .args([
                "record",
                "--upstream",
                upstream,
                "--listen",
                "127.0.0.1:0",
                "-o",
            ])
            .arg(capture)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("arbor record starts");
        let mut first = String::new();
        let out = child.stdout.take().expect("stdout");
        BufReader::new(out).read_line(&mut first).expect("a line");
        let url = first
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .map(|w| w.trim_end_matches(',').to_string())
            .unwrap_or_else(|| panic!("no address in {first:?}"));
        Recorder { child, url }
    }

    /// SIGTERM, then waits (bounded) for the exit; returns stderr.
    pub fn stop(mut self) -> String {
        kill(Pid::from_raw(self.child.id() as i32), Signal::SIGTERM).expect("signal");
        let deadline = Instant::now() + BOUND;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                let mut err = String::new();
                if let Some(mut e) = self.child.stderr.take() {
                    std::io::Read::read_to_string(&mut e, &mut err).ok();
                }
                assert!(status.success(), "arbor record failed: {err}");
                return err;
            }
            assert!(Instant::now() < deadline, "arbor record did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------
// The scripted agent

const KEY: &str = "sk-record-test-0123456789";

// The agent's texts capitalize every word: a lowercase word after a space
// may be one of arbor's one-token vocabulary words, which the emulator
// counts differently from other bytes, and the redaction test compares
// token counts of the original text with those of synthesized capitals.
// Repeated to a few hundred bytes so the prefix cache has blocks to hit.
const ROOT_PROMPT: &str = "You Are A Coding Agent: Read, Test, Fix. ";
const EXPLORER_PROMPT: &str = "You Are An Explorer Subagent: Find Files. ";
const REVIEWER_PROMPT: &str = "You Are A Reviewer Subagent: Read Diffs. ";

fn m(role: &str, content: &str) -> Value {
    json!({"role": role, "content": content})
}

struct Agent {
    client: reqwest::Client,
    base: String,
}

impl Agent {
    fn new(base: &str) -> Agent {
        Agent {
            client: reqwest::Client::builder()
                .timeout(BOUND)
                .no_proxy()
                .build()
                .expect("client"),
            base: base.to_string(),
        }
    }

    /// One chat completions request; the answer's text as the agent reads
    /// it (a stream's deltas joined).
    async fn chat(&self, messages: &[Value], stream: bool) -> String {
        let mut body = json!({"messages": messages, "max_tokens": 6, "stream": stream});
        if stream {
            body["stream_options"] = json!({"include_usage": true});
        }
        let mut response = self
            .client
            .post(format!("{}/v1/chat/completions", self.base))
            .header("authorization", format!("Bearer {KEY}"))
            .header("x-agent-session", "fix-parser")
            .json(&body)
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), 200);
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.expect("body") {
            bytes.extend_from_slice(&chunk);
        }
        let text = String::from_utf8(bytes).expect("utf-8");
        if !stream {
            let v: Value = serde_json::from_str(&text).expect("json");
            return v["choices"][0]["message"]["content"]
                .as_str()
                .expect("content")
                .to_string();
        }
        text.lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter(|p| *p != "[DONE]")
            .filter_map(|p| serde_json::from_str::<Value>(p).ok())
            .filter_map(|v| {
                v["choices"][0]["delta"]["content"]
                    .as_str()
                    .map(str::to_string)
            })
            .collect()
    }

    /// One Anthropic Messages request (not streamed); the answer's blocks.
    async fn messages(&self, system: &str, messages: &[Value]) -> Value {
        let body = json!({"system": system, "messages": messages, "max_tokens": 6});
        let response = self
            .client
            .post(format!("{}/v1/messages", self.base))
            .header("x-api-key", KEY)
            .header("anthropic-version", "2023-06-01")
            .header("x-agent-session", "fix-parser")
            .json(&body)
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), 200);
        let v: Value = response.json().await.expect("json");
        v["content"].clone()
    }

    /// An explorer subagent: two chat turns, the second after a tool call.
    async fn explorer(&self) -> String {
        let mut context = vec![
            m("system", &EXPLORER_PROMPT.repeat(12)),
            m("user", "Where Is The ISO Date Parser?"),
        ];
        let b1 = self.chat(&context, false).await;
        context.push(m("assistant", &b1));
        context.push(m("tool", "src/dateparse/iso.py\nsrc/dateparse/__init__.py"));
        self.chat(&context, true).await
    }

    /// A reviewer subagent: one Messages turn.
    async fn reviewer(&self) -> String {
        let blocks = self
            .messages(
                &REVIEWER_PROMPT.repeat(12),
                &[json!({"role": "user", "content": "Review The Regex In iso.py."})],
            )
            .await;
        blocks[0]["text"].as_str().unwrap_or_default().to_string()
    }

    /// The root: a tool call, a second tool call that launches both
    /// subagents at once, and the turn that reads their results (the
    /// join).
    async fn run(&self) {
        let mut context = vec![
            m("system", &ROOT_PROMPT.repeat(12)),
            m(
                "user",
                "The Date Parser Rejects 2026-01-01T00:00:00Z. Fix It.",
            ),
        ];
        let a1 = self.chat(&context, true).await;
        context.push(m("assistant", &a1));
        context.push(m("tool", "tests/test_iso.py::test_zulu FAILED"));
        let a2 = self.chat(&context, true).await;
        context.push(m("assistant", &a2));
        // The tool: two subagents, launched together, waited for.
        let (found, review) = tokio::join!(self.explorer(), self.reviewer());
        context.push(m("tool", &format!("Explorer: {found}\nReviewer: {review}")));
        let a3 = self.chat(&context, false).await;
        assert!(!a3.is_empty());
    }
}

/// Runs the scripted agent against `base` (bounded).
fn drive(base: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime for the agent");
    runtime.block_on(async {
        tokio::time::timeout(BOUND, Agent::new(base).run())
            .await
            .expect("the agent finishes in time");
    });
}

/// Records the scripted agent through `arbor record` (with `extra`
/// flags) in front of a fresh emulator; returns the capture.
fn record_agent(dir: &Path, extra: &[&str]) -> PathBuf {
    let emulator = Emulator::start();
    let capture = dir.join("capture.jsonl");
    let recorder = Recorder::start(&emulator.handle.base_url(), &capture, extra);
    drive(&recorder.url);
    let err = recorder.stop();
    assert!(err.contains("6 exchanges written"), "{err}");
    capture
}

fn the_tree(capture: &Path) -> Tree {
    let loaded = load_path(capture, None).expect("the capture loads");
    assert_eq!(loaded.trees.len(), 1, "one tree: {:?}", loaded.conventions);
    loaded.trees.into_iter().next().expect("a tree")
}

/// Three agents: the root (3 turns), the explorer (2) and the reviewer
/// (1), both children of the root's second turn, joined by its third.
fn assert_shape(tree: &Tree) {
    assert_eq!(tree.id, "fix-parser");
    let shape: Vec<(Option<u32>, AgentKind, usize)> = tree
        .agents
        .iter()
        .map(|a| (a.parent, a.kind, a.turns.len()))
        .collect();
    let mut children = shape[1..].to_vec();
    children.sort_by_key(|c| c.2);
    assert_eq!(shape[0], (None, AgentKind::Root, 3));
    assert_eq!(
        children,
        [
            (Some(0), AgentKind::Blocking, 1),
            (Some(0), AgentKind::Blocking, 2)
        ]
    );
    let (edges, _) = derive_edges(
        tree,
        &DeriveOptions {
            overlap_tolerance: 0,
        },
    );
    let offsets = tree.turn_offsets();
    let mut spawns: Vec<(u32, u32)> = Vec::new();
    let mut joins: Vec<(u32, u32)> = Vec::new();
    for e in &edges {
        match e.kind {
            EdgeKind::Spawn => spawns.push((e.from, e.to)),
            EdgeKind::Join => joins.push((e.from, e.to)),
            EdgeKind::Sequence => {}
        }
    }
    spawns.sort();
    joins.sort();
    // Spawned by the root's second turn (flat id 1), into each child's
    // first turn; joined into the root's third turn (flat id 2) from each
    // child's last turn.
    let first = |a: usize| offsets[a];
    let last = |a: usize| offsets[a + 1] - 1;
    let mut want_spawns = vec![(1, first(1)), (1, first(2))];
    want_spawns.sort();
    let mut want_joins = vec![(last(1), 2), (last(2), 2)];
    want_joins.sort();
    assert_eq!(spawns, want_spawns, "spawn edges");
    assert_eq!(joins, want_joins, "join edges");
}

/// `arbor inspect` lists the inferred tree: the root, and under it both
/// subagents with the turn that spawned them and the turn they join (the
/// two launched together reach the proxy in either order, so their names
/// may swap); `--json --trees` gives the same as `tree_shapes`.
fn assert_listing(capture: &Path) {
    let path = capture.to_str().expect("utf-8");
    let out = arbor(&["inspect", path]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = crate::util::stdout(&out);
    let listing: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("  trees "))
        .skip(1)
        .collect();
    assert_eq!(listing.len(), 4, "{text}");
    assert_eq!(listing[0], "    fix-parser: 3 agents, 6 turns");
    assert_eq!(listing[1], "      conv-1 (root, 3 turns)");
    let mut children: Vec<&str> = listing[2..]
        .iter()
        .map(|l| {
            let child = l
                .strip_prefix("        conv-")
                .unwrap_or_else(|| panic!("{l}"));
            child.split_once(' ').map_or(child, |(_, rest)| rest)
        })
        .collect();
    children.sort_unstable();
    // Inferred, and marked so (issue 29, item 3).
    assert_eq!(
        children,
        [
            "(blocking, 1 turn), spawned by turn 1, turn 0 joins turn 2 [parent inferred: tool wait]",
            "(blocking, 2 turns), spawned by turn 1, turn 1 joins turn 2 [parent inferred: tool wait]",
        ]
    );
    let out = arbor(&["inspect", "--json", "--trees", path]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let shapes = v["tree_shapes"].as_array().expect("tree_shapes");
    assert_eq!(shapes.len(), 1);
    assert_eq!(shapes[0]["agents"].as_array().map(Vec::len), Some(3));
    let roles: Vec<&str> = shapes[0]["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .filter_map(|e| e["role"].as_str())
        .collect();
    assert_eq!(roles.iter().filter(|r| **r == "spawn").count(), 2);
    assert_eq!(roles.iter().filter(|r| **r == "join").count(), 2);
    // Without --trees the JSON report is unchanged.
    let out = arbor(&["inspect", "--json", path]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(v.get("tree_shapes").is_none());
}

#[test]
fn a_recorded_agent_loads_as_its_tree_and_replays_at_the_recorded_times() {
    let dir = scratch("record-e2e");
    let capture = record_agent(&dir, &["--session-header", "X-Agent-Session"]);
    let text = std::fs::read_to_string(&capture).expect("capture");
    assert!(!text.contains(KEY), "a key reached the capture");
    let lines = jsonl(&capture);
    assert_eq!(lines.len(), 6);
    for l in &lines {
        assert_eq!(l["status"], 200, "{l}");
        assert!(l["response"].is_object(), "{l}");
        assert!(l["end_ns"].as_u64() >= l["start_ns"].as_u64());
        // The first byte comes after the emulator's TTFT (100 ms).
        let first = l["first_byte_ns"].as_u64().expect("first_byte_ns");
        assert!(
            first >= l["start_ns"].as_u64().unwrap_or(0) + 100_000_000,
            "{l}"
        );
        assert!(first <= l["end_ns"].as_u64().unwrap_or(0), "{l}");
    }
    let tree = the_tree(&capture);
    assert_shape(&tree);
    assert_listing(&capture);

    // The identity property: the plan sends every request at its
    // recorded time, to the nanosecond.
    let timeline = dir.join("timeline.jsonl");
    let out = arbor(&[
        "plan",
        "--service",
        "recorded",
        "--arrival",
        "recorded",
        "--overlap-tolerance",
        "0",
        "--timeline",
        timeline.to_str().expect("utf-8"),
        capture.to_str().expect("utf-8"),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let earliest = lines
        .iter()
        .filter_map(|l| l["start_ns"].as_u64())
        .min()
        .expect("lines");
    let mut recorded: Vec<u64> = lines
        .iter()
        .filter_map(|l| l["start_ns"].as_u64())
        .map(|s| s - earliest)
        .collect();
    recorded.sort_unstable();
    let planned = jsonl(&timeline);
    let mut sent: Vec<u64> = planned.iter().map(|l| secs_to_ns(&l["start_s"])).collect();
    sent.sort_unstable();
    assert_eq!(sent, recorded);
    for l in &planned {
        assert_eq!(l["start_s"], l["eligible_s"], "no lateness: {l}");
    }
}

/// A file under `testdata/`.
fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata")
        .join(name)
}

/// Issue 29, item 5: a capture whose lines carry Claude Code's identity
/// headers (testdata/openai-log/identity.jsonl) lists the tree they state,
/// each subagent marked with the header its parent came from; `--json`
/// counts them by header.
#[test]
fn inspect_marks_the_parents_identity_headers_gave() {
    let path = testdata("openai-log/identity.jsonl");
    let path = path.to_str().expect("utf-8");
    let out = arbor(&["inspect", path]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = crate::util::stdout(&out);
    let listing: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("  trees "))
        .skip(1)
        .collect();
    let session = "3f2a9c1e-5b7d-4e21-9a0c-cc0de5e55101";
    assert_eq!(
        listing,
        [
            format!("    {session}: 4 agents, 6 turns"),
            format!("      {session} (root, 2 turns)"),
            "        agent-explore (blocking, 2 turns), spawned by turn 0, turn 1 joins turn 1 \
             [parent header: x-claude-code-parent-agent-id]"
                .to_string(),
            "          agent-grep (blocking, 1 turn), spawned by turn 0, turn 0 joins turn 1 \
             [parent header: x-claude-code-parent-agent-id]"
                .to_string(),
            "        agent-review (blocking, 1 turn), spawned by turn 0, turn 0 joins turn 1 \
             [parent header: x-claude-code-agent-id]"
                .to_string(),
        ]
    );
    assert!(
        text.contains("6 lines placed by the agents' own identity headers"),
        "{text}"
    );
    let out = arbor(&["inspect", "--json", path]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        v["links"]["parents_from_headers"],
        json!([
            {"rule": "x-claude-code-agent-id", "count": 1},
            {"rule": "x-claude-code-parent-agent-id", "count": 2},
        ])
    );
    assert_eq!(v["links"]["parents_inferred"], json!([]));
}

/// Issue 29, item 5: a capture of Responses API requests
/// (testdata/openai-log/responses.jsonl, Codex's shape) replayed with
/// `--api responses`: every request goes to the emulator's
/// `/v1/responses`, streamed, and each record's usage is the emulator's
/// count of that request.
#[test]
fn a_responses_capture_replays_with_api_responses() {
    let dir = scratch("record-responses");
    let emulator = Emulator::start();
    let capture = testdata("openai-log/responses.jsonl");
    let url = emulator.handle.base_url();
    let out = dir.join("run");
    run_into(
        &out,
        &[
            &[
                capture.to_str().expect("utf-8"),
                "--api",
                "responses",
                "--endpoint",
                &url,
            ][..],
            &FAST[..],
        ]
        .concat(),
    );
    let records = jsonl(&out.join("records.jsonl"));
    let stamps = emulator.handle.stamps();
    assert_eq!(records.len(), 4);
    assert_eq!(stamps.len(), 4);
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["input_tokens_source"], "usage", "{r}");
        let id = r["request"].as_u64().expect("request").to_string();
        let stamp = stamps
            .iter()
            .find(|s| s.request_id == id)
            .expect("the emulator's stamp");
        assert_eq!(stamp.endpoint, "/v1/responses");
        assert!(stamp.stream);
        assert_eq!(r["input_tokens"], stamp.prompt_tokens, "{r}");
    }
}

/// What must be the same of two recordings of one agent: trees, and
/// per agent its parent, kind and per turn its tokens, input kind and
/// text shape. Siblings in a canonical order (two subagents launched
/// together reach each recorder in either order, so their names may
/// swap).
fn fingerprint(capture: &Path) -> String {
    let loaded = load_path(capture, None).expect("the capture loads");
    let mut out = String::new();
    for tree in &loaded.trees {
        out += &format!("tree {}\n", tree.id);
        let mut agents: Vec<String> = tree
            .agents
            .iter()
            .map(|a| {
                let mut agent = format!("  agent {:?} {:?}\n", a.parent, a.kind);
                for t in &a.turns {
                    let text = t.text.as_ref().expect("recorded text");
                    let lengths: Vec<usize> =
                        text.messages.iter().map(|m| m.content.len()).collect();
                    agent += &format!(
                        "    isl {} osl {} {:?} extends {} messages {:?} answer {:?}\n",
                        t.isl,
                        t.osl,
                        t.input_kind,
                        text.extends_previous,
                        lengths,
                        text.response.as_ref().map(String::len)
                    );
                }
                agent
            })
            .collect();
        agents.sort();
        out += &agents.concat();
    }
    out
}

/// Cached prompt tokens of each agent's turns when `capture` is replayed
/// against the built-in emulator; agents in a canonical order (as in
/// [`fingerprint`]).
fn cached_per_turn(capture: &Path, out: &Path) -> Vec<Vec<u64>> {
    run_into(
        out,
        &[&[capture.to_str().expect("utf-8")][..], &FAST[..]].concat(),
    );
    let mut by_agent: std::collections::BTreeMap<String, Vec<(u64, u64)>> = Default::default();
    for r in jsonl(&out.join("records.jsonl")) {
        by_agent
            .entry(r["agent"].as_str().expect("agent").to_string())
            .or_default()
            .push((
                r["turn"].as_u64().expect("turn"),
                r["cached_tokens"].as_u64().unwrap_or(0),
            ));
    }
    let mut agents: Vec<Vec<u64>> = by_agent
        .into_values()
        .map(|mut turns| {
            turns.sort_unstable();
            turns.into_iter().map(|(_, cached)| cached).collect()
        })
        .collect();
    agents.sort();
    agents
}

#[test]
fn a_redacted_capture_keeps_the_trees_and_the_cache_hits_and_no_text() {
    let dir = scratch("record-redact");
    let emulator = Emulator::start();
    // One agent, two recorders in a row: the inner one redacts.
    let redacted = dir.join("redacted.jsonl");
    let plain = dir.join("plain.jsonl");
    let session = ["--session-header", "X-Agent-Session"];
    let inner = Recorder::start(
        &emulator.handle.base_url(),
        &redacted,
        &[&session[..], &["--redact"]].concat(),
    );
    let outer = Recorder::start(&inner.url, &plain, &session);
    drive(&outer.url);
    outer.stop();
    inner.stop();

    assert_eq!(fingerprint(&redacted), fingerprint(&plain));
    let text = std::fs::read_to_string(&redacted).expect("capture");
    for original in [
        "Coding Agent",
        "Explorer",
        "Reviewer",
        "Date Parser",
        "dateparse",
        "FAILED",
        "tok0",
        KEY,
    ] {
        assert!(
            !text.contains(original),
            "`{original}` in the redacted capture"
        );
    }
    let hits = cached_per_turn(&plain, &dir.join("run-plain"));
    assert!(
        hits.iter().flatten().any(|c| *c > 0),
        "some turn hits: {hits:?}"
    );
    assert_eq!(cached_per_turn(&redacted, &dir.join("run-redacted")), hits);
}

// ---------------------------------------------------------------------------
// Hostile upstreams and clients: no line lost, no hang

/// The capture's lines once it has `n` (bounded wait: lines are written
/// while the proxy runs).
fn lines_soon(capture: &Path, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + BOUND;
    loop {
        let lines: Vec<Value> = std::fs::read_to_string(capture)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        if lines.len() >= n {
            return lines;
        }
        assert!(Instant::now() < deadline, "no capture line in time");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A client against the proxy at `base` running `script` on its own
/// runtime (bounded).
fn with_client<F: std::future::Future<Output = ()>>(script: impl FnOnce(reqwest::Client) -> F) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let client = reqwest::Client::builder()
        .timeout(BOUND)
        .no_proxy()
        .build()
        .expect("client");
    runtime.block_on(async {
        tokio::time::timeout(BOUND, script(client))
            .await
            .expect("the client finishes in time");
    });
}

/// A streamed chat request through the proxy at `base`: its response
/// once the head came.
async fn open_stream(client: &reqwest::Client, base: &str) -> reqwest::Response {
    let body = json!({"stream": true, "max_tokens": 8,
                      "messages": [{"role": "user", "content": "Go."}]});
    client
        .post(format!("{base}/v1/chat/completions"))
        .json(&body)
        .send()
        .await
        .expect("a head")
}

/// A scripted upstream and a recorder in front of it, writing
/// `scratch(name)/capture.jsonl`.
fn behind(script: Script, name: &str) -> (Scripted, PathBuf, Recorder) {
    let upstream = Scripted::start(script);
    let capture = scratch(name).join("capture.jsonl");
    let recorder = Recorder::start(&upstream.url(), &capture, &[]);
    (upstream, capture, recorder)
}

/// The proxy answers a fresh request after whatever came before.
async fn still_serves(client: &reqwest::Client, base: &str) {
    let models = client
        .get(format!("{base}/v1/models"))
        .send()
        .await
        .expect("the proxy still answers");
    assert_eq!(models.status(), 200);
}

#[test]
fn an_upstream_reset_mid_stream_cuts_the_client_and_keeps_the_line() {
    let (_upstream, capture, recorder) = behind(Script::ResetMidChunk, "record-reset");
    let base = recorder.url.clone();
    with_client(|client| async move {
        let mut response = open_stream(&client, &base).await;
        assert_eq!(response.status(), 200);
        let cut = loop {
            match response.chunk().await {
                Ok(Some(_)) => continue,
                Ok(None) => break false,
                Err(_) => break true,
            }
        };
        assert!(cut, "the client sees the upstream's cut");
        still_serves(&client, &base).await;
    });
    recorder.stop();
    let lines = jsonl(&capture);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["status"], 200);
    let error = lines[0]["error"].as_str().unwrap_or_default();
    assert!(error.contains("the upstream cut the response"), "{error}");
}

#[test]
fn a_client_leaving_mid_stream_still_gets_its_line_at_once() {
    let (_upstream, capture, recorder) = behind(Script::Endless, "record-leave");
    let base = recorder.url.clone();
    with_client(|client| async move {
        let mut response = open_stream(&client, &base).await;
        response.chunk().await.expect("a first chunk");
        drop(response);
        drop(client);
    });
    // Written while the proxy runs, not at its stop.
    let lines = lines_soon(&capture, 1);
    let error = lines[0]["error"].as_str().unwrap_or_default();
    assert!(error.contains("the client went away"), "{error}");
    let base = recorder.url.clone();
    with_client(|client| async move { still_serves(&client, &base).await });
    recorder.stop();
    assert_eq!(jsonl(&capture).len(), 1);
}

#[test]
fn a_100_mb_response_passes_whole_and_its_line_says_truncated() {
    const SIZE: usize = 100 << 20;
    let (_upstream, capture, recorder) = behind(Script::Huge { bytes: SIZE }, "record-huge");
    let base = recorder.url.clone();
    with_client(|client| async move {
        let mut response = open_stream(&client, &base).await;
        let mut bytes = 0usize;
        while let Some(chunk) = response.chunk().await.expect("the whole body") {
            bytes += chunk.len();
        }
        assert!(bytes >= SIZE, "{bytes} bytes");
    });
    recorder.stop();
    let lines = jsonl(&capture);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["status"], 200);
    assert_eq!(lines[0]["response_truncated"], true);
    assert!(lines[0]["error"].is_null(), "{}", lines[0]);
    // The usage at the stream's end was read past the cap.
    let tokens = SIZE / (16 * 1024);
    assert_eq!(lines[0]["response"]["usage"]["completion_tokens"], tokens);
    assert!(std::fs::metadata(&capture).expect("capture").len() < 20 << 20);
}

#[test]
fn an_https_upstream_is_reached_with_the_trusted_certificate() {
    let dir = scratch("record-https");
    let made = EmulatorTls::self_signed().expect("a certificate");
    let cert = dir.join("cert.pem");
    std::fs::write(&cert, &made.cert_pem).expect("cert written");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime for the emulator");
    let emulator = runtime
        .block_on(serve_tls(
            EmulatorConfig::default(),
            "127.0.0.1:0".parse().expect("addr"),
            made.tls,
        ))
        .expect("the emulator starts");
    let capture = dir.join("capture.jsonl");
    let recorder = Recorder::start(
        &emulator.base_url(),
        &capture,
        &["--cacert", cert.to_str().expect("utf-8")],
    );
    let base = recorder.url.clone();
    with_client(|client| async move {
        let mut response = open_stream(&client, &base).await;
        assert_eq!(response.status(), 200);
        while response.chunk().await.expect("the body").is_some() {}
    });
    recorder.stop();
    let lines = jsonl(&capture);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["status"], 200, "{}", lines[0]);
    assert!(lines[0]["error"].is_null(), "{}", lines[0]);
}

// ---------------------------------------------------------------------------
// Issue 27, item 1: a capture that cannot be written, as the process sees it

impl Recorder {
    /// Waits (bounded) for the process to end by itself; its exit code
    /// and stderr.
    fn exit_by_itself(mut self) -> (Option<i32>, String) {
        let deadline = Instant::now() + BOUND;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                let mut err = String::new();
                if let Some(mut e) = self.child.stderr.take() {
                    std::io::Read::read_to_string(&mut e, &mut err).ok();
                }
                return (status.code(), err);
            }
            assert!(Instant::now() < deadline, "arbor record went on");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The next stderr line that contains `word` (bounded by the test's
    /// client timeouts: the process writes it at once).
    fn stderr_line_with(&mut self, word: &str) -> String {
        let err = self.child.stderr.as_mut().expect("stderr");
        let mut lines = BufReader::new(err);
        loop {
            let mut line = String::new();
            let n = lines.read_line(&mut line).expect("stderr");
            assert!(n > 0, "stderr ended without `{word}`");
            if line.contains(word) {
                return line;
            }
        }
    }
}

#[test]
fn a_capture_on_a_full_disk_stops_the_recording_at_once_with_exit_1() {
    let upstream = Scripted::start(Script::Healthy);
    let recorder = Recorder::start(&upstream.url(), Path::new("/dev/full"), &[]);
    let base = recorder.url.clone();
    with_client(|client| async move {
        let mut response = open_stream(&client, &base).await;
        while response.chunk().await.expect("the body").is_some() {}
    });
    // No signal: the failed write alone ends it.
    let (code, err) = recorder.exit_by_itself();
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("writing the capture /dev/full failed"),
        "{err}"
    );
    assert!(err.contains("No space left on device"), "{err}");
    assert!(err.contains("no new exchanges are accepted"), "{err}");
    assert!(err.contains("1 lost"), "{err}");
}

#[test]
fn forward_without_recording_says_so_loudly_and_keeps_forwarding() {
    let upstream = Scripted::start(Script::Healthy);
    let mut recorder = Recorder::start(
        &upstream.url(),
        Path::new("/dev/full"),
        &["--forward-without-recording"],
    );
    let base = recorder.url.clone();
    with_client(|client| async move {
        let mut response = open_stream(&client, &base).await;
        while response.chunk().await.expect("the body").is_some() {}
    });
    let line = recorder.stderr_line_with("FORWARDING WITHOUT RECORDING");
    assert!(line.contains("WARNING"), "{line}");
    let base = recorder.url.clone();
    with_client(|client| async move {
        let mut response = open_stream(&client, &base).await;
        assert_eq!(response.status(), 200);
        while response.chunk().await.expect("the body").is_some() {}
    });
    kill(Pid::from_raw(recorder.child.id() as i32), Signal::SIGTERM).expect("signal");
    let (code, err) = recorder.exit_by_itself();
    assert_eq!(code, Some(1), "the capture is incomplete: {err}");
    assert!(err.contains("forwarding without recording"), "{err}");
}
