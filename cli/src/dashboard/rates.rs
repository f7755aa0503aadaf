//! Requests and output tokens per second over the last few seconds, from
//! samples of the run's counters taken at each redraw.
//!
//! Owns the window ([`WINDOW`]) and how a rate is worked out when the
//! records read are a sample of those done (the output tokens per record
//! read, times the requests done). Pure: time is passed in.

use std::collections::VecDeque;

use arbor::engine::time::{nanos_to_secs, Nanos, NANOS_PER_SEC};

/// The stretch the live rates are taken over.
pub const WINDOW: Nanos = 5 * NANOS_PER_SEC;

/// The counters at one redraw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sample {
    /// Since the clock started.
    pub at: Nanos,
    /// Requests done (the driver's counter: every one).
    pub done: u64,
    /// Records read, and the output tokens of the ok ones among them.
    pub records: u64,
    pub output_tokens: u64,
}

/// Rates over `over`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    pub requests_per_s: f64,
    pub output_tokens_per_s: f64,
    pub over: Nanos,
    /// The tokens are scaled from a sample of the records (the display
    /// did not read them all).
    pub estimated: bool,
}

/// The samples of the last [`WINDOW`] (and the first, for the whole
/// run's rates).
#[derive(Debug, Clone, Default)]
pub struct Samples {
    first: Sample,
    recent: VecDeque<Sample>,
}

impl Samples {
    /// Samples starting at the clock's start, with nothing done.
    pub fn new() -> Samples {
        Samples::default()
    }

    /// One more sample; those older than the window (but the newest of
    /// them, where the window starts) are let go.
    pub fn push(&mut self, sample: Sample) {
        self.recent.push_back(sample);
        while self.recent.len() > 2
            && self
                .recent
                .get(1)
                .is_some_and(|s| s.at.saturating_add(WINDOW) <= sample.at)
        {
            self.recent.pop_front();
        }
    }

    /// The rates over the last [`WINDOW`] or so (from the clock's start
    /// while the run is younger). `sampled`: the records read are a sample
    /// of those done.
    pub fn recent(&self, sampled: bool) -> Option<Rates> {
        let newest = self.recent.back()?;
        let oldest = match self.recent.front() {
            Some(s) if s.at.saturating_add(WINDOW) <= newest.at => *s,
            _ => self.first,
        };
        between(&oldest, newest, sampled)
    }

    /// The rates over the whole run so far.
    pub fn whole(&self, sampled: bool) -> Option<Rates> {
        between(&self.first, self.recent.back()?, sampled)
    }
}

/// The rates from `earlier` to `later`; `None` over no time.
pub fn between(earlier: &Sample, later: &Sample, sampled: bool) -> Option<Rates> {
    let over = later.at.checked_sub(earlier.at).filter(|&ns| ns > 0)?;
    let seconds = nanos_to_secs(over);
    let done = later.done.saturating_sub(earlier.done) as f64;
    let records = later.records.saturating_sub(earlier.records) as f64;
    let tokens = later.output_tokens.saturating_sub(earlier.output_tokens) as f64;
    let output_tokens = if sampled && records > 0.0 {
        tokens / records * done
    } else {
        tokens
    };
    Some(Rates {
        requests_per_s: done / seconds,
        output_tokens_per_s: output_tokens / seconds,
        over,
        estimated: sampled,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = NANOS_PER_SEC;

    fn at(seconds: u64, done: u64, tokens: u64) -> Sample {
        Sample {
            at: seconds * S,
            done,
            records: done,
            output_tokens: tokens,
        }
    }

    #[test]
    fn rates_are_over_the_last_five_seconds_once_the_run_is_older() {
        let mut samples = Samples::new();
        samples.push(at(1, 100, 1_000));
        // Younger than the window: from the start.
        let r = samples.recent(false).unwrap();
        assert_eq!(
            (r.requests_per_s, r.output_tokens_per_s, r.over),
            (100.0, 1_000.0, S)
        );
        for s in 2..=10 {
            samples.push(at(s, 100 * s + 10 * s * s, 1_000 * s));
        }
        // From 5 s (350 done) to 10 s (2000 done): 330 requests/s.
        let r = samples.recent(false).unwrap();
        assert_eq!(r.over, 5 * S);
        assert_eq!(r.requests_per_s, (2_000.0 - 750.0) / 5.0);
        assert_eq!(r.output_tokens_per_s, 1_000.0);
        let whole = samples.whole(false).unwrap();
        assert_eq!((whole.requests_per_s, whole.over), (200.0, 10 * S));
    }

    #[test]
    fn a_sample_of_the_records_scales_the_tokens_to_the_requests_done() {
        let later = Sample {
            at: 2 * S,
            done: 1_000,
            records: 100,
            output_tokens: 1_600,
        };
        let r = between(&Sample::default(), &later, true).unwrap();
        // 16 tokens a record read, 1000 done in 2 s.
        assert_eq!(r.output_tokens_per_s, 8_000.0);
        assert!(r.estimated);
        assert_eq!(between(&later, &later, false), None);
    }
}
