//! Taking part of a corpus (`--trees N`, `--tree NAME`, `--max-requests
//! N`), after loading and before anything else (token recount, fit,
//! policy), so `plan`, `run` and `capacity` see the same trees.
//!
//! Owns the choice of trees and its description; the choice is
//! deterministic: `--trees N` is a seeded sample (the `Subset` stream of
//! `--seed`) kept in the corpus's order, `--tree` takes exactly the trees
//! named, `--max-requests` takes whole trees in corpus order until the next
//! would pass N requests (never part of a tree). Knows nothing of reading
//! files or of the policy.

use arbor_engine::model::{Tree, Workload};
use arbor_engine::rng::{self, Purpose};
use arbor_error::Error;

/// How many of the ids taken the description lists (the seed and the
/// corpus's identity reproduce the rest).
const SHOWN_IDS: usize = 20;

/// Which part of the corpus to take; `Default` is all of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubsetOptions {
    /// `--trees N`: a seeded sample of N trees, in the corpus's order.
    pub trees: Option<u32>,
    /// `--tree NAME` (repeatable): exactly the trees with these ids.
    pub names: Vec<String>,
    /// `--max-requests N`: whole trees in corpus order while their
    /// requests (turns) add up to at most N.
    pub max_requests: Option<u64>,
    /// The seed of the `--trees` sample (`--seed`).
    pub seed: u64,
}

impl SubsetOptions {
    /// Whether the whole corpus is taken.
    pub fn is_whole(&self) -> bool {
        self.trees.is_none() && self.names.is_empty() && self.max_requests.is_none()
    }
}

/// Keeps the part of `workload` that `options` asks for; says what was
/// taken (for the run's config and the console), `None` when all was.
pub fn apply(workload: &mut Workload, options: &SubsetOptions) -> Result<Option<String>, Error> {
    if options.is_whole() {
        return Ok(None);
    }
    check_combination(options)?;
    let total = workload.trees.len();
    let trees = std::mem::take(&mut workload.trees);
    let (kept, how) = if !options.names.is_empty() {
        (
            named(trees, &options.names)?,
            format!("--tree {}", options.names.join(" --tree ")),
        )
    } else {
        let mut kept = trees;
        let mut how = Vec::new();
        if let Some(n) = options.trees {
            kept = sample(kept, n, options.seed);
            how.push(format!("--trees {n} sampled with seed {}", options.seed));
        }
        if let Some(cap) = options.max_requests {
            kept = within_requests(kept, cap)?;
            how.push(format!("--max-requests {cap}"));
        }
        (kept, how.join(", then "))
    };
    let requests: usize = kept.iter().map(Tree::turn_count).sum();
    let mut ids: Vec<&str> = kept.iter().map(|t| t.id.as_str()).take(SHOWN_IDS).collect();
    let more = kept.len().saturating_sub(SHOWN_IDS);
    let more = format!("and {more} more");
    if kept.len() > SHOWN_IDS {
        ids.push(&more);
    }
    let description = format!(
        "subset ({how}): {} of {total} trees, {requests} requests: {}",
        kept.len(),
        ids.join(" ")
    );
    workload.trees = kept;
    Ok(Some(description))
}

/// Refuses the combinations that make no sense, and zeros.
fn check_combination(options: &SubsetOptions) -> Result<(), Error> {
    if !options.names.is_empty() && options.trees.is_some() {
        return Err(Error::input(
            "--tree with --trees: --tree takes exactly the trees named, --trees samples N; \
             give one of them",
        ));
    }
    if !options.names.is_empty() && options.max_requests.is_some() {
        return Err(Error::input(
            "--tree with --max-requests: --tree takes exactly the trees named, whatever their \
             requests; give one of them",
        ));
    }
    if options.trees == Some(0) {
        return Err(Error::input("--trees: expected at least 1 tree"));
    }
    if options.max_requests == Some(0) {
        return Err(Error::input("--max-requests: expected at least 1 request"));
    }
    Ok(())
}

/// A seeded sample of `n` trees (all when there are no more), in their
/// order.
fn sample(trees: Vec<Tree>, n: u32, seed: u64) -> Vec<Tree> {
    let n = n as usize;
    if n >= trees.len() {
        return trees;
    }
    let mut rng = rng::stream(seed, Purpose::Subset, 0, 0, 0);
    let mut picked = rand::seq::index::sample(&mut rng, trees.len(), n).into_vec();
    picked.sort_unstable();
    let mut wanted = picked.into_iter().peekable();
    let mut kept = Vec::with_capacity(n);
    for (i, tree) in trees.into_iter().enumerate() {
        if wanted.peek() == Some(&i) {
            wanted.next();
            kept.push(tree);
        }
    }
    kept
}

/// The trees whose ids are named (every tree with such an id), in the
/// corpus's order; an unknown name is refused, naming the nearest ids.
fn named(trees: Vec<Tree>, names: &[String]) -> Result<Vec<Tree>, Error> {
    for name in names {
        if !trees.iter().any(|t| &t.id == name) {
            let mut ids: Vec<&str> = trees.iter().map(|t| t.id.as_str()).collect();
            ids.sort_by_key(|id| (distance(id, name), *id));
            ids.dedup();
            let nearest: Vec<&str> = ids.into_iter().take(5).collect();
            return Err(Error::input(format!(
                "--tree {name}: no tree of the inputs has this id; expected one of the {} \
                 trees' ids, e.g. the nearest: {}",
                trees.len(),
                nearest.join(", ")
            )));
        }
    }
    Ok(trees
        .into_iter()
        .filter(|t| names.iter().any(|n| n == &t.id))
        .collect())
}

/// Whole trees in order while their requests add up to at most `cap`.
fn within_requests(trees: Vec<Tree>, cap: u64) -> Result<Vec<Tree>, Error> {
    let mut taken = 0u64;
    let mut kept = Vec::new();
    for tree in trees {
        let requests = tree.turn_count() as u64;
        if taken.saturating_add(requests) > cap {
            break;
        }
        taken += requests;
        kept.push(tree);
    }
    if kept.is_empty() {
        return Err(Error::input(format!(
            "--max-requests {cap}: the first tree alone has more requests; expected N at least \
             its request count (a tree is never cut)"
        )));
    }
    Ok(kept)
}

/// Levenshtein distance in characters (for "did you mean").
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row.first().copied().unwrap_or(0);
        if let Some(first) = row.first_mut() {
            *first = i + 1;
        }
        for (j, cb) in b.iter().enumerate() {
            let above = row.get(j + 1).copied().unwrap_or(0);
            let left = row.get(j).copied().unwrap_or(0);
            let cost = usize::from(ca != *cb);
            let value = (diagonal + cost).min(above + 1).min(left + 1);
            diagonal = above;
            if let Some(cell) = row.get_mut(j + 1) {
                *cell = value;
            }
        }
    }
    row.last().copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::distance;

    #[test]
    fn distance_counts_edits() {
        assert_eq!(distance("trace_0277", "trace_0277"), 0);
        assert_eq!(distance("trace_0277", "trace_0278"), 1);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
    }
}
