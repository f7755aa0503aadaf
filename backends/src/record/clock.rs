//! The recorder's clock: monotonic nanoseconds anchored once to UTC, so
//! every stamp of a capture is a unix time and differences between stamps
//! are exact monotonic intervals (a wall-clock step during a recording
//! changes nothing).

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Unix nanoseconds read off a monotonic clock.
#[derive(Debug, Clone, Copy)]
pub struct UtcClock {
    /// Unix nanoseconds at `instant`.
    unix_ns: u64,
    instant: Instant,
}

impl UtcClock {
    /// Anchors the monotonic clock to the system's UTC time now.
    pub fn anchored_now() -> UtcClock {
        let instant = Instant::now();
        let unix_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        UtcClock { unix_ns, instant }
    }

    /// Unix nanoseconds now.
    pub fn now_ns(&self) -> u64 {
        let since = u64::try_from(self.instant.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.unix_ns.saturating_add(since)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_unix_times_that_never_go_back() {
        let clock = UtcClock::anchored_now();
        let a = clock.now_ns();
        let b = clock.now_ns();
        assert!(b >= a);
        // After 2020 and before 2286.
        assert!(a > 1_577_836_800_000_000_000 && a < 10_000_000_000_000_000_000);
    }
}
