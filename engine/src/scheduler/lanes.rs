//! The closed loop: lanes and their shares of the corpus.
//!
//! Owns which trees each lane plays and in which order ([`deal`], a pure
//! function of the seed), and each lane's progress through its share: the
//! next play, the wrap-around with `--loop`, and when a lane runs dry or
//! stalls. Which trees a lane plays never depends on timing. Starting the
//! play itself, and the start window of a lane's first play, are the core's
//! and the warmup's business.

use rand::Rng;

use crate::policy::Policy;
use crate::rng::{stream, Purpose};
use crate::time::Nanos;

use super::types::Lane;

/// Each lane's share of the corpus (every tree times `copies`, as
/// `(tree, copy)`): the corpus shuffled by a permutation fixed by `seed`
/// alone, then dealt round-robin to `lanes` lanes.
pub(super) fn deal(trees: u32, copies: u32, lanes: u32, seed: u64) -> Vec<Vec<(u32, u32)>> {
    let mut corpus: Vec<(u32, u32)> = (0..copies)
        .flat_map(|copy| (0..trees).map(move |tree| (tree, copy)))
        .collect();
    let mut rng = stream(seed, Purpose::Lanes, 0, 0, 0);
    // Fisher-Yates, written out so the permutation is fixed by the seed
    // alone (no dependence on a library's shuffle algorithm).
    for i in (1..corpus.len()).rev() {
        let j = rng.random_range(0..=i);
        corpus.swap(i, j);
    }
    let mut shares = vec![Vec::new(); lanes as usize];
    for (i, entry) in corpus.into_iter().enumerate() {
        shares[i % lanes as usize].push(entry);
    }
    shares
}

/// A lane's next play: `(tree, copy)` and its index among the lane's plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct NextPlay {
    pub(super) tree: u32,
    pub(super) copy: u32,
    pub(super) lane_play: u32,
}

#[derive(Debug, Default)]
pub(super) struct Lanes {
    lanes: Vec<Lane>,
    /// `--loop`: a lane starts its share again when it reaches the end.
    looping: bool,
}

impl Lanes {
    /// `count` lanes with their shares of `trees` trees under `policy`;
    /// only the lanes that get a share are made (the first `trees *
    /// copies`, as the deal is round-robin), so a lane that holds no tree
    /// costs nothing. With `--shard I/N` every lane keeps its number and
    /// the unsharded deal, but only lanes `k ≡ I (mod N)` keep their share
    /// ([`Lanes::is_mine`]); the others hold nothing here.
    pub(super) fn deal(trees: u32, count: u32, policy: &Policy) -> Self {
        let plays = u64::from(trees) * u64::from(policy.copies);
        let count = u32::try_from(plays).map_or(count, |plays| count.min(plays));
        let lanes = (0u64..)
            .zip(deal(trees, policy.copies, count, policy.seed))
            .map(|(k, share)| Lane {
                share: if policy.shard.is_none_or(|s| s.keeps(k)) {
                    share
                } else {
                    Vec::new()
                },
                ..Lane::default()
            })
            .collect();
        Lanes {
            lanes,
            looping: policy.loop_lanes,
        }
    }

    pub(super) fn all(&self) -> &[Lane] {
        &self.lanes
    }

    pub(super) fn all_mut(&mut self) -> &mut [Lane] {
        &mut self.lanes
    }

    /// The lane's next play at `at`, or `None` once it ran dry (its share
    /// is played, without `--loop`) or stalled (a whole cycle of its share
    /// took no time).
    pub(super) fn next(&mut self, lane: u32, at: Nanos) -> Option<NextPlay> {
        let l = &mut self.lanes[lane as usize];
        if l.share.is_empty() {
            l.dry_at.get_or_insert(at);
            return None;
        }
        if l.next == l.share.len() {
            if !self.looping {
                l.dry_at = Some(at);
                return None;
            }
            if l.last_wrap == Some(at) {
                l.stalled = true;
                l.dry_at = Some(at);
                return None;
            }
            l.last_wrap = Some(at);
            l.next = 0;
        }
        let (tree, copy) = l.share[l.next];
        l.next += 1;
        l.plays += 1;
        Some(NextPlay {
            tree,
            copy,
            lane_play: l.plays - 1,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deal_is_a_seeded_permutation_dealt_round_robin() {
        let shares = deal(3, 2, 2, 0);
        assert_eq!(
            shares,
            vec![vec![(0, 0), (1, 1), (0, 1)], vec![(2, 1), (1, 0), (2, 0)]]
        );
        assert_eq!(shares, deal(3, 2, 2, 0));
        assert_ne!(shares, deal(3, 2, 2, 1));
        // More lanes than plays: some lanes get nothing.
        assert_eq!(deal(1, 1, 3, 0), vec![vec![(0, 0)], vec![], vec![]]);
    }

    #[test]
    fn a_lane_runs_dry_or_wraps_and_stalls() {
        let policy = Policy {
            sessions: Some(1),
            ..Policy::default()
        };
        let mut lanes = Lanes::deal(2, 1, &policy);
        assert_eq!(lanes.next(0, 0).map(|n| n.lane_play), Some(0));
        assert_eq!(lanes.next(0, 5).map(|n| n.lane_play), Some(1));
        assert_eq!(lanes.next(0, 9), None);
        assert_eq!(lanes.all()[0].dry_at, Some(9));

        let mut looping = Lanes::deal(
            1,
            1,
            &Policy {
                loop_lanes: true,
                ..policy
            },
        );
        assert!(looping.next(0, 0).is_some());
        assert!(looping.next(0, 3).is_some(), "wraps at 3");
        // A second wrap at the same instant: the lane stalls.
        assert_eq!(looping.next(0, 3), None);
        assert!(looping.all()[0].stalled);
    }

    #[test]
    fn only_lanes_with_a_share_are_made() {
        let policy = Policy {
            sessions: Some(u32::MAX),
            copies: 2,
            ..Policy::default()
        };
        let lanes = Lanes::deal(3, u32::MAX, &policy);
        assert_eq!(lanes.all().len(), 6);
        // The same shares as the first six lanes of a deal to that many.
        let shares: Vec<_> = lanes.all().iter().map(|l| l.share.clone()).collect();
        assert_eq!(shares, deal(3, 2, 6, policy.seed));
        assert_eq!(shares, deal(3, 2, 9, policy.seed)[..6]);
    }

    #[test]
    fn a_shard_keeps_the_shares_of_its_lanes_only() {
        let whole = Policy {
            sessions: Some(5),
            ..Policy::default()
        };
        let all = Lanes::deal(7, 5, &whole);
        let shard = Lanes::deal(
            7,
            5,
            &Policy {
                shard: Some(crate::policy::Shard { index: 1, count: 2 }),
                ..whole
            },
        );
        for (k, (a, b)) in all.all().iter().zip(shard.all()).enumerate() {
            let expected = if k % 2 == 1 { a.share.clone() } else { vec![] };
            assert_eq!(b.share, expected, "lane {k}");
        }
    }
}
