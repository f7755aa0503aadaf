//! Writers: a round trip through every writer gives the same trees, or
//! exactly the differences its account names (`arbor convert --to`), on
//! the real fixtures and on generated workloads; arbor's native form and
//! Dynamo's trace express every generated tree in their range whole.

use std::collections::BTreeSet;

use arbor_engine::model::{AgentKind, InputKind, Tree};
use arbor_formats::write::{Account, Target};
use arbor_proptests::gen::{self, MEDIUM};
use arbor_proptests::roundtrip::{check, read, round_trip, write_and_read};
use arbor_proptests::{config, show};
use proptest::prelude::*;

const WEKA: &[&str] = &[
    "weka-kv-cache-tester/trace_0187.json",
    "weka-kv-cache-tester/trace_0277.json",
    "weka-kv-cache-tester/trace_0291.json",
    "weka-kv-cache-tester/trace_0504.json",
];
const DYNAMO: &str = "dynamo/sample.jsonl";
const GRAPH: &str = "aiperf-graph/sample.dag.jsonl";
const ABENCH: &str = "abench/sample.jsonl";
const MOONCAKE: &str = "mooncake-fast25/conversation_trace.head400.jsonl";
const AGENTIC: &str = "golden/agentic_mooncake.jsonl";

fn keys(account: &Account) -> (Vec<&str>, Vec<&str>) {
    (account.lost_keys(), account.inferred_keys())
}

#[test]
fn weka_writes_weka_and_dynamo_trees_back() {
    let account = round_trip(Target::Weka, WEKA);
    assert_eq!(keys(&account), (vec![], vec!["file_names"]));
    let account = round_trip(Target::Weka, &[DYNAMO]);
    assert_eq!(
        keys(&account),
        (
            vec!["hash_scope", "agent_end", "arrival"],
            vec!["file_names", "model_unknown"]
        )
    );
}

#[test]
fn mooncake_keeps_starts_and_lengths_and_names_what_it_drops() {
    let account = round_trip(Target::Mooncake, &[MOONCAKE]);
    assert_eq!(keys(&account), (vec![], vec!["hash_ids"]));
    let account = round_trip(Target::Mooncake, &[DYNAMO]);
    assert_eq!(
        account.lost_keys(),
        ["subagents", "arrival", "durations", "ttft", "block_size"]
    );
    // Each agent its own tree: 4 trees from 2.
    let subagents = account.entry("subagents").unwrap();
    assert_eq!((subagents.trees, subagents.agents), (1, 2));
    let account = round_trip(Target::Mooncake, &WEKA[..2]);
    assert!(account.lost_keys().contains(&"models"));
    // Text formats: the text goes, the lengths stay.
    let account = round_trip(Target::Mooncake, &[ABENCH]);
    assert!(
        account.lost_keys().contains(&"text"),
        "{:?}",
        account.lost_keys()
    );
}

#[test]
fn agentic_mooncake_keeps_the_graph() {
    let account = round_trip(Target::AgenticMooncake, &[AGENTIC]);
    assert_eq!(keys(&account).0, Vec::<&str>::new());
    let account = round_trip(Target::AgenticMooncake, &[DYNAMO]);
    assert_eq!(
        account.lost_keys(),
        ["gaps", "starts", "durations", "ttft", "block_size"]
    );
    let starts = account.entry("starts").unwrap();
    assert_eq!((starts.trees, starts.turns), (2, 7));
}

#[test]
fn dynamo_keeps_sessions_and_times_to_the_millisecond() {
    let account = round_trip(Target::Dynamo, &[DYNAMO]);
    assert_eq!(keys(&account), (vec![], vec!["hash_ids"]));
    let account = round_trip(Target::Dynamo, WEKA);
    assert!(account.lost_keys().contains(&"models"));
    // The graph sample's 300.5 ms delay: a start rounded to the ms.
    let account = round_trip(Target::Dynamo, &[GRAPH]);
    let rounded = account
        .entry("start_ms")
        .expect("a start not on a whole ms");
    assert_eq!((rounded.trees, rounded.turns), (1, 1));
}

#[test]
fn aiperf_graph_keeps_its_own_graphs_and_text() {
    // Its own sample: the same graph, text and tokens. The foreground fork
    // reads back as a spawn on the last turn (background); the template
    // spawned in both trees gets a name of its own in the second.
    let account = round_trip(Target::AiperfGraph, &[GRAPH]);
    assert_eq!(
        keys(&account),
        (vec!["kinds", "provenance"], vec!["session_ids"])
    );
    let kinds = account.entry("kinds").unwrap();
    assert_eq!((kinds.trees, kinds.agents), (1, 1));
    let account = round_trip(Target::AiperfGraph, &[DYNAMO]);
    assert_eq!(
        keys(&account),
        (
            vec![
                "join_gaps",
                "starts",
                "input_kind",
                "durations",
                "ttft",
                "hash_ids",
                "arrival"
            ],
            vec!["filler_text"]
        )
    );
    // Recorded text is kept (each prompt as recorded); token counts are
    // re-estimated from it, and the last answers have no next prompt.
    let account = round_trip(Target::AiperfGraph, &[ABENCH]);
    assert_eq!(
        keys(&account),
        (vec!["responses", "isl", "input_kind"], vec![])
    );
    // Subagents with their spawn and join turns, from the recorded times.
    let account = round_trip(
        Target::AiperfGraph,
        &["weka-kv-cache-tester/trace_0291.json"],
    );
    assert_eq!(
        keys(&account),
        (
            vec![
                "join_gaps",
                "starts",
                "durations",
                "hash_ids",
                "tool_system_tokens",
                "agent_end"
            ],
            vec!["filler_text"]
        )
    );
}

