//! Writing the user registry: `arbor data pin DIR --name NAME` records the
//! size and SHA-256 of a local directory's trace files (the files `arbor
//! run DIR` would read) as a local pin, under a name of its own (a
//! registry dataset's name is refused: a local pin never counts as the
//! registry's corpus); and [`trust_first_use`] records the sizes and
//! hashes the first fetch of an unpinned registry entry (a file without a
//! SHA-256 or a size) found at the entry's own `base_url`
//! ([`Pinning::TrustOnFirstUse`]). Owns writing
//! that file; a name already pinned must keep its manifest. Prints
//! nothing: what it did is its [`Pinned`].

use std::path::{Path, PathBuf};

use super::registry::{self, Dataset, DatasetFile, Registry, RegistryFile};
use crate::files::directory_files;
use crate::manifest::{self, FileHash, Pinning};
use arbor_error::Error;

/// What a pin recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pinned {
    /// How many trace files the directory holds.
    pub files: usize,
    /// Their manifest hash.
    pub manifest: String,
    /// The user registry written.
    pub registry: PathBuf,
}

/// Pins `dir`'s trace files as dataset `name` in the user registry: a
/// local pin, so `name` must not be a registry dataset's.
pub fn pin(dir: &Path, name: &str) -> Result<Pinned, Error> {
    registry::check_name(name).map_err(|e| Error::input(format!("--name: {e}")))?;
    let registry = Registry::load().map_err(Error::input)?;
    if registry.is_registry_name(name) {
        return Err(Error::input(format!(
            "--name {name}: a registry dataset's name; a local pin gets a name of its own and never \
             counts as the registry's corpus (fetch that one with `arbor data fetch {name}`)"
        )));
    }
    let files = directory_files(dir).map_err(Error::input)?;
    let hashes = manifest::hash_files(&files).map_err(Error::other)?;
    let found = manifest::manifest_hash(&hashes);
    if let Some(expected) = registry.get(name).ok().and_then(Dataset::manifest) {
        if expected != found {
            return Err(Error::input(format!(
                "{}: manifest {found} differs from dataset {name}'s pinned manifest {expected}: refusing to re-pin it",
                dir.display()
            )));
        }
    }
    let entry = Dataset {
        name: name.to_string(),
        description: String::new(),
        source: String::new(),
        revision: String::new(),
        base_url: String::new(),
        license: None,
        unpinned: None,
        pinned_from: Some(std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())),
        pinned_by: Some(Pinning::LocalPin),
        files: files
            .iter()
            .zip(&hashes)
            .map(|(path, FileHash { name, sha256 })| DatasetFile {
                name: name.clone(),
                size: std::fs::metadata(path).ok().map(|m| m.len()),
                sha256: Some(sha256.clone()),
            })
            .collect(),
    };
    Ok(Pinned {
        files: hashes.len(),
        manifest: found,
        registry: write_user_entry(entry)?,
    })
}

/// Records `files` (each with its size and SHA-256, as the first fetch of
/// `dataset` from its `base_url` found them) as `dataset`'s
/// trust-on-first-use pin; later fetches verify against them. Refused for
/// an entry already pinned.
pub fn trust_first_use(dataset: &Dataset, files: Vec<DatasetFile>) -> Result<Pinned, Error> {
    if dataset.file_hashes().is_some() {
        return Err(Error::other(format!(
            "dataset {}: already pinned: nothing to trust on first use",
            dataset.name
        )));
    }
    let mut entry = dataset.clone();
    entry.files = files;
    let Some(hashes) = entry.file_hashes() else {
        return Err(Error::other(format!(
            "dataset {}: a first fetch without every file's size and SHA-256",
            dataset.name
        )));
    };
    entry.unpinned = None;
    entry.pinned_from = None;
    entry.pinned_by = Some(Pinning::TrustOnFirstUse);
    Ok(Pinned {
        files: hashes.len(),
        manifest: manifest::manifest_hash(&hashes),
        registry: write_user_entry(entry)?,
    })
}

/// Writes `entry` into the user registry, replacing a same-named one.
fn write_user_entry(entry: Dataset) -> Result<PathBuf, Error> {
    let Some(path) = registry::user_registry_path() else {
        return Err(Error::other(
            "no home directory (HOME and XDG_CONFIG_HOME unset): nowhere to write the user registry",
        ));
    };
    let mut user = if path.exists() {
        RegistryFile::read(&path).map_err(Error::input)?
    } else {
        RegistryFile::default()
    };
    user.datasets.retain(|d| d.name != entry.name);
    user.datasets.push(entry);
    user.datasets.sort_by(|a, b| a.name.cmp(&b.name));
    let text = toml::to_string(&user)
        .map_err(|e| Error::other(format!("cannot write the user registry: {e}")))?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| Error::other(format!("{}: cannot create: {e}", parent.display())))?;
    }
    std::fs::write(&path, text)
        .map_err(|e| Error::other(format!("{}: cannot write: {e}", path.display())))?;
    Ok(path)
}
