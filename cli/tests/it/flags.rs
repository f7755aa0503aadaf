//! The command-line conventions (docs/cli.md): durations with units,
//! `-o/--out` and the other aliases, flags of other load generators refused
//! with an explanation, typo tips that point only at near misses, help
//! headings, the emulator-flag warning with `--endpoint`, and a closed
//! stdout pipe.

use std::io::Read;
use std::process::{Command, Stdio};

use crate::util::*;

fn plan_json(extra: &[&str]) -> String {
    let out = arbor(&[&["plan", "--json"], extra].concat());
    assert!(out.status.success(), "{extra:?}: {}", stderr(&out));
    stdout(&out)
}

#[test]
fn durations_take_units_and_a_bare_number_is_seconds() {
    let pairs: [(&[&str], &[&str]); 4] = [
        (&["--idle-gap-cap", "250ms"], &["--idle-gap-cap", "0.25"]),
        (&["--grace", "1m"], &["--grace", "60"]),
        (
            &["--sessions", "2", "--loop", "--duration", "1h"],
            &["--sessions", "2", "--loop", "--duration", "3600"],
        ),
        (
            &["--copies", "2", "--stagger", "even:2m"],
            &["--copies", "2", "--stagger", "even:120"],
        ),
    ];
    for (with_units, in_seconds) in pairs {
        assert_eq!(
            plan_json(with_units),
            plan_json(in_seconds),
            "{with_units:?}"
        );
    }
    let json: serde_json::Value = serde_json::from_str(&plan_json(&["--grace", "90s"])).unwrap();
    assert_eq!(json["policy"]["grace_s"], 90.0);
}

#[test]
fn bad_durations_name_the_flag_and_what_is_wrong() {
    for (flag, value, why) in [
        ("--duration", "-4", "non-negative"),
        ("--grace", "NaN", "finite"),
        ("--idle-gap-cap", "inf", "finite"),
        ("--tree-idle-cap", "5x", "unknown unit `x`"),
        ("--warmup-spread", "soon", "expected a duration"),
        ("--overlap-tolerance", "1d", "unknown unit `d`"),
    ] {
        let arg = format!("{flag}={value}");
        expect_exit_2(&["plan", &arg], &[flag, value, why]);
    }
    expect_exit_2(&["run", "--timeout", "0"], &["--timeout", "more than 0"]);
    expect_exit_2(
        &[
            "doctor",
            "--endpoint",
            "http://127.0.0.1:9",
            "--timeout=-1s",
        ],
        &["--timeout", "non-negative"],
    );
}

#[test]
fn typed_policy_values_are_checked_at_parse_time() {
    expect_exit_2(
        &["plan", "--arrival", "sometimes"],
        &["--arrival", "poisson:RATE"],
    );
    expect_exit_2(&["plan", "--stagger", "even:x"], &["--stagger", "even:x"]);
    expect_exit_2(
        &["plan", "--start-window", "2:1"],
        &["--start-window", "MIN:MAX"],
    );
    expect_exit_2(
        &["plan", "--think-time-pct", "lots"],
        &["--think-time-pct", "percentage"],
    );
    expect_exit_2(&["plan", "--format", "csv"], &["--format", "weka"]);
    expect_exit_2(
        &["run", "--api", "realtime"],
        &["--api", "chat, completions, messages or responses"],
    );
    expect_exit_2(
        &["run", "--max-tokens-field", "n"],
        &["--max-tokens-field", "max_completion_tokens"],
    );
    expect_exit_2(&["run", "--ttft-ms=-1"], &["--ttft-ms", "milliseconds"]);
    expect_exit_2(
        &["run", "--itl-ms", "1", "--decode-tok-s", "50"],
        &["--itl-ms", "--decode-tok-s"],
    );
}

