//! Run directories a reader must refuse or survive (issue 27): records
//! there twice, ids and times no run writes, files that never end. Each
//! case starts from a real run's directory (`testdata/runs/small`).

use std::path::{Path, PathBuf};

use arbor_runs::{aggregate, summarize};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/runs/small")
}

/// A copy of the fixture run in a fresh directory.
fn copy(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("arbor-hostile-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(fixture()).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    dir
}

fn records(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("records.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn write_records(dir: &Path, lines: &[serde_json::Value]) {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join("records.jsonl"), text).unwrap();
}

fn refused(dir: &Path) -> String {
    match summarize::rebuild(dir) {
        Ok(_) => panic!("{}: refused", dir.display()),
        Err(e) => {
            assert!(e.is_input(), "an input error (exit 2): {}", e.message);
            e.message
        }
    }
}

#[test]
fn a_records_file_appended_to_itself_is_refused_naming_the_line() {
    let dir = copy("doubled");
    let mut lines = records(&dir);
    let n = lines.len();
    lines.extend(records(&dir));
    write_records(&dir, &lines);
    let e = refused(&dir);
    assert!(
        e.contains(&format!(
            "records.jsonl line {}: request 0 is recorded twice",
            n + 1
        )),
        "{e}"
    );
}

#[test]
fn more_records_of_a_play_than_its_tree_has_turns_is_refused_even_with_new_ids() {
    // The second copy renumbered: every id is new, but every play now has
    // twice its tree's turns.
    let dir = copy("renumbered");
    let mut lines = records(&dir);
    let n = lines.len() as u64;
    let mut again = records(&dir);
    for l in &mut again {
        let id = l["request"].as_u64().unwrap();
        l["request"] = (id + n).into();
    }
    lines.extend(again);
    write_records(&dir, &lines);
    let e = refused(&dir);
    assert!(e.contains("has more records than the"), "{e}");
    assert!(e.contains("turns of its tree"), "{e}");
}

#[test]
fn a_play_id_near_the_top_of_u32_is_no_allocation() {
    // Issue 27, item 11: play 4294967295 made summarize allocate 206 GB.
    let dir = copy("big-play");
    let mut lines = records(&dir);
    lines[0]["play"] = u32::MAX.into();
    write_records(&dir, &lines);
    let rebuilt = summarize::rebuild(&dir).expect("the summary is rebuilt");
    assert_eq!(rebuilt.records, lines.len() as u64);
}

#[test]
fn token_counts_at_the_top_of_u64_saturate_instead_of_wrapping() {
    // Found by the `records` fuzz target's review: two successful
    // records claiming u64::MAX tokens overflowed the sums (a panic in a
    // debug build, a wrapped, small total in a release build).
    let dir = copy("many-tokens");
    let mut lines = records(&dir);
    let ok: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i]["status"] == "ok")
        .take(2)
        .collect();
    assert_eq!(ok.len(), 2, "the fixture has successful records");
    for &i in &ok {
        for field in ["input_tokens", "output_tokens", "cached_tokens"] {
            lines[i][field] = u64::MAX.into();
        }
        lines[i]["input_tokens_source"] = "usage".into();
        lines[i]["output_tokens_source"] = "usage".into();
    }
    write_records(&dir, &lines);
    let rebuilt = summarize::rebuild(&dir).expect("the summary is rebuilt");
    let json = serde_json::to_value(&rebuilt.summary).unwrap();
    let text = json.to_string();
    assert!(
        text.contains("18446744073709551615"),
        "the sums stay at the top, not wrapped"
    );
}

#[test]
fn times_no_run_reaches_do_not_hang_the_summary() {
    // Issue 27, item 14: a done_s of 1e11 s (and larger) spun for ever.
    // Any such time reads as no time (0): a test that hangs fails by its
    // harness's timeout.
    for value in [1e11, 1e300, 9.9e8, f64::MAX] {
        let dir = copy("far");
        let mut lines = records(&dir);
        for field in ["done_s", "e2e_s", "first_content_s"] {
            lines[3][field] = value.into();
        }
        lines[4]["itl_s"] = serde_json::json!([value, 0.001]);
        write_records(&dir, &lines);
        let rebuilt = summarize::rebuild(&dir).expect("the summary is rebuilt");
        assert_eq!(rebuilt.records, lines.len() as u64, "{value}");
    }
}

#[test]
fn a_repeat_plan_of_four_billion_runs_is_refused() {
    let dir = std::env::temp_dir().join(format!("arbor-hostile-{}-repeat", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("repeat.json"), r#"{"runs":4294967295,"seed":0}"#).unwrap();
    let Err(e) = aggregate::resolve(&dir) else {
        panic!("refused")
    };
    assert!(e.message.contains("expected at most 1000"), "{}", e.message);
}

#[test]
fn run_directory_files_linked_to_dev_zero_are_refused_at_once() {
    // Issue 27, item 13: summary.json or run.json linked to /dev/zero was
    // read until allocation failed.
    for name in ["summary.json", "run.json", "end.json"] {
        let dir = copy(&format!("zero-{name}"));
        std::fs::remove_file(dir.join(name)).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.join(name)).unwrap();
        let read = match name {
            "summary.json" => arbor_runs::output::Summary::read(&dir).map(drop),
            _ => summarize::rebuild(&dir).map(drop),
        };
        let Err(e) = read else {
            panic!("{name}: refused")
        };
        assert!(
            e.message.contains("not a regular file"),
            "{name}: {}",
            e.message
        );
    }
}
