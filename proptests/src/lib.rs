//! arbor-proptests: the scheduling invariants, stated and checked.
//!
//! This library holds what the properties share; the properties themselves
//! live in `tests/properties/` (one test binary), each with a doc comment
//! saying what it guarantees to a user. `docs/testing.md` lists them.
//!
//! - [`gen`]: proptest strategies for workloads (built directly, with small
//!   integer times so failures shrink to readable cases), policies and
//!   service models;
//! - [`driver`]: the shipped virtual-clock loop
//!   (`arbor_backends::virtual_clock::run_with`) with any per-request
//!   service function (including a seeded random one) and a trace of every
//!   call;
//! - [`oracle`]: a deliberately simple reference scheduler;
//! - [`roundtrip`]: trees written by a writer and read back, compared but
//!   for exactly what the conversion's account names;
//! - [`show`]: compact, readable renderings of workloads and timelines for
//!   assertion messages.
//!
//! `PROPTEST_CASES=N` raises the number of cases for deep runs.
#![forbid(unsafe_code)]

pub mod driver;
pub mod gen;
pub mod oracle;
pub mod roundtrip;
pub mod show;

use arbor_engine::dag::{compile, CompiledWorkload};
use arbor_engine::derive::DeriveOptions;
use arbor_engine::policy::Policy;
use arbor_engine::scheduler::Scheduler;
use arbor_engine::Workload;
use arbor_sim::ServiceModel;

pub use driver::{Service, Trace};

/// Exact derivation: no overlap is treated as rounding.
pub const EXACT: DeriveOptions = DeriveOptions {
    overlap_tolerance: 0,
};

/// Compiles `workload` with exact derivation.
pub fn compile_exact(workload: &Workload, policy: &Policy) -> CompiledWorkload {
    compile(workload, policy, &EXACT).expect("generated workloads compile")
}

/// A fresh scheduler for `workload` under `policy` (exact derivation).
pub fn scheduler(workload: &Workload, policy: &Policy) -> Scheduler {
    Scheduler::new(compile_exact(workload, policy), policy.clone())
        .expect("generated policies are valid")
}

/// Compiles `workload` (exact derivation) and runs it to the end with the
/// shipped virtual driver.
pub fn plan(workload: &Workload, policy: Policy, model: &ServiceModel) -> Scheduler {
    let mut s = scheduler(workload, &policy);
    arbor_backends::virtual_clock::run(&mut s, model)
        .expect("the virtual driver never misuses the engine");
    s
}

/// Runs `workload` to the end with the test driver and `service`.
pub fn run(workload: &Workload, policy: &Policy, service: &Service) -> (Scheduler, Trace) {
    let mut s = scheduler(workload, policy);
    let trace = driver::run(&mut s, &|r| service.time(r), &mut driver::no_hook);
    (s, trace)
}

/// Cases per property: `PROPTEST_CASES` when set (deep runs by hand), else
/// `default` (what CI runs).
pub fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The proptest configuration every property uses: `cases(default)` cases,
/// failures persisted (and replayed first on every run) in
/// `proptest-regressions/<file>.txt` at the workspace root.
pub fn config(default: u32, file: &str) -> proptest::test_runner::Config {
    use proptest::test_runner::{Config, FileFailurePersistence};
    let path = format!(
        "{}/../proptest-regressions/{file}.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    Config {
        cases: cases(default),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(Box::leak(
            path.into_boxed_str(),
        )))),
        ..Config::default()
    }
}

/// For each tree, for each flat turn: true when the turn belongs to a
/// background agent or to a descendant of one.
pub fn background_turns(workload: &Workload) -> Vec<Vec<bool>> {
    use arbor_engine::model::AgentKind;
    workload
        .trees
        .iter()
        .map(|tree| {
            let mut bg: Vec<bool> = Vec::with_capacity(tree.agents.len());
            for a in &tree.agents {
                let inherited = a.parent.is_some_and(|p| bg[p as usize]);
                bg.push(inherited || a.kind == AgentKind::Background);
            }
            tree.agents
                .iter()
                .enumerate()
                .flat_map(|(i, a)| std::iter::repeat_n(bg[i], a.turns.len()))
                .collect()
        })
        .collect()
}

/// Every fixture trace shipped in `testdata/` (its subdirectories but
/// `bad/`), in a stable order, with its path.
pub fn fixtures() -> Vec<(std::path::PathBuf, Workload)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .expect("testdata")
        .map(|e| e.expect("testdata entry").path())
        .filter(|d| d.is_dir() && !d.ends_with("bad"))
        .collect();
    dirs.sort();
    let mut out = Vec::new();
    for dir in dirs {
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .expect("fixture dir")
            .map(|e| e.expect("fixture entry").path())
            .filter(|p| {
                matches!(
                    p.extension().and_then(|e| e.to_str()),
                    Some("json" | "jsonl" | "zst")
                )
            })
            .collect();
        files.sort();
        for file in files {
            let loaded = arbor_formats::load::load_path(&file, None)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let w = Workload {
                trees: loaded.trees,
            };
            out.push((file, w));
        }
    }
    out
}
