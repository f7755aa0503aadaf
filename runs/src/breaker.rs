//! The circuit breaker of a live run (`--abort-after N`): a run whose
//! last N requests all failed the same way, in a way that says nothing
//! about latency, is stopped rather than left to fail every request to
//! its end. The ways that count ([`Class`]): the connection refused or
//! broken (`connect`), the credentials refused (HTTP 401 or 403), the path
//! or model not found (HTTP 404), the server failing (HTTP 5xx). Timeouts,
//! cut streams, 429 and every other failure are measurements of a loaded
//! server and never trip it; a success, or another way of failing, starts
//! the count again.
//!
//! Owns only the count, in the order records are written; the run stops
//! itself when [`Breaker::observe`] says the breaker tripped.

use std::fmt;

use crate::record::{ErrorCategory, RequestError, RequestRecord};

/// `--abort-after`'s default.
pub const DEFAULT_ABORT_AFTER: u32 = 10;

/// A way of failing that trips the breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Connect,
    /// HTTP 401 or 403.
    Auth,
    /// HTTP 404.
    NotFound,
    /// HTTP 500-599.
    ServerError,
}

impl Class {
    /// The class of a failed request, when it is one that trips the
    /// breaker.
    pub fn of(category: ErrorCategory, status: Option<u16>) -> Option<Class> {
        match (category, status) {
            (ErrorCategory::Connect, _) => Some(Class::Connect),
            (ErrorCategory::HttpStatus, Some(401 | 403)) => Some(Class::Auth),
            (ErrorCategory::HttpStatus, Some(404)) => Some(Class::NotFound),
            (ErrorCategory::HttpStatus, Some(500..=599)) => Some(Class::ServerError),
            _ => None,
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Class::Connect => "connect",
            Class::Auth => "HTTP 401/403",
            Class::NotFound => "HTTP 404",
            Class::ServerError => "HTTP 5xx",
        })
    }
}

/// Why the breaker tripped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trip {
    pub class: Class,
    /// The failures in a row.
    pub count: u32,
    /// The first of them, in the server's (or the client's) words.
    pub first: String,
}

impl Trip {
    /// The trip in words, for the console and the summary's notes.
    pub fn words(&self) -> String {
        format!(
            "stopped after {} requests in a row failed with {} (--abort-after {}; 0 disables it); \
             the first: {}",
            self.count, self.class, self.count, self.first
        )
    }
}

/// Counts failures of one class in a row.
#[derive(Debug, Clone, Default)]
pub struct Breaker {
    /// Trips at this many in a row; 0 never trips.
    limit: u32,
    streak: Option<(Class, u32, String)>,
    tripped: bool,
}

impl Breaker {
    pub fn new(limit: u32) -> Breaker {
        Breaker {
            limit,
            ..Breaker::default()
        }
    }

    /// Counts `record`; the trip, the first time the breaker trips.
    pub fn observe(&mut self, record: &RequestRecord) -> Option<Trip> {
        if self.limit == 0 || self.tripped {
            return None;
        }
        let class = record
            .error
            .as_ref()
            .and_then(|e| Class::of(e.category, e.http_status.or(record.http_status)));
        let Some(class) = class else {
            self.streak = None;
            return None;
        };
        let count = match &mut self.streak {
            Some((c, n, _)) if *c == class => {
                *n += 1;
                *n
            }
            _ => {
                let first = record
                    .error
                    .as_ref()
                    .map(RequestError::in_words)
                    .unwrap_or_default();
                self.streak = Some((class, 1, first));
                1
            }
        };
        if count < self.limit {
            return None;
        }
        self.tripped = true;
        let first = self
            .streak
            .as_ref()
            .map(|s| s.2.clone())
            .unwrap_or_default();
        Some(Trip {
            class,
            count,
            first,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{RequestIdentity, Response};

    /// A record that succeeded (`None`) or failed with `category` and
    /// `status`.
    fn record(failed: Option<(ErrorCategory, Option<u16>)>) -> RequestRecord {
        let id = RequestIdentity {
            request: 0,
            tree: "t".into(),
            tree_index: 0,
            agent: "a".into(),
            turn: 0,
            copy: 0,
            lane: None,
            play: 0,
            eligible: 0,
            dispatched: 0,
            queue_wait: 0,
            warmup: false,
            planned_input_tokens: 10,
            planned_output_tokens: 4,
            replica: None,
            session_key: None,
        };
        let response = Response {
            http_status: failed.and_then(|(_, s)| s),
            error: failed.map(|(category, status)| RequestError {
                category,
                message: format!("  failed\n with {status:?}  "),
                http_status: status,
                retry_after_s: None,
            }),
            ..Response::default()
        };
        RequestRecord::new(id, &response)
    }

    const HTTP_503: Option<(ErrorCategory, Option<u16>)> =
        Some((ErrorCategory::HttpStatus, Some(503)));

    #[test]
    fn it_trips_at_the_limit_of_one_class_in_a_row_once() {
        let mut breaker = Breaker::new(3);
        assert_eq!(breaker.observe(&record(HTTP_503)), None);
        assert_eq!(
            breaker.observe(&record(Some((ErrorCategory::HttpStatus, Some(500))))),
            None
        );
        let trip = breaker
            .observe(&record(HTTP_503))
            .expect("three 5xx in a row");
        assert_eq!((trip.class, trip.count), (Class::ServerError, 3));
        assert_eq!(trip.first, "HTTP 503: failed with Some(503)");
        assert!(trip
            .words()
            .starts_with("stopped after 3 requests in a row failed with HTTP 5xx"));
        assert_eq!(breaker.observe(&record(HTTP_503)), None, "it trips once");
    }

    #[test]
    fn a_success_or_another_class_starts_the_count_again() {
        let mut breaker = Breaker::new(2);
        for between in [None, Some((ErrorCategory::Connect, None))] {
            assert_eq!(breaker.observe(&record(HTTP_503)), None);
            assert_eq!(breaker.observe(&record(between)), None);
        }
        assert_eq!(breaker.observe(&record(HTTP_503)), None);
        assert!(breaker.observe(&record(HTTP_503)).is_some());
    }

    #[test]
    fn latency_and_load_failures_never_trip_it_and_zero_disables_it() {
        let mut breaker = Breaker::new(1);
        for failed in [
            (ErrorCategory::Timeout, None),
            (ErrorCategory::StreamCut, Some(200)),
            (ErrorCategory::HttpStatus, Some(429)),
            (ErrorCategory::HttpStatus, Some(400)),
            (ErrorCategory::ContextOverflow, Some(400)),
            (ErrorCategory::Overloaded, Some(529)),
            (ErrorCategory::Client, None),
        ] {
            assert_eq!(breaker.observe(&record(Some(failed))), None, "{failed:?}");
        }
        let mut off = Breaker::new(0);
        for _ in 0..100 {
            assert_eq!(off.observe(&record(HTTP_503)), None);
        }
        for (failed, class) in [
            ((ErrorCategory::Connect, None), Class::Connect),
            ((ErrorCategory::HttpStatus, Some(401)), Class::Auth),
            ((ErrorCategory::HttpStatus, Some(403)), Class::Auth),
            ((ErrorCategory::HttpStatus, Some(404)), Class::NotFound),
        ] {
            let trip = Breaker::new(1).observe(&record(Some(failed))).unwrap();
            assert_eq!(trip.class, class);
        }
    }
}
