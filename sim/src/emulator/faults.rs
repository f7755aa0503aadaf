//! Deterministic fault decisions: a fault fires on request `seq` when a
//! seeded hash of `(seed, kind, seq)` maps below its rate.

use super::config::{EmulatorConfig, FailStatus};
use arbor_engine::time::Nanos;

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[derive(Debug, Clone, Copy)]
#[repr(u64)]
enum Kind {
    Fail = 1,
    Disconnect = 2,
    Stall = 3,
    Malformed = 4,
}

fn fires(seed: u64, seq: u64, kind: Kind, rate: f64) -> bool {
    if rate <= 0.0 {
        return false;
    }
    if rate >= 1.0 {
        return true;
    }
    let h = splitmix64(splitmix64(seed ^ (kind as u64).wrapping_mul(0xa076_1d64_78bd_642f)) ^ seq);
    ((h >> 11) as f64 / (1u64 << 53) as f64) < rate
}

/// The faults one request gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultPlan {
    pub fail: Option<FailStatus>,
    pub disconnect_after: Option<u32>,
    pub stall: Option<Nanos>,
    pub malformed: bool,
}

impl FaultPlan {
    /// The plan of request number `seq` (0-based, in order of receipt of
    /// completion requests).
    pub fn decide(config: &EmulatorConfig, seq: u64) -> FaultPlan {
        let f = &config.faults;
        let s = config.seed;
        FaultPlan {
            fail: fires(s, seq, Kind::Fail, f.fail_rate).then_some(f.fail_status),
            disconnect_after: fires(s, seq, Kind::Disconnect, f.disconnect_rate)
                .then_some(f.disconnect_after),
            stall: fires(s, seq, Kind::Stall, f.stall_rate).then_some(f.stall),
            malformed: fires(s, seq, Kind::Malformed, f.malformed_rate),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_respected_and_deterministic() {
        let mut c = EmulatorConfig::default();
        c.faults.fail_rate = 0.3;
        c.faults.stall_rate = 0.3;
        c.seed = 42;
        let plans: Vec<FaultPlan> = (0..10_000).map(|i| FaultPlan::decide(&c, i)).collect();
        let fails = plans.iter().filter(|p| p.fail.is_some()).count();
        assert!((2700..3300).contains(&fails), "{fails}");
        // Kinds are independent of each other.
        let both = plans
            .iter()
            .filter(|p| p.fail.is_some() && p.stall.is_some())
            .count();
        assert!((700..1100).contains(&both), "{both}");
        let again: Vec<FaultPlan> = (0..10_000).map(|i| FaultPlan::decide(&c, i)).collect();
        assert_eq!(plans, again);
        c.seed = 43;
        let other: Vec<FaultPlan> = (0..10_000).map(|i| FaultPlan::decide(&c, i)).collect();
        assert_ne!(plans, other);
    }
}
