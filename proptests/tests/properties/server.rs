//! The batching server model on the virtual clock (`run_server`), over
//! agentic trees with shared prefixes under eviction pressure.

use std::path::Path;

use arbor_backends::virtual_clock::{run_server, Predicted};
use arbor_engine::dag::compile;
use arbor_engine::derive::DeriveOptions;
use arbor_engine::policy::Policy;
use arbor_engine::scheduler::Scheduler;
use arbor_engine::Workload;
use arbor_formats::synthetic::SyntheticSpec;
use arbor_sim::server::{Profile, ServerModel};
use proptest::prelude::*;

fn plan(workload: &Workload, profile: &Profile, jumps: bool) -> (Scheduler, Vec<Predicted>) {
    let policy = Policy::default();
    let compiled = compile(workload, &policy, &DeriveOptions::default()).expect("compiles");
    let mut scheduler = Scheduler::new(compiled, policy).expect("valid policy");
    let model = ServerModel::new(profile);
    let mut model = if jumps { model } else { model.without_jumps() };
    let mut out = Vec::new();
    run_server(&mut scheduler, workload, &mut model, &mut out).expect("engine accepts the driver");
    (scheduler, out)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Whatever the load and the pool, every request the scheduler sends
    /// completes, after its first token; cache hits are whole blocks of
    /// its prompt, one token short at most; the closed-form jump predicts
    /// exactly what stepping one step at a time predicts.
    #[test]
    fn the_server_model_serves_every_request_with_whole_block_hits(
        seed in 0u64..1000,
        trees in 1u32..5,
        blocks in prop_oneof![Just(64u32), Just(256), Just(4096)],
        seqs in 1u32..8,
    ) {
        let spec: SyntheticSpec = format!(
            "trees={trees},turns=6,child_turns=3,depth=1,spawn=0.3,hash_ids=true,isl=300,isl_growth=100,max_isl=900,osl=20,arrival_s=1,think_ms=500,tool_ms=300,seed={seed}"
        )
        .parse()
        .unwrap();
        let workload = spec.generate();
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../profiles/example.toml");
        let mut profile = Profile::from_toml_path(&path).unwrap();
        profile.engine.num_gpu_blocks = blocks;
        profile.engine.max_num_seqs = seqs;
        let bs = profile.engine.block_size;
        let (scheduler, jumped) = plan(&workload, &profile, true);
        let (_, stepped) = plan(&workload, &profile, false);
        prop_assert_eq!(&jumped, &stepped);
        prop_assert_eq!(jumped.len() as u64, scheduler.stats().dispatched);
        for p in &jumped {
            prop_assert!(p.sent < p.first_token && p.first_token <= p.done, "{:?}", p);
            prop_assert_eq!(p.cached_tokens % bs, 0);
            prop_assert!(p.cached_tokens < p.isl.max(1), "{:?}", p);
        }
    }
}
