//! What `arbor run` says on stderr before the clock starts: the planned
//! duration, how much of it is replayed tool and think time (and how to
//! shorten it for a quick check), and warnings about the known traps
//! (lanes that stay empty, a loop that replays identical prompts into the
//! server's cache).
//!
//! Pure: the caller prints the lines. Reads the policy and the plan's
//! figures; owns no other part of the run.

use arbor_engine::policy::Policy;
use arbor_engine::time::{nanos_to_secs, Nanos};

/// What the notices need to know about a prepared run.
pub struct RunShape<'a> {
    pub policy: &'a Policy,
    /// Trees in the workload (one copy).
    pub trees: u64,
    /// The plan's makespan on the virtual clock.
    pub planned: Nanos,
    /// `--service` of the plan.
    pub service: &'a str,
    /// Prompts carry a cache-bust marker (`--cache-bust`, or the recipe).
    pub cache_bust: bool,
    /// Replayed gaps (tool, think, ... after the idle caps' cut) on the
    /// plan's critical path.
    pub gaps: Nanos,
}

/// Replayed gaps beyond this get the quick-check hint.
const LONG_GAPS: Nanos = 60 * arbor_engine::time::NANOS_PER_SEC;

/// The lines to print before the run, in order.
pub fn before_run(shape: &RunShape) -> Vec<String> {
    let policy = shape.policy;
    let mut lines = vec![planned_duration(shape)];
    if shape.gaps > LONG_GAPS {
        lines.push(format!(
            "arbor run: {} of it is recorded tool and think time replayed between turns; for a \
             quick check add --gap-scale 0.01 --idle-gap-cap 0.25 (gaps at 1 %, idle waits cut \
             to 0.25 s: the demo's pace), or end it early with --duration 60",
            about(shape.gaps)
        ));
    }
    let corpus = shape.trees.saturating_mul(u64::from(policy.copies.max(1)));
    if let Some(sessions) = policy.sessions {
        if u64::from(sessions) > corpus {
            lines.push(format!(
                "warning: --sessions {sessions} but the workload has {corpus} tree{} to deal \
                 (trees x --copies): {} lane{} get no tree and stay empty",
                plural(corpus),
                u64::from(sessions) - corpus,
                plural(u64::from(sessions) - corpus),
            ));
        }
    }
    if policy.loop_lanes && !shape.cache_bust {
        lines.push(
            "warning: --loop without --cache-bust replays identical prompts, so the server \
             will report near-total cache hits; add --cache-bust to give each play its own prefix"
                .to_string(),
        );
    }
    lines
}

/// `arbor run: about 15 min planned (...)`.
fn planned_duration(shape: &RunShape) -> String {
    let hint = if shape.policy.idle_gap_cap.is_none() {
        "; --idle-gap-cap shortens idle time"
    } else {
        ""
    };
    format!(
        "arbor run: about {} planned (the plan's virtual clock, --service {}){hint}",
        about(shape.planned),
        shape.service
    )
}

/// A duration rounded for a person: `12 s`, `3.5 min`, `2.1 h`.
fn about(ns: Nanos) -> String {
    let s = nanos_to_secs(ns);
    if s < 1.0 {
        "1 s".to_string()
    } else if s < 90.0 {
        format!("{s:.0} s")
    } else if s < 90.0 * 60.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_engine::time::NANOS_PER_SEC;

    fn shape(policy: &Policy, cache_bust: bool) -> RunShape<'_> {
        RunShape {
            policy,
            trees: 4,
            planned: 900 * NANOS_PER_SEC,
            service: "recorded",
            cache_bust,
            gaps: 0,
        }
    }

    #[test]
    fn long_replayed_gaps_say_how_to_check_quickly() {
        let policy = Policy::default();
        let long = RunShape {
            gaps: 840 * NANOS_PER_SEC,
            ..shape(&policy, false)
        };
        let lines = before_run(&long);
        assert!(
            lines[1].starts_with("arbor run: 14 min of it is recorded tool and think time"),
            "{lines:?}"
        );
        assert!(
            lines[1].contains("--gap-scale 0.01 --idle-gap-cap 0.25"),
            "{lines:?}"
        );
        let short = RunShape {
            gaps: 30 * NANOS_PER_SEC,
            ..shape(&policy, false)
        };
        assert_eq!(before_run(&short).len(), 1, "half a minute needs no hint");
        assert!(!lines[1].contains("  "), "{lines:?}");
    }

    #[test]
    fn the_planned_duration_comes_first_with_the_cap_hint() {
        let policy = Policy::default();
        let lines = before_run(&shape(&policy, false));
        assert_eq!(
            lines,
            vec![
                "arbor run: about 15 min planned (the plan's virtual clock, --service recorded); \
                 --idle-gap-cap shortens idle time"
            ]
        );
        let capped = Policy {
            idle_gap_cap: Some(NANOS_PER_SEC),
            ..Policy::default()
        };
        assert!(!before_run(&shape(&capped, false))[0].contains("--idle-gap-cap"));
    }

    #[test]
    fn more_sessions_than_trees_warns_of_empty_lanes() {
        let policy = Policy {
            sessions: Some(6),
            ..Policy::default()
        };
        let lines = before_run(&shape(&policy, false));
        assert_eq!(lines.len(), 2);
        assert!(lines[1].contains("--sessions 6"), "{}", lines[1]);
        assert!(lines[1].contains("2 lanes get no tree"), "{}", lines[1]);
        let copies = Policy {
            sessions: Some(6),
            copies: 2,
            ..Policy::default()
        };
        assert_eq!(before_run(&shape(&copies, false)).len(), 1);
    }

    #[test]
    fn loop_without_cache_bust_warns_of_cache_hits() {
        let policy = Policy {
            sessions: Some(2),
            loop_lanes: true,
            ..Policy::default()
        };
        let lines = before_run(&shape(&policy, false));
        assert!(
            lines[1].contains("--loop without --cache-bust"),
            "{lines:?}"
        );
        assert_eq!(before_run(&shape(&policy, true)).len(), 1);
    }

    #[test]
    fn durations_round_for_a_person() {
        assert_eq!(about(12 * NANOS_PER_SEC), "12 s");
        assert_eq!(about(NANOS_PER_SEC / 10), "1 s");
        assert_eq!(about(600 * NANOS_PER_SEC), "10 min");
        assert_eq!(about(3 * 3600 * NANOS_PER_SEC), "3.0 h");
    }
}
