//! The dataset registry: the reviewed file in the repo
//! (`datasets/registry.toml`, compiled in), or the file
//! `ARBOR_DATA_REGISTRY` names instead; plus the user registry
//! `arbor data pin` and a first fetch write. Owns the registry's types,
//! where its files and the cache live, which entries are pinned (every
//! file with a size and a SHA-256) and how ([`Pinning`]), what a file name
//! may be ([`check_file_name`]), and the rule a user entry must keep: it takes a registry
//! dataset's name only as that entry's trust-on-first-use pin (same
//! `base_url`, the reviewed entry having no hashes); a local pin has a name
//! of its own. Does no network I/O and hashes nothing.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::manifest::{self, FileHash, Pinning};

/// The registry shipped with arbor.
const BUILT_IN: &str = include_str!("../../../datasets/registry.toml");

/// Replaces the built-in registry with this file (tests, mirrors).
pub const REGISTRY_ENV: &str = "ARBOR_DATA_REGISTRY";

/// One file of a dataset: pinned when it has both a size and a SHA-256
/// ([`DatasetFile::is_pinned`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DatasetFile {
    /// A plain file name ([`check_file_name`]), appended to the base URL.
    pub name: String,
    /// Bytes: a fetch takes no more (and no fewer); absent, the fetch's
    /// cap on a file of unknown size bounds it and the file is not pinned.
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
    /// How the hashes came to be trusted (user registry only: a reviewed
    /// entry with hashes is [`Pinning::Registry`]); see [`Dataset::pinning`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned_by: Option<Pinning>,
    #[serde(default)]
    pub files: Vec<DatasetFile>,
}

impl DatasetFile {
    /// Pinned: its SHA-256 and its size are known, so a fetch knows when
    /// to stop and what the bytes must be.
    pub fn is_pinned(&self) -> bool {
        self.sha256.is_some() && self.size.is_some()
    }
}

