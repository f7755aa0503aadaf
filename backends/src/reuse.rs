//! Prefix reuse planned before a live run: per request of a finished plan,
//! the prompt tokens the workload could reuse at best, what the plan's
//! server model predicted, and the gap since its agent's previous turn
//! ended (docs/run.md, "Prefix reuse").
//!
//! Best possible ([`PlannedReuse::best`]): an infinite cache, token by
//! token (not rounded to any block, so it bounds what any server's
//! block-granular cache can hit). A prompt reuses the longest prefix it
//! shares with any request dispatched before it *in the plan's order*;
//! and when it extends its agent's previous turn in the same play (it
//! holds that turn's whole prompt but at most the recording's last
//! partial block), every token up to the previous prompt's length plus
//! its answer's (`osl`): production re-reads what the model generated.
//! Prompts are keyed as the live client sends them ([`AgentKeys`] over
//! `arbor_sim::server::keys`, one-token blocks): cache-bust markers,
//! recorded text and synthesized text exactly as sent. Each distinct
//! prefix's key is kept once ([`Seen`]); a prompt's longest known prefix
//! is found by bisection (keys are chained, so the set of known prefixes
//! is closed under taking prefixes).
//!
//! Predicted ([`PlannedReuse::predicted`]): the cached tokens the batching
//! server model gave the same request on the virtual clock, when the plan
//! ran one. Gap ([`PlannedReuse::gap`]): from the end of the agent's
//! previous turn of the same play to this request's send, on the plan's
//! clock (`None` for an agent's first turn).
//!
//! [`ReusePlan`] keys the figures by a request's stable identity
//! ([`RequestKey`]: tree, copy, flat turn, warmup; never the play number,
//! which a live closed loop may assign in another order), so the live
//! loop finds a record's figures in O(1). A play run again under `--loop`
//! has its first round's figures.
//!
//! Cost: every prompt token is keyed (only the words past what the agent's
//! previous turn shared are hashed again) and every distinct prefix kept:
//! about 3 bytes and 12 ns a prompt token on a workload that mostly
//! extends its prompts (355M prompt tokens: 1 GB, 4 s). A plan sending
//! more than [`MAX_PROMPT_TOKENS`] is not keyed ([`ReusePlan::of`] says
//! so, and the records go without the figures).
//!
//! Must not: read a clock or run the scheduler (it reads a finished one).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use arbor_engine::prompt::{CacheBust, VIRTUAL_BLOCK_TOKENS};
use arbor_engine::scheduler::{RequestId, Scheduler, TurnState};
use arbor_engine::time::Nanos;
use arbor_engine::Workload;

use crate::agent_keys::AgentKeys;

/// A request's identity across the plan and the live run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestKey {
    /// The tree's index in the workload.
    pub tree: u32,
    pub copy: u32,
    /// The turn's flat index in its tree.
    pub turn: u32,
    pub warmup: bool,
}

impl RequestKey {
    /// The key of request `id` of `scheduler` (`None` for a request it
    /// does not know).
    pub fn of(scheduler: &Scheduler, id: RequestId) -> Option<RequestKey> {
        let slot = scheduler.slot(id)?;
        let play = scheduler.play(slot.play)?;
        Some(RequestKey {
            tree: play.tree,
            copy: play.copy,
            turn: slot.turn,
            warmup: slot.warmup,
        })
    }
}

/// What the plan says of one request's prefix reuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedReuse {
    /// Prompt tokens reusable at best (see the module doc).
    pub best: u64,
    /// Prompt tokens, as the keys count them (marker included).
    pub prompt: u64,
    /// Cached tokens the server model predicted; `None` without one.
    pub predicted: Option<u64>,
    /// End of the agent's previous turn to this send, on the plan's clock.
    pub gap: Option<Nanos>,
}

/// Totals of a plan's requests (warmups left out, as in a summary).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReuseTotals {
    pub requests: u64,
    pub prompt_tokens: u64,
    pub best_tokens: u64,
    /// `None` without a server model.
    pub predicted_tokens: Option<u64>,
}

