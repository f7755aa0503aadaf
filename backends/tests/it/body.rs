//! `build_turn_body` (words written straight into the body) against
//! `build_body` of `prompt::build` (the reference): the same bytes for every
//! turn of the bundled fixtures and of synthetic workloads, every API, with
//! and without a cache-bust marker.

use std::path::Path;

use arbor_backends::live::request::{build_body, build_turn_body, Api, BodyConfig, MaxTokensField};
use arbor_engine::model::BlockIds;
use arbor_engine::prompt::{self, Prompt};
use arbor_engine::{Agent, AgentKind, HashScope, Tree, Turn, Workload};
use arbor_formats::load::load_path;
use arbor_formats::synthetic::SyntheticSpec;

const MARKERS: [Option<&str>; 3] = [
    None,
    Some("[rid:0123456789ab]\n\n"),
    Some("\"quoted\\\" \u{1}é\t"),
];

/// Request options besides the API: varied turn by turn (every
/// combination on every turn would only repeat the prompt work).
fn configs() -> Vec<BodyConfig> {
    vec![
        BodyConfig {
            model: "m".into(),
            ..BodyConfig::default()
        },
        BodyConfig {
            model: "org/model \"q\" \u{7}é".into(),
            max_tokens_field: MaxTokensField::MaxCompletionTokens,
            ignore_eos: true,
            ..BodyConfig::default()
        },
        BodyConfig {
            model: "m".into(),
            ignore_eos: true,
            extra_body: serde_json::from_str(r#"{"temperature":0,"ignore_eos":false}"#).ok(),
            ..BodyConfig::default()
        },
    ]
}

/// Checks every turn of `workload` (and one past each end); returns how
/// many bodies were synthesized.
fn check(name: &str, workload: &Workload) -> usize {
    let configs = configs();
    let mut synthesized = 0;
    for (t, tree) in workload.trees.iter().enumerate() {
        for (a, agent) in tree.agents.iter().enumerate() {
            for turn in 0..=agent.turns.len() {
                let reference = prompt::build(tree, a, turn);
                if matches!(reference, Prompt::Synthesized(_)) {
                    synthesized += 1;
                }
                let base = &configs[(t + a + turn) % configs.len()];
                for api in [Api::Chat, Api::Completions, Api::Messages] {
                    let config = BodyConfig {
                        api,
                        ..base.clone()
                    };
                    for marker in MARKERS {
                        let max_tokens = turn as u32 % 3;
                        let want = build_body(&config, &reference, max_tokens, marker);
                        let got = build_turn_body(&config, tree, a, turn, max_tokens, marker);
                        assert!(
                            got == want,
                            "{name}: tree {t} agent {a} turn {turn} {api:?} marker {marker:?}: \
                             bodies differ\n got {} bytes\nwant {} bytes",
                            got.len(),
                            want.len()
                        );
                    }
                }
            }
        }
        // Past the last agent: an empty synthesized prompt.
        let config = &configs[0];
        assert_eq!(
            build_turn_body(config, tree, tree.agents.len(), 0, 5, MARKERS[1]),
            build_body(
                config,
                &prompt::build(tree, tree.agents.len(), 0),
                5,
                MARKERS[1]
            )
        );
    }
    synthesized
}

fn fixture(relative: &str) -> Workload {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata")
        .join(relative);
    let loaded = load_path(&path, None).unwrap_or_else(|e| panic!("{relative}: {e}"));
    Workload {
        trees: loaded.trees,
    }
}

#[test]
fn turn_bodies_match_the_reference_on_the_bundled_fixtures() {
    for (relative, synthesized) in [
        ("weka-kv-cache-tester", true),
        ("mooncake-fast25/conversation_trace.head400.jsonl", true),
        ("mooncake-fast25/synthetic_trace.head300.jsonl", true),
        ("lmcache-agent-trace/miniswe", false),
        ("lmcache-agent-trace/magagent", false),
        ("abench/sample.jsonl", false),
        ("openai-log/sample.jsonl", false),
    ] {
        let workload = fixture(relative);
        assert!(!workload.trees.is_empty(), "{relative}");
        let n = check(relative, &workload);
        if synthesized {
            assert!(n > 0, "{relative}: no synthesized turn");
        }
    }
}

#[test]
fn turn_bodies_match_the_reference_on_synthetic_workloads() {
    for spec in [
        "trees=3,turns=6,depth=2,isl=3000,isl_growth=700,hash_ids=true,seed=11",
        "trees=2,turns=5,depth=1,isl=777,isl_growth=300,seed=4",
        "trees=1,turns=2,depth=0,isl=100000,isl_growth=1,hash_ids=true,seed=1",
        "trees=1,turns=3,depth=0,isl=1,isl_growth=0,hash_ids=true,seed=2",
    ] {
        let workload = spec.parse::<SyntheticSpec>().unwrap().generate();
        assert!(check(spec, &workload) > 0, "{spec}");
    }
}

#[test]
fn turn_bodies_match_the_reference_on_edge_shapes() {
    let turn = |isl: u32, ids: &[u32]| Turn {
        isl,
        hash_ids: BlockIds::from(ids),
        ..Turn::default()
    };
    for (block_size, hash_scope) in [(0, HashScope::Local), (3, HashScope::Global)] {
        let tree = Tree {
            id: "edge".into(),
            block_size,
            hash_scope,
            agents: vec![Agent {
                id: "root".into(),
                parent: None,
                kind: AgentKind::Root,
                recorded_end: None,
                turns: vec![
                    turn(0, &[]),
                    turn(0, &[1, 2]),
                    turn(5, &[]),
                    turn(200, &[4, 5]),
                    turn(2, &[9, 10, 11]),
                    turn(64, &[u32::MAX, 0]),
                ],
            }],
            ..Tree::default()
        };
        check("edge", &Workload { trees: vec![tree] });
    }
}
