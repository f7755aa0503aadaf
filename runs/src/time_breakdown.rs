//! "Where the time goes": the makespan's breakdown into classes
//! ([`arbor_engine::breakdown`], which defines it) as the reports show it:
//! the `time_breakdown` field of `plan --json`, of a run's `end.json` and
//! `summary.json` (the observed critical path) and of its `planned.json`
//! (the plan's), the flag that scales each class, and the short table the
//! consoles print. Computes nothing itself.
//!
//! # Shares that add up
//! The idle caps (`--idle-gap-cap`, `--tree-idle-cap`) cut recorded gaps,
//! so `idle_skipped` is negative and the other classes can sum to several
//! times the makespan. A share is therefore of the *replayed path*: the
//! critical path's time before the caps' cut (every class but
//! `idle_skipped`). The positive classes' shares sum to 100 %; the caps'
//! saving is its own row, the negative fraction of the replayed path they
//! cut (replayed path + saving = makespan).

use std::io::{self, Write};

use arbor_engine::breakdown::{Breakdown, TimeClass};
use arbor_engine::policy::GapClass;
use arbor_engine::time::nanos_to_secs;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The flags that scale `class` (the flag a user reaches for to shorten
/// it).
pub fn scaled_by(class: TimeClass) -> &'static str {
    match class {
        TimeClass::Service => "--service (plan); the server (run)",
        TimeClass::Queue => "--max-inflight",
        TimeClass::Gap(GapClass::Tool) => "--tool-time, --gap-scale",
        TimeClass::Gap(GapClass::Think) => "--think-time-pct, --gap-scale",
        TimeClass::Gap(GapClass::Other) => "--other-time, --gap-scale",
        TimeClass::Gap(GapClass::Spawn) => "--spawn-time, --gap-scale",
        TimeClass::Gap(GapClass::Join) => "--join-time, --gap-scale",
        TimeClass::Gap(GapClass::Concurrent) => "--gap-scale",
        TimeClass::Arrival => "--arrival, --stagger",
        TimeClass::IdleSkipped => "--idle-gap-cap, --tree-idle-cap",
    }
}

/// The class the idle caps' saving is reported under.
pub const IDLE_SKIPPED: &str = "idle_skipped";

/// One class of the makespan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimeShare {
    pub class: String,
    /// Nanoseconds (signed: `idle_skipped` is never positive); the
    /// classes' `ns` sum to `makespan_ns` exactly.
    pub ns: i64,
    pub s: f64,
    /// Fraction of the replayed path (`replayed_ns`): the other classes'
    /// shares sum to 1; `idle_skipped`'s is the negative fraction the idle
    /// caps cut. 0 when the path has no time.
    pub share: f64,
    pub scaled_by: String,
}

/// The breakdown as the reports show it (`time_breakdown`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimeBreakdown {
    pub makespan_ns: u64,
    /// The critical path's time before the idle caps cut it: every class
    /// but `idle_skipped` (`makespan_ns` minus that class's `ns`).
    #[serde(default)]
    pub replayed_ns: u64,
    /// Requests on the critical path the classes were read from.
    pub path_requests: u64,
    /// Every class, in a fixed order (service, queue, tool, think, other,
    /// spawn, join, concurrent, arrival, idle_skipped).
    pub classes: Vec<TimeShare>,
}

/// A run's `time_breakdown` in `summary.json`: its observed critical path
/// beside its plan's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunTimeBreakdown {
    /// The run's critical path on its own clock: `service` is the server's
    /// time, `queue` the wait for `--max-inflight` and the driver's lag.
    pub observed: TimeBreakdown,
    /// The plan's, on the virtual clock under its `--service` (absent in
    /// runs of older arbors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned: Option<TimeBreakdown>,
}

impl From<&Breakdown> for TimeBreakdown {
    fn from(b: &Breakdown) -> Self {
        let replayed: i64 = b
            .iter()
            .filter(|(class, _)| *class != TimeClass::IdleSkipped)
            .map(|(_, ns)| ns)
            .sum();
        let classes = b
            .iter()
            .map(|(class, ns)| TimeShare {
                class: class.as_str().to_string(),
                ns,
                s: ns as f64 / 1e9,
                share: if replayed <= 0 {
                    0.0
                } else {
                    ns as f64 / replayed as f64
                },
                scaled_by: scaled_by(class).to_string(),
            })
            .collect();
        TimeBreakdown {
            makespan_ns: b.makespan,
            replayed_ns: u64::try_from(replayed).unwrap_or(0),
            path_requests: b.path_requests,
            classes,
        }
    }
}

