//! The request's shape on replay (docs/run.md, "What is sent"): captures
//! with tool use (testdata/openai-log/tools-*.jsonl) replayed against the
//! emulator (`arbor emulate --tokenizer`) through `arbor record`, whose
//! capture holds the bodies the emulator received. The bodies carry the
//! capture's tools, tool choice, tool calls and tool results (the same
//! API: as recorded; the other: converted), or with `--flatten-tools` the
//! flattened text; in every case the plan's prompt tokens (counted with
//! the same tokenizer) equal the emulator's.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::emulate::{interrupt, smollm, start};
use crate::record::Recorder;
use crate::util::{jsonl, run_into, scratch, FAST};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/openai-log")
        .join(name)
}

/// Runs `fixture` with `extra` flags against the emulator through the
/// recorder: the request bodies the emulator received, and the run's
/// directory.
fn replay(fixture: &Path, extra: &[&str], name: &str) -> (Vec<Value>, PathBuf) {
    let tokenizer = smollm();
    let (emulator, port) = start(&["--tokenizer", &tokenizer]);
    let dir = scratch(&format!("shape-{name}"));
    let capture = dir.join("received.jsonl");
    let recorder = Recorder::start(&format!("http://127.0.0.1:{port}"), &capture, &[]);
    let out = dir.join("run");
    let mut args = vec![
        fixture.to_str().expect("UTF-8"),
        "--endpoint",
        &recorder.url,
        "--tokenizer",
        &tokenizer,
    ];
    args.extend(FAST);
    args.extend(extra);
    run_into(&out, &args);
    recorder.stop();
    interrupt(emulator);
    let bodies = jsonl(&capture)
        .into_iter()
        .filter(|line| line["method"] == "POST")
        .map(|line| line["request"].clone())
        .collect();
    (bodies, out)
}

/// Every record's planned prompt tokens equal the served ones (the
/// emulator's usage); returns how many records.
fn planned_equals_served(out: &Path) -> usize {
    let records = jsonl(&out.join("records.jsonl"));
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["input_tokens_source"], "usage", "{r}");
        assert_eq!(r["planned_input_tokens"], r["input_tokens"], "{r}");
    }
    records.len()
}

/// The recorded requests of a capture, in order.
fn recorded(fixture: &Path) -> Vec<Value> {
    jsonl(fixture)
        .into_iter()
        .map(|line| line["request"].clone())
        .collect()
}

/// A content's text: a string, `null`, or text blocks joined.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A chat message as (role, text, calls as (id, name, arguments), the
/// call it answers).
fn chat_message(m: &Value) -> (String, String, Vec<(Value, Value, Value)>, Value) {
    let calls = m["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c["id"].clone(),
                c["function"]["name"].clone(),
                c["function"]["arguments"].clone(),
            )
        })
        .collect();
    (
        m["role"].as_str().unwrap_or_default().to_string(),
        text_of(&m["content"]),
        calls,
        m["tool_call_id"].clone(),
    )
}

/// A Messages message's blocks, each as (type, id, name or text, input
/// or result text); a string content is one text block.
fn blocks(m: &Value) -> Vec<(String, Value, Value, Value)> {
    match &m["content"] {
        Value::String(s) => vec![("text".into(), Value::Null, s.clone().into(), Value::Null)],
        Value::Array(parts) => parts
            .iter()
            .map(|b| {
                let kind = b["type"].as_str().unwrap_or_default().to_string();
                match kind.as_str() {
                    "tool_use" => (kind, b["id"].clone(), b["name"].clone(), b["input"].clone()),
                    "tool_result" => (
                        kind,
                        b["tool_use_id"].clone(),
                        Value::Null,
                        text_of(&b["content"]).into(),
                    ),
                    _ => (kind, Value::Null, b["text"].clone(), Value::Null),
                }
            })
            .collect(),
        _ => Vec::new(),
    }
}

