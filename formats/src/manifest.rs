//! A corpus's identity: each file's SHA-256 and the manifest hash over
//! them (docs/data.md, "Manifest"). Owns hashing files and the byte
//! layout of the manifest; reads no registry and no network.
//!
//! The manifest hash is the SHA-256 of, for every file sorted by name
//! (then by hash), the bytes of its base name, one NUL byte, its SHA-256
//! as 64 lower-case hex digits, and one `\n`. Base names, so the same
//! corpus has the same manifest wherever it sits on disk.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Serialize;
use sha2::{Digest, Sha256};

/// One file of a corpus.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
pub struct FileHash {
    /// The file's base name.
    pub name: String,
    /// Its SHA-256, lower-case hex.
    pub sha256: String,
}

/// What a plan or run records of its trace inputs: the manifest hash and
/// the files it covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, JsonSchema)]
pub struct Corpus {
    pub manifest_sha256: String,
    pub files: u64,
    /// The registry dataset whose pinned manifest this is, and how its
    /// hashes came to be trusted; absent when no dataset pins it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned: Option<CorpusPin>,
}

/// How a dataset's file hashes came to be trusted (docs/data.md,
/// "Pinning").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Pinning {
    /// Reviewed: the hashes are in arbor's registry file.
    Registry,
    /// Trust on first use: computed by the first `arbor data fetch` of an
    /// entry without hashes, from its own `base_url`, and verified against
    /// on every later fetch.
    TrustOnFirstUse,
    /// `arbor data pin DIR --name NAME`: a local directory, under a name of
    /// its own; never the registry's corpus.
    LocalPin,
}

impl Pinning {
    /// The tag `summary.json` and `arbor data info` show.
    pub fn tag(self) -> &'static str {
        match self {
            Pinning::Registry => "registry",
            Pinning::TrustOnFirstUse => "trust_on_first_use",
            Pinning::LocalPin => "local_pin",
        }
    }

    /// Whether a corpus pinned this way counts as a registry corpus (the
    /// recipe's check): a local pin never does.
    pub fn is_public(self) -> bool {
        !matches!(self, Pinning::LocalPin)
    }
}

/// The dataset a corpus is, by its manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, JsonSchema)]
pub struct CorpusPin {
    pub dataset: String,
    pub how: Pinning,
}

/// Lower-case hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The SHA-256 of a file's bytes, streamed.
pub fn hash_file(path: &Path) -> std::io::Result<String> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

/// The manifest hash of `files` (in any order; see the module doc).
pub fn manifest_hash(files: &[FileHash]) -> String {
    let mut sorted: Vec<&FileHash> = files.iter().collect();
    sorted.sort();
    let mut hasher = Sha256::new();
    for file in sorted {
        hasher.update(file.name.as_bytes());
        hasher.update([0u8]);
        hasher.update(file.sha256.as_bytes());
        hasher.update(b"\n");
    }
    hex(&hasher.finalize())
}

/// The corpus identity of `files`.
pub fn corpus(files: &[FileHash]) -> Corpus {
    Corpus {
        manifest_sha256: manifest_hash(files),
        files: files.len() as u64,
        pinned: None,
    }
}

/// Each file's base name and SHA-256.
pub fn hash_files(files: &[PathBuf]) -> Result<Vec<FileHash>, String> {
    files
        .iter()
        .map(|path| {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| path.display().to_string());
            let sha256 =
                hash_file(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
            Ok(FileHash { name, sha256 })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_is_order_free_and_has_the_documented_layout() {
        let a = FileHash {
            name: "b.json".into(),
            sha256: "11".repeat(32),
        };
        let b = FileHash {
            name: "a.json".into(),
            sha256: "22".repeat(32),
        };
        let one = manifest_hash(&[a.clone(), b.clone()]);
        assert_eq!(one, manifest_hash(&[b.clone(), a.clone()]));
        let layout = format!("a.json\0{}\nb.json\0{}\n", b.sha256, a.sha256);
        assert_eq!(one, hex(&Sha256::digest(layout.as_bytes())));
    }

    #[test]
    fn empty_input_hashes_to_sha256_of_nothing() {
        assert_eq!(
            manifest_hash(&[]),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
