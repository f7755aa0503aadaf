//! Loaders: from files (or a synthetic spec) to a [`Workload`].
//!
//! Owns format detection and the per-format readers. Every reader reports
//! bad input as an [`InputError`] naming the file, the line or JSON path,
//! and what was expected; none may panic on any input.

pub mod arbor;
pub mod synthetic;
pub mod weka;

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::InputError;
use crate::model::Workload;

/// The formats arbor reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Weka agentic-coding traces (kv-cache-tester, SemiAnalysis).
    Weka,
    /// arbor's native JSONL form.
    Arbor,
}

/// How many bytes of a file are read to recognise its format.
const SNIFF_BYTES: u64 = 64 * 1024;

/// Recognises a file's format by its content (directories hold Weka files).
pub fn detect(path: &Path) -> Result<Format, InputError> {
    let name = path.display().to_string();
    let meta = std::fs::metadata(path)
        .map_err(|e| InputError::whole(&name, format!("cannot read: {e}")))?;
    if meta.is_dir() {
        return Ok(Format::Weka);
    }
    let mut prefix = Vec::new();
    File::open(path)
        .and_then(|f| f.take(SNIFF_BYTES).read_to_end(&mut prefix))
        .map_err(|e| InputError::whole(&name, format!("cannot read: {e}")))?;
    let text = String::from_utf8_lossy(&prefix);
    if arbor::looks_like_arbor(&text) {
        Ok(Format::Arbor)
    } else {
        // Weka's reader gives the precise error when it is not Weka either.
        Ok(Format::Weka)
    }
}

/// Reads one file or directory in its detected format.
pub fn load_path(path: &Path) -> Result<Workload, InputError> {
    let trees = match detect(path)? {
        Format::Weka => weka::load_path(path)?,
        Format::Arbor => arbor::load_path(path)?,
    };
    Ok(Workload { trees })
}

/// Reads every input path into one workload, trees in the order of the
/// paths given, then the order within each path.
pub fn load_paths(paths: &[PathBuf]) -> Result<Workload, InputError> {
    let mut workload = Workload::default();
    for path in paths {
        workload.trees.extend(load_path(path)?.trees);
    }
    Ok(workload)
}