#[test]
fn a_chat_capture_is_replayed_with_its_tools_calls_and_results() {
    let fixture = fixture("tools-chat.jsonl");
    let (bodies, out) = replay(&fixture, &[], "chat");
    let recorded = recorded(&fixture);
    assert_eq!(bodies.len(), recorded.len());
    for (body, was) in bodies.iter().zip(&recorded) {
        for field in ["tools", "tool_choice", "parallel_tool_calls"] {
            assert_eq!(body[field], was[field], "{field}");
        }
        let sent: Vec<_> = body["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .map(chat_message)
            .collect();
        let expected: Vec<_> = was["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .map(chat_message)
            .collect();
        assert_eq!(sent, expected);
    }
    // The last request: two parallel calls answered by two tool messages.
    let last = &bodies[2]["messages"];
    assert_eq!(last[4]["tool_calls"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        (last[5]["role"].as_str(), last[6]["role"].as_str()),
        (Some("tool"), Some("tool"))
    );
    assert_eq!(last[6]["tool_call_id"], "call_9vPe");
    assert_eq!(planned_equals_served(&out), 3);
    let run: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    // The recorded shape was sent: no `flatten_tools`.
    assert!(run["config"].get("flatten_tools").is_none());
}

#[test]
fn a_messages_capture_is_replayed_with_its_tool_blocks() {
    let fixture = fixture("tools-messages.jsonl");
    let (bodies, out) = replay(&fixture, &["--api", "messages"], "messages");
    let recorded = recorded(&fixture);
    assert_eq!(bodies.len(), recorded.len());
    for (body, was) in bodies.iter().zip(&recorded) {
        assert_eq!(body["tools"], was["tools"]);
        assert_eq!(body["tool_choice"], was["tool_choice"]);
        assert_eq!(text_of(&body["system"]), text_of(&was["system"]));
        let sent: Vec<_> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(blocks)
            .collect();
        let expected: Vec<_> = was["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(blocks)
            .collect();
        assert_eq!(sent, expected);
    }
    assert_eq!(planned_equals_served(&out), 3);
}

/// A chat capture sent with `--api messages`: the tools and calls
/// converted (docs/run.md's table), the same tokens planned and served.
#[test]
fn a_chat_capture_sent_as_messages_is_converted() {
    let fixture = fixture("tools-chat.jsonl");
    let (bodies, out) = replay(&fixture, &["--api", "messages"], "chat-as-messages");
    let was = &recorded(&fixture)[2];
    let body = &bodies[2];
    for (tool, recorded) in body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .zip(was["tools"].as_array().unwrap())
    {
        assert_eq!(tool["name"], recorded["function"]["name"]);
        assert_eq!(tool["input_schema"], recorded["function"]["parameters"]);
    }
    assert_eq!(body["tool_choice"], serde_json::json!({"type": "auto"}));
    let messages = body["messages"].as_array().unwrap();
    // user, assistant (tool_use), user (tool_result), assistant (text and
    // two tool_use), user (two tool_results).
    let kinds: Vec<Vec<String>> = messages
        .iter()
        .map(|m| blocks(m).into_iter().map(|b| b.0).collect())
        .collect();
    assert_eq!(
        kinds,
        [
            vec!["text"],
            vec!["tool_use"],
            vec!["tool_result"],
            vec!["text", "tool_use", "tool_use"],
            vec!["tool_result", "tool_result"],
        ]
    );
    assert_eq!(
        messages[1]["content"][0]["input"],
        serde_json::json!({"path": "src/dateparse/iso.py"})
    );
    assert_eq!(messages[4]["content"][1]["tool_use_id"], "call_9vPe");
    assert_eq!(planned_equals_served(&out), 3);
}

/// `--flatten-tools`: no tools, calls written after the text, results as
/// user messages; the run says so.
#[test]
fn flatten_tools_sends_the_flattened_text() {
    let fixture = fixture("tools-chat.jsonl");
    let (bodies, out) = replay(&fixture, &["--flatten-tools"], "flattened");
    for body in &bodies {
        assert!(
            body.get("tools").is_none() && body.get("tool_choice").is_none(),
            "{body}"
        );
        for m in body["messages"].as_array().unwrap() {
            assert!(
                m.get("tool_calls").is_none() && m.get("tool_call_id").is_none(),
                "{m}"
            );
            assert_ne!(m["role"], "tool");
        }
    }
    let last = &bodies[2]["messages"];
    assert_eq!(
        last[2]["content"],
        r#"read_file {"path": "src/dateparse/iso.py"}"#
    );
    assert_eq!(last[3]["role"], "user");
    assert!(last[4]["content"]
        .as_str()
        .unwrap()
        .ends_with("\nrun_tests {\"path\": \"tests/test_iso.py\", \"keyword\": \"utc_suffix\"}\nread_file {\"path\": \"tests/test_iso.py\"}"));
    assert_eq!(planned_equals_served(&out), 3);
    let run: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(run["config"]["flatten_tools"], true);
}
