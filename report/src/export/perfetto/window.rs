//! Which records a trace holds, in memory bounded whatever the run's
//! length: every record whose slice starts before a cut, at most
//! [`MAX_TURNS`] of them, by `arbor_runs::earliest`'s rule. A run of at
//! most that many records is held whole; a longer one's trace is its
//! first stretch of time, whole (every turn eligible before the cut, and
//! the requests-in-flight counter exact up to it), not a sample.
//!
//! Owns the trace's cap and what has no place in time; draws nothing.

use arbor_runs::earliest::Earliest;

use super::super::records::Record;
use super::event::Micros;
use super::placed::Placed;

/// Turns a trace holds at most: a few hundred megabytes of records while
/// exporting, and about a million events, which the Perfetto UI opens.
pub const MAX_TURNS: usize = 200_000;

/// The records a trace holds, as they stream by.
#[derive(Debug)]
pub struct Window {
    earliest: Earliest<Record>,
    /// Records with no usable time (never drawn).
    undrawn: u64,
}

/// What a window kept.
#[derive(Debug)]
pub struct Kept {
    /// The records, in the order they were read.
    pub records: Vec<Record>,
    /// `Some` when records were left out: the trace holds exactly the
    /// records whose slice starts before it.
    pub cut: Option<Micros>,
    /// Records left out (starting at or after the cut).
    pub left_out: u64,
    /// Records with no usable time.
    pub undrawn: u64,
}

impl Default for Window {
    fn default() -> Window {
        Window::new(MAX_TURNS)
    }
}

impl Window {
    /// A window of at most `cap` records.
    pub fn new(cap: usize) -> Window {
        Window {
            earliest: Earliest::new(cap),
            undrawn: 0,
        }
    }

    /// Takes a record, if it starts early enough.
    pub fn add(&mut self, record: Record) {
        match Placed::of(&record).map(|p| p.start) {
            Some(start) => self.earliest.add(start.0, record),
            None => self.undrawn += 1,
        }
    }

    /// The records kept, in the order they were read.
    pub fn finish(self) -> Kept {
        let kept = self.earliest.finish();
        Kept {
            records: kept.items,
            cut: kept.cut.map(Micros),
            left_out: kept.left_out,
            undrawn: self.undrawn,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(request: u64, eligible_s: f64) -> Record {
        Record {
            request,
            eligible_s,
            dispatched_s: eligible_s,
            sent_s: Some(eligible_s),
            done_s: Some(eligible_s + 5.0),
            status: "ok".to_string(),
            ..Record::default()
        }
    }

    #[test]
    fn a_short_run_is_held_whole() {
        let mut w = Window::new(10);
        for i in 0..10 {
            w.add(record(i, (10 - i) as f64));
        }
        let kept = w.finish();
        assert_eq!(kept.cut, None);
        assert_eq!(kept.left_out, 0);
        let ids: Vec<u64> = kept.records.iter().map(|r| r.request).collect();
        assert_eq!(ids, (0..10).collect::<Vec<_>>(), "in the order read");
    }

    #[test]
    fn a_long_run_keeps_the_records_that_start_before_the_cut() {
        // Records come in no order of start (as they finish): starts
        // 0..1000 s by a fixed stride, and one with no usable time.
        // The rule itself is arbor_runs::earliest's (tested there).
        let mut w = Window::new(100);
        for k in 0..1_000u64 {
            w.add(record(k, ((k * 389) % 1_000) as f64));
        }
        w.add(Record {
            request: 9_999,
            eligible_s: f64::NAN,
            dispatched_s: f64::NAN,
            ..Record::default()
        });
        let kept = w.finish();
        assert_eq!(kept.cut, Some(Micros(100_000_000_000)), "at 100 s");
        assert_eq!(kept.records.len(), 100);
        assert!(kept.records.iter().all(|r| r.eligible_s < 100.0));
        assert_eq!((kept.left_out, kept.undrawn), (900, 1));
    }
}