/// The most prompt tokens (over every request a plan sends) whose reuse
/// is computed: beyond, the memory of the distinct prefixes would grow
/// past a few gigabytes.
pub const MAX_PROMPT_TOKENS: u64 = 1_000_000_000;

/// A plan too large to key ([`MAX_PROMPT_TOKENS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge {
    /// The prompt tokens the plan sends.
    pub prompt_tokens: u64,
}

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "prefix reuse not computed: the plan sends {} prompt tokens, over the {} it keys \
             (records go without reuse_best_tokens; the summary without reuse)",
            self.prompt_tokens, MAX_PROMPT_TOKENS
        )
    }
}

/// Every request's figures, by [`RequestKey`].
#[derive(Debug, Clone, Default)]
pub struct ReusePlan {
    by_request: HashMap<RequestKey, PlannedReuse>,
    predicted: bool,
}

impl ReusePlan {
    /// The figures of every request `scheduler` (run to its end on the
    /// virtual clock over `workload`'s trees) dispatched, in its dispatch
    /// order (send time, then request id). `cache_bust`: the markers the
    /// live client sends; `predicted`: cached tokens by request id, when
    /// the plan ran the server model. A plan sending more than
    /// [`MAX_PROMPT_TOKENS`] is refused ([`TooLarge`]), before any work.
    pub fn of(
        scheduler: &Scheduler,
        workload: &Workload,
        cache_bust: Option<CacheBust>,
        predicted: Option<&[Option<u32>]>,
    ) -> Result<ReusePlan, TooLarge> {
        let first = scheduler.first_request();
        let mut order: Vec<(Nanos, RequestId)> = scheduler
            .slots()
            .iter()
            .zip(first..)
            .filter(|(s, _)| dispatched(s.state))
            .map(|(s, id)| (s.sent, id))
            .collect();
        let prompt_tokens: u64 = order
            .iter()
            .filter_map(|&(_, id)| {
                let (tree, _, turn) = scheduler.request_tree(id)?;
                tree.isl.get(turn as usize).copied().map(u64::from)
            })
            .sum();
        if prompt_tokens > MAX_PROMPT_TOKENS {
            return Err(TooLarge { prompt_tokens });
        }
        order.sort_unstable();
        let mut best = BestReuse::new();
        let mut by_request = HashMap::with_capacity(order.len());
        for (sent, id) in order {
            let (Some(slot), Some((compiled, play, turn))) =
                (scheduler.slot(id), scheduler.request_tree(id))
            else {
                continue;
            };
            let Some(tree) = workload.trees.get(play.tree as usize) else {
                continue;
            };
            let t = turn as usize;
            let marker = cache_bust.map(|b| b.marker(play));
            let request = Dispatch {
                play: slot.play,
                agent: compiled.agent_of[t] as usize,
                turn: compiled.index_in_agent[t] as usize,
                warmup: slot.warmup,
                osl: u64::from(compiled.osl[t]),
                sent,
                end: slot.end,
            };
            let (tokens, gap) = best.next(tree, &request, marker.as_deref());
            let key = RequestKey {
                tree: play.tree,
                copy: play.copy,
                turn,
                warmup: slot.warmup,
            };
            by_request.entry(key).or_insert(PlannedReuse {
                best: tokens.best,
                prompt: tokens.prompt,
                predicted: predicted.map(|p| {
                    let at = id.checked_sub(first).unwrap_or(u64::MAX);
                    let cached = usize::try_from(at).ok().and_then(|i| p.get(i).copied());
                    u64::from(cached.flatten().unwrap_or(0))
                }),
                gap,
            });
        }
        Ok(ReusePlan {
            by_request,
            predicted: predicted.is_some(),
        })
    }

    /// The figures of the request `key` names.
    pub fn get(&self, key: &RequestKey) -> Option<&PlannedReuse> {
        self.by_request.get(key)
    }

    /// The figures of request `id` of a live `scheduler` (O(1)).
    pub fn lookup(&self, scheduler: &Scheduler, id: RequestId) -> Option<&PlannedReuse> {
        self.get(&RequestKey::of(scheduler, id)?)
    }

