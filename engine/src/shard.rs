//! Merging shards: the order in which one unsharded run would have started
//! the plays that `--shard I/N` runs started apart.
//!
//! Owns a shard's [`Block`]s (one per started play, in the shard's slot
//! order: its first turn's request id, its start, and what started it) and
//! [`merge`], which interleaves the blocks of every shard into the
//! unsharded slot order. It reads a finished [`Scheduler`] and never
//! changes one; the shard's stripe itself is the scheduler's planning
//! (`scheduler::plays`, `scheduler::lanes`).
//!
//! # Why the order is exact
//! One process starts a play either from a timer (an open-loop arrival, in
//! plan order; a lane's first play, in lane order) or at the completion
//! that freed its lane. At one instant the virtual driver reports
//! completions first, in request-id order, then fires timers in insertion
//! order. So the unsharded order sorts plays by `(start, completion before
//! timer, the completing request's unsharded id or the timer's rank)`. A
//! shard plays its stripe exactly as the whole run would (no shared state
//! between stripes when no global policy is on), so each shard's blocks are
//! already in that order and a k-way merge on the key rebuilds it; the
//! completing request's unsharded id is known once its block is placed,
//! which is always earlier.
//!
//! One case is not decided by the key: plays of different shards started
//! at the same nanosecond where a request sent at that instant also
//! completed at it (a zero service time). The driver's order then
//! depends on the chain of same-instant events, which a shard does not
//! record; the merge still places every play once, intact, at its start,
//! and [`Merged::ties`] counts the starts shared across shards so a
//! caller can say so.

use crate::scheduler::{Scheduler, TurnState};
use crate::time::Nanos;

/// What started a play.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cause {
    /// The completion of turn `offset` of the shard's block `block`, which
    /// freed the play's lane.
    Completion { block: u32, offset: u32 },
    /// A timer of the given rank: the open-loop plan's play index, or the
    /// lane's index for a lane's first play.
    Timer(u64),
}

/// One started play of a shard: `turns` consecutive slots (timeline lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    pub start: Nanos,
    pub cause: Cause,
    pub turns: u32,
}

/// Two shards' blocks cannot be interleaved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    #[error("shard {shard}: block {block} is started by a block that is not before it")]
    CauseNotBefore { shard: usize, block: usize },
    #[error(
        "shard {shard}: block {block} is started by turn {offset} of a block of {turns} turns"
    )]
    CauseOutside {
        shard: usize,
        block: usize,
        offset: u32,
        turns: u32,
    },
}

/// The blocks of a finished schedule, in slot order.
pub fn blocks(scheduler: &Scheduler) -> Vec<Block> {
    let trees = scheduler.trees();
    let plays = scheduler.plays();
    let mut started: Vec<u32> = (0u32..)
        .zip(plays)
        .filter(|(_, p)| p.started.is_some())
        .map(|(i, _)| i)
        .collect();
    started.sort_by_key(|&i| plays[i as usize].request(0));
    // The block of each lane's latest play, to find what ended it.
    let mut lane_block: Vec<Option<u32>> = vec![None; scheduler.lanes().len()];
    let slots = scheduler.slots();
    let mut blocks = Vec::with_capacity(started.len());
    for (b, &i) in (0u32..).zip(&started) {
        let p = plays[i as usize];
        let turns = trees[p.tree as usize].turn_count();
        let start = p.started.unwrap_or(p.planned);
        let cause = match p.lane {
            None => Cause::Timer(u64::from(p.copy) * trees.len() as u64 + u64::from(p.tree)),
            Some(lane) => {
                let previous = lane_block.get(lane as usize).copied().flatten();
                let cause = match previous {
                    Some(prev) if p.lane_play > 0 => {
                        let base = plays[started[prev as usize] as usize]
                            .request(0)
                            .unwrap_or(0) as usize;
                        let count = blocks
                            .get(prev as usize)
                            .map_or(0, |b: &Block| b.turns as usize);
                        Cause::Completion {
                            block: prev,
                            offset: last_completed(&slots[base..base + count]),
                        }
                    }
                    _ => Cause::Timer(u64::from(lane)),
                };
                if let Some(entry) = lane_block.get_mut(lane as usize) {
                    *entry = Some(b);
                }
                cause
            }
        };
        blocks.push(Block {
            start,
            cause,
            turns,
        });
    }
    blocks
}

