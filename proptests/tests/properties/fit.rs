//! Fitting prompts to a server (engine `fit`, `--isl-scale`,
//! `--max-context`): the trees, their edges and the prefix sharing between
//! turns survive it.

use arbor_engine::derive::{derive_edges, DeriveOptions};
use arbor_engine::fit::{apply, Fit};
use arbor_engine::model::{BlockIds, HashScope};
use arbor_engine::Workload;
use arbor_proptests::gen::{self, SMALL};
use proptest::prelude::*;

const BLOCK: u32 = 4;

/// Gives every turn hash ids the way recorders number prefix blocks (and
/// some ids shared by position alone, which prefix hashes never are): a
/// head shared by the tree's agents (by every tree, in global scope),
/// each turn extending its agent's previous one by a few blocks or
/// starting over after the head, subagents starting from a prefix of
/// their parent's first turn. `isl` covers the blocks (the last one
/// partial by up to 3 tokens). `choices` drive every decision.
fn with_hash_ids(mut w: Workload, choices: &[u32], global: bool) -> Workload {
    let mut pick = choices.iter().copied().cycle();
    let mut next = |n: u32| pick.next().unwrap_or(0) % n;
    let head = 1 + next(3);
    let mut fresh = head + 1;
    for tree in &mut w.trees {
        if !global {
            fresh = head + 1;
        }
        tree.block_size = BLOCK;
        tree.hash_scope = if global {
            HashScope::Global
        } else {
            HashScope::Local
        };
        let mut firsts: Vec<Vec<u32>> = Vec::new();
        for agent in &mut tree.agents {
            let mut ids: Vec<u32> = match agent.parent {
                Some(p) => {
                    let parent = firsts.get(p as usize).cloned().unwrap_or_default();
                    let keep = (next(parent.len() as u32 + 1) as usize).max(head as usize);
                    parent.into_iter().take(keep).collect()
                }
                None => (1..=head).collect(),
            };
            for (i, turn) in agent.turns.iter_mut().enumerate() {
                if i > 0 && next(5) == 0 {
                    ids.truncate(head as usize);
                }
                for _ in 0..=next(3) {
                    if next(4) == 0 {
                        // An id equal to other turns' at this position
                        // whatever came before: ids need not be prefix
                        // hashes.
                        ids.push(1_000_000 + ids.len() as u32);
                    } else {
                        ids.push(fresh);
                        fresh += 1;
                    }
                }
                turn.hash_ids = BlockIds::from(ids.clone());
                turn.isl = ids.len() as u32 * BLOCK - next(BLOCK);
                if i == 0 {
                    firsts.push(ids.clone());
                }
            }
            if agent.turns.is_empty() {
                firsts.push(ids);
            }
        }
        tree.system_tokens = head * BLOCK;
    }
    w
}

