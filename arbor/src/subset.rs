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

use std::borrow::Borrow;

use arbor_engine::model::{Tree, Workload};
use arbor_engine::rng::{self, Purpose};
use arbor_error::Error;
use arbor_runs::config::SubsetRecord;

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

/// What [`apply`] took: in words (for the console and `config.inputs`)
/// and as the run's `config.subset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    pub description: String,
    pub record: SubsetRecord,
}

/// Keeps the part of `workload` that `options` asks for; says what was
/// taken, `None` when all was.
pub fn apply(workload: &mut Workload, options: &SubsetOptions) -> Result<Option<Taken>, Error> {
    let Some((kept, description)) = choose(&workload.trees, options)? else {
        return Ok(None);
    };
    let of_trees = workload.trees.len() as u64;
    let mut wanted = kept.into_iter().peekable();
    let mut index = 0usize;
    workload.trees.retain(|_| {
        let keep = wanted.peek() == Some(&index);
        if keep {
            wanted.next();
        }
        index += 1;
        keep
    });
    let record = SubsetRecord {
        trees: options.trees,
        seed: options.trees.map(|_| options.seed),
        tree_names: options.names.clone(),
        max_requests: options.max_requests,
        kept_trees: workload.trees.len() as u64,
        of_trees,
        requests: workload.turn_count() as u64,
    };
    Ok(Some(Taken {
        description,
        record,
    }))
}

/// The indices (ascending) of the trees `options` takes out of `trees`,
/// and what was taken in words; `None` when all are. For callers that keep
/// trees in several lists (`inspect`, `convert`: one per input).
pub fn choose<T: Borrow<Tree>>(
    trees: &[T],
    options: &SubsetOptions,
) -> Result<Option<(Vec<usize>, String)>, Error> {
    if options.is_whole() {
        return Ok(None);
    }
    check_combination(options)?;
    let total = trees.len();
    let (kept, how) = if !options.names.is_empty() {
        (
            named(trees, &options.names)?,
            format!("--tree {}", options.names.join(" --tree ")),
        )
    } else {
        let mut kept: Vec<usize> = (0..total).collect();
        let mut how = Vec::new();
        if let Some(n) = options.trees {
            kept = sample(total, n, options.seed);
            how.push(format!("--trees {n} sampled with seed {}", options.seed));
        }
        if let Some(cap) = options.max_requests {
            kept = within_requests(trees, kept, cap)?;
            how.push(format!("--max-requests {cap}"));
        }
        (kept, how.join(", then "))
    };
    let chosen = || {
        kept.iter()
            .filter_map(|&i| trees.get(i))
            .map(Borrow::borrow)
    };
    let requests: usize = chosen().map(Tree::turn_count).sum();
    let mut ids: Vec<&str> = chosen().map(|t| t.id.as_str()).take(SHOWN_IDS).collect();
    let more = format!("and {} more", kept.len().saturating_sub(SHOWN_IDS));
    if kept.len() > SHOWN_IDS {
        ids.push(&more);
    }
    let description = format!(
        "subset ({how}): {} of {total} trees, {requests} requests: {}",
        kept.len(),
        ids.join(" ")
    );
    Ok(Some((kept, description)))
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

/// A seeded sample of `n` of `total` indices (all when there are no
/// more), ascending.
fn sample(total: usize, n: u32, seed: u64) -> Vec<usize> {
    let n = n as usize;
    if n >= total {
        return (0..total).collect();
    }
    let mut rng = rng::stream(seed, Purpose::Subset, 0, 0, 0);
    let mut picked = rand::seq::index::sample(&mut rng, total, n).into_vec();
    picked.sort_unstable();
    picked
}

/// The trees whose ids are named (every tree with such an id), in the
/// corpus's order; an unknown name is refused, naming the nearest ids.
fn named<T: Borrow<Tree>>(trees: &[T], names: &[String]) -> Result<Vec<usize>, Error> {
    for name in names {
        if !trees.iter().any(|t| &t.borrow().id == name) {
            let mut ids: Vec<&str> = trees.iter().map(|t| t.borrow().id.as_str()).collect();
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
    Ok((0..trees.len())
        .filter(|&i| trees.get(i).is_some_and(|t| names.contains(&t.borrow().id)))
        .collect())
}

/// Of `candidates`, whole trees in order while their requests add up to
/// at most `cap`.
fn within_requests<T: Borrow<Tree>>(
    trees: &[T],
    candidates: Vec<usize>,
    cap: u64,
) -> Result<Vec<usize>, Error> {
    let mut taken = 0u64;
    let mut kept = Vec::new();
    for i in candidates {
        let requests = trees.get(i).map_or(0, |t| t.borrow().turn_count()) as u64;
        if taken.saturating_add(requests) > cap {
            break;
        }
        taken += requests;
        kept.push(i);
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
