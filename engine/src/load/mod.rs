//! Loaders: from files (or a synthetic spec) to a [`Workload`].
//!
//! Owns format detection and the per-format readers. Every reader reports
//! bad input as an [`InputError`] naming the file, the line or JSON path,
//! and what was expected; none may panic on any input.

pub mod synthetic;
pub mod weka;

use std::path::PathBuf;

use crate::error::InputError;
use crate::model::Workload;

/// Reads every input path (files or directories) into one workload, trees
/// in the order of the paths given, then the order within each path.
pub fn load_paths(paths: &[PathBuf]) -> Result<Workload, InputError> {
    let mut workload = Workload::default();
    for path in paths {
        workload.trees.extend(weka::load_path(path)?);
    }
    Ok(workload)
}
