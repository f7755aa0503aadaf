//! `virtual_clock::run_server`: the scheduler driven by the batching
//! server model, with prompts' block keys from the workload (hash ids in
//! their scope, copies, the cache-bust marker).

use arbor_backends::virtual_clock::{run_server, Predicted, Prompts};
use arbor_engine::dag::compile;
use arbor_engine::derive::DeriveOptions;
use arbor_engine::model::HashScope;
use arbor_engine::policy::Policy;
use arbor_engine::prompt::CacheBust;
use arbor_engine::scheduler::Scheduler;
use arbor_engine::{Tree, Turn, Workload};
use arbor_sim::server::{Profile, ServerModel};
use arbor_sim::WorkloadKeys;

use crate::build::{root, tool, tree};

fn profile() -> Profile {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../profiles/example.toml");
    Profile::from_toml_path(&path).expect("example profile")
}

/// A conversation of `turns` turns 10 s apart, each prompt the previous
/// one plus 4 blocks of 16 tokens (hash ids 0.., scope `scope`).
fn conversation(id: &str, turns: u32, scope: HashScope) -> Tree {
    let turns: Vec<Turn> = (0..turns)
        .map(|i| Turn {
            isl: 64 * (i + 1),
            osl: 8,
            hash_ids: (0..4 * (i + 1)).collect::<Vec<u32>>().into(),
            ..tool(u64::from(i) * 10, 1)
        })
        .collect();
    Tree {
        block_size: 16,
        hash_scope: scope,
        ..tree(id, 0, vec![root(turns)])
    }
}

fn plan(workload: &Workload, policy: Policy, cache_bust: bool) -> (Scheduler, Vec<Predicted>) {
    let options = DeriveOptions {
        overlap_tolerance: 0,
    };
    let compiled = compile(workload, &policy, &options).expect("valid workload");
    let policy_seed = policy.seed;
    let mut scheduler = Scheduler::new(compiled, policy).expect("valid policy");
    let mut model = ServerModel::new(&profile());
    let mut out = Vec::new();
    run_server(
        &mut scheduler,
        Prompts {
            workload,
            cache_bust: cache_bust.then_some(CacheBust {
                seed: policy_seed,
                salt: 0,
            }),
            keys: None,
        },
        &mut model,
        &mut out,
    )
    .expect("engine accepts the driver");
    out.sort_by_key(|p| p.id);
    (scheduler, out)
}

fn cached(out: &[Predicted]) -> Vec<u32> {
    out.iter().map(|p| p.cached_tokens).collect()
}

#[test]
fn a_conversation_hits_its_own_prefix_and_completions_are_the_models() {
    let workload = Workload {
        trees: vec![conversation("a", 3, HashScope::Local)],
    };
    let (scheduler, out) = plan(&workload, Policy::default(), false);
    assert_eq!(cached(&out), [0, 64, 128]);
    for p in &out {
        let slot = scheduler.slot(p.id).unwrap();
        assert_eq!((slot.sent, slot.end), (p.sent, p.done));
        assert!(p.sent < p.first_token && p.first_token < p.done, "{p:?}");
        assert_eq!((p.isl, p.osl), (64 * (p.turn + 1), 8));
    }
}

#[test]
fn copies_share_prefixes_unless_the_cache_is_busted() {
    let workload = Workload {
        trees: vec![conversation("a", 2, HashScope::Local)],
    };
    // Copy 1 starts 5 s after copy 0 (its turns at 5 s and 15 s).
    let policy = Policy {
        copies: 2,
        stagger: arbor_engine::policy::Stagger::Even {
            span: 10 * crate::build::S,
        },
        ..Policy::default()
    };
    let (_, shared) = plan(&workload, policy.clone(), false);
    let (_, busted) = plan(&workload, policy, true);
    // Shared: copy 1 finds copy 0's blocks from its first turn on.
    let mut by_play: Vec<(u32, u32, u32)> = shared
        .iter()
        .map(|p| (p.play, p.turn, p.cached_tokens))
        .collect();
    by_play.sort();
    assert_eq!(by_play, [(0, 0, 0), (0, 1, 64), (1, 0, 48), (1, 1, 112)]);
    // Busted: each play hits only its own previous turn.
    let mut by_play: Vec<(u32, u32, u32)> = busted
        .iter()
        .map(|p| (p.play, p.turn, p.cached_tokens))
        .collect();
    by_play.sort();
    assert_eq!(by_play, [(0, 0, 0), (0, 1, 64), (1, 0, 0), (1, 1, 64)]);
}

#[test]
fn trees_share_hash_ids_only_in_a_global_scope() {
    for (scope, second_tree_hits) in [(HashScope::Local, 0), (HashScope::Global, 48)] {
        let mut b = conversation("b", 1, scope);
        b.arrival = 100 * crate::build::S;
        let workload = Workload {
            trees: vec![conversation("a", 1, scope), b],
        };
        let (_, out) = plan(&workload, Policy::default(), false);
        // Tree b's one turn repeats tree a's: 64 tokens, 3 blocks may hit.
        assert_eq!(cached(&out), [0, second_tree_hits], "{scope:?}");
    }
}

#[test]
fn keys_stored_once_predict_what_keys_computed_per_request_do() {
    // Closed loops over a workload of branching trees, at loads from
    // light to evicting: the stored keys change nothing, and with the
    // cache-bust marker they are not used.
    let spec: arbor_formats::synthetic::SyntheticSpec =
        "trees=40,turns=8,depth=1,spawn=0.2,hash_ids=true,seed=9"
            .parse()
            .expect("spec");
    let workload = spec.generate();
    let profile = profile();
    let keys = WorkloadKeys::new(&workload, profile.engine.block_size);
    let compiled =
        compile(&workload, &Policy::default(), &DeriveOptions::default()).expect("compiles");
    for sessions in [1, 8, 40] {
        for cache_bust in [false, true] {
            let run = |keys: Option<&WorkloadKeys>| {
                let policy = Policy {
                    sessions: Some(sessions),
                    ..Policy::default()
                };
                let mut scheduler = Scheduler::new(compiled.clone(), policy).expect("policy");
                let mut model = ServerModel::new(&profile);
                let mut out = Vec::new();
                let prompts = Prompts {
                    workload: &workload,
                    cache_bust: cache_bust.then_some(CacheBust { seed: 0, salt: 0 }),
                    keys,
                };
                run_server(&mut scheduler, prompts, &mut model, &mut out).expect("runs");
                (out, model.gauges())
            };
            let (computed, gauges) = run(None);
            assert!(!computed.is_empty());
            assert!(gauges.prefix_hit_tokens > 0, "{sessions} sessions");
            assert_eq!(
                run(Some(&keys)),
                (computed, gauges),
                "{sessions} {cache_bust}"
            );
        }
    }
}
