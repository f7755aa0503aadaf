//! Whether a run's connections fit the process's file-descriptor limit,
//! checked before anything is sent: every request in flight holds a
//! connection (a descriptor), and the built-in emulator's end of each one
//! is a second descriptor in the same process. A run that cannot fit is
//! refused with the numbers (exit 2); one that comes close gets a warning.
//!
//! Owns that arithmetic and its words; raising the limit is
//! `crate::runtime::raise_fd_limit`'s.

use crate::runtime::FdLimit;
use arbor_error::Error;

/// Descriptors kept for everything but connections: stdio, the output
/// files, the runtime's epoll and wake-up pipes, the metrics scraper, a
/// tokenizer, the emulator's listener.
pub const FD_MARGIN: u64 = 64;

/// What a run needs: its planned peak of requests in flight, and whether
/// the built-in emulator serves it in the same process.
#[derive(Debug, Clone, Copy)]
pub struct FdNeed {
    pub peak_inflight: u64,
    pub emulator: bool,
}

impl FdNeed {
    /// Descriptors per request in flight.
    fn per_request(&self) -> u64 {
        if self.emulator {
            2
        } else {
            1
        }
    }

    /// Descriptors the run needs at its planned peak.
    pub fn total(&self) -> u64 {
        self.peak_inflight
            .saturating_mul(self.per_request())
            .saturating_add(FD_MARGIN)
    }

    /// The most requests in flight `limit` descriptors carry.
    fn fits(&self, limit: u64) -> u64 {
        limit.saturating_sub(FD_MARGIN) / self.per_request()
    }

    fn breakdown(&self) -> String {
        let emulator = if self.emulator {
            format!(
                ", {} for the built-in emulator's ends of them",
                self.peak_inflight
            )
        } else {
            String::new()
        };
        format!(
            "{} connections{emulator}, {FD_MARGIN} for files and the rest",
            self.peak_inflight
        )
    }
}

/// `Err` (exit 2) when the run needs more descriptors than `limit`;
/// `Ok(Some(warning))` when it needs more than three quarters of them;
/// `Ok(None)` otherwise, or when the limit is unknown.
pub fn check(need: FdNeed, limit: Option<FdLimit>) -> Result<Option<String>, Error> {
    let Some(limit) = limit else {
        return Ok(None);
    };
    let total = need.total();
    if total > limit.soft {
        let fits = need.fits(limit.soft);
        let or_cap = if fits > 0 {
            format!(", or cap the requests in flight with --max-inflight {fits} or fewer sessions")
        } else {
            String::new()
        };
        return Err(Error::input(format!(
            "the plan's peak of {} requests in flight needs about {total} file descriptors ({}), \
             but this process may open {} (RLIMIT_NOFILE; hard limit {}): raise the limit \
             (`ulimit -n {}` in the shell, or the hard limit of your system or container){or_cap}",
            need.peak_inflight,
            need.breakdown(),
            limit.soft,
            limit.hard,
            total.next_power_of_two().max(1024),
        )));
    }
    if total.saturating_mul(4) > limit.soft.saturating_mul(3) {
        return Ok(Some(format!(
            "warning: the plan's peak of {} requests in flight needs about {total} of the {} file \
             descriptors this process may open ({}); a server slower than planned keeps more in \
             flight, and a request that finds none left fails with error class `client`",
            need.peak_inflight,
            limit.soft,
            need.breakdown(),
        )));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(soft: u64) -> Option<FdLimit> {
        Some(FdLimit { soft, hard: soft })
    }

    #[test]
    fn a_peak_that_cannot_fit_is_refused_with_the_numbers() {
        let need = FdNeed {
            peak_inflight: 200,
            emulator: true,
        };
        assert_eq!(need.total(), 464);
        let refused = check(need, limit(256)).err().unwrap();
        assert!(refused.is_input());
        for number in [
            "200 requests",
            "464 file descriptors",
            "may open 256",
            "--max-inflight 96",
        ] {
            assert!(
                refused.message.contains(number),
                "{number}: {}",
                refused.message
            );
        }
        let close = check(need, limit(500)).unwrap().unwrap();
        assert!(
            close.starts_with("warning:") && close.contains("464 of the 500"),
            "{close}"
        );
        assert_eq!(check(need, limit(1 << 20)).unwrap(), None);
        assert_eq!(check(need, None).unwrap(), None);
        let against_a_server = FdNeed {
            peak_inflight: 200,
            emulator: false,
        };
        assert_eq!(against_a_server.total(), 264);
        assert!(check(against_a_server, limit(256)).is_err());
        let hopeless = check(against_a_server, limit(64)).err().unwrap();
        assert!(
            !hopeless.message.contains("--max-inflight"),
            "{}",
            hopeless.message
        );
    }
}
