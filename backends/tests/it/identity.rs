//! Issue 29, item 5, in process: scripted agents send their own identity
//! headers through the recording proxy to the emulator, and the capture
//! loads as the exact tree they made, every parent marked as taken from a
//! header, nothing inferred. The agents' turns are made so inference alone
//! would get the tree wrong (subagents launched outside any tool wait,
//! turns that do not continue the previous one): only the headers can
//! give it. Claude Code's headers (Messages API), Dynamo's (chat
//! completions), and Codex's over the Responses API (streamed), whose
//! capture is then replayed with `--api responses` against the emulator:
//! every replayed prompt counts the tokens the recorded one did.

use std::path::{Path, PathBuf};
use std::time::Duration;

use arbor_backends::live::request::Api;
use arbor_backends::record::RecordOptions;
use arbor_engine::model::{AgentKind, LinkSource, Tree};
use arbor_engine::Workload;
use arbor_formats::input::Loaded;
use arbor_formats::load::load_path;
use arbor_runs::record::TokenSource;
use arbor_sim::emulator::{serve, EmulatorConfig, EmulatorHandle, TimingModel};
use serde_json::{json, Value};

use crate::live::{drive_api, immediate, server_runtime};
use crate::record::{capture_lines, scratch_file, Running, BOUND};

const KEY: &str = "sk-identity-test-0123456789";

/// A fast emulator on its own runtime.
struct Emulator {
    handle: EmulatorHandle,
    runtime: tokio::runtime::Runtime,
}

impl Emulator {
    fn start() -> Emulator {
        let runtime = server_runtime();
        let config = EmulatorConfig {
            timing: TimingModel {
                ttft: 2_000_000,
                itl: 200_000,
                prefill_mtok_s: None,
            },
            ..EmulatorConfig::default()
        };
        let handle = runtime
            .block_on(serve(config, "127.0.0.1:0".parse().expect("addr")))
            .expect("the emulator starts");
        Emulator { handle, runtime }
    }

    fn stop(self) {
        self.runtime.block_on(self.handle.shutdown());
    }
}

/// A scripted agent's HTTP client, talking to the proxy at `base`.
struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    /// POSTs `body` to `path` with `headers` (and the API key); the
    /// answer's text as a stream or a JSON body says it.
    async fn post(&self, path: &str, headers: &[(&str, &str)], body: Value) -> String {
        let mut request = self
            .http
            .post(format!("{}{path}", self.base))
            .header("authorization", format!("Bearer {KEY}"))
            .header("x-api-key", KEY)
            .header("anthropic-version", "2023-06-01");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.json(&body).send().await.expect("sent");
        assert_eq!(response.status(), 200, "{path}");
        let text = response.text().await.expect("the body");
        if !text.starts_with("event:") && !text.starts_with("data:") {
            let v: Value = serde_json::from_str(&text).expect("json");
            let said = v
                .pointer("/choices/0/message/content")
                .or_else(|| v.pointer("/content/0/text"))
                .or_else(|| v.pointer("/output/0/content/0/text"));
            return said.and_then(Value::as_str).unwrap_or_default().to_string();
        }
        // A Responses stream: its text deltas joined.
        text.lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .filter(|v| v["type"] == "response.output_text.delta")
            .filter_map(|v| v["delta"].as_str().map(str::to_string))
            .collect()
    }
}

/// Records what `agent` sends through a proxy in front of `emulator`;
/// returns the capture.
fn record<F>(emulator: &Emulator, test: &str, agent: impl FnOnce(Client) -> F) -> PathBuf
where
    F: std::future::Future<Output = ()>,
{
    let out = scratch_file(test);
    let running = Running::start(RecordOptions::new(
        emulator.handle.base_url(),
        "127.0.0.1:0".parse().expect("addr"),
        out.clone(),
    ));
    let client = Client {
        http: reqwest::Client::builder()
            .timeout(BOUND)
            .no_proxy()
            .build()
            .expect("client"),
        base: format!("http://{}", running.addr),
    };
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(async { tokio::time::timeout(BOUND, agent(client)).await })
        .expect("the agent finishes in time");
    running.stop.stop();
    running.wait().expect("a clean stop");
    out
}

fn load(capture: &Path) -> Loaded {
    let loaded = load_path(capture, None).expect("the capture loads");
    assert!(
        !loaded.conventions.iter().any(|c| c.contains("inferred")),
        "nothing inferred: {:?}",
        loaded.conventions
    );
    loaded
}

/// (agent id, parent id, kind, turns) of every agent, in tree order.
fn shape(tree: &Tree) -> Vec<(String, Option<String>, AgentKind, usize)> {
    tree.agents
        .iter()
        .map(|a| {
            let parent = a.parent.map(|p| tree.agents[p as usize].id.clone());
            (a.id.clone(), parent, a.kind, a.turns.len())
        })
        .collect()
}

