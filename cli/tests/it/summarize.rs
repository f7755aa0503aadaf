//! `arbor summarize RUN_DIR`: the rebuilt summary equals the run's own on
//! the demo, a run killed with SIGKILL is summed up from its records and
//! marked incomplete, a torn last line is skipped with a note, and bad
//! input exits 2 naming what is wrong.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{arbor, expect_exit_2, run_into, scratch, stderr, stdout, AGENTX_SHORT};

/// The demo (`arbor run -o DIR`, nothing else; about 11 s), run once for
/// every test of this module.
fn demo() -> &'static Path {
    static DEMO: OnceLock<PathBuf> = OnceLock::new();
    DEMO.get_or_init(|| {
        let dir = scratch("summarize-demo").join("out");
        let out = arbor(&["run", "-o", dir.to_str().unwrap()]);
        assert!(out.status.success(), "{}", stderr(&out));
        dir
    })
}

/// A copy of the demo's directory to change.
fn demo_copy(name: &str) -> PathBuf {
    let dir = scratch(name);
    for entry in fs::read_dir(demo()).unwrap() {
        let path = entry.unwrap().path();
        fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    dir
}

fn summary(dir: &Path) -> Value {
    serde_json::from_slice(&fs::read(dir.join("summary.json")).unwrap()).unwrap()
}

fn summarize(dir: &Path) -> std::process::Output {
    arbor(&["summarize", dir.to_str().unwrap()])
}

#[test]
fn on_the_demo_the_rebuilt_summary_is_the_runs_own_byte_for_byte() {
    let dir = demo_copy("summarize-equal");
    let own = fs::read(dir.join("summary.json")).unwrap();
    for file in ["run.json", "end.json", "records.jsonl"] {
        assert!(dir.join(file).is_file(), "the run wrote no {file}");
    }

    // Over the run's own: nothing to change.
    let out = summarize(&dir);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("unchanged"), "{}", stdout(&out));
    assert!(!dir.join("summary.json.orig").exists());

    // From the other files alone.
    fs::remove_file(dir.join("summary.json")).unwrap();
    let out = summarize(&dir);
    assert!(out.status.success(), "{}", stderr(&out));
    let rebuilt = fs::read(dir.join("summary.json")).unwrap();
    assert!(
        rebuilt == own,
        "rebuilt:\n{}\nthe run's:\n{}",
        String::from_utf8_lossy(&rebuilt),
        String::from_utf8_lossy(&own)
    );
    let s = summary(&dir);
    assert_eq!(s["schema_version"], "arbor.summary/1");
    assert_eq!(s["complete"], true);
    assert!(s.get("notes").is_none(), "{}", s["notes"]);
    let run: Value = serde_json::from_slice(&fs::read(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["schema_version"], "arbor.run/1");
    assert_eq!(run["records_schema_version"], "arbor.records/1");
}

/// A closed loop with a start window (warm turns, lanes, a recipe) comes
/// back byte for byte too.
#[test]
fn a_recipe_run_with_warmups_and_lanes_is_rebuilt_byte_for_byte() {
    let dir = scratch("summarize-recipe").join("out");
    let traces = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/weka-kv-cache-tester");
    let mut args = AGENTX_SHORT.to_vec();
    args.push(traces.to_str().unwrap());
    run_into(&dir, &args);
    let own = fs::read(dir.join("summary.json")).unwrap();
    fs::remove_file(dir.join("summary.json")).unwrap();
    let out = summarize(&dir);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(fs::read(dir.join("summary.json")).unwrap() == own);
    let s = summary(&dir);
    assert!(
        s["counts"]["warmups"].as_u64().unwrap() > 0,
        "{}",
        s["counts"]
    );
    assert_eq!(s["lanes"].as_array().map(Vec::len), Some(3));
}

#[test]
fn a_differing_summary_is_kept_as_orig() {
    let dir = demo_copy("summarize-orig");
    let own = fs::read(dir.join("summary.json")).unwrap();
    fs::write(dir.join("summary.json"), b"{\"edited\": true}\n").unwrap();
    let out = summarize(&dir);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(fs::read(dir.join("summary.json")).unwrap(), own);
    assert_eq!(
        fs::read(dir.join("summary.json.orig")).unwrap(),
        b"{\"edited\": true}\n"
    );
    assert!(
        stdout(&out).contains("summary.json.orig"),
        "{}",
        stdout(&out)
    );
}

/// Complete lines of records.jsonl (a torn last line is not one).
fn complete_lines(path: &Path) -> u64 {
    let text = fs::read(path).unwrap();
    text.split_inclusive(|&b| b == b'\n')
        .filter(|l| l.ends_with(b"\n") && serde_json::from_slice::<Value>(l).is_ok())
        .count() as u64
}

#[test]
fn a_run_killed_with_sigkill_is_summed_up_from_its_records_and_marked_incomplete() {
    let dir = scratch("summarize-killed").join("out");
    // The demo with tool and think gaps at 5 % and no idle-gap cap: minutes.
    let mut child = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(["run", "-o", dir.to_str().unwrap()])
        .args(["--tool-time", "pct:5", "--think-time-pct", "5"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the arbor binary runs");
    // Kill it about 2 s after its first record (bounded).
    let records = dir.join("records.jsonl");
    let deadline = Instant::now() + Duration::from_secs(60);
    while complete_lines_or_zero(&records) == 0 {
        assert!(Instant::now() < deadline, "no record within 60 s");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it was killed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(2));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(!dir.join("end.json").exists());
    assert!(!dir.join("summary.json").exists());

    let out = summarize(&dir);
    assert!(out.status.success(), "{}", stderr(&out));
    let s = summary(&dir);
    assert_eq!(s["complete"], false);
    assert!(
        s["notes"][0]
            .as_str()
            .unwrap()
            .contains("did not end cleanly"),
        "{}",
        s["notes"]
    );
    let counts = &s["counts"];
    let lines = complete_lines(&records);
    assert!(lines > 0);
    assert_eq!(
        counts["dispatched"].as_u64().unwrap() + counts["warmups"].as_u64().unwrap(),
        lines,
        "{counts}"
    );
    assert_eq!(
        counts["ok"].as_u64().unwrap()
            + counts["failed"].as_u64().unwrap()
            + counts["cancelled"].as_u64().unwrap(),
        counts["dispatched"].as_u64().unwrap()
    );
    assert!(s["elapsed_s"].as_f64().unwrap() > 0.0);
    assert!(s["concurrency"]["observed_peak"].as_u64().unwrap() >= 1);
}

fn complete_lines_or_zero(path: &Path) -> u64 {
    if path.is_file() {
        complete_lines(path)
    } else {
        0
    }
}

#[test]
fn a_torn_last_line_is_skipped_with_a_note() {
    let dir = demo_copy("summarize-torn");
    let records = dir.join("records.jsonl");
    let mut text = fs::read(&records).unwrap();
    let first = text.split(|&b| b == b'\n').next().unwrap().to_vec();
    text.extend_from_slice(&first[..first.len() / 2]);
    fs::write(&records, &text).unwrap();
    let out = summarize(&dir);
    assert!(out.status.success(), "{}", stderr(&out));
    let s = summary(&dir);
    assert_eq!(s["counts"]["dispatched"], 91);
    let notes = s["notes"].to_string();
    assert!(
        notes.contains("records.jsonl line 92") && notes.contains("torn"),
        "{notes}"
    );
}

#[test]
fn a_bad_line_in_the_middle_is_an_error_naming_it() {
    let dir = demo_copy("summarize-bad-line");
    let records = dir.join("records.jsonl");
    let text = fs::read_to_string(&records).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[4] = "{\"request\": 4, \"torn\"";
    fs::write(&records, lines.join("\n") + "\n").unwrap();
    let path = dir.to_str().unwrap();
    expect_exit_2(&["summarize", path], &["records.jsonl line 5"]);
}

#[test]
fn bad_directories_exit_2_saying_what_is_missing() {
    let dir = scratch("summarize-bad-dirs");
    let missing = dir.join("nope");
    expect_exit_2(
        &["summarize", missing.to_str().unwrap()],
        &["no such directory"],
    );

    // Records without run.json: an older arbor's run.
    let old = dir.join("old");
    fs::create_dir_all(&old).unwrap();
    fs::copy(demo().join("records.jsonl"), old.join("records.jsonl")).unwrap();
    expect_exit_2(
        &["summarize", old.to_str().unwrap()],
        &["run.json: missing", "older arbor"],
    );

    // run.json without records.
    let bare = dir.join("bare");
    fs::create_dir_all(&bare).unwrap();
    fs::copy(demo().join("run.json"), bare.join("run.json")).unwrap();
    expect_exit_2(
        &["summarize", bare.to_str().unwrap()],
        &["records.jsonl: missing"],
    );

    // A run.json of another schema.
    fs::write(bare.join("records.jsonl"), "").unwrap();
    fs::write(
        bare.join("run.json"),
        "{\"schema_version\": \"arbor.run/9\"}",
    )
    .unwrap();
    expect_exit_2(
        &["summarize", bare.to_str().unwrap()],
        &["arbor.run/9", "arbor.run/1"],
    );
}
