//! The problem tally every reader keeps: what it adjusted, estimated or
//! found odd, as [`Problem`]s for `arbor inspect`.
//!
//! A [`Tally`] counts one kind of problem in one file. Problems with a
//! place of their own (a row) are listed one by one up to [`PROBLEM_CAP`],
//! then only counted; kinds that concern the whole file are reported once,
//! with their count, by [`Tally::report`].

use crate::input::Problem;

/// Problems of one kind listed one by one before the rest are only counted.
pub(super) const PROBLEM_CAP: usize = 20;

/// One kind of problem in one file.
#[derive(Debug, Default)]
pub(super) struct Tally {
    count: usize,
}

impl Tally {
    /// Counts `n` more, listing none.
    pub(super) fn add(&mut self, n: usize) {
        self.count += n;
    }

    pub(super) fn count(&self) -> usize {
        self.count
    }

    /// Counts one more, listing it (with its place) while fewer than
    /// [`PROBLEM_CAP`] are listed.
    pub(super) fn note(&mut self, out: &mut Vec<Problem>, place: String, message: String) {
        self.count += 1;
        if self.count <= PROBLEM_CAP {
            out.push(Problem { place, message });
        }
    }

    /// After [`Tally::note`]s: the count of those not listed, if any
    /// (`what` finishes "N more rows ...").
    pub(super) fn report_unlisted(&self, out: &mut Vec<Problem>, file: &str, what: &str) {
        if self.count > PROBLEM_CAP {
            out.push(Problem {
                place: file.to_string(),
                message: format!(
                    "{} more rows {what} (only the first {PROBLEM_CAP} are listed)",
                    self.count - PROBLEM_CAP
                ),
            });
        }
    }

    /// After [`Tally::add`]s: one problem for the whole file, worded by
    /// `message` from the count, if there were any.
    pub(super) fn report(
        &self,
        out: &mut Vec<Problem>,
        file: &str,
        message: impl FnOnce(usize) -> String,
    ) {
        if self.count > 0 {
            out.push(Problem {
                place: file.to_string(),
                message: message(self.count),
            });
        }
    }
}