/// (agent id, header) of every parent link the tree took from a header;
/// none may be inferred.
fn headers_of(tree: &Tree) -> Vec<(String, String)> {
    tree.provenance
        .parents
        .iter()
        .map(|link| match &link.source {
            LinkSource::Header(name) => (
                tree.agents[link.agent as usize].id.clone(),
                name.to_string(),
            ),
            LinkSource::Inferred(rule) => panic!("a parent inferred by {rule}"),
        })
        .collect()
}

fn user(text: &str) -> Value {
    json!([{"role": "user", "content": text}])
}

fn s(x: &str) -> String {
    x.to_string()
}

const CC_SESSION: &str = "x-claude-code-session-id";
const CC_AGENT: &str = "x-claude-code-agent-id";
const CC_PARENT: &str = "x-claude-code-parent-agent-id";

/// Claude Code: the main agent sends its session only; the explorer
/// names the main agent (the session) as its parent, the reviewer sends
/// no parent (a first-level subagent, as Claude Code sends it), the
/// explorer's own subagent names the explorer.
#[test]
fn claude_code_headers_give_the_exact_tree_without_inference() {
    let emulator = Emulator::start();
    let capture = record(&emulator, "identity-claude", |agent| async move {
        let session = "0d5c6a2e-cc-session";
        let main = [(CC_SESSION, session)];
        let explore = [
            (CC_SESSION, session),
            (CC_AGENT, "agent-explore"),
            (CC_PARENT, session),
        ];
        let grand = [
            (CC_SESSION, session),
            (CC_AGENT, "agent-grep"),
            (CC_PARENT, "agent-explore"),
        ];
        let review = [(CC_SESSION, session), (CC_AGENT, "agent-review")];
        let messages = |system: &str, text: &str| json!({"system": system, "messages": user(text), "max_tokens": 4});
        let path = "/v1/messages";
        agent
            .post(path, &main, messages("Main", "Fix The Parser."))
            .await;
        agent
            .post(path, &explore, messages("Explore", "Find Files."))
            .await;
        agent
            .post(path, &grand, messages("Grep", "Grep Dates."))
            .await;
        agent
            .post(path, &explore, messages("Explore", "Other Files."))
            .await;
        agent
            .post(path, &review, messages("Review", "Read The Diff."))
            .await;
        // The main agent after compacting its context: a new conversation.
        agent
            .post(path, &main, messages("Main", "Summary: Done."))
            .await;
    });
    emulator.stop();
    let text = std::fs::read_to_string(&capture).expect("capture");
    assert!(!text.contains(KEY), "a key reached the capture");
    let lines = capture_lines(&capture);
    assert_eq!(lines.len(), 6);
    assert_eq!(
        lines[2]["identity"],
        json!({
            "session": {"id": "0d5c6a2e-cc-session", "header": CC_SESSION},
            "agent": {"id": "agent-grep", "header": CC_AGENT},
            "parent_agent": {"id": "agent-explore", "header": CC_PARENT},
        })
    );
    let loaded = load(&capture);
    assert_eq!(loaded.trees.len(), 1, "one tree, not one per conversation");
    let tree = &loaded.trees[0];
    assert_eq!(tree.id, "0d5c6a2e-cc-session");
    let main = s("0d5c6a2e-cc-session");
    assert_eq!(
        shape(tree),
        [
            (main.clone(), None, AgentKind::Root, 2),
            (
                s("agent-explore"),
                Some(main.clone()),
                AgentKind::Blocking,
                2
            ),
            (
                s("agent-grep"),
                Some(s("agent-explore")),
                AgentKind::Blocking,
                1
            ),
            (s("agent-review"), Some(main), AgentKind::Blocking, 1),
        ]
    );
    assert_eq!(
        headers_of(tree),
        [
            (s("agent-explore"), s(CC_PARENT)),
            (s("agent-grep"), s(CC_PARENT)),
            (s("agent-review"), s(CC_AGENT)),
        ]
    );
    std::fs::remove_file(&capture).ok();
}