impl Dataset {
    /// Every file's hash, when the entry is pinned: there are files and
    /// each is pinned (a SHA-256 and a size, [`DatasetFile::is_pinned`]).
    /// An entry with a file lacking either is unpinned, fetched as a first
    /// use.
    pub fn file_hashes(&self) -> Option<Vec<FileHash>> {
        if self.files.is_empty() {
            return None;
        }
        self.files
            .iter()
            .map(|f| {
                f.sha256
                    .as_ref()
                    .filter(|_| f.is_pinned())
                    .map(|h| FileHash {
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

    /// How a pinned entry's hashes came to be trusted; `None` unpinned.
    pub fn pinning(&self) -> Option<Pinning> {
        self.file_hashes()
            .map(|_| self.pinned_by.unwrap_or(Pinning::Registry))
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
                check_file_name(&f.name)
                    .map_err(|e| format!("{origin}: dataset {}: {e}", d.name))?;
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
    /// The names the registry file (built-in or `ARBOR_DATA_REGISTRY`)
    /// holds: no local pin may take one.
    registry_names: Vec<String>,
}

impl Registry {
    pub fn load() -> Result<Registry, String> {
        let base = match std::env::var_os(REGISTRY_ENV) {
            Some(path) => RegistryFile::read(Path::new(&path))?,
            None => RegistryFile::parse(BUILT_IN, "datasets/registry.toml")?,
        };
        let user = match user_registry_path().filter(|p| p.exists()) {
            Some(path) => Some((RegistryFile::read(&path)?, path)),
            None => None,
        };
        Registry::merge(base, user)
    }

    /// `base` (whose hashed entries are [`Pinning::Registry`]) with the
    /// user's entries: a user entry under a registry name replaces it only
    /// as its trust-on-first-use pin; any other is a local pin, and one
    /// under a registry name is refused.
    fn merge(
        base: RegistryFile,
        user: Option<(RegistryFile, PathBuf)>,
    ) -> Result<Registry, String> {
        let mut datasets = base.datasets;
        for d in &mut datasets {
            d.pinned_by = None;
        }
        let registry_names: Vec<String> = datasets.iter().map(|d| d.name.clone()).collect();
        if let Some((user, path)) = user {
            for mut pinned in user.datasets {
                let reviewed = datasets.iter().find(|d| d.name == pinned.name);
                match reviewed {
                    None => pinned.pinned_by = Some(Pinning::LocalPin),
                    Some(reviewed) => {
                        let first_use = pinned.pinned_by == Some(Pinning::TrustOnFirstUse)
                            && !reviewed.base_url.is_empty()
                            && reviewed.base_url == pinned.base_url;
                        if !first_use {
                            return Err(format!(
                                "{}: dataset {}: a local pin under a registry dataset's name; a local pin \
                                 needs a name of its own (rename it in that file, or remove it)",
                                path.display(),
                                pinned.name
                            ));
                        }
                        if reviewed.file_hashes().is_some() || contradicts(reviewed, &pinned) {
                            // The reviewed hashes (and sizes) arrived, or
                            // changed, since: they win.
                            continue;
                        }
                        pinned.pinned_from = None;
                    }
                }
                datasets.retain(|d| d.name != pinned.name);
                datasets.push(pinned);
            }
        }
        datasets.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Registry {
            datasets,
            registry_names,
        })
    }

    /// Whether `name` is a dataset of the registry file (not a local pin).
    pub fn is_registry_name(&self, name: &str) -> bool {
        self.registry_names.iter().any(|n| n == name)
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

    /// The pinned dataset whose manifest is `manifest`, if any: a registry
    /// corpus before a local pin of the same files.
    pub fn pinned_with(&self, manifest: &str) -> Option<&Dataset> {
        let with = |public: bool| {
            self.datasets.iter().find(|d| {
                d.manifest().as_deref() == Some(manifest)
                    && d.pinning().is_some_and(|p| p.is_public() == public)
            })
        };
        with(true).or_else(|| with(false))
    }

    /// The identity a run records of a corpus with `manifest`: the dataset
    /// that pins it and how.
    pub fn pin_of(&self, manifest: &str) -> Option<manifest::CorpusPin> {
        let d = self.pinned_with(manifest)?;
        Some(manifest::CorpusPin {
            dataset: d.name.clone(),
            how: d.pinning()?,
        })
    }
}

/// Whether a first-use pin holds a hash other than one its reviewed entry
/// gives (an entry with hashes but not every size is fetched as a first
/// use, verified against the hashes it has).
fn contradicts(reviewed: &Dataset, pinned: &Dataset) -> bool {
    reviewed.files.iter().any(|r| {
        r.sha256.is_some()
            && pinned
                .files
                .iter()
                .find(|p| p.name == r.name)
                .is_none_or(|p| p.sha256 != r.sha256)
    })
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

/// A dataset's file name is a plain name inside the directory it is
/// fetched to: not empty, no `/` or `\\`, no NUL, not starting with `.`
/// (so neither `..` nor a hidden file, nor an absolute path).
pub fn check_file_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.starts_with('.') || name.contains(['/', '\\', '\0']) {
        return Err(format!(
            "file `{}`: expected a plain file name (no `/`, `\\` or NUL, not empty, not starting with `.`)",
            name.escape_debug()
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

    const REVIEWED: &str = "[[dataset]]\nname = \"public\"\nbase_url = \"https://example.org/d/\"\nfiles = [{ name = \"a.json\" }]\n";

    fn user(entry: &str) -> Option<(RegistryFile, PathBuf)> {
        Some((
            RegistryFile::parse(entry, "user").unwrap(),
            PathBuf::from("datasets.toml"),
        ))
    }

    fn merged(user_text: &str) -> Result<Registry, String> {
        Registry::merge(RegistryFile::parse(REVIEWED, "t").unwrap(), user(user_text))
    }

    #[test]
    fn a_local_pin_under_a_registry_name_is_refused_naming_the_fix() {
        let e = merged("[[dataset]]\nname = \"public\"\npinned_from = \"/x\"\nfiles = [{ name = \"a.json\", size = 2, sha256 = \"00\" }]\n")
            .unwrap_err();
        assert!(
            e.contains("a local pin under a registry dataset's name"),
            "{e}"
        );
        // Claiming to be a first use from another source is no better.
        let e = merged("[[dataset]]\nname = \"public\"\npinned_by = \"trust_on_first_use\"\nbase_url = \"https://mirror.example/\"\nfiles = [{ name = \"a.json\", size = 2, sha256 = \"00\" }]\n")
            .unwrap_err();
        assert!(e.contains("public"), "{e}");
    }

    #[test]
    fn a_first_use_pin_from_the_entrys_own_source_is_recorded_as_such() {
        let r = merged("[[dataset]]\nname = \"public\"\npinned_by = \"trust_on_first_use\"\nbase_url = \"https://example.org/d/\"\nfiles = [{ name = \"a.json\", size = 2, sha256 = \"00\" }]\n")
            .unwrap();
        let d = r.get("public").unwrap();
        assert_eq!(d.pinning(), Some(Pinning::TrustOnFirstUse));
        assert!(r.is_registry_name("public"));
        let pin = r.pin_of(&d.manifest().unwrap()).unwrap();
        assert_eq!(pin.how, Pinning::TrustOnFirstUse);
        assert!(pin.how.is_public());
    }

    #[test]
    fn a_users_entry_under_its_own_name_is_a_local_pin_whatever_it_claims() {
        let r = merged("[[dataset]]\nname = \"mine\"\npinned_by = \"registry\"\nfiles = [{ name = \"a.json\", size = 2, sha256 = \"00\" }]\n")
            .unwrap();
        let d = r.get("mine").unwrap();
        assert_eq!(d.pinning(), Some(Pinning::LocalPin));
        assert!(!r.is_registry_name("mine"));
        assert!(!d.pinning().unwrap().is_public());
        assert_eq!(r.get("public").unwrap().pinning(), None, "unpinned still");
    }

    #[test]
    fn a_path_as_file_name_is_refused() {
        for name in [
            "../etc/passwd",
            "/etc/passwd",
            "..",
            "a/b",
            "a\\\\b",
            "",
            ".hidden",
        ] {
            let text = format!("[[dataset]]\nname = \"x\"\n[[dataset.files]]\nname = \"{name}\"\n");
            let e = RegistryFile::parse(&text, "t").unwrap_err();
            assert!(e.contains("expected a plain file name"), "{name}: {e}");
        }
        assert!(check_file_name("trace_0187.json").is_ok());
    }

    #[test]
    fn a_file_without_a_size_leaves_its_entry_unpinned() {
        // Issue 27, item 17: a SHA-256 alone does not bound the download,
        // so it does not pin the entry; the fetch is a first use.
        let text = "[[dataset]]\nname = \"x\"\nbase_url = \"https://example.org/\"\n\
                    files = [{ name = \"a.json\", size = 2, sha256 = \"00\" }, { name = \"b.json\", sha256 = \"11\" }]\n";
        let file = RegistryFile::parse(text, "t").unwrap();
        let d = &file.datasets[0];
        assert!(d.files[0].is_pinned() && !d.files[1].is_pinned());
        assert!(d.file_hashes().is_none());
        assert!(d.manifest().is_none());
        assert_eq!(d.pinning(), None);
        let r = Registry::merge(file, None).unwrap();
        assert_eq!(r.get("x").unwrap().pinning(), None);
        // Its first-use pin takes its place only while it agrees with
        // the reviewed hashes.
        let pin = |b: &str| {
            user(&format!(
                "[[dataset]]\nname = \"x\"\npinned_by = \"trust_on_first_use\"\nbase_url = \"https://example.org/\"\n\
                 files = [{{ name = \"a.json\", size = 2, sha256 = \"00\" }}, {{ name = \"b.json\", size = 3, sha256 = \"{b}\" }}]\n"
            ))
        };
        let r = Registry::merge(RegistryFile::parse(text, "t").unwrap(), pin("11")).unwrap();
        assert_eq!(
            r.get("x").unwrap().pinning(),
            Some(Pinning::TrustOnFirstUse)
        );
        let r = Registry::merge(RegistryFile::parse(text, "t").unwrap(), pin("22")).unwrap();
        assert_eq!(r.get("x").unwrap().pinning(), None);
    }
}
