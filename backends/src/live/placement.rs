//! Placement: which of several endpoints (replicas, no router between)
//! a request goes to (`--endpoint` repeated, `--placement`,
//! docs/routing.md).
//!
//! Owns the rules ([`Placement`]) and the state they need: the requests in
//! flight on each replica and the round-robin turn ([`Load`], atomic,
//! shared by every loop of the process, `--threads`), and one loop's
//! [`Placer`] (its seeded random stream). `sticky` places a conversation:
//! every request of a play's root agent and of its subagents on the
//! replica a stable hash of the root agent's key picks
//! ([`agent_key_hash`]; the caller names the root); `round-robin`,
//! `least-loaded` and
//! `random` place each request, as a stateless router does, which is what
//! sets them apart from `sticky`.
//!
//! Must not: know about sessions' headers (`routing`) or connections (each
//! replica's `Target` has its own pool).

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rand::RngCore;
use rand_pcg::Pcg64;

/// How requests are spread over several endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Placement {
    /// Each conversation (agent key) on one replica: a stable hash of the
    /// key, modulo the replicas.
    #[default]
    Sticky,
    /// Each request on the next replica in turn.
    RoundRobin,
    /// Each request on the replica with the fewest requests in flight (a
    /// tie goes to the first from a turning start).
    LeastLoaded,
    /// Each request on a replica drawn from a seeded stream.
    Random,
}

impl Placement {
    pub fn name(self) -> &'static str {
        match self {
            Placement::Sticky => "sticky",
            Placement::RoundRobin => "round-robin",
            Placement::LeastLoaded => "least-loaded",
            Placement::Random => "random",
        }
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Placement {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "sticky" => Ok(Placement::Sticky),
            "round-robin" => Ok(Placement::RoundRobin),
            "least-loaded" => Ok(Placement::LeastLoaded),
            "random" => Ok(Placement::Random),
            _ => Err(format!(
                "`{text}` is not a placement: sticky, round-robin, least-loaded or random"
            )),
        }
    }
}

/// What every loop of the process shares about the replicas.
#[derive(Debug)]
pub struct Load {
    /// Requests dispatched and not yet done, per replica.
    inflight: Vec<AtomicU64>,
    /// The next turn of `round-robin` (and the start of a tie's search).
    turn: AtomicU64,
}

impl Load {
    pub fn new(replicas: usize) -> Arc<Load> {
        Arc::new(Load {
            inflight: (0..replicas.max(1)).map(|_| AtomicU64::new(0)).collect(),
            turn: AtomicU64::new(0),
        })
    }

    pub fn replicas(&self) -> usize {
        self.inflight.len()
    }

    /// Requests in flight on `replica`.
    pub fn inflight(&self, replica: usize) -> u64 {
        self.inflight
            .get(replica)
            .map_or(0, |n| n.load(Ordering::Relaxed))
    }

    /// A request placed on `replica` is done.
    pub fn done(&self, replica: usize) {
        if let Some(n) = self.inflight.get(replica) {
            let _ = n.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| v.checked_sub(1));
        }
    }

    fn next_turn(&self) -> usize {
        (self.turn.fetch_add(1, Ordering::Relaxed) % self.inflight.len() as u64) as usize
    }
}

/// One loop's placer: the rule, the shared load, its own random stream.
#[derive(Debug)]
pub struct Placer {
    placement: Placement,
    load: Arc<Load>,
    rng: Pcg64,
}

impl Placer {
    /// `rng`: this loop's stream (`Purpose::Placement` of the run's seed,
    /// one stream a loop).
    pub fn new(placement: Placement, load: Arc<Load>, rng: Pcg64) -> Placer {
        Placer {
            placement,
            load,
            rng,
        }
    }

    pub fn load(&self) -> &Arc<Load> {
        &self.load
    }

    /// The replica of a request whose conversation's key hashes to
    /// `key_hash` ([`stable_hash`]), counted in flight there.
    pub fn place(&mut self, key_hash: u64) -> usize {
        let n = self.load.replicas();
        let replica = if n == 1 {
            0
        } else {
            match self.placement {
                Placement::Sticky => (key_hash % n as u64) as usize,
                Placement::RoundRobin => self.load.next_turn(),
                Placement::Random => (self.rng.next_u64() % n as u64) as usize,
                Placement::LeastLoaded => {
                    let start = self.load.next_turn();
                    (0..n)
                        .map(|i| (start + i) % n)
                        .min_by_key(|&r| self.load.inflight(r))
                        .unwrap_or(0)
                }
            }
        };
        self.load.inflight[replica].fetch_add(1, Ordering::Relaxed);
        replica
    }
}

/// [`stable_hash`] of `agent_key(play, agent)` (`arbor-{play}-{agent}`),
/// written into a buffer on the stack: no allocation per request.
pub fn agent_key_hash(play: u32, agent: u32) -> u64 {
    use std::io::Write;
    // "arbor-" and two u32s of at most 10 digits with a dash: 27 bytes.
    let mut buf = [0u8; 32];
    let mut at = &mut buf[..];
    let _ = write!(at, "arbor-{play}-{agent}");
    let len = 32 - at.len();
    stable_hash(&buf[..len])
}

/// FNV-1a over `bytes`, then mixed: the same on every machine and run.
pub fn stable_hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    // FNV's low bits vary little with a key's last characters: mix them.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::routing::agent_key;

    fn placer(placement: Placement, n: usize) -> Placer {
        Placer::new(placement, Load::new(n), Pcg64::new(1, 3))
    }

    #[test]
    fn the_key_hash_is_the_hash_of_the_key() {
        for (play, agent) in [(0, 0), (7, 3), (u32::MAX, u32::MAX)] {
            assert_eq!(
                agent_key_hash(play, agent),
                stable_hash(agent_key(play, agent).as_bytes())
            );
        }
    }

    #[test]
    fn placements_parse_and_print_back() {
        for name in ["sticky", "round-robin", "least-loaded", "random"] {
            assert_eq!(name.parse::<Placement>().unwrap().name(), name);
        }
        assert!("hash".parse::<Placement>().unwrap_err().contains("sticky"));
    }

    #[test]
    fn sticky_keeps_a_key_and_spreads_keys() {
        let mut p = placer(Placement::Sticky, 3);
        let mut used = [0usize; 3];
        for play in 0..60 {
            let key = stable_hash(agent_key(play, 0).as_bytes());
            let first = p.place(key);
            assert_eq!(p.place(key), first);
            used[first] += 1;
        }
        assert!(used.iter().all(|&n| n >= 10), "{used:?}");
    }

    #[test]
    fn round_robin_cycles_and_least_loaded_fills_the_emptiest() {
        let mut p = placer(Placement::RoundRobin, 3);
        let got: Vec<usize> = (0..6).map(|_| p.place(0)).collect();
        assert_eq!(got, [0, 1, 2, 0, 1, 2]);

        let mut p = placer(Placement::LeastLoaded, 3);
        let a = p.place(0);
        let b = p.place(0);
        let c = p.place(0);
        let mut all = vec![a, b, c];
        all.sort_unstable();
        assert_eq!(all, [0, 1, 2], "one each while all are busy");
        p.load().done(b);
        assert_eq!(p.place(0), b, "the one that finished");
    }

    #[test]
    fn random_is_seeded_and_spreads() {
        let draw = || -> Vec<usize> {
            let mut p = placer(Placement::Random, 3);
            (0..300).map(|_| p.place(0)).collect()
        };
        let got = draw();
        assert_eq!(got, draw());
        for r in 0..3 {
            assert!(got.iter().filter(|&&x| x == r).count() > 60);
        }
    }
}
