//! `arbor data pin DIR --name NAME`: records the size and SHA-256 of a
//! local directory's trace files (the files `arbor run DIR` would read) as
//! dataset NAME in the user registry. Owns writing that file; an entry the
//! reviewed registry already pins must match, so a pin can add hashes to
//! an unpinned entry but never replace pinned ones. Prints nothing: what
//! it did is its [`Pinned`].

use std::path::{Path, PathBuf};

use super::registry::{self, Dataset, DatasetFile, Registry, RegistryFile};
use crate::files::directory_files;
use crate::manifest::{self, FileHash};
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

/// Pins `dir`'s trace files as dataset `name` in the user registry.
pub fn pin(dir: &Path, name: &str) -> Result<Pinned, Error> {
    registry::check_name(name).map_err(|e| Error::input(format!("--name: {e}")))?;
    let files = directory_files(dir).map_err(Error::input)?;
    let hashes = manifest::hash_files(&files).map_err(Error::other)?;
    let found = manifest::manifest_hash(&hashes);
    let registry = Registry::load().map_err(Error::input)?;
    let known = registry.get(name).ok().cloned();
    if let Some(expected) = known.as_ref().and_then(Dataset::manifest) {
        if expected != found {
            return Err(Error::input(format!(
                "{}: manifest {found} differs from dataset {name}'s pinned manifest {expected}: refusing to re-pin it",
                dir.display()
            )));
        }
    }
    let mut entry = known.unwrap_or_else(|| Dataset {
        name: name.to_string(),
        description: String::new(),
        source: String::new(),
        revision: String::new(),
        base_url: String::new(),
        license: None,
        unpinned: None,
        pinned_from: None,
        files: Vec::new(),
    });
    entry.unpinned = None;
    entry.pinned_from = Some(std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()));
    entry.files = files
        .iter()
        .zip(&hashes)
        .map(|(path, FileHash { name, sha256 })| DatasetFile {
            name: name.clone(),
            size: std::fs::metadata(path).ok().map(|m| m.len()),
            sha256: Some(sha256.clone()),
        })
        .collect();
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
    user.datasets.retain(|d| d.name != name);
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
    Ok(Pinned {
        files: hashes.len(),
        manifest: found,
        registry: path,
    })
}
