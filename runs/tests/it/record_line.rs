//! The one reader of a `records.jsonl` line (`record_line::RecordLine`)
//! against the writer (`record::RequestRecord`): whatever the writer may
//! leave out or write as `null` the reader takes, and the summary's view of
//! a line needs only what the writer always writes. Read off the writer's
//! own JSON Schema, so a field added to one side and not the other fails
//! here.

use std::collections::BTreeSet;
use std::path::PathBuf;

use arbor_runs::collector::Facts;
use arbor_runs::record::{
    ErrorCategory, RequestError, RequestIdentity, RequestRecord, Response, Stamps, Status,
};
use arbor_runs::record_line::{self, RecordLine};
use serde_json::{Map, Value};

fn identity() -> RequestIdentity {
    RequestIdentity {
        request: 7,
        tree: "t".into(),
        tree_index: 1,
        agent: "a".into(),
        turn: 2,
        copy: 0,
        lane: Some(3),
        play: 4,
        eligible: 1_000,
        dispatched: 1_500,
        queue_wait: 500,
        warmup: false,
        planned_input_tokens: 100,
        planned_output_tokens: 4,
        replica: None,
        session_key: None,
    }
}

/// A record with every stamp and count the writer can give.
fn full() -> RequestRecord {
    let response = Response {
        stamps: Stamps {
            sent: Some(2_000),
            headers: Some(2_500),
            first_byte: Some(2_600),
            first_content: Some(3_000),
            content: vec![3_000, 4_000, 6_000],
            done: Some(7_000),
        },
        http_status: Some(200),
        prompt_tokens: Some(100),
        completion_tokens: Some(3),
        cached_tokens: Some(64),
        attempts: 1,
        ..Response::default()
    };
    RequestRecord::new(identity(), &response)
}

/// A record with nothing the writer may leave out: no stamp, no count, an
/// error without its optional fields.
fn bare() -> RequestRecord {
    let response = Response {
        error: Some(RequestError {
            category: ErrorCategory::Connect,
            message: "refused".into(),
            http_status: None,
            retry_after_s: None,
        }),
        ..Response::default()
    };
    RequestRecord::new(
        RequestIdentity {
            lane: None,
            ..identity()
        },
        &response,
    )
}

fn object(r: &RequestRecord) -> Map<String, Value> {
    match serde_json::to_value(r) {
        Ok(Value::Object(map)) => map,
        other => panic!("a record is an object: {other:?}"),
    }
}

/// What the summary reads of a line's text (its facts, as their Debug
/// text), or why it cannot.
fn summary_of(text: &str) -> Result<String, String> {
    let line = RecordLine::parse(text)?;
    let itl = line.itl_s.values()?;
    Ok(format!("{:?}", line.facts(&itl)?))
}

/// The writer's schema: its properties, those it may write as `null`, and
/// those it always writes.
fn writer_schema() -> (Map<String, Value>, BTreeSet<String>, BTreeSet<String>) {
    let schema = serde_json::to_value(schemars::schema_for!(RequestRecord)).unwrap();
    let Some(properties) = schema["properties"].as_object().cloned() else {
        panic!("the schema lists properties")
    };
    let nullable = properties
        .iter()
        .filter(|(_, p)| p.to_string().contains("\"null\""))
        .map(|(k, _)| k.clone())
        .collect();
    let required = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    (properties, nullable, required)
}

#[test]
fn a_record_reads_back_as_the_facts_the_run_counted() {
    for r in [full(), bare()] {
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(
            summary_of(&text),
            Ok(format!("{:?}", Facts::from(&r))),
            "{text}"
        );
    }
}

#[test]
fn every_field_the_writer_may_write_as_null_reads_as_absent() {
    let (properties, nullable, _) = writer_schema();
    assert!(nullable.contains("sent_s") && nullable.contains("error"));
    for field in &nullable {
        let mut line = object(&full());
        line.insert(field.clone(), Value::Null);
        let text = Value::Object(line.clone()).to_string();
        let Ok(read) = RecordLine::parse(&text) else {
            panic!("{field}: null reads")
        };
        assert!(
            format!("{read:?}").contains(&format!("{field}: None")),
            "{field}"
        );
        assert!(summary_of(&text).is_ok(), "{field}: the summary reads null");
        // Absent reads as null does.
        line.remove(field);
        let text = Value::Object(line).to_string();
        assert!(
            summary_of(&text).is_ok(),
            "{field}: the summary reads it absent"
        );
    }
    assert!(nullable.iter().all(|f| properties.contains_key(f)));
    // The bare record has them all null, and reads as such.
    let text = serde_json::to_string(&bare()).unwrap();
    let Ok(r) = RecordLine::parse(&text) else {
        panic!("the bare record reads")
    };
    assert_eq!(
        (r.sent_s, r.first_content_s, r.done_s, r.ttft_s, r.lane),
        (None, None, None, None, None)
    );
    assert_eq!((r.cached_tokens, r.http_status), (None, None));
    let Some(e) = &r.error else {
        panic!("the error reads")
    };
    assert_eq!(
        (e.category, e.http_status, e.retry_after_s),
        (ErrorCategory::Connect, None, None)
    );
    assert_eq!(r.status, Status::Error);
}

