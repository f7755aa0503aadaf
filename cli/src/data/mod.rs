//! Datasets by name (docs/data.md): the registry (`registry`), a corpus's
//! identity (`arbor_formats::manifest`), downloading (`fetch`) and recording a local
//! directory's hashes (`pin`); here the `arbor data` command, `data:NAME`
//! inputs resolved to their fetched directory, the `corpus` a plan or
//! run records, and whether inputs are a pinned corpus (the scenario's
//! check). Uses `endpoint`, `runtime` and `sample`; no command uses it
//! but through these functions.

mod fetch;
mod pin;
pub mod registry;

use std::path::{Path, PathBuf};

use crate::args::{DataArgs, DataCommand};
use arbor_error::Error;
use arbor_formats::manifest::{self, Corpus, FileHash};
use registry::{Dataset, Registry};
use sha2::Digest;

/// The prefix of an input that names a dataset.
pub const PREFIX: &str = "data:";

pub fn run(args: &DataArgs) -> Result<(), Error> {
    let registry = Registry::load().map_err(Error::input)?;
    match &args.command {
        DataCommand::List => crate::stdout::print(|out| out.write_all(list(&registry).as_bytes())),
        DataCommand::Info { name } => {
            let text = info(registry.get(name).map_err(Error::input)?);
            crate::stdout::print(|out| out.write_all(text.as_bytes()))
        }
        DataCommand::Fetch { name, dir } => {
            let dataset = registry.get(name).map_err(Error::input)?;
            let dir = match dir {
                Some(d) => d.clone(),
                None => default_dir(name)?,
            };
            fetch::fetch(dataset, &dir)?;
            eprintln!(
                "arbor data: {name}: {} files in {} (use it as data:{name})",
                dataset.files.len(),
                dir.display()
            );
            Ok(())
        }
        DataCommand::Pin { dir, name } => pin::pin(dir, name),
    }
}

fn default_dir(name: &str) -> Result<PathBuf, Error> {
    registry::cache_dir(name).ok_or_else(|| {
        Error::input("no home directory (HOME and XDG_CACHE_HOME unset): give --dir DIR")
    })
}

fn list(registry: &Registry) -> String {
    let mut out = String::new();
    for d in &registry.datasets {
        let pinned = if d.manifest().is_some() {
            "pinned"
        } else {
            "unpinned"
        };
        let fetched = if local_dir(d).is_some() {
            "fetched"
        } else {
            "not fetched"
        };
        out.push_str(&format!(
            "{:<32} {:>4} files {:>12} bytes  {pinned:<8}  {fetched}\n",
            d.name,
            d.files.len(),
            d.total_size()
        ));
    }
    out
}

fn info(d: &Dataset) -> String {
    let mut out = format!(
        "name:        {}\ndescription: {}\nsource:      {}\nrevision:    {}\nbase URL:    {}\n",
        d.name, d.description, d.source, d.revision, d.base_url
    );
    if let Some(license) = &d.license {
        out.push_str(&format!("license:     {license}\n"));
    }
    match d.manifest() {
        Some(m) => out.push_str(&format!("manifest:    {m}\n")),
        None => out.push_str(&format!(
            "manifest:    none: {}\n",
            d.unpinned
                .as_deref()
                .unwrap_or("unpinned until `arbor data pin`")
        )),
    }
    if let Some(dir) = &d.pinned_from {
        out.push_str(&format!("pinned from: {}\n", dir.display()));
    }
    if let Some(dir) = registry::cache_dir(&d.name) {
        out.push_str(&format!("fetch to:    {}\n", dir.display()));
    }
    for f in &d.files {
        out.push_str(&format!(
            "  {}  {:>12}  {}\n",
            f.sha256.as_deref().unwrap_or("(no sha256)"),
            f.size.map_or("?".to_string(), |s| s.to_string()),
            f.name
        ));
    }
    out
}

/// Where a dataset's files are on this machine: the fetch cache, or the
/// directory it was pinned from; `None` when neither holds every file.
fn local_dir(d: &Dataset) -> Option<PathBuf> {
    let holds_all =
        |dir: &Path| !d.files.is_empty() && d.files.iter().all(|f| dir.join(&f.name).is_file());
    registry::cache_dir(&d.name)
        .filter(|dir| holds_all(dir))
        .or_else(|| d.pinned_from.clone().filter(|dir| holds_all(dir)))
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
    let registry = Registry::load().map_err(Error::input)?;
    inputs
        .iter()
        .map(|p| match named(p) {
            None => Ok(p.clone()),
            Some(name) => {
                let d = registry
                    .get(&name)
                    .map_err(|e| Error::input(format!("{PREFIX}{name}: {e}")))?;
                local_dir(d).ok_or_else(|| {
                    Error::input(format!(
                        "{PREFIX}{name}: not fetched yet: run `arbor data fetch {name}` first"
                    ))
                })
            }
        })
        .collect()
}

/// The corpus identity of trace inputs (already resolved): the bundled
/// sample's when there are none, `None` when an input is a stream.
pub fn corpus_of(inputs: &[PathBuf]) -> Result<Option<Corpus>, Error> {
    Ok(file_hashes_of(inputs)?.map(|files| manifest::corpus(&files)))
}

fn file_hashes_of(inputs: &[PathBuf]) -> Result<Option<Vec<FileHash>>, Error> {
    if inputs.is_empty() {
        return Ok(Some(
            arbor_formats::sample::TRACES
                .iter()
                .map(|(source, text)| FileHash {
                    name: source.trim_start_matches("sample:").to_string(),
                    sha256: manifest::hex(&sha2::Sha256::digest(text.as_bytes())),
                })
                .collect(),
        ));
    }
    let Some(files) = arbor_formats::load::trace_files(inputs).map_err(Error::input)? else {
        return Ok(None);
    };
    manifest::hash_files(&files).map(Some).map_err(Error::input)
}

/// Why inputs are not a pinned registry corpus, naming both manifests;
/// `None` when they are.
pub fn unpinned(inputs: &[PathBuf]) -> Result<Option<String>, Error> {
    let inputs = resolve_inputs(inputs)?;
    let Some(corpus) = corpus_of(&inputs)? else {
        return Ok(Some(
            "the inputs include a stream (stdin or a FIFO): a pinned corpus is a set of files"
                .to_string(),
        ));
    };
    let registry = Registry::load().map_err(Error::input)?;
    if registry.pinned_with(&corpus.manifest_sha256).is_some() {
        return Ok(None);
    }
    let pinned: Vec<String> = registry
        .datasets
        .iter()
        .filter_map(|d| d.manifest().map(|m| format!("{} {m}", d.name)))
        .collect();
    Ok(Some(format!(
        "the inputs' manifest {} ({} files) matches no pinned registry corpus (pinned: {}); \
         fetch one with `arbor data fetch NAME`, or record a local copy with `arbor data pin DIR --name NAME`",
        corpus.manifest_sha256,
        corpus.files,
        if pinned.is_empty() { "none".to_string() } else { pinned.join(", ") }
    )))
}
