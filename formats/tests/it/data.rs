//! Datasets and the bundled sample in-process: inputs without `data:`
//! pass through untouched (no registry read), the sample's corpus is the
//! corpus of the files it was compiled from, and the sample reads as its
//! documented workload.

use std::path::{Path, PathBuf};

use arbor_formats::data::{corpus_of, resolve_inputs};
use arbor_formats::load::sample;

fn weka_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/weka-kv-cache-tester")
}

#[test]
fn inputs_without_data_names_are_kept_as_given() {
    let inputs = vec![PathBuf::from("-"), PathBuf::from("a/b.jsonl")];
    assert_eq!(resolve_inputs(&inputs).unwrap(), inputs);
}

#[test]
fn the_samples_corpus_is_the_corpus_of_its_files() {
    let bundled = corpus_of(&[]).unwrap().expect("the sample is files");
    let files = corpus_of(&[weka_dir()]).unwrap().expect("a directory");
    assert_eq!(bundled.files, 4);
    assert_eq!(bundled.manifest_sha256, files.manifest_sha256);
    assert!(corpus_of(&[PathBuf::from("-")]).unwrap().is_none());
}

#[test]
fn the_sample_reads_as_four_trees_ten_agents_91_turns() {
    let w = sample::workload().unwrap();
    assert_eq!(w.trees.len(), 4);
    let agents: usize = w.trees.iter().map(|t| t.agents.len()).sum();
    let turns: usize = w
        .trees
        .iter()
        .flat_map(|t| &t.agents)
        .map(|a| a.turns.len())
        .sum();
    assert_eq!((agents, turns), (10, 91));
}