    /// Whether the plan ran a server model (predictions are there).
    pub fn has_prediction(&self) -> bool {
        self.predicted
    }

    /// The requests' totals, warmups left out.
    pub fn totals(&self) -> ReuseTotals {
        let mut totals = ReuseTotals {
            predicted_tokens: self.predicted.then_some(0),
            ..ReuseTotals::default()
        };
        for (key, r) in &self.by_request {
            if key.warmup {
                continue;
            }
            totals.requests += 1;
            totals.prompt_tokens += r.prompt;
            totals.best_tokens += r.best;
            if let (Some(t), Some(p)) = (&mut totals.predicted_tokens, r.predicted) {
                *t += p;
            }
        }
        totals
    }

    /// Every request's figures, in key order (for tests and exports).
    pub fn by_request(&self) -> BTreeMap<RequestKey, PlannedReuse> {
        self.by_request.iter().map(|(k, v)| (*k, *v)).collect()
    }
}

/// A request the plan sent (its turn's state after the run).
fn dispatched(state: TurnState) -> bool {
    matches!(
        state,
        TurnState::Dispatched
            | TurnState::Sent
            | TurnState::Done
            | TurnState::Failed
            | TurnState::Cancelled
    )
}

/// One dispatched request, as [`BestReuse::next`] takes it.
#[derive(Debug, Clone, Copy)]
pub struct Dispatch {
    /// The play (its index in the plan: only tells plays apart).
    pub play: u32,
    pub agent: usize,
    /// The turn's index among its agent's turns.
    pub turn: usize,
    pub warmup: bool,
    /// Output tokens of the turn (its answer).
    pub osl: u64,
    pub sent: Nanos,
    pub end: Nanos,
}

/// A prompt's tokens and the best reuse of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BestTokens {
    pub prompt: u64,
    pub best: u64,
}

/// An agent's last measured turn, for the next one's answer credit.
#[derive(Debug, Clone, Copy)]
struct Previous {
    turn: usize,
    /// Its prompt's tokens.
    tokens: u64,
    /// Its answer's tokens.
    osl: u64,
    /// The key of its prompt at the shortest prefix the next turn must
    /// hold to extend it (`None`: an empty prompt).
    holds: Option<(usize, u64)>,
    end: Nanos,
}

/// The best-reuse pass over requests in dispatch order (see the module
/// doc): every distinct prefix seen so far, and each live agent's last
/// turn.
#[derive(Debug)]
pub struct BestReuse {
    keys: AgentKeys,
    seen: Seen,
    previous: HashMap<(u32, usize), Previous>,
}

impl Default for BestReuse {
    fn default() -> Self {
        BestReuse::new()
    }
}

impl BestReuse {
    pub fn new() -> BestReuse {
        BestReuse {
            keys: AgentKeys::new(1),
            seen: Seen::default(),
            previous: HashMap::new(),
        }
    }

    /// The next request in dispatch order, of `tree` with the play's
    /// cache-bust `marker`: its prompt's tokens and their best reuse, and
    /// the gap since its agent's previous turn of the play ended.
    pub fn next(
        &mut self,
        tree: &arbor_engine::model::Tree,
        request: &Dispatch,
        marker: Option<&str>,
    ) -> (BestTokens, Option<Nanos>) {
        let keys = self
            .keys
            .turn(request.play, tree, request.agent, request.turn, marker);
        let prompt = keys.len() as u64;
        let shared = self.seen.longest(keys);
        self.seen.insert(&keys[shared..]);
        let id = (request.play, request.agent);
        let previous = self
            .previous
            .get(&id)
            .filter(|p| p.turn + 1 == request.turn);
        let answered = previous
            .filter(|p| p.holds.is_none_or(|(at, key)| keys.get(at) == Some(&key)))
            .map_or(0, |p| (p.tokens + p.osl).min(prompt));
        let gap = previous.map(|p| request.sent.saturating_sub(p.end));
        let best = (shared as u64).max(answered);
        if !request.warmup {
            // The recording's blocks: the last one of a prompt may be cut
            // short, and the next turn's is then another block.
            let block = match tree.block_size {
                0 => VIRTUAL_BLOCK_TOKENS,
                b => b,
            } as usize;
            let holds = keys.len().checked_sub(1).map(|last| {
                let at = last.saturating_sub(block - 1);
                (at, keys[at])
            });
            self.previous.insert(
                id,
                Previous {
                    turn: request.turn,
                    tokens: prompt,
                    osl: request.osl,
                    holds,
                    end: request.end,
                },
            );
        }
        (BestTokens { prompt, best }, gap)
    }
}

