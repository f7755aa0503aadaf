//! Where the time goes, at the process: the human plan's table and the
//! gap flags' parsing. The breakdown itself, the gap options' effect and
//! the recipe's refusal are in-process (`arbor/tests/it/gaps.rs`).

use crate::util::*;

#[test]
fn the_human_plan_says_where_the_time_goes() {
    let out = arbor(&[
        "plan",
        "--tool-time",
        "zero",
        fixture("trace_0291.json").to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("where the time goes"), "{text}");
    let think = text
        .lines()
        .find(|l| l.trim_start().starts_with("think"))
        .unwrap_or_else(|| panic!("no think row:\n{text}"));
    assert!(think.contains("--think-time-pct, --gap-scale"), "{think}");
    assert!(think.contains('%'), "{think}");
    assert!(
        !text.lines().any(|l| l.trim_start().starts_with("tool ")),
        "tool gaps are zero, so no tool row:\n{text}"
    );
}

#[test]
fn bad_gap_flags_exit_2_naming_the_flag() {
    for bad in ["-1", "x", "nan", "inf"] {
        let arg = format!("--gap-scale={bad}");
        expect_exit_2(&["plan", &arg], &["--gap-scale", "factor"]);
    }
    for flag in ["--other-time", "--spawn-time", "--join-time"] {
        expect_exit_2(&["plan", flag, "bogus"], &[flag, "recorded, zero"]);
    }
}