/// Dynamo's headers name no tree: each session is an agent, the parent
/// session its launcher; both subagents point at the root.
#[test]
fn dynamo_headers_give_the_exact_tree_without_inference() {
    let emulator = Emulator::start();
    let capture = record(&emulator, "identity-dynamo", |agent| async move {
        let session = "x-dynamo-session-id";
        let parent = "x-dynamo-parent-session-id";
        let chat = |text: &str| json!({"messages": user(text), "max_tokens": 4});
        let path = "/v1/chat/completions";
        agent
            .post(path, &[(session, "root-7")], chat("Plan."))
            .await;
        let kid = [(session, "kid-a"), (parent, "root-7")];
        agent.post(path, &kid, chat("Task A.")).await;
        let other = [(session, "kid-b"), (parent, "root-7")];
        agent.post(path, &other, chat("Task B.")).await;
        agent
            .post(path, &[(session, "root-7")], chat("Merge."))
            .await;
    });
    emulator.stop();
    let loaded = load(&capture);
    assert_eq!(loaded.trees.len(), 1);
    let tree = &loaded.trees[0];
    assert_eq!(tree.id, "root-7");
    assert_eq!(
        shape(tree),
        [
            (s("root-7"), None, AgentKind::Root, 2),
            (s("kid-a"), Some(s("root-7")), AgentKind::Blocking, 1),
            (s("kid-b"), Some(s("root-7")), AgentKind::Blocking, 1),
        ]
    );
    let header = s("x-dynamo-parent-session-id");
    assert_eq!(
        headers_of(tree),
        [(s("kid-a"), header.clone()), (s("kid-b"), header)]
    );
    std::fs::remove_file(&capture).ok();
}

/// Codex over the Responses API, streamed: the root thread (its id the
/// session's) continues its conversation with a tool result; a spawned
/// thread names it as parent. The capture loads as that tree, and
/// replayed with `--api responses` against a fresh emulator every request
/// counts the prompt tokens its recorded request did.
#[test]
fn a_codex_responses_capture_loads_by_its_headers_and_replays_as_responses() {
    let emulator = Emulator::start();
    let capture = record(&emulator, "identity-codex", |agent| async move {
        let root = [("session-id", "thread-root"), ("thread-id", "thread-root")];
        let child = [
            ("session-id", "thread-root"),
            ("thread-id", "thread-kid"),
            ("x-codex-parent-thread-id", "thread-root"),
        ];
        let path = "/v1/responses";
        let ask = json!({"type": "message", "role": "user",
                         "content": [{"type": "input_text", "text": "List The Files."}]});
        let body = |input: Value| {
            json!({"model": "arbor-emulator", "instructions": "You Are Codex.",
                   "input": input, "stream": true, "store": false, "max_output_tokens": 5})
        };
        let answer = agent.post(path, &root, body(json!([ask]))).await;
        assert!(answer.starts_with(" tok0"), "{answer}");
        let task = json!([{"role": "user", "content": "Review The Diff."}]);
        agent.post(path, &child, body(task)).await;
        let said = json!({"type": "message", "role": "assistant",
                          "content": [{"type": "output_text", "text": answer}]});
        let result = json!({"type": "function_call_output", "call_id": "call_1",
                            "output": "Src Lib Tests"});
        agent
            .post(path, &root, body(json!([ask, said, result])))
            .await;
    });
    emulator.stop();
    let lines = capture_lines(&capture);
    assert_eq!(lines.len(), 3);
    for l in &lines {
        assert_eq!(l["path"], "/v1/responses");
        assert_eq!(l["status"], 200, "{l}");
        assert!(l["response"]["output"][0]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with(" tok0")));
        assert!(
            l["response"]["usage"]["input_tokens"].as_u64().is_some(),
            "{l}"
        );
    }
    let loaded = load(&capture);
    assert_eq!(loaded.trees.len(), 1);
    let tree = loaded.trees[0].clone();
    assert_eq!(
        shape(&tree),
        [
            (s("thread-root"), None, AgentKind::Root, 2),
            (
                s("thread-kid"),
                Some(s("thread-root")),
                AgentKind::Blocking,
                1
            ),
        ]
    );
    assert_eq!(
        headers_of(&tree),
        [(s("thread-kid"), s("x-codex-parent-thread-id"))]
    );
    let second = tree.agents[0].turns[1].text.as_deref().expect("text");
    assert!(
        second.extends_previous,
        "the tool result continues the turn"
    );
    for t in tree.agents.iter().flat_map(|a| &a.turns) {
        assert!(!t.tokens_estimated, "usage recorded");
    }

    let replay = Emulator::start();
    let (_, records, _) = drive_api(
        &replay.handle.base_url(),
        Api::Responses,
        Workload {
            trees: vec![tree.clone()],
        },
        immediate(),
        Duration::from_secs(30),
        1,
        false,
        std::future::pending(),
    );
    let stamps = replay.handle.stamps();
    replay.stop();
    assert_eq!(records.len(), 3);
    for r in &records {
        assert!(r.error.is_none(), "{r:?}");
        let agent = tree
            .agents
            .iter()
            .find(|a| a.id == r.agent)
            .expect("the record's agent");
        let recorded = &agent.turns[r.turn as usize];
        assert_eq!(
            (r.input_tokens, r.input_tokens_source),
            (u64::from(recorded.isl), TokenSource::Usage),
            "{} turn {}: the replayed prompt counts as the recorded one",
            r.agent,
            r.turn
        );
    }
    assert!(stamps.iter().all(|s| s.endpoint == "/v1/responses"));
    std::fs::remove_file(&capture).ok();
}
