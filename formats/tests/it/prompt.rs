//! The engine's synthesized prompts ([`arbor_engine::prompt`]) pinned on
//! synthetic workloads: a change here changes what every run sends.

use arbor_engine::content::{fnv1a, FNV_OFFSET};
use arbor_engine::prompt::{build, Prompt};
use arbor_formats::synthetic::SyntheticSpec;

fn text(p: Prompt<'_>) -> String {
    match p {
        Prompt::Synthesized(s) => s,
        Prompt::Recorded(_) => panic!("expected synthesized text"),
    }
}

/// FNV-1a of every synthesized prompt of `spec`'s workload, and their
/// total length.
fn digest(spec: &str) -> (u64, usize) {
    let w = spec.parse::<SyntheticSpec>().unwrap().generate();
    let (mut hash, mut len) = (FNV_OFFSET, 0);
    for t in &w.trees {
        for (a, agent) in t.agents.iter().enumerate() {
            for turn in 0..agent.turns.len() {
                let s = text(build(t, a, turn));
                hash = fnv1a(hash, s.as_bytes());
                len += s.len();
            }
        }
    }
    (hash, len)
}

#[test]
fn synthesized_prompts_are_pinned() {
    // A change here changes what every run sends: do it on purpose.
    let with_ids = digest("trees=2,turns=6,depth=1,isl=300,isl_growth=90,hash_ids=true,seed=5");
    let virtual_ids = digest("trees=2,turns=6,depth=1,isl=300,isl_growth=90,seed=5");
    assert_eq!(with_ids, (14305428957652541643, 426014));
    assert_eq!(virtual_ids, (1701982982332860686, 424564));
}
