//! The page of run directories: a missing or bad one is an input error,
//! and no page is written.

use arbor_error::Kind;
use arbor_report::page::{report, ReportOptions};

use crate::util::{scratch, write};

fn expect_input_error(options: &ReportOptions, needles: &[&str]) {
    let e = report(options).expect_err("a fault");
    assert_eq!(e.kind, Kind::Input, "{}", e.message);
    for needle in needles {
        assert!(
            e.message.contains(needle),
            "expected `{needle}` in: {}",
            e.message
        );
    }
}

fn of(dir: &std::path::Path) -> ReportOptions {
    ReportOptions {
        run_dirs: vec![dir.to_path_buf()],
        out: None,
    }
}

#[test]
fn a_missing_or_bad_run_directory_is_an_input_error() {
    let dir = scratch("report-bad");
    expect_input_error(
        &of(&dir.join("missing")),
        &["missing", "no such run directory"],
    );

    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    expect_input_error(
        &of(&empty),
        &["not a finished run directory", "summary.json"],
    );

    let bad = dir.join("bad");
    write(&bad, "summary.json", "{}");
    write(&bad, "records.jsonl", "{\"request\":1}\nnot json\n");
    expect_input_error(
        &of(&bad),
        &["records.jsonl line 1:", "expected a record of `arbor run`"],
    );
    assert!(!bad.join("report.html").exists(), "nothing written");
}

#[test]
fn a_page_of_no_records_is_written_and_said() {
    let dir = scratch("report-empty");
    let run = dir.join("run");
    write(&run, "summary.json", "{}");
    write(&run, "records.jsonl", "");
    let out = dir.join("page.html");
    let line = report(&ReportOptions {
        run_dirs: vec![run.clone()],
        out: Some(out.clone()),
    })
    .expect("written");
    let bytes = std::fs::metadata(&out).unwrap().len();
    assert_eq!(
        line,
        format!(
            "report in {} (1 run, {:.1} MB)",
            out.display(),
            bytes as f64 / 1e6
        )
    );
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.starts_with("<!doctype html>"));
    assert!(html.contains("<script id=\"arbor-data\" type=\"application/json\">"));
    assert_eq!(
        arbor_report::page::write_for_run(&run).expect("written"),
        format!("report in {}", run.join("report.html").display())
    );
}