#[test]
fn a_local_scope_keeps_trees_apart_in_global_formats() {
    // Two Weka trees written to Mooncake share no block, as in Weka.
    let source = read(&WEKA[..2]);
    for target in [Target::Mooncake, Target::AgenticMooncake, Target::Dynamo] {
        let (back, _) = write_and_read(target, &source);
        let ids = |trees: &[Tree], pick: &dyn Fn(&Tree) -> bool| -> BTreeSet<u32> {
            trees
                .iter()
                .filter(|t| pick(t))
                .flat_map(|t| t.agents.iter().flat_map(|a| a.turns.iter()))
                .flat_map(|t| t.hash_ids.iter())
                .collect()
        };
        let first = &source[0].id;
        let a = ids(&back, &|t| t.id.starts_with(first.as_str()));
        let b = ids(&back, &|t| !t.id.starts_with(first.as_str()));
        assert!(!a.is_empty() && !b.is_empty(), "{target}");
        assert!(a.is_disjoint(&b), "{target}: trees share blocks");
    }
}

#[test]
fn the_account_counts_what_it_names() {
    let (_, account) = write_and_read(Target::Mooncake, &read(&[DYNAMO]));
    // The Dynamo sample: 2 trees, 4 agents, 9 turns, all with durations
    // and ttft; one tree has two subagents.
    assert_eq!(
        (
            account.written.trees,
            account.written.agents,
            account.written.turns
        ),
        (2, 4, 9)
    );
    let durations = account.entry("durations").unwrap();
    assert_eq!((durations.trees, durations.turns), (2, 9));
}

#[test]
fn every_target_reads_its_output_back_as_its_format() {
    let source = read(&[DYNAMO]);
    for target in Target::ALL {
        let (back, _) = write_and_read(target, &source);
        assert!(!back.is_empty(), "{target}");
    }
}

#[test]
fn arbor_keeps_every_fixture_whole() {
    // Everything but what the source's reader inferred (not in any file).
    for fixtures in [
        WEKA,
        &[DYNAMO],
        &[GRAPH],
        &[ABENCH],
        &[AGENTIC],
        &[MOONCAKE],
    ] {
        let account = round_trip(Target::Arbor, fixtures);
        assert!(account.inferred.is_empty(), "{fixtures:?}");
        assert!(
            account.lost_keys().iter().all(|k| *k == "provenance"),
            "{fixtures:?}: {:?}",
            account.lost_keys()
        );
    }
}

proptest! {
    #![proptest_config(config(48, "writers"))]

    /// Whatever the workload (nested, blocking and background subagents,
    /// overlaps, unknown durations, stated DAGs), every writer's output
    /// reads back as the same trees but for exactly what its account
    /// names: `arbor convert` never changes a workload silently, and never
    /// claims a change it did not make.
    #[test]
    fn every_account_names_exactly_what_its_round_trip_changes(
        w in gen::any_workload(MEDIUM),
    ) {
        for target in Target::ALL {
            if let Err(e) = check(target, &w.trees, target.name()) {
                return Err(TestCaseError::fail(format!("{e}\n{}", show::workload(&w))));
            }
        }
    }

    /// The native form keeps every workload whole (nothing lost or
    /// inferred); Dynamo's request trace keeps every workload in its range
    /// whole (blocking subagents, derived edges, whole-millisecond times,
    /// no input kinds or agent ends, a tree at time 0): only its sessions
    /// are named.
    #[test]
    fn arbor_and_dynamo_express_every_workload_in_their_range(
        w in gen::any_workload(MEDIUM),
        d in gen::workload(MEDIUM),
    ) {
        let account = check(Target::Arbor, &w.trees, "arbor").map_err(TestCaseError::fail)?;
        prop_assert!(account.lost.is_empty() && account.inferred.is_empty(), "{:?}", account);
        let mut trees = d.trees.clone();
        for tree in &mut trees {
            for agent in tree.agents.iter_mut().skip(1) {
                agent.kind = AgentKind::Blocking;
            }
            for agent in &mut tree.agents {
                agent.recorded_end = None;
                agent.turns.iter_mut().for_each(|t| t.input_kind = InputKind::Unknown);
            }
        }
        trees[0].arrival = 0;
        let account = check(Target::Dynamo, &trees, "dynamo").map_err(TestCaseError::fail)?;
        prop_assert!(account.lost.is_empty(), "{:?}\n{}", account.lost_keys(), show::workload(&d));
        prop_assert!(
            account.inferred_keys().iter().all(|k| *k == "session_ids"),
            "{:?}",
            account.inferred_keys()
        );
    }
}

#[test]
fn every_fixture_through_every_writer_names_exactly_what_changes() {
    let mut checked = 0;
    for (path, workload) in arbor_proptests::fixtures() {
        for target in Target::ALL {
            let what = format!("{} to {target}", path.display());
            if let Err(e) = check(target, &workload.trees, &what) {
                panic!("{e}");
            }
            checked += 1;
        }
    }
    assert!(checked >= 6 * 10, "only {checked} conversions");
}
