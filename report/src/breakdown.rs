//! "Where the time goes": the makespan's breakdown into classes
//! ([`arbor_engine::breakdown`], which defines it) as reports show it: the
//! JSON field of `plan --json`, the flag that scales each class, and the
//! short table `arbor plan` prints. Computes nothing itself.

use std::io::{self, Write};

use arbor_engine::breakdown::{Breakdown, TimeClass};
use arbor_engine::policy::GapClass;
use arbor_engine::time::nanos_to_secs;
use schemars::JsonSchema;
use serde::Serialize;

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

/// One class of the makespan.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TimeShare {
    pub class: &'static str,
    /// Nanoseconds (signed: `idle_skipped` is never positive); the
    /// classes' `ns` sum to `makespan_ns` exactly.
    pub ns: i64,
    pub s: f64,
    /// Fraction of the makespan (0 when the makespan is 0).
    pub share: f64,
    pub scaled_by: &'static str,
}

/// The breakdown as `plan --json` shows it (`time_breakdown`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TimeBreakdown {
    pub makespan_ns: u64,
    /// Requests on the critical path the classes were read from.
    pub path_requests: u64,
    /// Every class, in a fixed order (service, queue, tool, think, other,
    /// spawn, join, concurrent, arrival, idle_skipped).
    pub classes: Vec<TimeShare>,
}

impl From<&Breakdown> for TimeBreakdown {
    fn from(b: &Breakdown) -> Self {
        let classes = b
            .iter()
            .map(|(class, ns)| TimeShare {
                class: class.as_str(),
                ns,
                s: ns as f64 / 1e9,
                share: if b.makespan == 0 {
                    0.0
                } else {
                    ns as f64 / b.makespan as f64
                },
                scaled_by: scaled_by(class),
            })
            .collect();
        TimeBreakdown {
            makespan_ns: b.makespan,
            path_requests: b.path_requests,
            classes,
        }
    }
}

impl TimeBreakdown {
    /// The short table: one row per class with time, its share and its
    /// flag; classes with no time are left out.
    pub fn print_human(&self, out: &mut impl Write) -> io::Result<()> {
        writeln!(
            out,
            "  where the time goes ({:.3} s makespan along its critical path of {} requests)",
            nanos_to_secs(self.makespan_ns),
            self.path_requests
        )?;
        let shown: Vec<&TimeShare> = self.classes.iter().filter(|c| c.ns != 0).collect();
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
    fn an_empty_breakdown_prints_no_time() {
        let t = TimeBreakdown::from(&Breakdown::default());
        assert_eq!(t.classes.len(), TimeClass::ALL.len());
        assert!(t.classes.iter().all(|c| c.share == 0.0));
        let mut out = Vec::new();
        t.print_human(&mut out).unwrap();
        assert!(String::from_utf8(out).unwrap().contains("(no time)"));
    }
}
