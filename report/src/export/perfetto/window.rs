//! Which records a trace holds, in memory bounded whatever the run's
//! length: every record whose slice starts before a cut, at most
//! [`MAX_TURNS`] of them. A run of at most that many records is held whole
//! (no cut). A longer one keeps the [`MAX_TURNS`] earliest-starting
//! records as they stream by (a heap that gives up its latest start when
//! full) and then the ones that start before the earliest start it gave
//! up: the trace is then the run's first stretch of time, whole (every
//! turn eligible before the cut, and the requests-in-flight counter exact
//! up to it), not a sample.
//!
//! Owns the choice and its count; draws nothing.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::super::records::Record;
use super::event::Micros;
use super::placed::Placed;

/// Turns a trace holds at most: a few hundred megabytes of records while
/// exporting, and about a million events, which the Perfetto UI opens.
pub const MAX_TURNS: usize = 200_000;

/// The records a trace holds, as they stream by.
#[derive(Debug)]
pub struct Window {
    cap: usize,
    held: BinaryHeap<ByStart>,
    /// Records read, of a usable time or not.
    seen: u64,
    /// The earliest start given up so far.
    cut: Option<Micros>,
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

/// A held record, ordered by its start (then by when it was read).
#[derive(Debug)]
struct ByStart {
    start: Micros,
    seq: u64,
    record: Record,
}

impl PartialEq for ByStart {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for ByStart {}
impl PartialOrd for ByStart {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for ByStart {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.start, self.seq).cmp(&(other.start, other.seq))
    }
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
            cap: cap.max(1),
            held: BinaryHeap::new(),
            seen: 0,
            cut: None,
            undrawn: 0,
        }
    }

    /// Takes a record, if it starts early enough.
    pub fn add(&mut self, record: Record) {
        self.seen += 1;
        let Some(start) = Placed::of(&record).map(|p| p.start) else {
            self.undrawn += 1;
            return;
        };
        if self.cut.is_some_and(|cut| start >= cut) {
            return;
        }
        self.held.push(ByStart {
            start,
            seq: self.seen,
            record,
        });
        if self.held.len() > self.cap {
            if let Some(latest) = self.held.pop() {
                self.cut = Some(self.cut.map_or(latest.start, |c| c.min(latest.start)));
            }
        }
    }

    /// The records kept, in the order they were read.
    pub fn finish(self) -> Kept {
        let cut = self.cut;
        let mut held: Vec<ByStart> = self
            .held
            .into_vec()
            .into_iter()
            // A record held before the cut came down to its start.
            .filter(|h| cut.is_none_or(|c| h.start < c))
            .collect();
        held.sort_unstable_by_key(|h| h.seq);
        let records: Vec<Record> = held.into_iter().map(|h| h.record).collect();
        let left_out = self.seen - self.undrawn - records.len() as u64;
        Kept {
            records,
            cut,
            left_out,
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
    fn a_long_run_keeps_exactly_the_records_that_start_before_the_cut() {
        // Records come in no order of start (as they finish); 1,000 of
        // them with starts 0..1000 s shuffled by a fixed stride, and ten
        // that share one start at the edge.
        let mut w = Window::new(100);
        let n = 1_000u64;
        let mut starts = Vec::new();
        for k in 0..n {
            let s = (k * 389) % n;
            starts.push(s);
            w.add(record(k, s as f64));
        }
        for k in 0..10 {
            w.add(record(n + k, 95.0));
        }
        w.add(Record {
            request: 9_999,
            eligible_s: f64::NAN,
            dispatched_s: f64::NAN,
            ..Record::default()
        });
        let kept = w.finish();
        let cut = kept.cut.expect("records were left out");
        assert!(kept.records.len() <= 100, "{}", kept.records.len());
        // Whole before the cut: every record starting before it is there.
        let before = starts
            .iter()
            .filter(|&&s| Micros::round(s * 1_000_000_000) < cut)
            .count()
            + if Micros::round(95_000_000_000) < cut {
                10
            } else {
                0
            };
        assert_eq!(kept.records.len(), before);
        assert!(kept
            .records
            .iter()
            .all(|r| Micros::round((r.eligible_s * 1e9) as u64) < cut));
        assert_eq!(kept.undrawn, 1);
        assert_eq!(
            kept.left_out + kept.records.len() as u64,
            n + 10,
            "every record with a time is kept or counted left out"
        );
        // The ties at 95 s: all in or all out, never split.
        let ties = kept.records.iter().filter(|r| r.eligible_s == 95.0).count();
        assert!(ties == 0 || ties == 11, "{ties}");
    }
}
