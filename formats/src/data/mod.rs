//! Datasets by name (docs/data.md): the registry (`registry`: the reviewed
//! file, `ARBOR_DATA_REGISTRY`, the user's pins, the fetch cache's place),
//! recording a local directory's hashes (`pin`), and what inputs are as a
//! corpus: `data:NAME` inputs resolved to their fetched directory
//! ([`resolve_inputs`]), the `corpus` a plan or run records
//! ([`corpus_of`]), and whether inputs are a pinned corpus ([`unpinned`],
//! the scenario's check). Downloading is `arbor_backends::fetch`; the
//! `arbor data` command's printing is the binary's. Does no network I/O.

pub mod pin;
pub mod registry;

use std::path::PathBuf;

use crate::files::trace_files;
use crate::manifest::{self, Corpus, FileHash};
use arbor_error::Error;
use registry::Registry;

/// The prefix of an input that names a dataset.
pub const PREFIX: &str = "data:";

/// The registry in effect, its faults exit-code-2 errors.
pub fn registry() -> Result<Registry, Error> {
    Registry::load().map_err(Error::input)
}

/// Where `arbor data fetch NAME` puts the files when no directory is
/// given: the fetch cache ([`registry::cache_dir`]).
pub fn default_dir(name: &str) -> Result<PathBuf, Error> {
    registry::cache_dir(name).ok_or_else(|| {
        Error::input("no home directory (HOME and XDG_CACHE_HOME unset): give --dir DIR")
    })
}

/// Input paths with every `data:NAME` replaced by the dataset's fetched
/// directory: exit 2 for an unknown name or one not fetched yet.
pub fn resolve_inputs(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
    let named = |p: &PathBuf| {
        p.to_str()
            .and_then(|s| s.strip_prefix(PREFIX))
            .map(str::to_string)
    };
    if !inputs.iter().any(|p| named(p).is_some()) {
        return Ok(inputs.to_vec());
    }
    let registry = registry()?;
    inputs
        .iter()
        .map(|p| match named(p) {
            None => Ok(p.clone()),
            Some(name) => {
                let d = registry
                    .get(&name)
                    .map_err(|e| Error::input(format!("{PREFIX}{name}: {e}")))?;
                d.local_dir().ok_or_else(|| {
                    Error::input(format!(
                        "{PREFIX}{name}: not fetched yet: run `arbor data fetch {name}` first"
                    ))
                })
            }
        })
        .collect()
}

/// The corpus identity of trace inputs (already resolved): the bundled
/// sample's when there are none, `None` when an input is a stream; with
/// the dataset that pins it and how (`pinned`), when one does.
pub fn corpus_of(inputs: &[PathBuf]) -> Result<Option<Corpus>, Error> {
    let Some(files) = file_hashes_of(inputs)? else {
        return Ok(None);
    };
    let mut corpus = manifest::corpus(&files);
    corpus.pinned = registry()?.pin_of(&corpus.manifest_sha256);
    Ok(Some(corpus))
}

fn file_hashes_of(inputs: &[PathBuf]) -> Result<Option<Vec<FileHash>>, Error> {
    if inputs.is_empty() {
        return Ok(Some(crate::sample::file_hashes()));
    }
    let Some(files) = trace_files(inputs).map_err(Error::input)? else {
        return Ok(None);
    };
    manifest::hash_files(&files).map(Some).map_err(Error::input)
}

/// Why inputs are not a pinned registry corpus (reviewed, or pinned on
/// first use from the entry's own source), naming both manifests; `None`
/// when they are. A local pin (`arbor data pin`) is never one.
pub fn unpinned(inputs: &[PathBuf]) -> Result<Option<String>, Error> {
    let inputs = resolve_inputs(inputs)?;
    let Some(corpus) = corpus_of(&inputs)? else {
        return Ok(Some(
            "the inputs include a stream (stdin or a FIFO): a pinned corpus is a set of files"
                .to_string(),
        ));
    };
    let registry = registry()?;
    let local = match &corpus.pinned {
        Some(pin) if pin.how.is_public() => return Ok(None),
        Some(pin) => format!(
            " (it is the local pin {}: a local pin never counts as a registry corpus)",
            pin.dataset
        ),
        None => String::new(),
    };
    let pinned: Vec<String> = registry
        .datasets
        .iter()
        .filter(|d| d.pinning().is_some_and(|p| p.is_public()))
        .filter_map(|d| d.manifest().map(|m| format!("{} {m}", d.name)))
        .collect();
    Ok(Some(format!(
        "the inputs' manifest {} ({} files) matches no pinned registry corpus{local} (pinned: {}); \
         fetch one with `arbor data fetch NAME`",
        corpus.manifest_sha256,
        corpus.files,
        if pinned.is_empty() { "none".to_string() } else { pinned.join(", ") }
    )))
}
