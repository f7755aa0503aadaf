//! `arbor calibrate` as a process: what it prints, in order, the profile
//! it writes, and its exit codes. The fit itself is tested in process
//! (`sim/tests/it/calibrate.rs`) on the same fixture,
//! `testdata/calibrate/two-sessions/` (README there).

use std::path::{Path, PathBuf};

use crate::util::{arbor, expect_exit_2, scratch, stderr, stdout};

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/calibrate")
        .join(name)
}

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// `arbor calibrate` of the fixture with `extra` flags, the profile
/// written to `out`.
fn calibrate(out: &Path, extra: &[&str]) -> std::process::Output {
    let run = testdata("two-sessions");
    let mut args = vec!["calibrate", utf8(&run), "-o", utf8(out)];
    args.extend(["--max-num-seqs", "8", "--max-num-batched-tokens", "512"]);
    args.extend(extra);
    arbor(&args)
}

/// A profile's text with its label's date (`on YYYY-MM-DDTHH:MM:SSZ`)
/// left out.
fn undated(profile: &str) -> String {
    let at = profile.find("calibrate on ").expect("a fitted label") + "calibrate on ".len();
    format!(
        "{}{}",
        &profile[..at],
        &profile[at + "2026-01-01T00:00:00Z".len()..]
    )
}

/// What each stage found, the notes and the fit-error table, as the
/// golden file has them, then where the profile went; the profile is the
/// library's, byte for byte but for its date.
#[test]
fn calibrate_prints_each_stage_then_writes_the_profile() {
    let dir = scratch("calibrate-prints");
    let out = dir.join("fitted.toml");
    let result = calibrate(&out, &[]);
    assert!(result.status.success(), "{}", stderr(&result));
    assert_eq!(stderr(&result), "");
    let text = stdout(&result);
    let (report, last) = text
        .trim_end_matches('\n')
        .rsplit_once('\n')
        .expect("lines");
    assert_eq!(last, format!("wrote {}", out.display()));
    let golden = testdata("two-sessions.out");
    let report = format!("{report}\n");
    if std::env::var_os("ARBOR_BLESS_GOLDEN").is_some() {
        std::fs::write(&golden, &report).expect("golden file written");
    } else {
        let expected = std::fs::read_to_string(&golden).expect("golden file");
        assert!(
            report == expected,
            "{} differs (re-bless on purpose only):\n{report}",
            golden.display()
        );
    }
    let written = std::fs::read_to_string(&out).expect("a profile is written");
    let library = std::fs::read_to_string(testdata("two-sessions.fitted.toml")).expect("golden");
    assert_eq!(undated(&written), undated(&library));
}

#[test]
fn no_correction_says_stage_b_was_skipped() {
    let dir = scratch("calibrate-no-correction");
    let out = dir.join("p.toml");
    let result = calibrate(&out, &["--no-correction"]);
    assert!(result.status.success(), "{}", stderr(&result));
    let text = stdout(&result);
    assert!(
        text.contains("\n  two-sessions: the server preempted 3 times; "),
        "{text}"
    );
    assert!(
        text.contains("\nstage B: skipped (--no-correction)\n"),
        "{text}"
    );
    let written = std::fs::read_to_string(&out).expect("a profile is written");
    let library =
        std::fs::read_to_string(testdata("two-sessions.no-correction.toml")).expect("golden");
    assert_eq!(undated(&written), undated(&library));
}

#[test]
fn a_limit_neither_given_nor_scraped_exits_2_naming_its_flag() {
    let dir = scratch("calibrate-no-limit");
    let run = testdata("two-sessions");
    let out = dir.join("p.toml");
    expect_exit_2(
        &[
            "calibrate",
            utf8(&run),
            "-o",
            utf8(&out),
            "--max-num-seqs",
            "8",
        ],
        &["--max-num-batched-tokens"],
    );
    assert!(!out.exists(), "nothing is written");
}

/// `--probe` against a port nothing listens on: the pre-flight of its
/// first phase refuses before any request (exit 1, as `arbor run`'s), and
/// no profile is written.
#[test]
fn probe_of_a_dead_endpoint_fails_closed() {
    let dir = scratch("calibrate-probe-dead");
    let out = dir.join("p.toml");
    let result = arbor(&[
        "calibrate",
        "--probe",
        "--endpoint",
        "http://127.0.0.1:9",
        "--ready-timeout",
        "0",
        "-o",
        utf8(&out),
        "--max-num-seqs",
        "4",
        "--max-num-batched-tokens",
        "512",
    ]);
    let err = stderr(&result);
    assert_eq!(result.status.code(), Some(1), "{err}");
    assert!(
        err.contains("nothing listens at http://127.0.0.1:9"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(!out.exists(), "no profile is written");
}

/// `--probe` without the limits its design needs, or without an
/// endpoint, or with run directories too: exit 2 naming the flag, before
/// anything is sent.
#[test]
fn probe_without_its_limits_or_endpoint_exits_2() {
    let dir = scratch("calibrate-probe-limits");
    let out = dir.join("p.toml");
    let o = utf8(&out);
    let dead = "http://127.0.0.1:9";
    expect_exit_2(
        &[
            "calibrate",
            "--probe",
            "--endpoint",
            dead,
            "-o",
            o,
            "--max-num-seqs",
            "4",
        ],
        &["--max-num-batched-tokens"],
    );
    expect_exit_2(
        &[
            "calibrate",
            "--probe",
            "--endpoint",
            dead,
            "-o",
            o,
            "--max-num-batched-tokens",
            "4",
        ],
        &["--max-num-seqs"],
    );
    expect_exit_2(&["calibrate", "--probe", "-o", o], &["--endpoint"]);
    let run = testdata("two-sessions");
    expect_exit_2(
        &[
            "calibrate",
            utf8(&run),
            "--probe",
            "--endpoint",
            dead,
            "-o",
            o,
        ],
        &["--probe"],
    );
    assert!(!out.exists(), "nothing is written");
    assert!(!dir.join("p.toml.probe").exists(), "nothing is sent");
}
