//! The search for the largest load that passes: bracket the knee, then
//! bisect to the resolution. Pure and deterministic: it sees loads only
//! through the caller's function (which measures and judges a point:
//! [`crate::probe`]) and never probes a value twice. Owns the order of
//! probes, nothing else.
//!
//! - From a start value ([`Start::At`]): probe it; while it passes,
//!   double the load (at least one step more) up to the first failure or
//!   the range's top; if it fails, halve down to the first pass or the
//!   range's bottom.
//! - Around a predicted knee ([`Start::Around`]): probe knee − step, then
//!   knee + step; a miss widens that side (2, 4, 8 ... steps).
//!
//! Then bisection between the largest passing and the smallest failing
//! load until they are at most one step apart.
//!
//! A sweep (`--sweep`) probes every load of the [`grid`] instead; its
//! answer is the [`first_failure`] and the load before it.

use std::collections::BTreeMap;

/// The most loads a sweep plans (each writes a probe directory).
pub const MAX_SWEEP_LOADS: usize = 10_000;

/// Where the search begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    At(u64),
    Around(u64),
}

impl Start {
    /// Where a search starts after a prediction: around the predicted
    /// knee's passing load (its failing one when even the range's bottom
    /// failed), or at `start` without one.
    pub fn after(predicted: Option<Knee>, start: u64) -> Start {
        match predicted {
            Some(knee) => Start::Around(knee.passing.or(knee.failing).unwrap_or(start)),
            None => Start::At(start),
        }
    }
}

/// The range and resolution, in the knob's units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub lo: u64,
    pub hi: u64,
    pub step: u64,
}

/// What the search found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Knee {
    /// The largest load that passed (`None`: even the range's bottom
    /// failed).
    pub passing: Option<u64>,
    /// The smallest load above it that failed (`None`: the range's top
    /// passed).
    pub failing: Option<u64>,
}

/// Runs the search; `probe` runs and judges one load (true: it passes).
/// A probe's error ends the search with it.
pub fn search<E>(
    bounds: Bounds,
    start: Start,
    probe: impl FnMut(u64) -> Result<bool, E>,
) -> Result<Knee, E> {
    let mut walk = Walk {
        bounds: Bounds {
            step: bounds.step.max(1),
            ..bounds
        },
        probe,
        seen: BTreeMap::new(),
    };
    let knee = match start {
        Start::At(value) => walk.from(value.clamp(bounds.lo, bounds.hi))?,
        Start::Around(value) => walk.around(value.clamp(bounds.lo, bounds.hi))?,
    };
    walk.bisect(knee)
}

struct Walk<F> {
    bounds: Bounds,
    probe: F,
    seen: BTreeMap<u64, bool>,
}

impl<E, F: FnMut(u64) -> Result<bool, E>> Walk<F> {
    fn passes(&mut self, value: u64) -> Result<bool, E> {
        if let Some(&pass) = self.seen.get(&value) {
            return Ok(pass);
        }
        let pass = (self.probe)(value)?;
        self.seen.insert(value, pass);
        Ok(pass)
    }

    /// Doubling up from a pass, halving down from a failure.
    fn from(&mut self, start: u64) -> Result<Knee, E> {
        let Bounds { lo, hi, step } = self.bounds;
        if self.passes(start)? {
            let mut pass = start;
            while pass < hi {
                let next = pass.saturating_mul(2).max(pass + step).min(hi);
                if !self.passes(next)? {
                    return Ok(knee(Some(pass), Some(next)));
                }
                pass = next;
            }
            return Ok(knee(Some(pass), None));
        }
        let mut fail = start;
        while fail > lo {
            let next = (fail / 2).max(lo);
            if self.passes(next)? {
                return Ok(knee(Some(next), Some(fail)));
            }
            fail = next;
        }
        Ok(knee(None, Some(fail)))
    }

    /// Knee ± one step, each side widened on a miss.
    fn around(&mut self, center: u64) -> Result<Knee, E> {
        let Bounds { lo, hi, step } = self.bounds;
        let mut fail = None;
        let mut width = step;
        let pass = loop {
            let low = center.saturating_sub(width).max(lo);
            if self.passes(low)? {
                break low;
            }
            fail = Some(low);
            if low == lo {
                return Ok(knee(None, fail));
            }
            width = width.saturating_mul(2);
        };
        if fail.is_some() {
            return Ok(knee(Some(pass), fail));
        }
        let mut pass = pass;
        let mut width = step;
        while pass < hi {
            let high = center.saturating_add(width).min(hi);
            if !self.passes(high)? {
                return Ok(knee(Some(pass), Some(high)));
            }
            pass = high;
            width = width.saturating_mul(2);
        }
        Ok(knee(Some(pass), None))
    }

    /// Halves the gap between a pass and a failure down to one step.
    fn bisect(&mut self, mut found: Knee) -> Result<Knee, E> {
        while let (Some(pass), Some(fail)) = (found.passing, found.failing) {
            if fail <= pass || fail - pass <= self.bounds.step {
                break;
            }
            let middle = pass + (fail - pass) / 2;
            if self.passes(middle)? {
                found.passing = Some(middle);
            } else {
                found.failing = Some(middle);
            }
        }
        Ok(found)
    }
}

