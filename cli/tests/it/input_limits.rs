//! Inputs are read once and bounded (issue 13, items 5 and 6): stdin as
//! `-`, `/dev/stdin`, FIFOs and pipes give the same plan as the file; a
//! NUL-filled or endless input, a line over the cap and a FIFO inside a
//! directory are refused quickly, naming the place; huge counts are
//! refused with an estimate before anything is allocated.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::util::{expect_exit_2, scratch, stderr, stdout};

fn mooncake() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/mooncake-fast25/conversation_trace.head400.jsonl")
}

fn weka_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/weka-kv-cache-tester")
}

/// `arbor ARGS` with `input` written to its stdin.
fn arbor_with_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the arbor binary runs");
    let mut stdin = child.stdin.take().expect("stdin piped");
    let bytes = input.to_vec();
    // Written from a thread: arbor reads while it is written.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&bytes);
    });
    let out = child.wait_with_output().expect("arbor finishes");
    writer.join().expect("writer thread");
    out
}

/// `arbor plan --json --timeline T INPUT` (stdin given by `input`): the
/// timeline and the JSON report without `inputs` (which names the input
/// as given) and `corpus` (a stream has no manifest: docs/data.md).
fn plan_of(dir: &Path, tag: &str, input: &str, stdin: Option<&[u8]>) -> (Vec<u8>, String) {
    let timeline = dir.join(format!("{tag}.timeline.jsonl"));
    let args = [
        "plan",
        "--json",
        "--timeline",
        timeline.to_str().unwrap(),
        input,
    ];
    let out = match stdin {
        Some(bytes) => arbor_with_stdin(&args, bytes),
        None => super::util::arbor(&args),
    };
    assert!(out.status.success(), "{input}: {}", stderr(&out));
    let mut report: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("plan JSON");
    if let Some(fields) = report.as_object_mut() {
        fields.remove("inputs");
        fields.remove("corpus");
    }
    (
        std::fs::read(&timeline).expect("timeline written"),
        report.to_string(),
    )
}

#[test]
fn stdin_as_dash_and_dev_stdin_plan_as_the_file_does() {
    let dir = scratch("stdin-plan");
    let path = mooncake();
    let bytes = std::fs::read(&path).unwrap();
    let from_file = plan_of(&dir, "file", path.to_str().unwrap(), None);
    let from_dash = plan_of(&dir, "dash", "-", Some(&bytes));
    let from_dev = plan_of(&dir, "dev", "/dev/stdin", Some(&bytes));
    assert_eq!(from_dash.0, from_file.0, "the timeline of `-`");
    assert_eq!(from_dash.1, from_file.1, "the plan of `-`");
    assert_eq!(from_dev.0, from_file.0, "the timeline of /dev/stdin");
    assert_eq!(from_dev.1, from_file.1, "the plan of /dev/stdin");
}

#[test]
fn inspect_reads_stdin_and_names_it() {
    let bytes = std::fs::read(mooncake()).unwrap();
    let out = arbor_with_stdin(&["inspect", "-"], &bytes);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("stdin") && text.contains("mooncake"),
        "{text}"
    );
}

#[test]
fn stdin_may_be_given_once() {
    let out = arbor_with_stdin(&["plan", "-", "-"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("expected stdin (`-`) at most once"),
        "{}",
        stderr(&out)
    );
}

/// Runs `arbor plan INPUT` under a 1 GB address-space limit and a time
/// bound: it must exit 2 with every needle, well within the bound.
fn refused_quickly(input: &Path, needles: &[&str]) {
    let arbor = env!("CARGO_BIN_EXE_arbor");
    let started = Instant::now();
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1000000; exec timeout 60 \"$0\" plan \"$1\"")
        .arg(arbor)
        .arg(input)
        .output()
        .expect("sh runs");
    let elapsed = started.elapsed();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{}: {err}", input.display());
    for needle in needles {
        assert!(err.contains(needle), "expected `{needle}` in: {err}");
    }
    assert!(elapsed < Duration::from_secs(20), "took {elapsed:?}");
}

#[test]
fn dev_zero_is_refused_at_its_first_byte() {
    refused_quickly(
        Path::new("/dev/zero"),
        &["/dev/zero: line 1, byte offset 0: a NUL byte (0x00)"],
    );
}

