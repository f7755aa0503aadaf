//! Loaders: from files (or a synthetic spec) to trees.
//!
//! Owns format detection (by content; `--format` overrides) and the
//! dispatch to one reader per format. Every reader reports bad input as an
//! [`InputError`] naming the file, the line or JSON path, and what was
//! expected; none may panic on any input. Readers also say which
//! conventions they detected and what they had to estimate or adjust
//! (`Loaded::conventions`, `Loaded::problems`), for `arbor inspect`.

pub mod abench;
pub mod agentic_mooncake;
pub mod arbor;
mod fields;
pub mod lmcache;
pub mod mooncake;
pub mod openai_log;
pub mod synthetic;
#[cfg(test)]
mod test_support;
pub mod weka;
pub mod weka_writer;

use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::error::{InputError, PolicyError};
use crate::model::{Tree, Workload};

/// The formats arbor reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Format {
    /// Weka agentic-coding traces (kv-cache-tester, SemiAnalysis).
    Weka,
    /// Mooncake FAST'25 traces, with AIPerf's `session_id`/`delay` extension.
    Mooncake,
    /// Dynamo's agentic Mooncake rows with explicit `wait_for` edges.
    AgenticMooncake,
    /// agentic-bench session JSONL v1 (plain or `.zst`).
    Abench,
    /// LMCache agent traces (text, unix-µs timestamps).
    Lmcache,
    /// arbor's capture format of OpenAI chat requests and responses.
    OpenaiLog,
    /// arbor's native JSONL form.
    Arbor,
}

impl Format {
    pub const ALL: [Format; 7] = [
        Format::Weka,
        Format::Mooncake,
        Format::AgenticMooncake,
        Format::Abench,
        Format::Lmcache,
        Format::OpenaiLog,
        Format::Arbor,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Format::Weka => "weka",
            Format::Mooncake => "mooncake",
            Format::AgenticMooncake => "agentic-mooncake",
            Format::Abench => "abench",
            Format::Lmcache => "lmcache",
            Format::OpenaiLog => "openai-log",
            Format::Arbor => "arbor",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = PolicyError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == text)
            .ok_or_else(|| {
                let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
                PolicyError::new(format!(
                    "expected one of {}, got `{text}`",
                    names.join(", ")
                ))
            })
    }
}

/// Something a reader adjusted, estimated or found odd, with its place
/// (`file`, `file:line N`, or a JSON path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub place: String,
    pub message: String,
}

/// What one input path held.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Loaded {
    pub path: String,
    pub format: Option<Format>,
    pub trees: Vec<Tree>,
    /// Conventions detected, in words (e.g. "subagent times: relative").
    pub conventions: Vec<String>,
    pub problems: Vec<Problem>,
}

/// Tokens estimated from text when a format records none: one token per
/// four bytes, rounded up (the usual rule of thumb for English and code).
pub fn estimate_tokens(text: &str) -> u32 {
    text.len().div_ceil(4).min(u32::MAX as usize) as u32
}

/// How many bytes of a file are read to recognise its format.
pub const SNIFF_BYTES: u64 = 64 * 1024;

/// zstd frame magic number (little endian 0xFD2FB528).
pub const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// The trace files of a directory: `*.json`, `*.jsonl` and `*.zst`,
/// sorted by name, not recursive.
pub fn directory_files(dir: &Path) -> Result<Vec<PathBuf>, InputError> {
    let name = dir.display().to_string();
    let unreadable =
        |e: std::io::Error| InputError::whole(&name, format!("cannot read directory: {e}"));
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(unreadable)? {
        let path = entry.map_err(unreadable)?.path();
        let wanted = path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
            ["json", "jsonl", "zst"]
                .iter()
                .any(|w| e.eq_ignore_ascii_case(w))
        });
        if wanted && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(InputError::whole(
            name,
            "no trace files in this directory: expected *.json, *.jsonl or *.zst files",
        ));
    }
    Ok(files)
}

/// Recognises a file's format by its content; a directory by its first
/// trace file.
pub fn detect(path: &Path) -> Result<Format, InputError> {
    let name = path.display().to_string();
    let meta = std::fs::metadata(path)
        .map_err(|e| InputError::whole(&name, format!("cannot read: {e}")))?;
    if meta.is_dir() {
        let files = directory_files(path)?;
        return detect(&files[0]);
    }
    let mut prefix = Vec::new();
    File::open(path)
        .and_then(|f| f.take(SNIFF_BYTES).read_to_end(&mut prefix))
        .map_err(|e| InputError::whole(&name, format!("cannot read: {e}")))?;
    if prefix.starts_with(&ZSTD_MAGIC) {
        return Ok(Format::Abench);
    }
    let text = String::from_utf8_lossy(&prefix);
    let detected = if arbor::looks_like_arbor(&text) {
        Format::Arbor
    } else if agentic_mooncake::looks_like(&text) {
        Format::AgenticMooncake
    } else if mooncake::looks_like(&text) {
        Format::Mooncake
    } else if abench::looks_like(&text) {
        Format::Abench
    } else if openai_log::looks_like(&text) {
        Format::OpenaiLog
    } else if lmcache::looks_like(&text) {
        Format::Lmcache
    } else {
        // Weka's reader gives the precise error when it is not Weka either.
        Format::Weka
    };
    Ok(detected)
}

/// Reads one file or directory, in `format` or the detected one.
pub fn load_path(path: &Path, format: Option<Format>) -> Result<Loaded, InputError> {
    let format = match format {
        Some(f) => f,
        None => detect(path)?,
    };
    let is_dir = std::fs::metadata(path).is_ok_and(|m| m.is_dir());
    let mut loaded = if is_dir && format != Format::Weka {
        let mut all = Loaded::default();
        for file in directory_files(path)? {
            let one = load_file(&file, format)?;
            all.trees.extend(one.trees);
            for c in one.conventions {
                if !all.conventions.contains(&c) {
                    all.conventions.push(c);
                }
            }
            all.problems.extend(one.problems);
        }
        all
    } else {
        load_file(path, format)?
    };
    loaded.path = path.display().to_string();
    loaded.format = Some(format);
    Ok(loaded)
}

/// Reads one file (or, for Weka, a directory) in the given format.
fn load_file(path: &Path, format: Format) -> Result<Loaded, InputError> {
    let loaded = match format {
        Format::Weka => weka::load(path)?,
        Format::Mooncake => mooncake::load(path)?,
        Format::AgenticMooncake => agentic_mooncake::load(path)?,
        Format::Abench => abench::load(path)?,
        Format::Lmcache => lmcache::load(path)?,
        Format::OpenaiLog => openai_log::load(path)?,
        Format::Arbor => Loaded {
            trees: arbor::load_path(path)?,
            ..Loaded::default()
        },
    };
    Ok(loaded)
}

/// Reads every input path, in order.
pub fn load_all(paths: &[PathBuf], format: Option<Format>) -> Result<Vec<Loaded>, InputError> {
    paths.iter().map(|p| load_path(p, format)).collect()
}

/// Reads every input path into one workload, trees in the order of the
/// paths given, then the order within each path.
pub fn load_paths(paths: &[PathBuf]) -> Result<Workload, InputError> {
    let mut workload = Workload::default();
    for loaded in load_all(paths, None)? {
        workload.trees.extend(loaded.trees);
    }
    Ok(workload)
}