/// The turn of a play whose completion the driver reported last: the
/// latest end, the higher id at equal ends.
fn last_completed(slots: &[crate::scheduler::Slot]) -> u32 {
    (0u32..)
        .zip(slots)
        .filter(|(_, s)| {
            matches!(
                s.state,
                TurnState::Done | TurnState::Failed | TurnState::Cancelled
            )
        })
        .max_by_key(|(i, s)| (s.end, *i))
        .map_or(0, |(i, _)| i)
}

/// The merged order and how many of its blocks started at the same
/// nanosecond as the block before them from another shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    /// `(shard, block)` in the unsharded order.
    pub order: Vec<(usize, usize)>,
    pub ties: u64,
}

/// The unsharded order of every shard's blocks.
pub fn merge(shards: &[Vec<Block>]) -> Result<Merged, MergeError> {
    let total: usize = shards.iter().map(Vec::len).sum();
    let mut next = vec![0usize; shards.len()];
    // The unsharded id of each placed block's first turn.
    let mut base: Vec<Vec<u64>> = shards.iter().map(|s| Vec::with_capacity(s.len())).collect();
    let mut placed_turns = 0u64;
    let mut order = Vec::with_capacity(total);
    let mut ties = 0u64;
    let mut last: Option<(Nanos, usize)> = None;
    for _ in 0..total {
        let mut best: Option<((Nanos, u8, u64), usize)> = None;
        for (s, blocks) in shards.iter().enumerate() {
            let Some(block) = blocks.get(next[s]) else {
                continue;
            };
            let key = match block.cause {
                Cause::Timer(rank) => (block.start, 1, rank),
                Cause::Completion { block: c, offset } => {
                    let c = c as usize;
                    let Some(&first) = base[s].get(c) else {
                        return Err(MergeError::CauseNotBefore {
                            shard: s,
                            block: next[s],
                        });
                    };
                    let turns = blocks[c].turns;
                    if offset >= turns {
                        return Err(MergeError::CauseOutside {
                            shard: s,
                            block: next[s],
                            offset,
                            turns,
                        });
                    }
                    (block.start, 0, first + u64::from(offset))
                }
            };
            if best.is_none_or(|(k, _)| key < k) {
                best = Some((key, s));
            }
        }
        let Some((_, s)) = best else { break };
        let block = shards[s][next[s]];
        if last.is_some_and(|(at, shard)| at == block.start && shard != s) {
            ties += 1;
        }
        last = Some((block.start, s));
        base[s].push(placed_turns);
        placed_turns += u64::from(block.turns);
        order.push((s, next[s]));
        next[s] += 1;
    }
    Ok(Merged { order, ties })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timer(start: Nanos, rank: u64, turns: u32) -> Block {
        Block {
            start,
            cause: Cause::Timer(rank),
            turns,
        }
    }

    #[test]
    fn timers_merge_by_start_then_rank_and_completions_go_first() {
        let a = vec![
            timer(0, 0, 2),
            Block {
                start: 5,
                cause: Cause::Completion {
                    block: 0,
                    offset: 1,
                },
                turns: 1,
            },
        ];
        let b = vec![timer(0, 1, 3), timer(5, 3, 1)];
        let merged = merge(&[a, b]).unwrap();
        assert_eq!(merged.order, vec![(0, 0), (1, 0), (0, 1), (1, 1)]);
        assert_eq!(merged.ties, 2);
    }

    #[test]
    fn a_cause_after_its_block_is_refused() {
        let a = vec![Block {
            start: 0,
            cause: Cause::Completion {
                block: 0,
                offset: 0,
            },
            turns: 1,
        }];
        assert_eq!(
            merge(&[a]),
            Err(MergeError::CauseNotBefore { shard: 0, block: 0 })
        );
    }
}