#[test]
fn a_sparse_gigabyte_is_refused_at_its_first_byte() {
    let dir = scratch("sparse");
    let path = dir.join("sparse.jsonl");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(1 << 30).unwrap();
    drop(file);
    refused_quickly(
        &path,
        &["sparse.jsonl: line 1, byte offset 0: a NUL byte (0x00)"],
    );
    // NULs after good rows: the place is where the first NUL is.
    let mut good = std::fs::read(mooncake()).unwrap();
    let at = good.len();
    good.extend(std::iter::repeat_n(0u8, 1 << 20));
    let tail = dir.join("tail.jsonl");
    std::fs::write(&tail, &good).unwrap();
    refused_quickly(
        &tail,
        &[&format!(
            "tail.jsonl: line 401, byte offset {at}: a NUL byte"
        )],
    );
}

#[test]
fn a_line_over_the_cap_is_refused_naming_it() {
    let dir = scratch("long-line");
    let path = dir.join("long.jsonl");
    let mut text =
        br#"{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}"#.to_vec();
    text.push(b'\n');
    let second = text.len();
    text.extend(std::iter::repeat_n(b'x', (64 << 20) + 10));
    std::fs::write(&path, &text).unwrap();
    refused_quickly(
        &path,
        &[
            &format!("long.jsonl: line 2, byte offset {second}: a line longer than 64 MiB"),
            "the line cap",
        ],
    );
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

#[test]
fn a_fifo_is_read_once() {
    let dir = scratch("fifo");
    let fifo = dir.join("trace.jsonl");
    mkfifo(&fifo);
    let bytes = std::fs::read(mooncake()).unwrap();
    let target = fifo.clone();
    // Opening blocks until arbor opens the other end; then write and close.
    let writer = std::thread::spawn(move || std::fs::write(&target, bytes));
    let from_fifo = plan_of(&dir, "fifo", fifo.to_str().unwrap(), None);
    writer.join().unwrap().expect("the writer wrote");
    let from_file = plan_of(&dir, "file", mooncake().to_str().unwrap(), None);
    assert_eq!(from_fifo, from_file);

    // A writer that closes at once: an empty input, said so.
    let target = fifo.clone();
    let writer = std::thread::spawn(move || std::fs::write(&target, b""));
    expect_exit_2(
        &["plan", fifo.to_str().unwrap()],
        &["trace.jsonl: empty file"],
    );
    writer.join().unwrap().expect("the writer closed");
}

#[test]
fn a_fifo_inside_a_directory_is_refused_by_name() {
    let dir = scratch("fifo-dir");
    std::fs::copy(mooncake(), dir.join("a.jsonl")).unwrap();
    mkfifo(&dir.join("b.jsonl"));
    expect_exit_2(
        &["plan", dir.to_str().unwrap()],
        &[
            "b.jsonl: not a regular file",
            "give a FIFO as an INPUT of its own",
        ],
    );
}

/// `arbor ARGS` exits 2 with every needle within 10 s (nothing allocated).
fn refused_at_once(args: &[&str], needles: &[&str]) {
    let started = Instant::now();
    expect_exit_2(args, needles);
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_billion_synthetic_trees_are_refused_with_an_estimate() {
    refused_at_once(
        &["plan", "--synthetic", "trees=1000000000"],
        &[
            "--synthetic trees=1000000000 would generate about",
            " turns, about ",
            " GB; the limit is ",
        ],
    );
}

#[test]
fn huge_copies_are_refused_with_an_estimate() {
    let dir = weka_dir();
    refused_at_once(
        &["plan", dir.to_str().unwrap(), "--copies", "100000000"],
        &[
            "--copies 100000000 would plan 9.1e9 turns, about ",
            "; the limit is ",
        ],
    );
}

#[test]
fn lanes_without_a_tree_cost_nothing() {
    let dir = weka_dir();
    let started = Instant::now();
    let out = super::util::arbor(&["plan", dir.to_str().unwrap(), "--sessions", "4294967295"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("note: --sessions 4294967295: only 4 (tree, copy) plays to deal"),
        "{}",
        stderr(&out)
    );
    // The four lanes that hold a tree play as `--sessions 4` does.
    let four = super::util::arbor(&["plan", dir.to_str().unwrap(), "--sessions", "4"]);
    assert_eq!(stdout(&out), stdout(&four));
    assert!(started.elapsed() < Duration::from_secs(20));
}
