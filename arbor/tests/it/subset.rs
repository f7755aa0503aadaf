//! Corpus subsets (`--trees`, `--tree`, `--max-requests`) as the loader
//! takes them, before the policy.

use std::path::{Path, PathBuf};

use arbor::inputs;
use arbor::options::{InputOptions, SubsetOptions};
use arbor::Error;

use crate::util::{fixture, Kept};

/// Mooncake's conversation trace: many sessions, each a tree.
fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/mooncake-fast25/conversation_trace.head400.jsonl")
}

fn take(input: PathBuf, subset: SubsetOptions) -> Result<(Vec<String>, Vec<usize>, String), Error> {
    let options = InputOptions {
        inputs: vec![input],
        subset,
        ..InputOptions::default()
    };
    let kept = Kept::default();
    let loaded = inputs::load(&options, &kept)?;
    let ids = loaded.workload.trees.iter().map(|t| t.id.clone()).collect();
    let turns = loaded
        .workload
        .trees
        .iter()
        .map(|t| t.turn_count())
        .collect();
    Ok((ids, turns, loaded.description))
}

fn all_ids(input: PathBuf) -> Vec<String> {
    take(input, SubsetOptions::default()).expect("loads").0
}

fn sample(n: u32, seed: u64) -> Vec<String> {
    let subset = SubsetOptions {
        trees: Some(n),
        seed,
        ..SubsetOptions::default()
    };
    take(corpus(), subset).expect("loads").0
}

#[test]
fn trees_n_is_a_seeded_sample_in_corpus_order() {
    let all = all_ids(corpus());
    assert!(all.len() > 10, "{} trees", all.len());
    let first = sample(2, 7);
    assert_eq!(first.len(), 2);
    assert_eq!(sample(2, 7), first, "the same seed takes the same trees");
    let positions: Vec<usize> = first
        .iter()
        .map(|id| all.iter().position(|a| a == id).expect("from the corpus"))
        .collect();
    assert!(positions[0] < positions[1], "kept in the corpus's order");
    // Another seed takes other trees (not one of ten seeds may repeat all).
    assert!((8..18).any(|seed| sample(2, seed) != first));
    // Not simply the first trees.
    assert!((0..10).any(|seed| sample(2, seed) != all[..2]));
    // More than the corpus holds: all of it.
    assert_eq!(sample(u32::MAX, 0), all);
}

#[test]
fn tree_name_takes_exactly_it_and_refuses_an_unknown_one() {
    let all = all_ids(fixture(""));
    let wanted = all[1].clone();
    let subset = SubsetOptions {
        names: vec![wanted.clone()],
        ..SubsetOptions::default()
    };
    let (ids, _, description) = take(fixture(""), subset).expect("loads");
    assert_eq!(ids, std::slice::from_ref(&wanted));
    assert!(
        description.contains(&format!("1 of {} trees", all.len())),
        "{description}"
    );

    let mut typo = wanted.clone();
    typo.push('x');
    let subset = SubsetOptions {
        names: vec![typo.clone()],
        ..SubsetOptions::default()
    };
    let err = take(fixture(""), subset).expect_err("refused");
    assert!(err.is_input(), "exit 2");
    let text = err.to_string();
    assert!(text.contains(&format!("--tree {typo}")), "{text}");
    assert!(text.contains(&format!("nearest: {wanted}")), "{text}");
}

#[test]
fn max_requests_takes_whole_trees_in_order() {
    let (all, turns, _) = take(fixture(""), SubsetOptions::default()).expect("loads");
    // A cap that falls inside the third tree: the first two, whole.
    let cap = (turns[0] + turns[1] + turns[2] - 1) as u64;
    let subset = SubsetOptions {
        max_requests: Some(cap),
        ..SubsetOptions::default()
    };
    let (ids, kept, description) = take(fixture(""), subset).expect("loads");
    assert_eq!(ids, all[..2]);
    assert_eq!(kept, turns[..2]);
    let requests = turns[0] + turns[1];
    assert!(
        description.contains(&format!("2 of {} trees, {requests} requests", all.len())),
        "{description}"
    );

    // Below the first tree's requests: refused, not an empty run.
    let biggest_first = turns[0] as u64;
    if biggest_first > 1 {
        let subset = SubsetOptions {
            max_requests: Some(biggest_first - 1),
            ..SubsetOptions::default()
        };
        let err = take(fixture(""), subset).expect_err("refused");
        assert!(err.to_string().contains("never cut"), "{err}");
    }
}

#[test]
fn senseless_combinations_are_refused() {
    for subset in [
        SubsetOptions {
            trees: Some(2),
            names: vec!["a".into()],
            ..SubsetOptions::default()
        },
        SubsetOptions {
            max_requests: Some(5),
            names: vec!["a".into()],
            ..SubsetOptions::default()
        },
        SubsetOptions {
            trees: Some(0),
            ..SubsetOptions::default()
        },
    ] {
        let err = take(corpus(), subset).expect_err("refused");
        assert!(err.is_input(), "{err}");
        assert!(err.to_string().contains("--"), "{err}");
    }
}

#[test]
fn convert_writes_the_trees_plan_takes() {
    let subset = SubsetOptions {
        trees: Some(2),
        seed: 3,
        ..SubsetOptions::default()
    };
    let (planned, _, _) = take(corpus(), subset.clone()).expect("loads");
    let out = crate::util::scratch("subset-convert").join("taken.jsonl");
    let options = arbor::convert::ConvertOptions {
        inputs: vec![corpus()],
        output: out.clone(),
        subset,
        ..Default::default()
    };
    let account = arbor::convert::convert(&options, &Kept::default()).expect("converts");
    assert_eq!(account.written.trees, 2);
    assert_eq!(all_ids(out), planned);
}

#[test]
fn the_subset_taken_is_recorded_for_the_runs_config() {
    let load = |subset: SubsetOptions| {
        let options = InputOptions {
            inputs: vec![corpus()],
            subset,
            ..InputOptions::default()
        };
        inputs::load(&options, &Kept::default()).expect("loads")
    };
    let whole = load(SubsetOptions::default());
    assert_eq!(whole.subset, None, "nothing recorded when all was taken");
    let all = whole.workload.trees.len() as u64;

    let sampled = load(SubsetOptions {
        trees: Some(3),
        seed: 5,
        max_requests: Some(1_000_000),
        ..SubsetOptions::default()
    });
    let record = sampled.subset.expect("recorded");
    assert_eq!(record.trees, Some(3));
    assert_eq!(record.seed, Some(5));
    assert_eq!(record.max_requests, Some(1_000_000));
    assert_eq!(record.kept_trees, 3);
    assert_eq!(record.of_trees, all);
    let turns: usize = sampled.workload.trees.iter().map(|t| t.turn_count()).sum();
    assert_eq!(record.requests, turns as u64);

    let first = whole.workload.trees[0].id.clone();
    let named = load(SubsetOptions {
        names: vec![first.clone()],
        ..SubsetOptions::default()
    })
    .subset
    .expect("recorded");
    assert_eq!(named.tree_names, vec![first]);
    assert_eq!(named.seed, None, "no seed without a sample");
    assert_eq!(named.kept_trees, 1);
}