/// Hashes a key that is a hash already: its own bits.
#[derive(Debug, Default, Clone, Copy)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// Every distinct prefix seen, by its chained key.
#[derive(Debug, Default)]
struct Seen(HashSet<u64, BuildHasherDefault<KeyHasher>>);

impl Seen {
    /// Tokens of the longest prefix of `keys` seen: known prefixes are
    /// closed under taking prefixes, so bisect.
    fn longest(&self, keys: &[u64]) -> usize {
        let (mut lo, mut hi) = (0, keys.len());
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if self.0.contains(&keys[mid - 1]) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        lo
    }

    fn insert(&mut self, keys: &[u64]) {
        self.0.extend(keys.iter().copied());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_engine::model::{
        Agent, AgentKind, BlockIds, HashScope, Message, Role, Tree, Turn, TurnText,
    };

    fn turn(isl: u32, ids: &[u32], osl: u32) -> Turn {
        Turn {
            isl,
            osl,
            hash_ids: BlockIds::from(ids.to_vec()),
            ..Turn::default()
        }
    }

    fn agent(id: &str, parent: Option<u32>, turns: Vec<Turn>) -> Agent {
        Agent {
            id: id.into(),
            parent,
            kind: if parent.is_some() {
                AgentKind::Blocking
            } else {
                AgentKind::Root
            },
            recorded_end: None,
            turns,
        }
    }

    fn tree(agents: Vec<Agent>) -> Tree {
        Tree {
            id: "t".into(),
            block_size: 4,
            hash_scope: HashScope::Local,
            agents,
            ..Tree::default()
        }
    }

    fn at(play: u32, agent: usize, turn: usize, osl: u64, sent: Nanos) -> Dispatch {
        Dispatch {
            play,
            agent,
            turn,
            warmup: false,
            osl,
            sent,
            end: sent + 10,
        }
    }

    #[test]
    fn a_subagent_reuses_its_parents_prefix_word_by_word() {
        // Blocks of 4 tokens; the subagent shares the parent's first two
        // blocks and 2 words of a third block it does not share.
        let t = tree(vec![
            agent("root", None, vec![turn(12, &[1, 2, 3], 5)]),
            agent("sub", Some(0), vec![turn(10, &[1, 2, 9], 3)]),
        ]);
        let mut best = BestReuse::new();
        let (root, gap) = best.next(&t, &at(0, 0, 0, 5, 0), None);
        assert_eq!(
            root,
            BestTokens {
                prompt: 12,
                best: 0
            }
        );
        assert_eq!(gap, None);
        let (sub, gap) = best.next(&t, &at(0, 1, 0, 3, 20), None);
        // 8 shared words; the third block's words differ (another id):
        // at most a word or two in common by chance.
        assert_eq!(sub.prompt, 10);
        assert!((8..10).contains(&sub.best), "{sub:?}");
        assert_eq!(gap, None, "a first turn has no previous turn");
    }

    #[test]
    fn the_previous_answer_counts_when_the_next_turn_extends_the_prompt() {
        // Turn 1 holds turn 0's prompt (3 blocks, the last one cut at 2
        // words and then another id) and more: reusable up to 10 + 6.
        let t = tree(vec![agent(
            "root",
            None,
            vec![
                turn(10, &[1, 2, 3], 6),
                turn(30, &[1, 2, 4, 5, 6, 7, 8, 9], 2),
                // Starts over: nothing of turn 1 but its first block.
                turn(20, &[1, 20, 21, 22, 23], 2),
            ],
        )]);
        let mut best = BestReuse::new();
        best.next(&t, &at(0, 0, 0, 6, 0), None);
        let (next, gap) = best.next(&t, &at(0, 0, 1, 2, 110), None);
        assert_eq!(
            next,
            BestTokens {
                prompt: 30,
                best: 16
            }
        );
        assert_eq!(gap, Some(100));
        let (over, _) = best.next(&t, &at(0, 0, 2, 2, 200), None);
        assert_eq!(over.prompt, 20);
        assert!(
            (4..8).contains(&over.best),
            "the first block only: {over:?}"
        );
        // A turn that holds all but more than a block of the previous
        // prompt does not extend it: no answer credit.
        let t = tree(vec![agent(
            "root",
            None,
            vec![turn(16, &[1, 2, 3, 4], 50), turn(16, &[1, 2, 7, 8], 2)],
        )]);
        let mut best = BestReuse::new();
        best.next(&t, &at(0, 0, 0, 50, 0), None);
        let (next, _) = best.next(&t, &at(0, 0, 1, 2, 20), None);
        assert!((8..12).contains(&next.best), "{next:?}");
    }

    #[test]
    fn cache_bust_markers_keep_plays_apart_and_plays_without_share_all() {
        let t = tree(vec![agent("root", None, vec![turn(12, &[1, 2, 3], 5)])]);
        // Two plays' markers (`CacheBust::marker`'s form).
        let (a, b) = ("[rid:0123456789ab]\n\n", "[rid:ba9876543210]\n\n");
        let mut best = BestReuse::new();
        let (first, _) = best.next(&t, &at(0, 0, 0, 5, 0), Some(a));
        // The marker is 5 tokens of other text; then the 12 words.
        assert_eq!(
            first,
            BestTokens {
                prompt: 17,
                best: 0
            }
        );
        let (other, _) = best.next(&t, &at(1, 0, 0, 5, 1), Some(b));
        assert!(other.best < 5, "another play's marker: {other:?}");
        // Without markers, a second play of the tree reuses all of it.
        let mut best = BestReuse::new();
        best.next(&t, &at(0, 0, 0, 5, 0), None);
        let (again, _) = best.next(&t, &at(1, 0, 0, 5, 1), None);
        assert_eq!(
            again,
            BestTokens {
                prompt: 12,
                best: 12
            }
        );
    }

    #[test]
    fn recorded_text_is_keyed_as_sent() {
        let text = |content: &str| {
            Some(Box::new(TurnText {
                extends_previous: false,
                messages: vec![
                    Message::text(Role::System, " the of and to in is"),
                    Message::text(Role::User, content),
                ],
                response: None,
                ..Default::default()
            }))
        };
        let t = tree(vec![
            agent(
                "a",
                None,
                vec![Turn {
                    isl: 12,
                    text: text(" that for it as was with"),
                    ..Turn::default()
                }],
            ),
            agent(
                "b",
                None,
                vec![Turn {
                    isl: 12,
                    text: text(" that for be by on not"),
                    ..Turn::default()
                }],
            ),
        ]);
        let mut best = BestReuse::new();
        let (a, _) = best.next(&t, &at(0, 0, 0, 1, 0), None);
        assert_eq!(
            a,
            BestTokens {
                prompt: 12,
                best: 0
            }
        );
        let (b, _) = best.next(&t, &at(0, 1, 0, 1, 1), None);
        // The system prompt and two words of the user's.
        assert_eq!(
            b,
            BestTokens {
                prompt: 12,
                best: 8
            }
        );
    }

    #[test]
    fn the_longest_seen_prefix_is_bisected() {
        let mut seen = Seen::default();
        assert_eq!(seen.longest(&[1, 2, 3]), 0);
        seen.insert(&[1, 2, 3]);
        assert_eq!(seen.longest(&[1, 2, 3, 4]), 3);
        assert_eq!(seen.longest(&[1, 2, 5, 6]), 2);
        assert_eq!(seen.longest(&[9]), 0);
        assert_eq!(seen.longest(&[]), 0);
    }
}