#[test]
fn out_is_the_output_flag_everywhere_and_old_spellings_stay() {
    let dir = scratch("flags-out");
    let mut timelines = Vec::new();
    for (i, flag) in ["-o", "--out", "--timeline", "--output"].iter().enumerate() {
        let path = dir.join(format!("{i}.jsonl"));
        let out = arbor(&["plan", flag, path.to_str().unwrap()]);
        assert!(out.status.success(), "{flag}: {}", stderr(&out));
        timelines.push(std::fs::read(&path).expect("timeline written"));
    }
    assert!(!timelines[0].is_empty());
    assert!(timelines.iter().all(|t| *t == timelines[0]));

    let input = fixture("trace_0277.json");
    let mut converted = Vec::new();
    for (i, flag) in ["-o", "--out", "--output"].iter().enumerate() {
        let path = dir.join(format!("{i}.native.jsonl"));
        let out = arbor(&[
            "convert",
            input.to_str().unwrap(),
            "--to",
            "arbor",
            flag,
            path.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{flag}: {}", stderr(&out));
        converted.push(std::fs::read(&path).expect("converted"));
    }
    assert!(converted.iter().all(|c| *c == converted[0]));
}

#[test]
fn peer_aliases_mean_the_same_as_arbor_flags() {
    // --url is --endpoint, -H is --header, -m is --model, -o is --out.
    expect_exit_2(&["run", "--url", "ftp://h"], &["--endpoint", "http://"]);
    expect_exit_2(
        &[
            "doctor",
            "--url",
            "http://127.0.0.1:9",
            "-H",
            "no-equals-sign",
        ],
        &["--header", "NAME=VALUE"],
    );
    let dir = scratch("flags-aliases");
    let out_dir = dir.join("out");
    let out = arbor(&[
        "run",
        "-m",
        "arbor-emulator",
        "-H",
        "X-Trace=7",
        "-o",
        out_dir.to_str().unwrap(),
        "--no-progress",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["config"]["model"], "arbor-emulator");
    assert_eq!(summary["config"]["model_from"], "flag");
    assert_eq!(summary["config"]["headers"]["x-trace"], "7");
}

#[test]
fn flags_of_other_tools_are_refused_naming_the_closest_arbor_flag() {
    let cases: [(&[&str], &[&str]); 10] = [
        (
            &["--concurrency", "8"],
            &["--sessions", "--max-inflight", "closed loop"],
        ),
        (&["-c", "8"], &["--sessions", "--max-inflight"]),
        (&["--request-rate", "5"], &["--arrival rate:R", "trees"]),
        (&["--rate", "5"], &["--arrival", "trees per second"]),
        (&["--rps", "5"], &["--arrival"]),
        (&["-n", "100"], &["--copies", "--duration"]),
        (&["--requests", "100"], &["--copies"]),
        (&["--request-count", "100"], &["--copies"]),
        (&["--vus", "10"], &["--sessions", "virtual users"]),
        (
            &["--api-key", "sk-peer-secret"],
            &[
                "OPENAI_API_KEY",
                "ANTHROPIC_API_KEY",
                "x-api-key",
                "--header",
            ],
        ),
    ];
    for (args, needles) in cases {
        for command in ["plan", "run"] {
            let err = expect_exit_2(&[&[command], args].concat(), needles);
            assert!(err.contains("is not an arbor flag"), "{err}");
            assert!(!err.contains("sk-peer-secret"), "{err}");
        }
    }
    let err = expect_exit_2(
        &[
            "doctor",
            "--endpoint",
            "http://127.0.0.1:9",
            "--api-key",
            "sk-peer-secret",
        ],
        &["OPENAI_API_KEY"],
    );
    assert!(!err.contains("sk-peer-secret"), "{err}");
}

#[test]
fn typo_tips_point_only_at_near_misses() {
    for (typed, tip) in [
        ("--grce", "'--grace'"),
        ("--sesions", "'--sessions'"),
        ("--max-inflght", "'--max-inflight'"),
    ] {
        let err = expect_exit_2(&["plan", typed, "1"], &["similar argument", tip]);
        assert!(err.contains(typed), "{err}");
    }
    // Far from every visible flag, or near only a refused one: no tip.
    for typed in ["--rat", "--concurency", "--bogus-flag", "--outptu-dir"] {
        let err = expect_exit_2(&["run", typed, "1"], &["unexpected argument", typed]);
        assert!(!err.contains("similar argument"), "{typed}: {err}");
    }
    let err = expect_exit_2(&["plan", "--rate", "1"], &["--arrival"]);
    assert!(!err.contains("--grace"), "{err}");
}

#[test]
fn run_help_groups_flags_under_headings() {
    let out = arbor(&["run", "--help"]);
    assert!(out.status.success());
    let help = stdout(&out);
    let headings = [
        "Input:",
        "Workload policy:",
        "Load:",
        "Server and request:",
        "Output:",
        "AgentX:",
        "Emulator:",
    ];
    let positions: Vec<usize> = headings
        .iter()
        .map(|h| {
            help.lines()
                .position(|l| l == *h)
                .unwrap_or_else(|| panic!("{h} missing:\n{help}"))
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{help}");
    let section = |heading: &str| -> String {
        help.split(&format!("\n{heading}\n"))
            .nth(1)
            .and_then(|rest| rest.split("\n\n").next())
            .unwrap_or_default()
            .to_string()
    };
    assert!(section("Load:").contains("--sessions"));
    assert!(section("Server and request:").contains("--endpoint"));
    assert!(section("Output:").contains("-o, --out"));
    assert!(section("AgentX:").contains("--scenario"));
    assert!(section("Emulator:").contains("--ttft-ms"));
    // Refused flags of other tools stay out of the help.
    assert!(!help.contains("--concurrency"), "{help}");

    let plan = stdout(&arbor(&["plan", "--help"]));
    let positions: Vec<Option<usize>> =
        ["Input:", "Workload policy:", "Load:", "Output:", "AgentX:"]
            .iter()
            .map(|h| plan.lines().position(|l| l == *h))
            .collect();
    assert!(positions.iter().all(Option::is_some), "{plan}");
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{plan}");
}

#[test]
fn emulator_flags_are_refused_with_an_endpoint() {
    // Refused before the inputs are read or any connection is made.
    let out = arbor(&[
        "run",
        "--endpoint",
        "http://127.0.0.1:9",
        "--ttft-ms",
        "5",
        "--fail-rate",
        "0.1",
        "--itl-ms",
        "5",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--ttft-ms, --itl-ms, --fail-rate are the built-in emulator's")
            && err.contains("no effect with --endpoint"),
        "{err}"
    );
    // --loop without --sessions stops the run before any network access.
    let out = arbor(&["run", "--ttft-ms", "5", "--loop"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!stderr(&out).contains("emulator's"), "{}", stderr(&out));
    let out = arbor(&["run", "--endpoint", "http://127.0.0.1:9", "--loop"]);
    assert!(!stderr(&out).contains("emulator's"), "{}", stderr(&out));
}

#[test]
fn a_negative_number_reaches_the_flags_own_message() {
    let err = expect_exit_2(&["run", "--idle-gap-cap", "-5"], &["--idle-gap-cap"]);
    assert!(!err.contains("-- -5"), "{err}");
    assert!(err.contains("negative"), "{err}");
}

/// `arbor ... | head`: the reader goes away before arbor writes; arbor
/// must stop quietly with status 0.
fn closed_pipe_exits_quietly(args: &[&str], read_first: usize) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("arbor starts");
    let mut reader = child.stdout.take().expect("a pipe");
    if read_first > 0 {
        let mut head = vec![0u8; read_first];
        reader.read_exact(&mut head).expect("the first bytes");
    }
    drop(reader);
    let out = child.wait_with_output().expect("arbor ends");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!err.to_lowercase().contains("broken pipe"), "{err}");
    assert!(!err.contains("error"), "{err}");
}

#[test]
fn a_closed_stdout_pipe_ends_the_command_quietly() {
    let trace = fixture("trace_0277.json");
    closed_pipe_exits_quietly(&["plan"], 0);
    closed_pipe_exits_quietly(&["inspect", "--json", trace.to_str().unwrap()], 0);
    // Like `| head -c 10`: a few bytes read, then the pipe closed. A large
    // report (many trees) outgrows the pipe's buffer.
    closed_pipe_exits_quietly(
        &["plan", "--json", "--copies", "400", "--sessions", "400"],
        10,
    );
    // `arbor plan --timeline /dev/stdout | head -1`: the timeline's own
    // file is the closed pipe (10,000 turns: about 2 MB, past the pipe's
    // buffer, so the reader leaves mid-write).
    closed_pipe_exits_quietly(
        &[
            "plan",
            "--synthetic",
            "trees=200,turns=50",
            "--timeline",
            "/dev/stdout",
        ],
        100,
    );
}
