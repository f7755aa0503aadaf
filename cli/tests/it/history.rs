//! `--history`: a bad value exits 2; `plan` and `run` say which history a
//! run uses (the splice itself is tested in-process, in arbor-backends).

use serde_json::Value;

use crate::util::*;

const SPEC: &str =
    "trees=2,turns=4,depth=0,isl=200,isl_growth=50,osl=8,arrival_s=0,think_ms=0,tool_ms=0";

#[test]
fn an_unknown_history_exits_2() {
    expect_exit_2(
        &["plan", "--synthetic", SPEC, "--history", "replayed"],
        &["--history", "expected recorded or live, got `replayed`"],
    );
}

#[test]
fn plan_says_live_history_keeps_the_recorded_lengths() {
    let out = arbor(&["plan", "--synthetic", SPEC, "--history", "live"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("history live: prompt lengths are the recorded ones"),
        "{}",
        stdout(&out)
    );
    let json = |extra: &[&str]| -> Value {
        let mut args = vec!["plan", "--synthetic", SPEC, "--json"];
        args.extend_from_slice(extra);
        let out = arbor(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_str(&stdout(&out)).expect("JSON")
    };
    assert_eq!(json(&["--history", "live"])["history"], "live");
    assert!(json(&[]).get("history").is_none(), "recorded: unchanged");
}

#[test]
fn a_live_history_run_records_its_mode_and_counts() {
    let dir = scratch("history-live");
    let out = run_into(&dir, &["--synthetic", SPEC, "--history", "live"]);
    let console = format!("{}{}", stdout(&out), stderr(&out));
    assert!(console.contains("  history         live: "), "{console}");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let run: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["config"]["history"], "live");
    assert_eq!(summary["config"]["history"], "live");
    let history = &summary["history"];
    assert_eq!(history["mode"], "live");
    let turns = summary["counts"]["dispatched"].as_u64().unwrap();
    let trees = summary["counts"]["plays"].as_u64().unwrap();
    // Every turn after an agent's first was built from generated text.
    assert_eq!(
        history["live_turns"].as_u64(),
        Some(turns - trees),
        "{history}"
    );
    assert_eq!(history["recorded_fallbacks"], 0);

    let dir = scratch("history-recorded");
    run_into(&dir, &["--synthetic", SPEC]);
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert!(summary.get("history").is_none());
    assert!(summary["config"].get("history").is_none());
}
