//! Fuzz target: a run's `run.json` (`arbor.run/1`, `journal::RunStart`)
//! as `arbor summarize` reads it (`arbor_runs::summarize::rebuild`):
//! `journal::read_json` (the schema version checked first, then the
//! fields), then what the rebuild makes of it: the collector's warmups,
//! window start and tree turns, the plays checked against the turns, the
//! lanes, without `end.json` the end derived from the records, and
//! `Summary::build` (the scenario's validity, the config). The first
//! byte's low bit says whether the directory has `end.json`; the rest is
//! `run.json`, beside `testdata/runs/small/records.jsonl` (and its
//! `end.json`), in one scratch directory per process (in /dev/shm when
//! there is one). Besides never panicking: a rebuilt summary serializes,
//! reads back with `Summary::parse`, and serializes again to the same
//! bytes.

use std::path::{Path, PathBuf};

use arbor_runs::output::Summary;
use arbor_runs::summarize;

const RECORDS: &[u8] = include_bytes!("../../../testdata/runs/small/records.jsonl");
const END_JSON: &[u8] = include_bytes!("../../../testdata/runs/small/end.json");

fn scratch_dir() -> PathBuf {
    let dir = PathBuf::from("/dev/shm");
    let dir = if dir.is_dir() {
        dir
    } else {
        std::env::temp_dir()
    };
    let dir = dir.join(format!("arbor-fuzz-run-json-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the scratch directory can be made");
    std::fs::write(dir.join("records.jsonl"), RECORDS).expect("records.jsonl can be written");
    dir
}

/// A rebuilt summary's bytes read back as the same summary.
fn reads_back(summary: &Summary, path: &Path) {
    let bytes = summary.to_bytes().expect("a rebuilt summary serializes");
    let again = match Summary::parse(&bytes, path) {
        Ok(again) => again,
        Err(e) => panic!("a rebuilt summary does not read back: {}", e.message),
    };
    let twice = again.to_bytes().expect("a summary read back serializes");
    assert!(bytes == twice, "a rebuilt summary reads back as another");
}

fn main() {
    let dir = scratch_dir();
    let end = dir.join("end.json");
    let summary = dir.join("summary.json");
    afl::fuzz!(|data: &[u8]| {
        let Some((&pick, run)) = data.split_first() else {
            return;
        };
        if pick & 1 == 1 {
            std::fs::write(&end, END_JSON).expect("end.json can be written");
        } else {
            let _ = std::fs::remove_file(&end);
        }
        std::fs::write(dir.join("run.json"), run).expect("run.json can be written");
        if let Ok(rebuilt) = summarize::rebuild(&dir) {
            reads_back(&rebuilt.summary, &summary);
        }
    });
}
