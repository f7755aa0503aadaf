//! The dataset registry: the reviewed file in the repo
//! (`datasets/registry.toml`, compiled in), or the file
//! `ARBOR_DATA_REGISTRY` names instead; plus the user registry
//! `arbor data pin` writes, whose entries replace same-named ones. Owns
//! the registry's types, where its files and the cache live, and which
//! entries are pinned. Does no network I/O and hashes nothing.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::manifest::{self, FileHash};

/// The registry shipped with arbor.
const BUILT_IN: &str = include_str!("../../../datasets/registry.toml");

/// Replaces the built-in registry with this file (tests, mirrors).
pub const REGISTRY_ENV: &str = "ARBOR_DATA_REGISTRY";

/// One file of a dataset.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DatasetFile {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Lower-case hex; absent in an unpinned entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// One corpus.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Dataset {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub source: String,
    #[serde(default)]
    pub revision: String,
    /// Each file's URL is this followed by its name.
    #[serde(default)]
    pub base_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    /// Why the entry is not pinned (no hashes), when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unpinned: Option<String>,
    /// The local directory `arbor data pin` hashed (user registry only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned_from: Option<PathBuf>,
    #[serde(default)]
    pub files: Vec<DatasetFile>,
}

impl Dataset {
    /// Every file's hash, when every file has one and there are files.
    pub fn file_hashes(&self) -> Option<Vec<FileHash>> {
        if self.files.is_empty() {
            return None;
        }
        self.files
            .iter()
            .map(|f| {
                f.sha256.as_ref().map(|h| FileHash {
                    name: f.name.clone(),
                    sha256: h.clone(),
                })
            })
            .collect()
    }

    /// The manifest hash of a pinned entry.
    pub fn manifest(&self) -> Option<String> {
        self.file_hashes().map(|f| manifest::manifest_hash(&f))
    }

    pub fn total_size(&self) -> u64 {
        self.files.iter().filter_map(|f| f.size).sum()
    }

    /// Where this dataset's files are on this machine: the fetch cache, or
    /// the directory it was pinned from; `None` when neither holds every
    /// file.
    pub fn local_dir(&self) -> Option<PathBuf> {
        let holds_all = |dir: &Path| {
            !self.files.is_empty() && self.files.iter().all(|f| dir.join(&f.name).is_file())
        };
        cache_dir(&self.name)
            .filter(|dir| holds_all(dir))
            .or_else(|| self.pinned_from.clone().filter(|dir| holds_all(dir)))
    }
}

/// A registry file's contents.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct RegistryFile {
    #[serde(default, rename = "dataset")]
    pub datasets: Vec<Dataset>,
}

impl RegistryFile {
    pub fn parse(text: &str, origin: &str) -> Result<RegistryFile, String> {
        let file: RegistryFile =
            toml::from_str(text).map_err(|e| format!("{origin}: not a dataset registry: {e}"))?;
        for d in &file.datasets {
            check_name(&d.name).map_err(|e| format!("{origin}: {e}"))?;
            for f in &d.files {
                if f.name.contains('/') || f.name.contains('\\') || f.name.starts_with('.') {
                    return Err(format!(
                        "{origin}: dataset {}: file `{}`: expected a plain file name",
                        d.name, f.name
                    ));
                }
            }
        }
        Ok(file)
    }

    pub fn read(path: &Path) -> Result<RegistryFile, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        RegistryFile::parse(&text, &path.display().to_string())
    }
}

/// The registry in effect: built-in (or `ARBOR_DATA_REGISTRY`), then the
/// user's pins.
#[derive(Debug)]
pub struct Registry {
    pub datasets: Vec<Dataset>,
}

impl Registry {
    pub fn load() -> Result<Registry, String> {
        let mut base = match std::env::var_os(REGISTRY_ENV) {
            Some(path) => RegistryFile::read(Path::new(&path))?,
            None => RegistryFile::parse(BUILT_IN, "datasets/registry.toml")?,
        };
        if let Some(path) = user_registry_path().filter(|p| p.exists()) {
            for pinned in RegistryFile::read(&path)?.datasets {
                base.datasets.retain(|d| d.name != pinned.name);
                base.datasets.push(pinned);
            }
        }
        base.datasets.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Registry {
            datasets: base.datasets,
        })
    }

    pub fn get(&self, name: &str) -> Result<&Dataset, String> {
        self.datasets
            .iter()
            .find(|d| d.name == name)
            .ok_or_else(|| {
                let known: Vec<&str> = self.datasets.iter().map(|d| d.name.as_str()).collect();
                format!(
                    "unknown dataset `{name}` (known: {}; see `arbor data list`)",
                    known.join(", ")
                )
            })
    }

    /// The pinned dataset whose manifest is `manifest`, if any.
    pub fn pinned_with(&self, manifest: &str) -> Option<&Dataset> {
        self.datasets
            .iter()
            .find(|d| d.manifest().as_deref() == Some(manifest))
    }
}

/// A dataset name is a directory name of the cache: letters, digits,
/// `.`, `_`, `-`, not starting with `.`.
pub fn check_name(name: &str) -> Result<(), String> {
    let plain = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if name.is_empty() || name.starts_with('.') || !plain {
        return Err(format!(
            "dataset name `{name}`: expected letters, digits, `.`, `_` or `-`, not starting with `.`"
        ));
    }
    Ok(())
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

fn xdg(var: &str, fallback: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| home().map(|h| h.join(fallback)))
}

/// `$XDG_CONFIG_HOME/arbor/datasets.toml` (`~/.config/...`).
pub fn user_registry_path() -> Option<PathBuf> {
    xdg("XDG_CONFIG_HOME", ".config").map(|d| d.join("arbor").join("datasets.toml"))
}

/// `$XDG_CACHE_HOME/arbor/datasets/NAME` (`~/.cache/...`).
pub fn cache_dir(name: &str) -> Option<PathBuf> {
    xdg("XDG_CACHE_HOME", ".cache").map(|d| d.join("arbor").join("datasets").join(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_registry_parses_and_pins_the_weka_traces() {
        let file = RegistryFile::parse(BUILT_IN, "built-in").unwrap();
        let weka = file
            .datasets
            .iter()
            .find(|d| d.name == "kv-cache-tester-weka")
            .unwrap();
        assert_eq!(weka.files.len(), 4);
        assert!(weka.manifest().is_some());
        let semi = file
            .datasets
            .iter()
            .find(|d| d.name == "semianalysis-cc-traces-weka")
            .unwrap();
        assert!(semi.manifest().is_none() && semi.unpinned.is_some());
    }

    #[test]
    fn a_path_as_dataset_name_is_refused() {
        assert!(RegistryFile::parse("[[dataset]]\nname = \"../x\"\n", "t").is_err());
        assert!(check_name("cc-traces_v1.2").is_ok());
    }

    #[test]
    fn a_path_as_file_name_is_refused() {
        let text = "[[dataset]]\nname = \"x\"\n[[dataset.files]]\nname = \"../etc/passwd\"\n";
        assert!(RegistryFile::parse(text, "t").is_err());
    }
}
