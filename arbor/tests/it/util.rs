//! Helpers of the library's tests: scratch directories, trace files, an
//! observer that keeps what it was told.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use arbor::{Error, Observer};

/// A fresh directory under the target's temp dir.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("arbor-lib-it")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The first `trees` of the twelve identical three-turn trees of
/// `testdata/trees/identical-12.jsonl` (arbor's native format, 200 ms a
/// turn), written to `dir/identical.jsonl`.
pub fn identical_trees(dir: &Path, trees: usize) -> PathBuf {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/trees/identical-12.jsonl");
    let text = std::fs::read_to_string(&fixture).expect("the fixture");
    let lines: Vec<&str> = text.lines().take(trees).collect();
    assert_eq!(lines.len(), trees, "the fixture holds 12 trees");
    let path = dir.join("identical.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").expect("write trees");
    path
}

/// A JSON file, parsed.
pub fn read(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// An observer that keeps every notice and output line, and counts the
/// runs it saw finish.
#[derive(Default)]
pub struct Kept {
    pub notices: Mutex<Vec<String>>,
    pub outputs: Mutex<Vec<String>>,
    pub finished: Mutex<u32>,
}

impl Kept {
    pub fn notices(&self) -> Vec<String> {
        self.notices.lock().unwrap().clone()
    }
    pub fn outputs(&self) -> Vec<String> {
        self.outputs.lock().unwrap().clone()
    }
}

impl Observer for Kept {
    fn notice(&self, line: &str) {
        self.notices.lock().unwrap().push(line.to_string());
    }
    fn output(&self, line: &str) -> Result<(), Error> {
        self.outputs.lock().unwrap().push(line.to_string());
        Ok(())
    }
    fn run_finished(&self, _run: &arbor::observer::Finished<'_>) -> Result<(), Error> {
        *self.finished.lock().unwrap() += 1;
        Ok(())
    }
}

/// A trace of the Weka fixtures (`testdata/weka-kv-cache-tester/NAME`;
/// `""` is the directory).
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/weka-kv-cache-tester")
        .join(name)
}

/// Lines of a JSONL file as JSON values.
pub fn jsonl(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).expect("valid JSON line"))
        .collect()
}

/// Seconds (a JSON number) to nanoseconds.
pub fn secs_to_ns(v: &serde_json::Value) -> u64 {
    (v.as_f64().expect("a number") * 1e9).round() as u64
}

/// What the CLI's `FAST` flags give (`--tool-time zero --think-time-pct 0
/// --idle-gap-cap 0.1`): a quick replay.
pub fn fast() -> arbor::PolicyOptions {
    use arbor::engine::policy::{GapTransform, Policy};
    arbor::PolicyOptions {
        tool_time: Some(GapTransform::Zero),
        think_time_pct: Some(Policy::think_pct("0").unwrap()),
        idle_gap_cap: Some(100_000_000),
        ..arbor::PolicyOptions::default()
    }
}

/// Inputs of these paths.
pub fn inputs(paths: &[PathBuf]) -> arbor::InputOptions {
    arbor::InputOptions {
        inputs: paths.to_vec(),
        ..arbor::InputOptions::default()
    }
}

/// A plan's report as JSON: what `arbor plan --json` prints.
pub fn plan_json(options: &arbor::PlanOptions) -> serde_json::Value {
    let report = arbor::plan::plan(options, &arbor::Quiet).unwrap_or_else(|e| panic!("{e:?}"));
    serde_json::to_value(&report).expect("a plan report is JSON")
}

/// The built-in emulator with a fixed TTFT and inter-token gap (in
/// nanoseconds), everything else as `arbor run` leaves it.
pub fn emulator(ttft_ns: u64, itl_ns: u64) -> arbor::EmulatorOptions {
    arbor::EmulatorOptions {
        flags: arbor::sim::emulator::EmulatorFlags {
            ttft_ms: Some(ttft_ns),
            itl_ms: Some(itl_ns),
            ..Default::default()
        },
        ..arbor::EmulatorOptions::default()
    }
}

/// What the CLI's `AGENTX_SHORT` flags give: a short AgentX recipe run
/// (closed loop of 3 lanes with a warm-up window, 2 s, a fast emulator,
/// seed 7) of the Weka fixtures into `out`; the recipe's own locks are
/// overridden, so the run is stamped invalid.
pub fn agentx_short(out: &Path) -> arbor::RunOptions {
    arbor::RunOptions {
        input: inputs(&[fixture("")]),
        policy: arbor::PolicyOptions {
            sessions: Some(3),
            duration: Some(2_000_000_000),
            idle_gap_cap: Some(500_000_000),
            seed: Some(7),
            ..arbor::PolicyOptions::default()
        },
        scenario: arbor::ScenarioOptions {
            scenario: Some("agentx-mvp".into()),
            unsafe_override: true,
            warmup_spread: 500_000_000,
            ..arbor::ScenarioOptions::default()
        },
        emulator: emulator(2_000_000, 50_000),
        out: Some(out.to_path_buf()),
        ..arbor::RunOptions::default()
    }
}
