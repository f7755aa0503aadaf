//! `arbor run` with no arguments: the demo's figures are believable.
//!
//! One run of the demo (the bundled sample against the built-in emulator
//! at `--ttft-ms 10 --itl-ms 0.2`), then: the console names the
//! emulator's settings; the emulator paced its tokens at the configured
//! ITL (the median chunk gap the client saw is within 50 % of 0.2 ms, and
//! fewer than half of the gaps are zero, i.e. chunks read together: the
//! unpaced emulator gave 84 %, an idle machine gives about 1.4 %, and a
//! machine saturated by parallel builds 13-33 %, so the bound tells a
//! broken pacer from a busy machine); and
//! the prompt tokens the emulator reported equal the plan's, request by
//! request.

use crate::util::*;

/// The demo's ITL, seconds.
const ITL_S: f64 = 0.000_2;

#[test]
fn the_demo_paces_its_tokens_and_counts_prompts_as_planned() {
    let dir = scratch("demo").join("out");
    let out = arbor(&["run", "--no-progress", "--out", dir.to_str().unwrap()]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}\n{text}", stderr(&out));
    assert!(
        text.contains(
            "emulator        built in: --ttft-ms 10 --itl-ms 0.2, no prefill term, \
             prefix cache unbounded, no faults"
        ),
        "{text}"
    );

    let records = jsonl(&dir.join("records.jsonl"));
    assert!(records.len() > 50, "{} records", records.len());

    // Prompt tokens: the emulator counts synthesized words as arbor wrote
    // them, so every request's usage equals its plan.
    for r in &records {
        assert_eq!(r["input_tokens_source"], "usage", "{r}");
        assert_eq!(r["input_tokens"], r["planned_input_tokens"], "{r}");
    }

    // Pacing: chunk gaps as the client stamped them.
    let mut gaps: Vec<f64> = records
        .iter()
        .flat_map(|r| r["itl_s"].as_array().cloned().unwrap_or_default())
        .map(|g| g.as_f64().expect("a gap in seconds"))
        .collect();
    assert!(gaps.len() > 10_000, "{} gaps", gaps.len());
    gaps.sort_by(f64::total_cmp);
    let median = gaps[gaps.len() / 2];
    assert!(
        (ITL_S * 0.5..=ITL_S * 1.5).contains(&median),
        "median chunk gap {median} s against an ITL of {ITL_S} s"
    );
    let zeros = gaps.iter().filter(|&&g| g == 0.0).count();
    assert!(
        zeros * 2 < gaps.len(),
        "{zeros} of {} chunk gaps are zero",
        gaps.len()
    );

    // The console's ITL p50 is the same figure, in milliseconds.
    let itl_row = text
        .lines()
        .find(|l| l.starts_with("| ITL"))
        .expect("an ITL row");
    let p50: f64 = itl_row.split('|').nth(4).unwrap().trim().parse().unwrap();
    // 0.2 ms by the demo's model; the upper bound is 5x, for a loaded
    // machine's late chunks.
    assert!((0.1..=1.0).contains(&p50), "{itl_row}");
}