impl TimeBreakdown {
    /// Nanoseconds of replayed gaps on the path (tool, think, other,
    /// spawn, join, concurrent) less what the idle caps cut: the time a
    /// run spends waiting as the agents did.
    pub fn replayed_gaps(&self) -> u64 {
        let gap = |name: &str| {
            TimeClass::ALL.iter().any(|c| {
                matches!(c, TimeClass::Gap(_) | TimeClass::IdleSkipped) && c.as_str() == name
            })
        };
        let ns: i64 = self
            .classes
            .iter()
            .filter(|c| gap(&c.class))
            .map(|c| c.ns)
            .sum();
        u64::try_from(ns).unwrap_or(0)
    }

    /// The caps' saving (≤ 0 ns), when they cut anything.
    pub fn skipped(&self) -> Option<&TimeShare> {
        self.classes
            .iter()
            .find(|c| c.class == IDLE_SKIPPED && c.ns != 0)
    }

    /// The short table under `title` (e.g. "where the time goes"): one row
    /// per class with time, its share of the replayed path and its flag;
    /// classes with no time are left out; the caps' saving last, on a row
    /// of its own that says what it is.
    pub fn print_human(&self, title: &str, out: &mut impl Write) -> io::Result<()> {
        writeln!(
            out,
            "  {title} ({:.3} s makespan along its critical path of {} requests)",
            nanos_to_secs(self.makespan_ns),
            self.path_requests
        )?;
        let shown: Vec<&TimeShare> = self
            .classes
            .iter()
            .filter(|c| c.ns != 0 && c.class != IDLE_SKIPPED)
            .collect();
        if shown.is_empty() {
            return writeln!(out, "    (no time)");
        }
        writeln!(
            out,
            "    {:<13} {:>12} {:>7}  scaled by",
            "class", "time", "share"
        )?;
        for c in shown {
            writeln!(
                out,
                "    {:<13} {:>10.3} s {:>6.1}%  {}",
                c.class,
                c.s,
                c.share * 100.0,
                c.scaled_by
            )?;
        }
        if let Some(cut) = self.skipped() {
            writeln!(
                out,
                "    {:<13} {:>10.3} s {:>6.1}%  (the path as replayed: the classes above)",
                "replayed",
                nanos_to_secs(self.replayed_ns),
                100.0
            )?;
            writeln!(
                out,
                "    {:<13} {:>10.3} s          cut by {}: the makespan is {:.3} s",
                "caps saved",
                cut.s,
                cut.scaled_by,
                nanos_to_secs(self.makespan_ns)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_names_a_flag() {
        for class in TimeClass::ALL {
            assert!(scaled_by(class).contains("--"), "{class:?}");
        }
    }

    #[test]
    fn the_caps_class_is_the_engines() {
        assert_eq!(IDLE_SKIPPED, TimeClass::IdleSkipped.as_str());
    }

    #[test]
    fn replayed_gaps_are_the_gap_classes_less_the_caps_cut() {
        let share = |class: &str, ns: i64| TimeShare {
            class: class.to_string(),
            ns,
            s: ns as f64 / 1e9,
            share: 0.0,
            scaled_by: String::new(),
        };
        let b = TimeBreakdown {
            makespan_ns: 70,
            replayed_ns: 100,
            path_requests: 2,
            classes: vec![
                share("service", 20),
                share("queue", 5),
                share("tool", 60),
                share("think", 10),
                share("arrival", 5),
                share(IDLE_SKIPPED, -30),
            ],
        };
        assert_eq!(b.replayed_gaps(), 40, "tool + think - the cut");
    }

    #[test]
    fn an_empty_breakdown_prints_no_time() {
        let t = TimeBreakdown::from(&Breakdown::default());
        assert_eq!(t.classes.len(), TimeClass::ALL.len());
        assert!(t.classes.iter().all(|c| c.share == 0.0));
        let mut out = Vec::new();
        t.print_human("where the time goes", &mut out).unwrap();
        assert!(String::from_utf8(out).unwrap().contains("(no time)"));
    }
}
