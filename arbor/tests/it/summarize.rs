//! Summarize, in-process (`arbor::runs::summarize`): the rebuilt summary
//! equals the run's own on the demo, a differing one is kept as `.orig`,
//! a torn last line is skipped with a note, and bad input is an input
//! error naming what is wrong. (A run killed with SIGKILL, the console's
//! lines and the exit code stay in `cli/tests/it/summarize.rs`.)

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use arbor::runs::summarize::{rebuild, write_keeping_old, Kept};
use arbor::{Error, Kind};
use serde_json::Value;

use crate::util::{agentx_short, scratch};

/// The demo (the bundled sample against the built-in emulator, every
/// option at its default; about 11 s), run once for every test of this
/// module.
fn demo() -> &'static Path {
    static DEMO: OnceLock<PathBuf> = OnceLock::new();
    DEMO.get_or_init(|| {
        let dir = scratch("summarize-demo").join("out");
        let options = arbor::RunOptions {
            out: Some(dir.clone()),
            ..arbor::RunOptions::default()
        };
        arbor::run::run(&options, &arbor::Quiet).unwrap_or_else(|e| panic!("{e:?}"));
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

/// What `arbor summarize DIR` does but the page: the summary rebuilt and
/// written, the old one kept if it differed.
fn summarize(dir: &Path) -> Result<Kept, Error> {
    let rebuilt = rebuild(dir)?;
    write_keeping_old(dir, &rebuilt.summary.to_bytes()?)
}

/// `summarize` fails with bad input whose message holds every needle.
fn expect_input_error(dir: &Path, needles: &[&str]) {
    let e = summarize(dir).err().expect("an error");
    assert_eq!(e.kind, Kind::Input, "{e:?}");
    for needle in needles {
        assert!(e.message.contains(needle), "`{needle}` in {}", e.message);
    }
}

#[test]
fn on_the_demo_the_rebuilt_summary_is_the_runs_own_byte_for_byte() {
    let dir = demo_copy("summarize-equal");
    let own = fs::read(dir.join("summary.json")).unwrap();
    for file in ["run.json", "end.json", "records.jsonl"] {
        assert!(dir.join(file).is_file(), "the run wrote no {file}");
    }

    // Over the run's own: nothing to change.
    assert!(matches!(summarize(&dir).unwrap(), Kept::Unchanged));
    assert!(!dir.join("summary.json.orig").exists());

    // From the other files alone.
    fs::remove_file(dir.join("summary.json")).unwrap();
    assert!(matches!(summarize(&dir).unwrap(), Kept::New));
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
    arbor::run::run(&agentx_short(&dir), &arbor::Quiet).unwrap_or_else(|e| panic!("{e:?}"));
    let own = fs::read(dir.join("summary.json")).unwrap();
    fs::remove_file(dir.join("summary.json")).unwrap();
    summarize(&dir).unwrap();
    assert!(fs::read(dir.join("summary.json")).unwrap() == own);
    let s = summary(&dir);
    assert!(
        s["counts"]["warmups"].as_u64().unwrap() > 0,
        "{}",
        s["counts"]
    );
    assert_eq!(s["lanes"].as_array().map(Vec::len), Some(3));

    // Without end.json (killed, an engine error): rebuilt, incomplete, and
    // stamped invalid with the documented tag, not a sentence.
    fs::remove_file(dir.join("end.json")).unwrap();
    summarize(&dir).unwrap();
    let s = summary(&dir);
    assert_eq!(s["complete"], false);
    assert_eq!(s["submission_valid"], false);
    let reasons = s["submission_invalid_reasons"].as_array().unwrap();
    assert!(reasons.iter().any(|r| r == "run_incomplete"), "{reasons:?}");
    for reason in reasons {
        let tag = reason.as_str().unwrap();
        assert!(
            arbor::runs::recipe::REASONS.contains(&tag),
            "{tag} is not a documented tag"
        );
    }
}

#[test]
fn a_differing_summary_is_kept_as_orig() {
    let dir = demo_copy("summarize-orig");
    let own = fs::read(dir.join("summary.json")).unwrap();
    fs::write(dir.join("summary.json"), b"{\"edited\": true}\n").unwrap();
    let kept = summarize(&dir).unwrap();
    assert_eq!(fs::read(dir.join("summary.json")).unwrap(), own);
    assert_eq!(
        fs::read(dir.join("summary.json.orig")).unwrap(),
        b"{\"edited\": true}\n"
    );
    assert!(
        matches!(&kept, Kept::Old(old) if old.ends_with("summary.json.orig")),
        "{:?}",
        matches!(kept, Kept::Old(_))
    );
}

#[test]
fn a_torn_last_line_is_skipped_with_a_note() {
    let dir = demo_copy("summarize-torn");
    let records = dir.join("records.jsonl");
    let mut text = fs::read(&records).unwrap();
    let first = text.split(|&b| b == b'\n').next().unwrap().to_vec();
    text.extend_from_slice(&first[..first.len() / 2]);
    fs::write(&records, &text).unwrap();
    summarize(&dir).unwrap();
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
    expect_input_error(&dir, &["records.jsonl line 5"]);
}

#[test]
fn bad_directories_are_input_errors_saying_what_is_missing() {
    let dir = scratch("summarize-bad-dirs");
    let missing = dir.join("nope");
    expect_input_error(&missing, &["no such directory"]);

    // Records without run.json: an older arbor's run.
    let old = dir.join("old");
    fs::create_dir_all(&old).unwrap();
    fs::copy(demo().join("records.jsonl"), old.join("records.jsonl")).unwrap();
    expect_input_error(&old, &["run.json: missing", "older arbor"]);

    // run.json without records.
    let bare = dir.join("bare");
    fs::create_dir_all(&bare).unwrap();
    fs::copy(demo().join("run.json"), bare.join("run.json")).unwrap();
    expect_input_error(&bare, &["records.jsonl: missing"]);

    // A run.json of another schema.
    fs::write(bare.join("records.jsonl"), "").unwrap();
    fs::write(
        bare.join("run.json"),
        "{\"schema_version\": \"arbor.run/9\"}",
    )
    .unwrap();
    expect_input_error(&bare, &["arbor.run/9", "arbor.run/1"]);
}

#[test]
fn the_typed_summary_reads_a_runs_summary_and_writes_it_back_byte_for_byte() {
    use arbor::runs::metric::{Latency, Rate, Stat};
    use arbor::runs::output::Summary;
    let written = fs::read(demo().join("summary.json")).unwrap();
    let summary = Summary::read(demo()).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(summary.to_bytes().unwrap(), written);
    // The vocabulary reads the figures the file holds.
    let json = self::summary(demo());
    assert_eq!(
        Latency::Ttft.stat(&summary, Stat::P90),
        json["latency"]["ttft"]["p90_s"].as_f64()
    );
    assert_eq!(
        Rate::OutputTokens.of(&summary),
        json["throughput"]["output_tokens_per_s"].as_f64()
    );
}

#[test]
fn a_damaged_summary_is_refused_naming_the_file_and_what_was_expected() {
    use arbor::runs::output::Summary;
    let dir = demo_copy("summary-damaged");
    let mut json = summary(&dir);
    json.as_object_mut().unwrap().remove("counts");
    fs::write(dir.join("summary.json"), json.to_string()).unwrap();
    let e = Summary::read(&dir).expect_err("no counts");
    assert_eq!(e.kind, Kind::Input, "{e:?}");
    assert!(e.message.contains("summary.json"), "{}", e.message);
    assert!(e.message.contains("`counts`"), "{}", e.message);

    json["schema_version"] = Value::from("arbor.summary/9");
    fs::write(dir.join("summary.json"), json.to_string()).unwrap();
    let e = Summary::read(&dir).expect_err("another schema");
    assert!(e.message.contains("arbor.summary/9"), "{}", e.message);

    fs::remove_file(dir.join("summary.json")).unwrap();
    let e = Summary::read(&dir).expect_err("no file");
    assert!(e.message.contains("arbor summarize"), "{}", e.message);
}
