//! Time in the engine: integer nanoseconds, nothing else.
//!
//! Owns the `Nanos` type and the only conversions between seconds (as found
//! in trace files and on the command line) and nanoseconds. Nothing in the
//! engine's state is ever a float; floats exist only at the edges (parsing
//! input, printing output).

/// A point in time or a span, in nanoseconds. Points are measured from the
/// start of a run (the engine's epoch) or, inside a recording, from the
/// start of the tree.
pub type Nanos = u64;

pub const NANOS_PER_MS: u64 = 1_000_000;
pub const NANOS_PER_SEC: u64 = 1_000_000_000;

/// The largest time a trace may state: about 31 years. Anything above is
/// treated as corrupt input rather than silently saturated.
pub const MAX_SECONDS: f64 = 1.0e9;

/// Converts a non-negative, finite number of seconds to nanoseconds,
/// rounding to the nearest nanosecond. Returns `None` for negative,
/// non-finite or absurdly large values so callers can report the place.
pub fn secs_to_nanos(secs: f64) -> Option<Nanos> {
    if !secs.is_finite() || !(0.0..=MAX_SECONDS).contains(&secs) {
        return None;
    }
    Some((secs * NANOS_PER_SEC as f64).round() as Nanos)
}

/// Converts milliseconds (possibly fractional) to nanoseconds with the same
/// checks as [`secs_to_nanos`].
pub fn millis_to_nanos(ms: f64) -> Option<Nanos> {
    if !ms.is_finite() || !(0.0..=MAX_SECONDS * 1000.0).contains(&ms) {
        return None;
    }
    Some((ms * NANOS_PER_MS as f64).round() as Nanos)
}

/// Nanoseconds to seconds, for output only.
pub fn nanos_to_secs(ns: Nanos) -> f64 {
    ns as f64 / NANOS_PER_SEC as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_round_to_nearest_nanosecond() {
        assert_eq!(secs_to_nanos(1148.013), Some(1_148_013_000_000));
        assert_eq!(secs_to_nanos(0.0), Some(0));
        assert_eq!(secs_to_nanos(-0.5), None);
        assert_eq!(secs_to_nanos(f64::NAN), None);
        assert_eq!(secs_to_nanos(f64::INFINITY), None);
        assert_eq!(secs_to_nanos(2.0e9), None);
        assert_eq!(millis_to_nanos(46656.0), Some(46_656_000_000));
    }
}