#[test]
fn only_status_is_required_and_the_summary_needs_only_what_the_writer_always_writes() {
    let (properties, nullable, required) = writer_schema();
    let mut reader_needs = BTreeSet::new();
    let mut summary_needs = BTreeSet::new();
    for field in properties.keys() {
        let mut line = object(&full());
        line.remove(field);
        let text = Value::Object(line).to_string();
        if RecordLine::parse(&text).is_err() {
            reader_needs.insert(field.clone());
        }
        match summary_of(&text) {
            Ok(_) => {}
            Err(why) => {
                assert!(
                    why.contains(&format!("missing field `{field}`")),
                    "{field}: {why}"
                );
                summary_needs.insert(field.clone());
            }
        }
    }
    assert_eq!(reader_needs, BTreeSet::from(["status".to_string()]));
    assert!(required.contains("status") && !nullable.contains("status"));
    for field in &summary_needs {
        assert!(
            required.contains(field) && !nullable.contains(field),
            "the summary needs `{field}`, which the writer may leave out"
        );
    }
    // Records of an arbor before resends were counted lack the field.
    assert!(!summary_needs.contains("resends"));
    assert!(summary_needs.contains("dispatched_s") && summary_needs.contains("itl_s"));
}

#[test]
fn the_writers_error_object_reads_with_or_without_its_optional_fields() {
    let mut r = bare();
    if let Some(e) = &mut r.error {
        e.category = ErrorCategory::HttpStatus;
        e.http_status = Some(503);
        e.retry_after_s = Some(1.5);
    }
    let text = serde_json::to_string(&r).unwrap();
    let Ok(line) = RecordLine::parse(&text) else {
        panic!("reads")
    };
    let e = line
        .error
        .as_ref()
        .map(|e| (e.category, e.http_status, e.retry_after_s));
    assert_eq!(e, Some((ErrorCategory::HttpStatus, Some(503), Some(1.5))));
    for category in ErrorCategory::ALL {
        if let Some(e) = &mut r.error {
            e.category = category;
        }
        let text = serde_json::to_string(&r).unwrap();
        let Ok(line) = RecordLine::parse(&text) else {
            panic!("{category:?} reads")
        };
        assert_eq!(line.error_category(), Some(category));
    }
}

fn scratch(name: &str, lines: &[String]) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "arbor-record-line-{}-{name}.jsonl",
        std::process::id()
    ));
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

#[test]
fn an_unknown_status_or_category_names_the_line_and_what_was_expected() {
    let ok = serde_json::to_string(&full()).unwrap();
    let failed = serde_json::to_string(&bare()).unwrap();
    let cases = [
        (
            ok.replace("\"status\":\"ok\"", "\"status\":\"done\""),
            "line 2: expected status ok, error or cancelled, got `done`",
        ),
        (
            failed.replace("\"category\":\"connect\"", "\"category\":\"refused\""),
            "line 2: expected error category connect, timeout, http_status, stream_cut, \
             malformed_sse, context_overflow, server_error, overloaded, cancelled, client or \
             oversized, got `refused`",
        ),
        (
            ok.replace(
                "\"input_tokens_source\":\"usage\"",
                "\"input_tokens_source\":\"guessed\"",
            ),
            "line 2: expected a record of `arbor run` (docs/run.md): unknown variant `guessed`",
        ),
        (
            ok.replace("\"status\":\"ok\"", "\"status\":7"),
            "line 2: expected a record of `arbor run` (docs/run.md): invalid type",
        ),
    ];
    for (i, (bad, expected)) in cases.iter().enumerate() {
        let path = scratch(
            &format!("unknown-{i}"),
            &[ok.clone(), bad.clone(), ok.clone()],
        );
        let read = record_line::read(&path, |_, _| Ok(()));
        let _ = std::fs::remove_file(&path);
        let Err(e) = read else {
            panic!("case {i}: an unknown word is an error")
        };
        assert!(e.is_input(), "{e}");
        assert!(e.message.contains(expected), "case {i}: {}", e.message);
        if i < 2 {
            assert!(!e.message.contains("column"), "case {i}: {}", e.message);
        }
    }
}

#[test]
fn a_reader_that_needs_a_field_names_it_on_its_line() {
    let ok = serde_json::to_string(&full()).unwrap();
    let mut bad = object(&full());
    bad.remove("agent");
    // Another request: a second line of one request is refused for that.
    bad.insert("request".into(), Value::from(1_000));
    let path = scratch("needs", &[ok, Value::Object(bad).to_string()]);
    let read = record_line::read(&path, |line, _| {
        let itl = line.itl_s.values()?;
        line.facts(&itl).map(drop)
    });
    let _ = std::fs::remove_file(&path);
    let Err(e) = read else {
        panic!("the summary needs the agent")
    };
    assert!(
        e.message.contains(
            "line 2: expected a record of `arbor run` (docs/run.md): missing field `agent`"
        ),
        "{}",
        e.message
    );
}
