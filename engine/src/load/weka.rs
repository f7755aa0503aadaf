//! Weka agentic-coding traces (placeholder, being written).
use std::path::Path;
use crate::{InputError, Tree};
pub fn load_path(path: &Path) -> Result<Vec<Tree>, InputError> {
    Err(InputError::whole(path.display().to_string(), "weka loader not written yet"))
}