/// Every turn's ids, with the scope they live in (its tree, or `None` when
/// global).
fn turns(w: &Workload) -> Vec<(Option<usize>, Vec<u32>)> {
    let mut out = Vec::new();
    for (t, tree) in w.trees.iter().enumerate() {
        let scope = (tree.hash_scope == HashScope::Local).then_some(t);
        for turn in tree.agents.iter().flat_map(|a| a.turns.iter()) {
            out.push((scope, turn.hash_ids.to_vec()));
        }
    }
    out
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// `S(k)`: the new blocks whose source position is below `k`.
fn scaled_share(k: usize, factor: f64) -> usize {
    (0u64..)
        .take_while(|&j| ((j as f64 / factor).floor() as usize) < k)
        .count()
}

/// The workload without what fitting may change: times, agents, kinds,
/// parents, output lengths and edges stay.
fn shape(w: &Workload) -> Vec<String> {
    w.trees
        .iter()
        .map(|tree| {
            let mut t = tree.clone();
            t.tool_tokens = 0;
            t.system_tokens = 0;
            t.block_size = 0;
            for turn in t.agents.iter_mut().flat_map(|a| a.turns.iter_mut()) {
                turn.isl = 0;
                turn.hash_ids = BlockIds::default();
                turn.text = None;
            }
            let (edges, _) = derive_edges(tree, &DeriveOptions::default());
            format!("{t:?} {edges:?}")
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// `--isl-scale F` keeps every tree and its edges, and two turns that
    /// shared `k` prefix blocks share exactly `S(k)` (about `F * k`): a
    /// share never appears where there was none, "prefix of" and
    /// "extends" are kept, and every prompt scales by F.
    #[test]
    fn isl_scale_keeps_trees_edges_and_prefix_sharing(
        w in gen::workload(SMALL),
        choices in prop::collection::vec(any::<u32>(), 1..64),
        global in any::<bool>(),
        factor in prop_oneof![0.05f64..1.0, 1.0f64..4.0],
    ) {
        let before = with_hash_ids(w, &choices, global);
        let mut after = before.clone();
        apply(&mut after, &Fit { isl_scale: Some(factor), max_context: None });
        prop_assert_eq!(shape(&before), shape(&after));
        let (old, new) = (turns(&before), turns(&after));
        for ((scope_a, a), (_, a2)) in old.iter().zip(&new) {
            prop_assert_eq!(a2.len(), scaled_share(a.len(), factor));
            for ((scope_b, b), (_, b2)) in old.iter().zip(&new) {
                if scope_a != scope_b {
                    continue;
                }
                let k = common_prefix(a, b);
                prop_assert_eq!(common_prefix(a2, b2), scaled_share(k, factor), "F={} {:?} {:?}", factor, a, b);
            }
        }
        let isl = |w: &Workload| w.trees.iter().flat_map(|t| t.agents.iter()).flat_map(|a| a.turns.iter()).map(|t| t.isl).collect::<Vec<_>>();
        for (x, y) in isl(&before).into_iter().zip(isl(&after)) {
            prop_assert_eq!(y, ((f64::from(x) * factor).round() as u32).max(1));
        }
    }

    /// `--max-context N` keeps every tree and its edges, makes every
    /// prompt at most N tokens, keeps each turn's head and newest blocks
    /// (a capped prompt is its head then a suffix of its blocks), and a
    /// turn that extended its predecessor still extends the capped
    /// predecessor when the two fit under one window.
    #[test]
    fn max_context_caps_every_prompt_and_keeps_the_tree(
        w in gen::workload(SMALL),
        choices in prop::collection::vec(any::<u32>(), 1..64),
        global in any::<bool>(),
        cap in 1u32..40,
    ) {
        let before = with_hash_ids(w, &choices, global);
        let mut after = before.clone();
        let report = apply(&mut after, &Fit { isl_scale: None, max_context: Some(cap) });
        prop_assert_eq!(shape(&before), shape(&after));
        let mut dropped = 0u64;
        for (t0, t1) in before.trees.iter().zip(&after.trees) {
            let head = (t0.system_tokens / BLOCK) as usize;
            for (a0, a1) in t0.agents.iter().zip(&t1.agents) {
                for (i, (x, y)) in a0.turns.iter().zip(&a1.turns).enumerate() {
                    prop_assert!(y.isl <= cap && y.isl <= x.isl);
                    dropped += u64::from(x.isl - y.isl);
                    let (old, new) = (x.hash_ids.to_vec(), y.hash_ids.to_vec());
                    let h = head.min(old.len()).min(new.len());
                    prop_assert_eq!(&old[..h], &new[..h]);
                    prop_assert!(old.ends_with(&new[h..]), "{:?} -> {:?}", old, new);
                    if i > 0 && x.hash_ids.starts_with(&a0.turns[i - 1].hash_ids) {
                        let prev = a1.turns[i - 1].hash_ids.to_vec();
                        let same_window = old.len() - new.len() == a0.turns[i - 1].hash_ids.len() - prev.len();
                        if same_window && new.len() > head {
                            prop_assert!(new.starts_with(&prev), "{:?} does not extend {:?}", new, prev);
                        }
                    }
                }
            }
        }
        prop_assert_eq!(report.tokens_dropped, dropped);
    }
}