/// Every load of the range at the step: lo, lo + step, ... and hi.
pub fn grid(bounds: Bounds) -> Vec<u64> {
    let mut loads = Vec::new();
    let mut load = bounds.lo;
    while load < bounds.hi {
        loads.push(load);
        match load.checked_add(bounds.step.max(1)) {
            Some(next) => load = next,
            None => break,
        }
    }
    if bounds.lo <= bounds.hi {
        loads.push(bounds.hi);
    }
    loads
}

/// A sweep's answer from its loads in order, each with whether it
/// passed: the first failure, and the load before it.
pub fn first_failure(passes: &[(u64, bool)]) -> Knee {
    match passes.iter().position(|&(_, pass)| !pass) {
        Some(0) => knee(None, Some(passes[0].0)),
        Some(at) => knee(Some(passes[at - 1].0), Some(passes[at].0)),
        None => knee(passes.last().map(|&(load, _)| load), None),
    }
}

fn knee(passing: Option<u64>, failing: Option<u64>) -> Knee {
    Knee { passing, failing }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Searches a threshold: loads up to `knee` pass. Returns the answer
    /// and the loads probed, in order.
    fn run(bounds: Bounds, start: Start, threshold: u64) -> (Knee, Vec<u64>) {
        let mut probed = Vec::new();
        let found = search(bounds, start, |v| {
            probed.push(v);
            Ok::<_, ()>(v <= threshold)
        })
        .unwrap();
        (found, probed)
    }

    const B: Bounds = Bounds {
        lo: 1,
        hi: 256,
        step: 1,
    };

    #[test]
    fn doubles_then_bisects_to_the_step() {
        let (found, probed) = run(B, Start::At(1), 24);
        assert_eq!(found, knee(Some(24), Some(25)));
        assert_eq!(probed, [1, 2, 4, 8, 16, 32, 24, 28, 26, 25]);
        for threshold in 1..=256 {
            let (found, probed) = run(B, Start::At(1), threshold);
            assert_eq!(found.passing, Some(threshold));
            let mut unique = probed.clone();
            unique.sort_unstable();
            unique.dedup();
            assert_eq!(unique.len(), probed.len(), "no value twice");
            assert!(probed.len() <= 17, "{threshold}: {probed:?}");
        }
    }

    #[test]
    fn a_sweep_covers_the_grid_and_stops_at_the_first_failure() {
        let b = Bounds {
            lo: 50,
            hi: 1000,
            step: 50,
        };
        let loads = grid(b);
        assert_eq!(loads.len(), 20);
        assert_eq!((loads[0], loads[19]), (50, 1000));
        // An uneven range ends at its top.
        assert_eq!(grid(Bounds { hi: 120, ..b }), [50, 100, 120]);
        assert_eq!(grid(Bounds { hi: 50, ..b }), [50]);
        let judged = |threshold: u64| -> Vec<(u64, bool)> {
            loads.iter().map(|&l| (l, l <= threshold)).collect()
        };
        assert_eq!(first_failure(&judged(20)), knee(None, Some(50)));
        assert_eq!(first_failure(&judged(420)), knee(Some(400), Some(450)));
        assert_eq!(first_failure(&judged(5000)), knee(Some(1000), None));
        // Not monotone: the first failure bounds the answer.
        let mut bumpy = judged(420);
        bumpy[2].1 = false;
        assert_eq!(first_failure(&bumpy), knee(Some(100), Some(150)));
    }

    #[test]
    fn the_range_ends_are_answers_too() {
        assert_eq!(run(B, Start::At(1), 0).0, knee(None, Some(1)));
        assert_eq!(run(B, Start::At(1), 1000).0, knee(Some(256), None));
        // A start above the knee halves down first.
        let (found, probed) = run(B, Start::At(64), 10);
        assert_eq!(found, knee(Some(10), Some(11)));
        assert_eq!(&probed[..3], [64, 32, 16]);
    }

    #[test]
    fn a_search_after_a_prediction_starts_around_its_knee() {
        assert_eq!(Start::after(None, 8), Start::At(8));
        assert_eq!(
            Start::after(Some(knee(Some(24), Some(25))), 8),
            Start::Around(24)
        );
        assert_eq!(Start::after(Some(knee(None, Some(1))), 8), Start::Around(1));
        assert_eq!(Start::after(Some(knee(None, None)), 8), Start::Around(8));
    }

    #[test]
    fn a_good_prediction_costs_three_probes() {
        let (found, probed) = run(B, Start::Around(24), 24);
        assert_eq!(found, knee(Some(24), Some(25)));
        assert_eq!(probed, [23, 25, 24]);
        // Predicted too high: the low side widens.
        let (found, probed) = run(B, Start::Around(40), 24);
        assert_eq!(found, knee(Some(24), Some(25)));
        assert_eq!(&probed[..4], [39, 38, 36, 32]);
        // Predicted too low: the high side widens.
        let (found, _) = run(B, Start::Around(10), 24);
        assert_eq!(found, knee(Some(24), Some(25)));
        let coarse = Bounds { step: 4, ..B };
        let (found, _) = run(coarse, Start::Around(20), 24);
        assert!(found.failing.unwrap() - found.passing.unwrap() <= 4);
    }
}
