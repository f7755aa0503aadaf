//! `export` on hand-written run directories: a bad directory or line is an
//! input error naming it and leaves no file behind, an output that cannot
//! be written is a fault naming it, AIPerf's export needs the summary, and
//! the notes reach the caller as they arise.

use std::path::Path;

use arbor_error::{Error, Kind};
use arbor_report::export::{export, ExportOptions};

use crate::util::{scratch, write};

fn of(run_dir: &Path) -> ExportOptions {
    ExportOptions {
        run_dir: run_dir.to_path_buf(),
        ..ExportOptions::default()
    }
}

/// The fault of exporting with `options`; the notes it heard are none.
fn fault(options: &ExportOptions) -> Error {
    let mut notes = Vec::new();
    let e = export(options, &mut |n| notes.push(n.to_string())).expect_err("a fault");
    assert!(notes.is_empty(), "{notes:?}");
    e
}

fn expect_input_error(options: &ExportOptions, needles: &[&str]) {
    let e = fault(options);
    assert_eq!(e.kind, Kind::Input, "{}", e.message);
    for needle in needles {
        assert!(
            e.message.contains(needle),
            "expected `{needle}` in: {}",
            e.message
        );
    }
}

#[test]
fn bad_run_dirs_are_input_errors_naming_the_file_and_line() {
    let dir = scratch("export-bad");
    let out_file = dir.join("t.json");
    let perfetto = |run_dir: &Path| ExportOptions {
        perfetto: Some(out_file.clone()),
        ..of(run_dir)
    };
    let csv = |run_dir: &Path| ExportOptions {
        csv: Some(out_file.clone()),
        ..of(run_dir)
    };

    expect_input_error(
        &perfetto(&dir.join("nowhere")),
        &["nowhere", "not a run directory"],
    );
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    expect_input_error(&csv(&empty), &["records.jsonl", "missing"]);
    let bad = dir.join("bad");
    write(&bad, "records.jsonl", "{\"request\":0}\n"); // not a whole record
    expect_input_error(
        &perfetto(&bad),
        &["records.jsonl line 1:", "expected a record of `arbor run`"],
    );
    write(&bad, "records.jsonl", "\nnot json\n");
    expect_input_error(&csv(&bad), &["records.jsonl line 2:"]);
    assert!(!out_file.exists(), "nothing written on a bad input");

    // An output that cannot be created: a fault (not the input's), named.
    let ok = dir.join("ok");
    write(&ok, "records.jsonl", "");
    let e = fault(&ExportOptions {
        csv: Some(dir.join("no/such/dir/t.csv")),
        ..of(&ok)
    });
    assert_eq!(e.kind, Kind::Other, "{}", e.message);
    assert!(e.message.contains("t.csv"), "{}", e.message);
}

#[test]
fn no_records_export_with_the_notes_said_first() {
    let dir = scratch("export-empty");
    let run_dir = dir.join("run");
    write(&run_dir, "records.jsonl", "");
    let (trace, csv) = (dir.join("t.json"), dir.join("r.csv.gz"));
    let mut notes = Vec::new();
    let lines = export(
        &ExportOptions {
            perfetto: Some(trace.clone()),
            csv: Some(csv.clone()),
            ..of(&run_dir)
        },
        &mut |n| notes.push(n.to_string()),
    )
    .expect("exported");
    // No trees.jsonl: said once, before the lines, and the trace has no flows.
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].starts_with("note: "), "{}", notes[0]);
    assert!(notes[0].contains("trees.jsonl"), "{}", notes[0]);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with(&format!(
            "wrote {}: 0 turns in 0 plays, 0 spawn/join flows",
            trace.display()
        )),
        "{}",
        lines[0]
    );
    assert_eq!(
        lines[1],
        format!("wrote {}: 0 rows, one per request", csv.display())
    );
    let text = std::fs::read_to_string(&trace).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).expect("one JSON object");
    assert!(json["traceEvents"].is_array());
    // Gzipped: the name ends in .gz.
    assert_eq!(&std::fs::read(&csv).unwrap()[..2], &[0x1f, 0x8b]);
}

#[test]
fn aiperf_export_of_a_bad_run_dir_is_an_input_error_naming_it() {
    let dir = scratch("export-aiperf-bad");
    let out_dir = dir.join("aiperf");
    let aiperf = |run_dir: &Path| ExportOptions {
        aiperf: Some(out_dir.clone()),
        ..of(run_dir)
    };
    let missing = dir.join("no-such-run");
    expect_input_error(
        &aiperf(&missing),
        &[missing.to_str().unwrap(), "not a run directory"],
    );
    assert!(!out_dir.exists(), "nothing written");
    // Records but no summary.json: named, with the way to rebuild it.
    let run_dir = dir.join("run");
    write(&run_dir, "records.jsonl", "");
    let summary = run_dir.join("summary.json");
    expect_input_error(
        &aiperf(&run_dir),
        &[summary.to_str().unwrap(), "arbor summarize"],
    );
    assert!(!out_dir.join("profile_export.jsonl").exists());
}

#[test]
fn an_export_failing_at_its_last_file_leaves_none_of_its_files() {
    // Issue 27, item 21: `--csv --perfetto --aiperf` with a summary AIPerf's
    // export cannot read exited 2 but left the CSV and the trace behind.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/runs/small");
    let run = scratch("export-last-fails").join("run");
    std::fs::create_dir_all(&run).unwrap();
    for name in ["records.jsonl", "run.json", "trees.jsonl"] {
        std::fs::copy(fixture.join(name), run.join(name)).unwrap();
    }
    write(
        &run,
        "summary.json",
        "{\"schema_version\": \"arbor.summary/0\"}",
    );
    let out = scratch("export-last-fails-out");
    let options = ExportOptions {
        run_dir: run.clone(),
        perfetto: Some(out.join("trace.json")),
        csv: Some(out.join("rows.csv")),
        aiperf: Some(out.join("aiperf")),
    };
    let e = fault(&options);
    assert_eq!(e.kind, Kind::Input, "{}", e.message);
    let left: Vec<_> = walk(&out);
    assert!(left.is_empty(), "files left behind: {left:?}");

    // With a good summary every file is named, no temporary one left.
    std::fs::copy(fixture.join("summary.json"), run.join("summary.json")).unwrap();
    let mut notes = Vec::new();
    export(&options, &mut |n| notes.push(n.to_string())).expect("the export succeeds");
    let mut names: Vec<String> = walk(&out)
        .iter()
        .map(|p| p.strip_prefix(&out).unwrap().display().to_string())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "aiperf/profile_export.jsonl",
            "aiperf/profile_export_aiperf.json",
            "rows.csv",
            "trace.json"
        ]
    );
}

/// Every file under `dir`, recursively.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}
